"""The end-of-session consolidation pass: a local store dreams over the session's tenant.

It runs on the provider's lane (never on the agent's thread), after the session's writes
were delivered, in ``safe_auto`` mode: merges and updates that clear the service's default
thresholds apply, deletions only ever wait as proposals. It costs what the session added,
not what the tenant holds: on a store that can, it plans only the memories written since the
last pass (at most :data:`MAX_NEW`), each against its nearest in the tenant and the memories
among the newest :data:`MAX_MEMORIES` that share a rare word with it; a full pass is
``memcore dream create``. A session end never waits for it.
"""

from __future__ import annotations

import logging
from concurrent.futures import Future
from typing import Any

from memcore.errors import MemcoreError

logger = logging.getLogger(__name__)

#: The newest memories a pass reads: a session pass compares its new ones with these (and
#: weighs words over them); a store without one plans all their pairs.
MAX_MEMORIES = 500
#: The new memories a session pass plans; more wait for a full pass.
MAX_NEW = 200


def wants_pass(store: Any) -> bool:
    """Only stores that consolidate locally: a cloud dream task is the user's call to make."""
    return bool(getattr(store, "LOCAL_DREAM", False))


def consolidate(runtime: Any) -> str | None:
    """One pass over the current tenant; the dream task's id, or None when skipped."""
    if runtime.read_only:
        return None
    # Only a store that is already open: a session end never waits for a backend to come up.
    if not wants_pass(runtime.handle.store):
        return None
    try:
        store = runtime.handle.ready()
        session_pass = getattr(store, "create_session_dream_task", None)
        if session_pass is not None:
            task = session_pass(
                runtime.store_name,
                runtime.scope.tenant_pattern(),
                apply_mode="safe_auto",
                max_new=MAX_NEW,
                max_memories=MAX_MEMORIES,
            )
        else:
            task = store.create_dream_task(
                runtime.store_name,
                runtime.scope.tenant_pattern(),
                apply_mode="safe_auto",
                max_memories=MAX_MEMORIES,
            )
    except MemcoreError as exc:
        logger.warning("tablestore-mem: consolidation skipped (%s: %s)", exc.code, exc)
        return None
    logger.info(
        "tablestore-mem: consolidation %s %s (%s)", task.id, task.status, dict(task.action_counts)
    )
    return str(task.id)


def schedule(runtime: Any) -> Future[Any] | None:
    """Queue a pass on the runtime's lane; the caller does not wait for it. A pass that
    has not started when the session shuts down is skipped (None): its memories are the
    next session end's new ones."""
    if runtime.read_only:
        return None
    future: Future[Any] = runtime.in_background(lambda: consolidate(runtime))
    return future
