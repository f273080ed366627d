"""Running a search's vector shortlist beside its lexical stage, on a second core.

The two signals of a hybrid search are independent until they are fused. The lexical stage
walks FTS5 (Python's ``sqlite3`` releases the GIL around each step); the vector shortlist is
numpy over the scope's cached codes (its ufuncs, partitions and matmuls release it too). On a
machine with two cores they overlap: one long-lived thread per store runs the shortlist while
the caller's thread runs the lexical stage on the store's connection. The thread never touches
SQLite, so the connection is only ever used by the thread holding the store's lock; the codes
it reads are loaded before it starts and cannot change while it runs, because the caller holds
that lock until the thread is done (writes change the codes under it).

The overlap pays only while a second core is free. In benchmark runs with another process
busy on this 2-core machine, hybrid p50 at 100k was 5.35 and 5.49 ms overlapped against 5.39
and 5.21 ms one after the other in the same runs, with CPU time equal to wall time (the two
threads never ran at once); with the load falling to 1.4, 3.49 against 3.95 ms. So the
store overlaps while the one-minute load average (runnable threads, its own searching thread
included) leaves at least :data:`FREE_CORES` of a core free, and runs the stages one after
the other otherwise. Either way the results are the same.

It pays only while the lexical stage waits on FTS5, whose every step releases the GIL. A
whole tenant's lexical stage served by its in-memory postings is numpy and Python: the two
threads then only took turns at the GIL (100k, in-process A/B at load 1.6: 1.97 ms overlapped
against 1.84 one after the other, CPU equal to wall), so such a search does not overlap
(:func:`memcore_sqlite.search.pipeline.ranked`).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

#: Scope size (rows with codes) from which the shortlist runs in the thread. Below it the
#: two stages' fight for the GIL costs what the overlap saves: in-process A/B on 3k-100k
#: MiniLM scopes, hybrid p50 +2-9% at 10k, -7 to +2% at 20k, -1 to -3% at 30k, -13 to +2% at
#: 40k, -8 to -23% at 100k (the adapter's README, "Performance").
MIN_ROWS = 30_000

#: The overlap needs the load average at least this far below the number of cores.
FREE_CORES = 0.5

Side = TypeVar("Side")
Main = TypeVar("Main")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


def _load() -> float:
    """The one-minute load average; 0 where the system does not tell (Windows)."""
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return 0.0


class Overlap:
    """One worker thread, started on first use and joined by :meth:`close`. Calls are
    serialised by the store's lock."""

    def __init__(self, min_rows: float = MIN_ROWS) -> None:
        #: No overlap with one core: the two stages would only take turns.
        self.cores = _cores()
        self.min_rows = min_rows if self.cores > 1 else float("inf")
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False
        #: Off: every eligible search overlaps, however busy the machine.
        self.adaptive = True
        self.load = _load
        #: Eligible searches so far, and how many of them overlapped (for the benchmark).
        self.eligible = self.overlapped = 0

    def fits(self, rows: int) -> bool:
        """Whether a shortlist over ``rows`` rows may be handed to the thread."""
        return rows >= self.min_rows and not self._closed

    def run(self, side: Callable[[], Side], main: Callable[[], Main]) -> tuple[Side, Main]:
        """``side()`` in the thread and ``main()`` here, at once, or one after the other (main
        first) while no core is free; both results, or the first error (``main``'s
        if both fail). Returns only after ``side`` has finished, whatever happened: what it
        reads is the caller's to change afterwards."""
        with self._lock:
            together = not self._closed and (not self.adaptive or self.core_free())
            self.eligible += 1
            self.overlapped += together
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
        return there, here

    def core_free(self) -> bool:
        """Whether the load average (the searching thread included) leaves at least
        :data:`FREE_CORES` of a core idle for the thread."""
        return self.load() <= self.cores - FREE_CORES

    def close(self) -> None:
        """Join the thread (after the shortlist it may be running)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
