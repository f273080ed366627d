"""Running a search's vector shortlist beside its lexical stage, on a second core.

The two signals of a hybrid search are independent until they are fused. The lexical stage
walks FTS5 (Python's ``sqlite3`` releases the GIL around each step); the vector shortlist is
numpy over the scope's cached codes (its ufuncs, partitions and matmuls release it too). On a
machine with two cores they overlap: one long-lived thread per store runs the shortlist while
the caller's thread runs the lexical stage on the store's connection. The thread never touches
SQLite, so the connection is only ever used by the thread holding the store's lock; the codes
it reads are loaded before it starts and cannot change while it runs, because the caller holds
that lock until the thread is done (writes change the codes under it).

The overlap pays only while the second core is free. When another process holds it, the two
threads take turns on one core and hand the GIL to each other at every step: in one benchmark
run, hybrid p50 4.57 ms one after the other against 5.24 ms overlapped at 100k. So each store
times both ways (from the fork to both stages done) and keeps a running mean of each; its
searches go the way that has been faster lately, and one in :data:`PROBE_EVERY` goes the
other way, to notice a change. The same queries come either way, so the means compare; when
the two are close, a wrong pick costs little. Either way the results are the same.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

#: Scope size (rows with codes) from which the shortlist runs in the thread. Below it the
#: two stages' fight for the GIL costs what the overlap saves: in-process A/B on 10k-100k
#: MiniLM scopes, hybrid p50 +2-9% at 10k, -7 to +2% at 20k, -1 to -3% at 30k, -13 to +1% at
#: 40k, -23% at 100k (the adapter's README, "Performance").
MIN_ROWS = 30_000

#: Weight of the newest search in each way's running mean.
WEIGHT = 0.25
#: One eligible search in this many goes the way that has been slower lately.
PROBE_EVERY = 16

Side = TypeVar("Side")
Main = TypeVar("Main")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Payoff:
    """Which way the two stages have been faster lately: running means of their time
    overlapped (``True``) and one after the other (``False``)."""

    def __init__(self) -> None:
        self.mean: dict[bool, float | None] = {True: None, False: None}
        self._count = 0

    def overlap_next(self) -> bool:
        """Whether the next eligible search should overlap."""
        self._count += 1
        together, apart = self.mean[True], self.mean[False]
        if together is None or apart is None:
            return together is None  # each way once, overlapped first
        faster = together < apart
        return faster if self._count % PROBE_EVERY else not faster

    def record(self, overlapped: bool, seconds: float) -> None:
        mean = self.mean[overlapped]
        self.mean[overlapped] = seconds if mean is None else mean + WEIGHT * (seconds - mean)


class Overlap:
    """One worker thread, started on first use and joined by :meth:`close`. Calls are
    serialised by the store's lock. With ``adaptive`` off every eligible search overlaps."""

    def __init__(self, min_rows: float = MIN_ROWS) -> None:
        #: No overlap with one core: the two stages would only take turns.
        self.min_rows = min_rows if _cores() > 1 else float("inf")
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.adaptive = True
        self.payoff = Payoff()

    def fits(self, rows: int) -> bool:
        """Whether a shortlist over ``rows`` rows may be handed to the thread."""
        return rows >= self.min_rows and not self._closed

    def run(self, side: Callable[[], Side], main: Callable[[], Main]) -> tuple[Side, Main]:
        """``side()`` in the thread and ``main()`` here, at once, or one after the other (main
        first) when that has been faster lately; both results, or the first error (``main``'s
        if both fail). Returns only after ``side`` has finished, whatever happened: what it
        reads is the caller's to change afterwards."""
        started = time.perf_counter()
        with self._lock:
            together = not self._closed and (not self.adaptive or self.payoff.overlap_next())
            if together and self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="memcore-sqlite-search")
            pool = self._pool
        if not together or pool is None:  # closed: nothing may start a thread again
            here = main()
            there = side()
        else:
            future = pool.submit(side)
            try:
                here = main()
            except BaseException:
                wait([future])
                raise
            there = future.result()
        self.payoff.record(together, time.perf_counter() - started)
        return there, here

    def close(self) -> None:
        """Join the thread (after the shortlist it may be running)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
