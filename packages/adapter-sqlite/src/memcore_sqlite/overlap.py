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
threads take turns on one core and hand the GIL to each other at every step: measured on the
benchmark, hybrid p50 4.34 ms one after the other against 5.31 ms overlapped. So each store
keeps a running ratio of an overlapped search's wall time to its two stages' CPU time (the
time they would take one after the other): about 0.65 with a free core, 1 or more without
one. Past :data:`PAYS_BELOW` the searches run sequentially, and one in :data:`PROBE_EVERY`
still overlaps to notice the core coming free. Either way the results are the same.
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

#: An overlapped search whose wall time is this share of its stages' CPU time or more did not
#: pay (below 1, for the CPU each stage loses to the other's company, about 5% at 100k).
PAYS_BELOW = 0.95
#: Weight of the newest overlapped search in the running ratio.
WEIGHT = 0.25
#: While the overlap does not pay, one eligible search in this many still overlaps.
PROBE_EVERY = 16

Side = TypeVar("Side")
Main = TypeVar("Main")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Payoff:
    """Whether overlapping has paid lately: the running ratio of overlapped searches' wall time
    to their stages' CPU time."""

    def __init__(self) -> None:
        self.ratio: float | None = None
        self._waited = 0

    def record(self, wall: float, cpu: float) -> None:
        if cpu <= 0:
            return
        ratio = wall / cpu
        self.ratio = ratio if self.ratio is None else self.ratio + WEIGHT * (ratio - self.ratio)

    def overlap_next(self) -> bool:
        """Whether the next eligible search should overlap (a probe, now and then, if not)."""
        if self.ratio is None or self.ratio < PAYS_BELOW:
            return True
        self._waited += 1
        if self._waited < PROBE_EVERY:
            return False
        self._waited = 0
        return True


def _timed(side: Callable[[], Side]) -> tuple[Side, float]:
    started = time.thread_time()
    out = side()
    return out, time.thread_time() - started


class Overlap:
    """One worker thread, started on first use and joined by :meth:`close`. Calls are
    serialised by the store's lock. ``adaptive`` off overlaps every eligible search."""

    def __init__(self, min_rows: float = MIN_ROWS) -> None:
        #: No overlap with one core: the two stages would only take turns.
        self.min_rows = min_rows if _cores() > 1 else float("inf")
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False
        self.adaptive = True
        self.payoff = Payoff()

    def pays(self, rows: int) -> bool:
        """Whether a shortlist over ``rows`` rows is worth handing to the thread now."""
        if rows < self.min_rows or self._closed:
            return False
        return not self.adaptive or self.payoff.overlap_next()

    def run(self, side: Callable[[], Side], main: Callable[[], Main]) -> tuple[Side, Main]:
        """``side()`` in the thread and ``main()`` here, at once; both results, or the first
        error (``main``'s if both fail). Returns only after ``side`` has finished, whatever
        happened: what it reads is the caller's to change afterwards."""
        with self._lock:
            if self._closed:  # the store closed: nothing may start a thread again
                here = main()
                return side(), here
            if self._pool is None:
                self._pool = ThreadPoolExecutor(1, thread_name_prefix="memcore-sqlite-search")
            pool = self._pool
        started, cpu = time.perf_counter(), time.thread_time()
        future = pool.submit(_timed, side)
        try:
            here = main()
        except BaseException:
            wait([future])
            raise
        cpu = time.thread_time() - cpu
        there, side_cpu = future.result()
        self.payoff.record(time.perf_counter() - started, cpu + side_cpu)
        return there, here

    def close(self) -> None:
        """Join the thread (after the shortlist it may be running)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
