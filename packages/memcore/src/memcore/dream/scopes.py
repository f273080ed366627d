"""Where a dream action may read and write: inside its task's scopes, never across tenants."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from memcore.scope import DEFAULT_SEGMENT, Scope, ScopePattern


def in_scopes(scope: Scope, patterns: Sequence[ScopePattern]) -> bool:
    return any(p.matches(scope) for p in patterns)


def promoted_scope(scopes: Iterable[Scope]) -> Scope | None:
    """The narrowest scope above all of ``scopes`` in one tenant; None across tenants.

    Levels that differ become ``__default__`` (the service's "not set"), so memories of two
    runs of one agent promote to the agent's scope.
    """
    items = list(scopes)
    if not items:
        return None
    first = items[0]
    if any((s.app_id, s.tenant_id) != (first.app_id, first.tenant_id) for s in items):
        return None
    agent = first.agent_id if all(s.agent_id == first.agent_id for s in items) else DEFAULT_SEGMENT
    run = (
        first.run_id
        if agent != DEFAULT_SEGMENT and all(s.run_id == first.run_id for s in items)
        else DEFAULT_SEGMENT
    )
    return Scope(first.app_id, first.tenant_id, agent, run)


def action_in_scopes(
    target_scope: Scope, read_scopes: Iterable[Scope], patterns: Sequence[ScopePattern]
) -> bool:
    """True when the action writes and reads only inside ``patterns``, in one tenant."""
    reads = list(read_scopes)
    tenant = (target_scope.app_id, target_scope.tenant_id)
    return in_scopes(target_scope, patterns) and all(
        in_scopes(s, patterns) and (s.app_id, s.tenant_id) == tenant for s in reads
    )
