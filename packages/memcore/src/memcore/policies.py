"""Scope policies: which scope a write targets, and which scopes a read or a forget may touch.

Each policy is a small object, so an agent can swap one without touching the service.
"""

from __future__ import annotations

from typing import Protocol

import attrs

from memcore.errors import InvalidInput, PermissionDenied
from memcore.scope import WILDCARD, Scope, ScopePattern, normalize_segment


class WritePolicy(Protocol):
    def write_scope(self, session: Scope) -> Scope: ...


class ReadPolicy(Protocol):
    def read_pattern(self, session: Scope) -> ScopePattern: ...


class ForgetPolicy(Protocol):
    def target_scope(
        self, session: Scope, *, agent_id: str | None = None, run_id: str | None = None
    ) -> Scope: ...


@attrs.frozen
class ExactSessionWrite:
    """Write to the exact session scope."""

    def write_scope(self, session: Scope) -> Scope:
        return session


@attrs.frozen
class TenantRead:
    """Read the whole tenant: ``app/tenant/*/*``."""

    def read_pattern(self, session: Scope) -> ScopePattern:
        return session.tenant_pattern()


@attrs.frozen
class AgentRead:
    """Read only this agent's memories: ``app/tenant/agent/*``."""

    def read_pattern(self, session: Scope) -> ScopePattern:
        return ScopePattern(session.app_id, session.tenant_id, session.agent_id, WILDCARD)


@attrs.frozen
class SessionRead:
    """Read only this run's memories."""

    def read_pattern(self, session: Scope) -> ScopePattern:
        return session.pattern()


@attrs.frozen
class TenantForget:
    """Delete only inside the current tenant.

    App and tenant always come from the session; a model may name another agent or run of the
    same tenant, and those strings are normalised like any untrusted input.
    """

    def target_scope(
        self, session: Scope, *, agent_id: str | None = None, run_id: str | None = None
    ) -> Scope:
        agent = normalize_segment(agent_id, default=session.agent_id)
        run = normalize_segment(run_id, default=session.run_id)
        target = Scope(session.app_id, session.tenant_id, agent, run)
        if not session.tenant_pattern().matches(target):  # pragma: no cover - by construction
            raise PermissionDenied("forget may not leave the current tenant", field="scope")
        return target


@attrs.frozen
class ScopePolicy:
    """The policies a service applies, bundled; the defaults are the original plugin's."""

    write: WritePolicy = attrs.field(factory=ExactSessionWrite)
    search: ReadPolicy = attrs.field(factory=TenantRead)
    profile: ReadPolicy = attrs.field(factory=TenantRead)
    forget: ForgetPolicy = attrs.field(factory=TenantForget)


def as_scope_policy(policy: ScopePolicy | ReadPolicy | None) -> ScopePolicy | None:
    """``policy`` as a bundle: a read policy alone (``SessionRead()``) narrows both search and
    list, so a narrower read is one argument."""
    if policy is None or isinstance(policy, ScopePolicy):
        return policy
    if callable(getattr(policy, "read_pattern", None)):
        return ScopePolicy(search=policy, profile=policy)
    raise InvalidInput(
        "policy must be a ScopePolicy or a read policy (TenantRead, AgentRead, SessionRead)",
        field="policy",
    )
