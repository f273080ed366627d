"""A host's durable queue of writes not yet acknowledged by the backend."""

from __future__ import annotations

from typing import Protocol

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


class Outbox(Protocol):
    """A durable queue of writes that are not yet acknowledged by the backend.

    ``put`` returns only once the entry is durable; an entry leaves only through ``ack``.
    A full outbox refuses with :class:`memcore.errors.Unavailable` rather than dropping.
    """

    def put(self, entry: OutboxEntry) -> bool:
        """Store ``entry``; False when an entry with the same key is already queued."""
        ...

    def due(self, now: float, *, limit: int = 50) -> list[OutboxEntry]: ...

    def ack(self, key: str) -> None: ...

    def retry_later(self, key: str, *, next_attempt_at: float, error: str) -> None: ...

    def stats(self, now: float) -> OutboxStats: ...

    def close(self) -> None: ...
