"""Find a memory by id within the reach of the current scope, without a full scan.

The service's own lookup scans memory pages, which stops being practical at large sizes; the
scopes of a tenant are far fewer than its memories, so we ask each scope directly.
"""

from __future__ import annotations

from memcore import limits
from memcore.errors import NotFound
from memcore.paging import pages
from memcore.values import Memory
from memcore_cli.runtime import Runtime

_SCOPE_PAGES = 1_000


def find_memory(runtime: Runtime, memory_id: str) -> Memory:
    limits.check_id(memory_id)
    store = runtime.ready_store()
    name = runtime.store_name
    choice = runtime.settings.scope
    pattern = choice.read_pattern
    try:
        return store.get_memory(name, choice.scope, memory_id)
    except NotFound:
        if choice.reach == "run":
            raise NotFound(
                f"memory {memory_id!r} was not found in {pattern}", field="memory_id"
            ) from None
    listing = pages(
        lambda token: store.list_scopes(
            name, pattern, limit=limits.MAX_PAGE_LIMIT, next_token=token
        ),
        max_pages=_SCOPE_PAGES,
    )
    for page in listing:
        for scope in page.items:
            if scope == choice.scope or not pattern.matches(scope):
                continue
            try:
                return store.get_memory(name, scope, memory_id)
            except NotFound:
                continue
    raise NotFound(f"memory {memory_id!r} was not found in {pattern}", field="memory_id")
