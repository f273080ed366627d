"""Running a search's vector shortlist beside its lexical stage, on a second core.

The two signals of a hybrid search are independent until they are fused. The lexical stage
walks FTS5 (Python's ``sqlite3`` releases the GIL around each step); the vector shortlist is
numpy over the scope's cached codes (its ufuncs, partitions and matmuls release it too). On a
machine with two cores they overlap: one long-lived thread per store runs the shortlist while
the caller's thread runs the lexical stage on the store's connection. The thread never touches
SQLite, so the connection is only ever used by the thread holding the store's lock; the codes
it reads are loaded before it starts and cannot change while it runs, because the caller holds
that lock until the thread is done (writes change the codes under it).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor, wait
from typing import TypeVar

#: Scope size (rows with codes) from which the shortlist runs in the thread. Below it the
#: two stages' fight for the GIL costs what the overlap saves: in-process A/B on 10k-100k
#: MiniLM scopes, hybrid p50 +2-9% at 10k, -7 to +2% at 20k, -1 to -3% at 30k, -13 to +1% at
#: 40k, -23% at 100k (the adapter's README, "Performance").
MIN_ROWS = 30_000

Side = TypeVar("Side")
Main = TypeVar("Main")


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not Linux
        return os.cpu_count() or 1


class Overlap:
    """One worker thread, started on first use and joined by :meth:`close`."""

    def __init__(self, min_rows: float = MIN_ROWS) -> None:
        #: No overlap with one core: the two stages would only take turns.
        self.min_rows = min_rows if _cores() > 1 else float("inf")
        self._pool: ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._closed = False

    def pays(self, rows: int) -> bool:
        """Whether a shortlist over ``rows`` rows is worth handing to the thread."""
        return rows >= self.min_rows and not self._closed

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
        future = pool.submit(side)
        try:
            here = main()
        except BaseException:
            wait([future])
            raise
        return future.result(), here

    def close(self) -> None:
        """Join the thread (after the shortlist it may be running)."""
        with self._lock:
            self._closed = True
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
