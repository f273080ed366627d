"""Audit records of reads, written a batch at a time instead of in a write of their own.

Every search, get and list is an audited request. Written one by one, each took a
``BEGIN IMMEDIATE`` transaction of its own after the read (0.05-0.09 ms of a 1 ms search),
and with it SQLite's write lock, which other processes' writers and searches then queued on.
So a read's record is kept here and written with the next write transaction of the store:
the next memory write (inside its own transaction, at no extra commit), a batch of
:data:`BATCH` reads, :data:`DELAY` seconds after the oldest one (a timer thread), before the
store lists requests, and at ``close()``. The list a caller reads therefore holds every read
made before it, in this process; another process sees them at the latest after ``DELAY``.
A process that dies loses at most the records of its last reads, those not yet written:
fewer than :data:`BATCH`, of less than ``DELAY`` seconds. The records of writes are
untouched: they commit with the write itself.
"""

from __future__ import annotations

import threading
from collections.abc import Callable

#: Reads whose records are written together.
BATCH = 64
#: Seconds after which a read's record is written even if no batch filled up.
DELAY = 1.0

#: (store name, operation, status, scope JSON, target id, latency ms, created at).
Record = tuple[str, str, str, str | None, str | None, float, float]


class ReadAudits:
    """The records of reads not yet written, guarded by the store's lock; ``flush`` is the
    store's (a write transaction, which takes them with :meth:`take`)."""

    def __init__(self, flush: Callable[[], None]) -> None:
        self._flush = flush
        self._records: list[Record] = []
        self._timer: threading.Timer | None = None
        self.batch = BATCH
        self.delay = DELAY

    def add(self, record: Record) -> bool:
        """Keep one; True when a batch is full and the caller should flush it now."""
        self._records.append(record)
        self._arm()
        return len(self._records) >= self.batch

    def take(self) -> list[Record]:
        """The records to write now (the caller's transaction writes them or gives them back);
        the timer of the next one starts with it."""
        self.close()
        records, self._records = self._records, []
        return records

    def give_back(self, records: list[Record]) -> None:
        """Records whose transaction rolled back: kept, first, for the next one."""
        self._records[:0] = records
        if self._records:
            self._arm()

    def __len__(self) -> int:
        return len(self._records)

    def _arm(self) -> None:
        if self._timer is None:
            self._timer = threading.Timer(self.delay, self._due)
            self._timer.name = "memcore-sqlite-audit"
            self._timer.daemon = True
            self._timer.start()

    def _due(self) -> None:
        try:
            self._flush()
        except Exception:  # a busy or full file: they stay kept, for the next write or close
            pass

    def close(self) -> None:
        """Stop the timer; the store flushes what is left first."""
        timer, self._timer = self._timer, None
        if timer is not None:
            timer.cancel()
