"""Which scope a command writes to and which scopes it reads, from the global options.

Every string goes through the core's ``resolve_scope``, so no option value can become a
wildcard or name another scope. The one exception is an explicit ``*`` for ``--agent`` or
``--run`` on a read, which means "every agent/run of this tenant" (the default anyway).
``--tenant`` follows ``memcore.scope.tenant_segment``, the rule the library and Hermes use:
taken exactly as given (``--tenant 'alice '`` is the tenant a Hermes user ``"alice "`` has,
not alice's), blank refused.
"""

from __future__ import annotations

import attrs

from memcore.config import MemcoreConfig
from memcore.errors import InvalidInput
from memcore.policies import AgentRead, ReadPolicy, ScopePolicy, SessionRead, TenantRead
from memcore.scope import WILDCARD, Scope, ScopePattern, SessionContext, resolve_scope
from memcore_cli.settings.options import GlobalOptions


@attrs.frozen
class ScopeChoice:
    """The session scope and how far reads reach from it."""

    scope: Scope
    #: ``tenant`` (``app/tenant/*/*``), ``agent`` (``app/tenant/agent/*``) or ``run`` (exact).
    reach: str
    #: Set when ``--agent`` or ``--run`` was ``*``: fine for reads, refused for writes.
    wildcard_flag: str | None = None

    @property
    def policy(self) -> ScopePolicy:
        reads: dict[str, ReadPolicy] = {
            "tenant": TenantRead(),
            "agent": AgentRead(),
            "run": SessionRead(),
        }
        read = reads[self.reach]
        return ScopePolicy(search=read, profile=read)

    @property
    def read_pattern(self) -> ScopePattern:
        return self.policy.search.read_pattern(self.scope)

    def write_scope(self) -> Scope:
        """The concrete scope writes go to; ``*`` there is a usage error, not a wildcard."""
        if self.wildcard_flag is not None:
            raise InvalidInput(
                f"writes need a concrete scope: {self.wildcard_flag} may not be '*'",
                field=self.wildcard_flag.removeprefix("--") + "_id",
            )
        return self.scope


def _concrete_flag(name: str, value: str | None) -> None:
    # Exactly ``*`` only: like any other id, `` * `` is taken as given (``%20%2A%20``).
    if value == WILDCARD:
        raise InvalidInput(
            f"{name} may not be '*': reads never leave one tenant", field=name[2:] + "_id"
        )


def choose_scope(options: GlobalOptions, config: MemcoreConfig) -> ScopeChoice:
    _concrete_flag("--app", options.app)
    _concrete_flag("--tenant", options.tenant)
    agent = options.agent
    run = options.run
    wildcard_flag = None
    if run is not None and run.strip() == WILDCARD:
        run, wildcard_flag = None, "--run"
    if agent is not None and agent.strip() == WILDCARD:
        if run is not None:
            raise InvalidInput(
                "--agent '*' cannot be combined with a concrete --run", field="agent_id"
            )
        agent, wildcard_flag = None, "--agent"
    scope = resolve_scope(
        SessionContext(agent_identity=agent, session_id=run),
        app_id=options.app if options.app is not None else config.app_id,
        tenant_id=options.tenant if options.tenant is not None else config.tenant_id,
    )
    if run is not None:
        reach = "run"
    elif agent is not None:
        reach = "agent"
    else:
        reach = "tenant"
    return ScopeChoice(scope=scope, reach=reach, wildcard_flag=wildcard_flag)
