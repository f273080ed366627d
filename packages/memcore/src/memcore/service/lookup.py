"""Finding a memory by id inside a tenant, and listing what a pattern holds.

A store's answer is never trusted to stay inside the pattern it was asked with: each one is
matched again here, so another tenant's memory answers like one that does not exist.
"""

from __future__ import annotations

from collections.abc import Iterator

from memcore import limits
from memcore.errors import InvalidInput, NotFound, StoreNotFound
from memcore.paging import pages
from memcore.ports import MemoryLookup
from memcore.scope import ScopePattern
from memcore.service.session import Session
from memcore.values import MemoryRecord

_SCOPE_PAGES = 1_000
#: A supersession chain longer than this is cut (a guard against a corrupt cycle).
_HISTORY_LIMIT = 100


def locate(session: Session, memory_id: str, reach: ScopePattern, *, where: str) -> MemoryRecord:
    """The memory ``memory_id`` in ``reach`` (checked to lie in the tenant), in one read
    where the store can, else through :func:`find`; ``where`` names the reach in the error."""
    store = session.store
    try:
        if isinstance(store, MemoryLookup):
            found = store.find_memory(session.store_name, reach, memory_id)
            if reach.matches(found.scope):  # a store's answer is not trusted to stay in
                return found
        else:
            return find(session, memory_id, reach)
    except StoreNotFound:
        raise  # the store itself is gone: say so, not "no such memory"
    except NotFound:
        pass
    raise NotFound(f"memory {memory_id!r} was not found in {where}", field="memory_id")


def find(session: Session, memory_id: str, reach: ScopePattern) -> MemoryRecord:
    """The memory ``memory_id`` in ``reach``: the session's own scope first, then each scope
    the store lists under it (a tenant has far fewer scopes than memories)."""
    store, name, own = session.store, session.store_name, session.scope
    missing = NotFound(f"memory {memory_id!r} was not found in {reach}", field="memory_id")
    if reach.matches(own):
        try:
            return store.get_memory(name, own, memory_id)
        except StoreNotFound:
            raise
        except NotFound:
            if reach.is_concrete:
                raise missing from None
    listing = pages(
        lambda token: store.list_scopes(name, reach, limit=limits.MAX_PAGE_LIMIT, next_token=token),
        max_pages=_SCOPE_PAGES,
    )
    for page in listing:
        for scope in page.items:
            if scope == own or not reach.matches(scope):
                continue
            try:
                return store.get_memory(name, scope, memory_id)
            except StoreNotFound:
                raise
            except NotFound:
                continue
    raise missing


def memories_in(
    session: Session, pattern: ScopePattern, *, max_pages: int
) -> Iterator[MemoryRecord]:
    """Every memory the store lists under ``pattern`` (and that ``pattern`` matches: a
    store's answer is not trusted to stay inside it), page after page."""
    listing = pages(
        lambda token: session.store.list_memories(
            session.store_name, pattern, limit=limits.MAX_PAGE_LIMIT, next_token=token
        ),
        max_pages=max_pages,
    )
    return (m for page in listing for m in page.items if pattern.matches(m.scope))


def history(session: Session, memory_id: str) -> list[MemoryRecord]:
    """The memory and every memory linked to it by supersession in the tenant, oldest first;
    a link that leads out of the tenant, or to a deleted memory, is left out."""
    tenant = session.tenant

    def located(linked: str) -> MemoryRecord:
        limits.check_id(linked)
        return locate(session, linked, tenant, where="this tenant")

    first = located(memory_id)
    found = {first.id: first}
    todo = [*first.supersedes, *filter(None, [first.superseded_by])]
    while todo and len(found) < _HISTORY_LIMIT:
        linked = todo.pop()
        if linked in found:
            continue
        try:
            memory = located(linked)
        except StoreNotFound:
            raise
        except (NotFound, InvalidInput):
            continue
        found[memory.id] = memory
        todo.extend([*memory.supersedes, *filter(None, [memory.superseded_by])])
    return sorted(found.values(), key=lambda m: (m.created_at or 0.0, m.version or 0, m.id))
