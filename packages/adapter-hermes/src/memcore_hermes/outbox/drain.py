"""What waits in the spool, and delivering it before a command uses the backend.

Writes spooled during an outage used to leave only when an agent ran; every
``hermes tablestore-mem`` command that touches the backend now sends them first (bounded in
time, through the same deliverer as the agent: in order, never twice), so a search after the
backend came back sees them.
"""

from __future__ import annotations

import time
from typing import Any

from memcore.config import MemcoreConfig
from memcore.errors import MemcoreError
from memcore.ports import MemoryStore
from memcore_hermes.config.home import HermesHome

#: The longest a command waits for the spool to drain (seconds; a call's own timeout is
#: shorter when the config says so).
MAX_DRAIN_S = 10.0
#: Waiting writes described in ``doctor`` (the depth counts them all).
_SHOWN = 20
_TEXT = 120


def writes_wait(home: HermesHome) -> bool:
    """Whether the spool holds writes not yet delivered (their store is created for them)."""
    if not home.spool_file.exists():
        return False
    from memcore_hermes.outbox.spool import SqliteOutbox

    spool = SqliteOutbox(home.spool_file)
    try:
        return spool.stats(time.time()).depth > 0
    finally:
        spool.close()


def drain_spool(home: HermesHome, store: MemoryStore, config: MemcoreConfig) -> dict[str, Any]:
    """Deliver what waits (when anything does), within ``min(config.timeout, MAX_DRAIN_S)``.

    Returns how many were delivered and how many still wait; never raises for the backend
    (the command's own call reports it).
    """
    if not home.spool_file.exists():
        return {"delivered": 0, "waiting": 0}
    from memcore_hermes.outbox.delivery import Deliverer, RetryPolicy, StoreHandle, in_flight_s
    from memcore_hermes.outbox.lane import Lane
    from memcore_hermes.outbox.spool import SqliteOutbox

    spool = SqliteOutbox(home.spool_file)
    try:
        if spool.stats(time.time()).depth == 0:
            spool.close()
            return {"delivered": 0, "waiting": 0}
    except MemcoreError:
        spool.close()
        raise
    handle = StoreHandle.opened(store, config)
    budget = min(config.timeout, MAX_DRAIN_S)
    deliverer = Deliverer(
        spool,
        handle,
        retry=RetryPolicy(),
        lease_s=max(5.0, config.timeout * 2),
        in_flight_s=in_flight_s(config),
    )
    lane = Lane("command-drain", deliverer.drain)
    lane.flush(budget)
    deliverer.stopping = True
    if lane.stop(0.1):
        try:
            waiting = spool.stats(time.time()).depth
        finally:
            spool.close()
    else:  # a call still running: it ends on its own; the lease guards against a resend
        waiting = -1
    return {"delivered": deliverer.delivered, "waiting": waiting}


def waiting_writes(spool: Any, *, now: float | None = None) -> list[dict[str, Any]]:
    """The first waiting writes: what each is, its scope, age, attempts and last error."""
    from memcore_hermes.outbox.entries import MessagesWrite, MirrorWrite, TextWrite, decode

    now = time.time() if now is None else now
    out: list[dict[str, Any]] = []
    for entry in spool.pending(limit=_SHOWN):
        item: dict[str, Any] = {
            "kind": entry.kind,
            "age_s": round(max(0.0, now - entry.created_at), 1),
            "attempts": entry.attempts,
            "error": entry.last_error,
        }
        try:
            write = decode(entry)
        except MemcoreError:
            item["text"] = None
        else:
            item["scope"] = str(write.scope)
            if isinstance(write, TextWrite):
                item["text"] = write.text[:_TEXT]
            elif isinstance(write, MessagesWrite):
                item["text"] = " / ".join(m.content for m in write.messages)[:_TEXT]
            elif isinstance(write, MirrorWrite):
                item["text"] = f"{write.action} {write.target}: {write.content}"[:_TEXT]
        out.append(item)
    return out
