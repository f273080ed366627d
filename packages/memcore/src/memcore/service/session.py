"""What every use case of one session reads: the store, its name, the scope and its tenant.

The service and its collaborators (dreams, the message log) share one :class:`Session`, so
a scope switched on the service is the scope each of them checks ids against.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TypeVar

import attrs

from memcore import limits
from memcore.errors import InvalidInput, NotFound, PermissionDenied, StoreNotFound
from memcore.policies import ScopePolicy
from memcore.ports import MemoryStore
from memcore.scope import Scope, ScopePattern

T = TypeVar("T")


@attrs.define
class Session:
    """One session's reach; ``scope`` is the one field that changes (a switched session)."""

    store: MemoryStore
    store_name: str
    scope: Scope
    policy: ScopePolicy
    read_only: bool

    @property
    def write_scope(self) -> Scope:
        return self.policy.write.write_scope(self.scope)

    @property
    def search_pattern(self) -> ScopePattern:
        return self.policy.search.read_pattern(self.scope)

    @property
    def profile_pattern(self) -> ScopePattern:
        return self.policy.profile.read_pattern(self.scope)

    @property
    def tenant(self) -> ScopePattern:
        return self.scope.tenant_pattern()

    def check_writable(self) -> None:
        if self.read_only:
            raise PermissionDenied(
                "this session is read-only (not the primary agent context)", field="agent_context"
            )

    def within_tenant(self, pattern: ScopePattern | None) -> ScopePattern:
        """``pattern`` once it is checked to lie inside this tenant; the tenant when None."""
        tenant = self.tenant
        if pattern is None:
            return tenant
        if not isinstance(pattern, ScopePattern):
            raise InvalidInput("scope must be a ScopePattern", field="scope")
        if not pattern.within(tenant):
            raise InvalidInput(f"scope {pattern} is outside this tenant", field="scope")
        return pattern


def owned(patterns: Iterable[ScopePattern], tenant: ScopePattern) -> bool:
    """Whether every pattern lies inside ``tenant`` (an empty set proves nothing: refused)."""
    listed = list(patterns)
    return bool(listed) and all(p.within(tenant) for p in listed)


def in_tenant(what: str, task_id: str, fetch: Callable[[], T], is_owned: Callable[[T], bool]) -> T:
    """``fetch()``'s answer when ``is_owned``; else the very NotFound a missing id gets."""
    limits.check_id(task_id, field="task_id")
    missing = NotFound(f"{what} {task_id!r} was not found in this tenant", field="task_id")
    try:
        found = fetch()
    except StoreNotFound:
        raise  # the store itself is gone: not an id's answer
    except NotFound:
        raise missing from None
    if not is_owned(found):
        raise missing
    return found


def refuse_outside(tenant: ScopePattern, scope: object, *, what: str, field: str) -> None:
    """Refuse ``scope`` unless it is a Scope inside ``tenant``: each scope a restore, a claim,
    a move or a link names is checked so, every one before anything is written."""
    if not isinstance(scope, Scope) or not tenant.matches(scope):
        raise InvalidInput(f"{what} is outside this session's tenant", field=field)
