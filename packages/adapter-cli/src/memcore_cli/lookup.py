"""Find memories within the reach of the current scope: by id, by unique id prefix, by filter.

An exact id is asked of each scope directly (the scopes of a tenant are far fewer than its
memories); only when that fails is the argument taken as a prefix, which needs one pass over
the memories in reach. A prefix that matches several memories is refused with the candidates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator

from memcore import limits
from memcore.errors import InvalidInput, NotFound
from memcore.paging import every_item
from memcore.values import Memory
from memcore_cli.runtime import Runtime

#: Shorter arguments are never taken as a prefix: too many memories would share them.
MIN_PREFIX = 4
#: How many candidates an ambiguous prefix names.
SHOWN_CANDIDATES = 5


def memories_in_reach(runtime: Runtime) -> Iterator[Memory]:
    """Every memory the current scope reads (the tenant, or the --agent/--run below it)."""
    store = runtime.ready_store()
    pattern = runtime.settings.scope.read_pattern
    return every_item(
        lambda token: store.list_memories(
            runtime.store_name, pattern, limit=limits.MAX_PAGE_LIMIT, next_token=token
        )
    )


def find_memory(runtime: Runtime, memory_id: str) -> Memory:
    """The memory with this id, or with this unique id prefix, in the current reach."""
    limits.check_id(memory_id)
    try:
        return _exact(runtime, memory_id)
    except NotFound:
        if len(memory_id) < MIN_PREFIX:
            raise
    matches = [m for m in memories_in_reach(runtime) if m.id.startswith(memory_id)]
    if len(matches) == 1:
        return matches[0]
    pattern = runtime.settings.scope.read_pattern
    if not matches:
        raise NotFound(
            f"no memory id is or starts with {memory_id!r} in {pattern}", field="memory_id"
        )
    shown = ", ".join(m.id for m in matches[:SHOWN_CANDIDATES])
    more = f" and {len(matches) - SHOWN_CANDIDATES} more" if len(matches) > SHOWN_CANDIDATES else ""
    raise InvalidInput(
        f"id prefix {memory_id!r} matches {len(matches)} memories ({shown}{more}); "
        "give more characters",
        field="memory_id",
    )


def _exact(runtime: Runtime, memory_id: str) -> Memory:
    # Through the service: an id of another tenant is never found, whatever scope it names.
    return runtime.service().find(memory_id, pattern=runtime.settings.scope.read_pattern)


def select(runtime: Runtime, keep: Callable[[Memory], bool]) -> list[Memory]:
    """The memories in reach that ``keep`` accepts (``forget --filter``, ``count``)."""
    return [m for m in memories_in_reach(runtime) if keep(m)]
