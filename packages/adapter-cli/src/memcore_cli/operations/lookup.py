"""Find memories and tasks within the reach of the current scope: by id, by unique id
prefix, by filter.

An exact id is asked of each scope directly (the scopes of a tenant are far fewer than its
memories); only when that fails is the argument taken as a prefix, which needs one pass over
the memories in reach. A prefix that matches several memories is refused with the candidates.
Write and dream task ids are looked up the same way, through the service's tenant checks: a
prefix is matched only against the tenant's own tasks, and one that matches none answers
exactly as an unknown id does.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterable, Iterator
from typing import TypeVar

from memcore import limits
from memcore.errors import InvalidInput, NotFound
from memcore.paging import every_item
from memcore.values import DreamTask, MemoryRecord, MemoryTask, Page
from memcore_cli.wiring.runtime import Runtime

T = TypeVar("T", MemoryTask, DreamTask)

#: Shorter arguments are never taken as a prefix: too many memories would share them.
MIN_PREFIX = 4
#: How many candidates an ambiguous prefix names.
SHOWN_CANDIDATES = 5


def memories_in_reach(runtime: Runtime) -> Iterator[MemoryRecord]:
    """Every memory the current scope reads (the tenant, or the --agent/--run below it)."""
    store = runtime.ready_store(create=False)
    pattern = runtime.settings.scope.read_pattern
    return every_item(
        lambda token: store.list_memories(
            runtime.store_name, pattern, limit=limits.MAX_PAGE_LIMIT, next_token=token
        )
    )


def find_memory(runtime: Runtime, memory_id: str) -> MemoryRecord:
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
    raise InvalidInput(
        _ambiguous(memory_id, [m.id for m in matches], "memories"), field="memory_id"
    )


def find_task(runtime: Runtime, task_id: str) -> MemoryTask:
    """The write task with this id, or with this unique id prefix, in the current reach."""
    service = runtime.service(create=False)
    return _by_prefix(task_id, service.task, _listing(runtime, service.tasks), "write tasks")


def find_dream_task(runtime: Runtime, task_id: str) -> DreamTask:
    """The dream task with this id, or with this unique id prefix, in the current reach: with
    ``--agent`` a task over other agents' memories answers as a missing id, as their
    memories do."""
    service = runtime.service(create=False)
    listing = _listing(runtime, service.dreams.tasks)
    exact = functools.partial(service.dreams.task, pattern=runtime.settings.scope.read_pattern)
    return _by_prefix(task_id, exact, listing, "dream tasks")


def _listing(runtime: Runtime, page: Callable[..., Page[T]]) -> Callable[[], Iterator[T]]:
    """Every item a service listing (``tasks``, ``dream_tasks``) gives in the current reach."""
    pattern = runtime.settings.scope.read_pattern
    return lambda: every_item(
        lambda token: page(limit=limits.MAX_PAGE_LIMIT, next_token=token, pattern=pattern)
    )


def action_ids(runtime: Runtime, task_id: str, given: list[str]) -> list[str]:
    """Each of ``given`` as the full id of the one action of this (tenant-checked) dream task
    it is or starts with; one that matches none is passed on as given, for the store to
    answer ``not_found`` as it does for any unknown action."""
    service = runtime.service(create=False)
    known = [
        a.id
        for a in every_item(
            lambda token: service.dreams.actions(
                task_id, limit=limits.MAX_PAGE_LIMIT, next_token=token
            )
        )
    ]
    resolved = []
    for action_id in given:
        limits.check_id(action_id, field="action_id")
        matches = (
            [] if len(action_id) < MIN_PREFIX else [k for k in known if k.startswith(action_id)]
        )
        if action_id in known or not matches:
            resolved.append(action_id)
        elif len(matches) == 1:
            resolved.append(matches[0])
        else:
            raise InvalidInput(_ambiguous(action_id, matches, "actions"), field="action_id")
    return resolved


def _by_prefix(
    given: str, exact: Callable[[str], T], every: Callable[[], Iterable[T]], what: str
) -> T:
    """``exact(given)``, else the one listed task whose id starts with ``given``. None
    matching re-raises the very error an unknown id gets, so a prefix learns nothing about
    other tenants; several matching are refused with their count."""
    limits.check_id(given, field="task_id")
    try:
        return exact(given)
    except NotFound as missing:
        if len(given) < MIN_PREFIX:
            raise
        matches = [t for t in every() if t.id.startswith(given)]
        if not matches:
            raise missing from None
    if len(matches) == 1:
        return exact(matches[0].id)
    raise InvalidInput(_ambiguous(given, [t.id for t in matches], what), field="task_id")


def _ambiguous(given: str, ids: list[str], what: str) -> str:
    shown = ", ".join(ids[:SHOWN_CANDIDATES])
    more = f" and {len(ids) - SHOWN_CANDIDATES} more" if len(ids) > SHOWN_CANDIDATES else ""
    return f"id prefix {given!r} matches {len(ids)} {what} ({shown}{more}); give more characters"


def _exact(runtime: Runtime, memory_id: str) -> MemoryRecord:
    # Through the service: an id of another tenant is never found, whatever scope it names.
    # In one read where the store can: scope by scope, each miss was a failed GetMemory in
    # the request log (5,000 of them for one `get` in a tenant of 5,000 runs).
    return runtime.service(create=False).locate(
        memory_id, pattern=runtime.settings.scope.read_pattern
    )


def select(runtime: Runtime, keep: Callable[[MemoryRecord], bool]) -> list[MemoryRecord]:
    """The memories in reach that ``keep`` accepts (``forget --filter``, ``count``)."""
    return [m for m in memories_in_reach(runtime) if keep(m)]
