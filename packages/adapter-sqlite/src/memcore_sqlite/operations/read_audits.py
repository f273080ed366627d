"""Audit records of reads, written a batch at a time instead of in a write of their own.

Every search, get and list is an audited request. Written one by one, each took a
``BEGIN IMMEDIATE`` transaction of its own after the read (0.05-0.09 ms of a 1 ms search),
and with it SQLite's write lock, which other processes' writers and searches then queued on.
So a read's record is kept here and written with the next write transaction of the store:
the next memory write (inside its own transaction, at no extra commit), a batch of
:data:`BATCH` reads, :data:`DELAY` seconds after the oldest one (a thread of the store),
before the store lists requests, at ``close()``, and when the interpreter exits (a store
never closed). The list a caller reads therefore holds every read made before it, in this
process; another process sees them at the latest after ``DELAY``. A process that is killed
loses the records of its last reads, those not yet written: fewer than :data:`BATCH`, of
less than ``DELAY`` seconds. The records of writes are untouched: they commit with the
write itself.

While another process holds the write lock, a write of these records alone waits for it at
most :data:`WAIT` seconds (the read that fills a batch does not wait at all), and what it
could not write stays kept for the next try. At ``close()`` records still kept after that
wait are dropped, with a log line, as a killed process's would be: they record reads, not
anything a user stored, and closing (an agent's shutdown) must not wait out another
process's lock for them.
"""

from __future__ import annotations

import atexit
import threading
import time
import weakref
from collections.abc import Callable

#: Reads whose records are written together.
BATCH = 64
#: Seconds after which a read's record is written even if no batch filled up.
DELAY = 1.0
#: Seconds a write of reads' records alone waits for another process's write lock.
WAIT = 0.5

#: (store name, operation, status, scope JSON, target id, latency ms, created at).
Record = tuple[str, str, str, str | None, str | None, float, float]


class ReadAudits:
    """The records of reads not yet written, guarded by the store's lock; ``flush`` is the
    store's (a write transaction, which takes them with :meth:`take`). One thread per store,
    started with the first record, writes them when they are due (``flush(wait)``, waiting
    at most ``wait`` seconds for another process's write lock): starting a thread per
    batch cost 35 us at the median but 3.4 ms at p95 on a busy machine, in the search that
    started it."""

    def __init__(self, flush: Callable[[float], None]) -> None:
        self._flush = flush
        self._records: list[Record] = []
        #: When the oldest record kept must be written (``time.monotonic``), None if none is.
        self._due: float | None = None
        self._wake = threading.Condition(threading.Lock())
        self._thread: threading.Thread | None = None
        self._closed = False
        self.batch = BATCH
        self.delay = DELAY
        self.wait = WAIT
        _LIVE.add(self)

    def add(self, record: Record) -> bool:
        """Keep one; True when a batch is full and the caller should flush it now."""
        self._records.append(record)
        self._arm()
        return len(self._records) >= self.batch

    def take(self) -> list[Record]:
        """The records to write now (the caller's transaction writes them or gives them back)."""
        self._due = None
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
        if self._due is not None or self._closed:
            return
        self._due = time.monotonic() + self.delay
        self.start()
        with self._wake:
            self._wake.notify()

    def start(self) -> None:
        """Start the writing thread now (it then waits for a record). The first read of a
        store started it, and ``Thread.start`` waits until the new thread runs: on a busy
        machine that was 20-60 ms of the session's first search, measured in an agent's loop.

        Checked and started under the lock ``close`` takes: a warm-up starting it in the
        background while the store closes (a server stopped at once) saw ``close`` join the
        thread between its creation and its start, which raises."""
        with self._wake:
            if self._thread is None and not self._closed:
                self._thread = threading.Thread(
                    target=self._run, name="memcore-sqlite-audit", daemon=True
                )
                self._thread.start()

    def write_now(self) -> None:
        """Write what is kept (when due, at exit); a failure leaves them kept."""
        try:
            self._flush(self.wait)
        except Exception:  # a busy or full file: they stay kept, for the next try
            pass

    def _run(self) -> None:
        while True:
            with self._wake:
                while not self._closed:
                    due = self._due
                    left = None if due is None else due - time.monotonic()
                    if left is not None and left <= 0:
                        break
                    self._wake.wait(left)
                if self._closed:
                    return
            self.write_now()

    def close(self) -> None:
        """Stop the thread (after the write it may be making); without the store's lock,
        which that write takes. The store writes what is left itself."""
        with self._wake:
            self._closed = True
            self._wake.notify()
        if self._thread is not None:
            self._thread.join()


#: Every store's kept records, written when the interpreter exits.
_LIVE: weakref.WeakSet[ReadAudits] = weakref.WeakSet()


@atexit.register
def _at_exit() -> None:
    for audits in list(_LIVE):
        if len(audits):
            audits.write_now()
