"""The values of a host's durable queue of writes not yet acknowledged by the backend.

The queue itself is the host's (``memcore_hermes.outbox.spool.SqliteOutbox``); there is no port for
it: its one consumer, the host's delivery, needs the whole spool (leases, dead letters,
expiry, checkpoints), and a port holding a fraction of that was never used.
"""

from __future__ import annotations

import attrs


@attrs.frozen
class OutboxEntry:
    """A write waiting to be acknowledged; ``key`` makes its replay idempotent."""

    key: str
    kind: str
    payload: str
    attempts: int = 0
    created_at: float = 0.0
    next_attempt_at: float = 0.0
    last_error: str | None = None


@attrs.frozen
class OutboxStats:
    depth: int
    bytes: int
    oldest_age_s: float | None
    dropped_full: int = 0
    last_error: str | None = None
