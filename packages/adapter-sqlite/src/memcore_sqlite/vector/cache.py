"""Per-scope vector codes kept in memory, and the exact two-stage search over them.

One entry per (store, scope pattern) holds the codes (:mod:`memcore_sqlite.vector.quantize`) of the
memories that pattern matches, loaded from the code pages (:mod:`memcore_sqlite.vector.code_pages`).
Scopes of at most :data:`EXACT_ROWS` rows keep their float vectors in memory and are scanned
exactly. Larger ones are searched in stages, and the result is exact by construction: every
stage that leaves a row out does so on a bound proving the row cannot be among the best.

1. Every row's cosine has an upper bound from its sketch (:mod:`memcore_sqlite.vector.sketch`):
   float32 principal coordinates, Cauchy-Schwarz on the rest, plus the int8 code's error.
2. The int8 estimates (error bound :func:`memcore_sqlite.vector.quantize.error_bound`) of the few
   hundred rows the sketch rates best give lower bounds; the ``n``-th best of them is a lower
   bound ``L`` on the ``n``-th best cosine, as ``n`` rows score at least their lower bound.
3. A row whose sketch bound is below ``L`` cannot be among the ``n`` best; neither can a row
   whose int8 coordinates past the head (a tighter sketch bound) or whose int8 estimate plus
   its error bound is below ``L`` (raised to the ``n``-th best int8 lower bound so far).
   Rows whose bounds are not numbers are kept. A caller that has proved that no row below
   a cosine ``at_least`` can reach its hits (a hybrid search's rows holding no query term,
   :mod:`memcore_sqlite.search.fused_order`) raises ``L`` to it in each of these stages,
   and gets the head read block by block, each block only for the rows whose bound from the
   blocks before may still reach it (:mod:`memcore_sqlite.vector.shortlist`).
   Until a scope's sketch is built (in a thread, from its first two-stage search on),
   steps 1-3 are skipped and every row's int8 bounds are computed: slower, equally exact.
4. The stored vectors read from SQLite (float16, :mod:`memcore_sqlite.vector.stored`, upcast
   to float32) give the exact cosines of the rows that remain and that the order read depends
   on (:mod:`memcore_sqlite.search.fused_order`), with the same ties (newest
   first) as the exact scan.

Every code, sketch and in-memory matrix is made from the stored vectors, so "exact" means
exact against an exact scan of what is stored. Sign bits are not used to choose rows (nor
kept since schema 9): they have no useful bound (a row's Hamming
distance only bounds its cosine by the norm of the query's largest agreeing components), and
on templated memories many rows share the best rows' sign pattern, so a cut by Hamming
distance lost true best rows. Writes made by this process update the entries in place (the
sketch too, on its basis); a write by another process shows up as a new store generation
and the entry is reloaded.
numpy is imported here only, and only when a store has an embedder.
"""

from __future__ import annotations

import atexit
import logging
import os
import threading
import time
from collections import OrderedDict, defaultdict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

from memcore_sqlite.vector import plain_pages, quantize, stored
from memcore_sqlite.vector.quantize import Codes
from memcore_sqlite.vector.shortlist import Later, Shortlister
from memcore_sqlite.vector.sketch import BuildStopped, Sketch, Stop

if TYPE_CHECKING:
    import numpy as np

_log = logging.getLogger(__name__)

#: Held by the one sketch build that runs at a time in this process. Builds side by side
#: slowed each other many times over (each one's BLAS calls start threads on the same cores:
#: eight 384-dimension eigendecompositions at once took 12 times one's time on 2 cores), so
#: under writes and searches they piled up by the hundred, until OpenBLAS aborted the process.
_BUILD_TURN = threading.Lock()
#: Set when the process exits: every background build stops at its next block of rows.
_EXITING = threading.Event()
#: The background builds alive (started, not yet ended), for the exit hook to wait for.
_BUILDS: set[threading.Thread] = set()
_BUILDS_LOCK = threading.Lock()
#: Seconds a build started by a search waits before it begins: a one-shot command (one
#: search, then close) never starts one; its first block (the basis, about 50 ms of
#: uninterruptible BLAS at 100k rows) was added to every such command's close.
BUILD_GRACE_S = 0.25
#: How long a closing store, or the exit, waits for builds to stop (they stop within a block
#: of rows, milliseconds; a wait this long means a build is stuck elsewhere).
STOP_WAIT_S = 10.0


def _after_fork_in_child() -> None:
    """The turn and the list are the parent's threads': none of those runs in a forked
    child, so a turn held at the fork would never be given back, and the child (which opens
    a store of its own) would never build a sketch."""
    global _BUILD_TURN, _BUILDS_LOCK
    _BUILD_TURN = threading.Lock()
    _BUILDS_LOCK = threading.Lock()
    _BUILDS.clear()


os.register_at_fork(after_in_child=_after_fork_in_child)


@atexit.register
def _stop_builds() -> None:
    """Let no build be cut off mid-BLAS by the interpreter's exit: a daemon thread stopped
    inside an OpenBLAS call left OpenBLAS's own exit handler waiting forever for its worker
    threads (a process that had searched a large scope hung at exit, 1 to 3 times in 40 on
    a 2-core machine). atexit handlers run while daemon threads still do."""
    _EXITING.set()
    with _BUILDS_LOCK:
        alive = list(_BUILDS)
    deadline = time.monotonic() + STOP_WAIT_S
    for thread in alive:
        thread.join(max(0.0, deadline - time.monotonic()))


PatternKey = tuple[int, tuple[str, str, str, str]]
Scope4 = tuple[str, str, str, str]
#: Reads the stored vectors of the given seqs: (seq, blob) pairs (:mod:`~memcore_sqlite.vector.stored`).
FetchVectors = Callable[[Sequence[int]], Iterable[tuple[int, bytes]]]
#: Rows whose norms :func:`_longest` takes at a time (768 KB as float32 at 384 dimensions).
_NORM_ROWS = 512
#: Scopes up to this size keep their float vectors in memory and are scanned exactly
#: (about 3 MB at 384 dimensions).
EXACT_ROWS = 2_000
#: One write's new vectors in one scope: (scope, their codes, their float32 rows).
Written = tuple[tuple[str, str, str, str], Codes, "np.ndarray"]


def _np() -> Any:
    import numpy

    return numpy


def pattern_matches(pattern: Scope4, scope: Scope4) -> bool:
    return all(p == "*" or p == s for p, s in zip(pattern, scope))


def exact_top(
    seqs: np.ndarray, matrix: np.ndarray, query: np.ndarray, n: int
) -> list[tuple[int, float]]:
    """The ``n`` best (seq, cosine) of a float matrix: score descending, then newest first.

    Only the rows scoring at least the ``n``-th best score can be among the ``n`` best, so
    when every score is a number those are found by a partition and only they are sorted:
    the same rows in the same order as sorting them all (a 1k scope: 100 of 1,000 rows).
    """
    np_ = _np()
    if not len(seqs) or n <= 0:
        return []
    scores = np_.einsum("ij,j->i", matrix, query)
    if n < len(scores) and np_.isfinite(scores).all():
        edge = np_.partition(scores, len(scores) - n)[len(scores) - n]
        rows = np_.flatnonzero(scores >= edge)
        order = rows[np_.lexsort((-seqs[rows], -scores[rows]))[:n]]
    else:
        order = np_.lexsort((-seqs, -scores))[:n]
        order = order[np_.isfinite(scores[order])]
    return list(zip(seqs[order].tolist(), scores[order].tolist()))


def _longest(q8: np.ndarray, scales: np.ndarray) -> float:
    """The largest norm among int8 codes (squares summed in float32: integers below 2**24,
    exact), widened a little for the rounding of the scale's product.

    In blocks of :data:`_NORM_ROWS`, whose float copy stays in cache and reuses its memory:
    blocks of 4,096 rows cost a fresh process 50 ms at 100k rows against 20 ms."""
    np_ = _np()
    out = 0.0
    step = _NORM_ROWS
    for start in range(0, len(q8), step):
        block = q8[start : start + step].astype(np_.float32)
        norms = np_.sqrt(np_.einsum("ij,ij->i", block, block)) * np_.abs(
            scales[start : start + step]
        )
        if len(norms):
            top = float(norms.max()) if np_.isfinite(norms).all() else float("inf")
            out = max(out, top)
    return out * 1.0001


class _Entry:
    """Growable codes: appends are amortised O(d), removals swap in the last row.

    A scope of at most ``exact_rows`` rows also keeps its float vectors (``matrix``, aligned
    with the codes) and is scanned exactly: for small scopes that is cheaper than reading
    candidates back from the file, and its cost does not depend on the file's size.
    """

    def __init__(self, generation: int, codes: Codes, matrix: np.ndarray | None) -> None:
        self.generation = generation
        self.n = len(codes)
        self._codes = codes
        self.matrix = matrix
        #: (seqs ascending, their rows or None when the codes are in seq order already) for
        #: :meth:`positions`; None until needed after a change.
        self._order: tuple[np.ndarray, np.ndarray | None] | None = None
        #: The rows' projections (:mod:`memcore_sqlite.vector.sketch`), built in the background
        #: from the first two-stage search on (:meth:`ready_sketch`) and kept up to date by
        #: writes from then on.
        self._sketch: Sketch | None = None
        #: Held by writes while they change the rows, and by a sketch build while it takes
        #: its snapshot and installs its result; ``_changes`` counts the writes, so a build
        #: that a write overtook is thrown away.
        self._sketch_lock = threading.Lock()
        self._changes = 0
        self._building: threading.Thread | None = None
        self._sketch_failed = False
        self._longest: float | None = None
        #: Set once the cache no longer holds this entry (replaced, evicted, dropped, the
        #: store closed): a build not yet under way is then not worth its CPU.
        self._retired = False
        self._retiring = threading.Event()  # wakes a build waiting out its grace

    def retire(self) -> None:
        """No background build starts for this entry from now on (one under way ends)."""
        self._retired = True
        self._retiring.set()

    def longest(self) -> float:
        """A bound on the norm of every code (kept by appends; a removal leaves it valid),
        without the sketch, which a hybrid search may never need."""
        if self._longest is None:
            codes = self.view()
            self._longest = _longest(codes.q8, codes.scales)
        return self._longest

    def sketch(self) -> Sketch:
        """The sketch, built now if it is not there yet: by the one build in the background
        (:meth:`start_sketch`), started here unless one is under way, and waited for. So a
        warm-up and a session's first search, which starts its build once it has returned,
        never make the projections twice. Built here only when that build failed (its error
        is then raised) or writes kept overtaking it."""
        self.start_sketch()
        self.wait_sketch()
        while True:
            built = self._build_sketch()
            if built is not None:
                return built

    def ready_sketch(self, later: Later | None = None) -> Sketch | None:
        """The sketch if it is built; else None, and a build starts in a thread of its own:
        now, or with ``later`` (a search's list of what to start once it has returned) when
        the search that asked has returned.

        A scope's first two-stage search would otherwise wait for it: the projection of every
        row, about 0.6 s at 50k rows and ten times that at a million, in a fresh process's
        first search. Without it a search estimates every row from its int8 code, which is as
        exact (the same bounds) and costs about what a float scan does. A build started beside
        that search would take the second core from it (a fresh process's first search of a
        100k scope reads and estimates every row), so a search puts it off until it returns."""
        with self._sketch_lock:
            if self._sketch is not None:
                return self._sketch
        if later is None:
            self.start_sketch()
        elif self._start_after_search not in later:
            later.append(self._start_after_search)
        return None

    def _start_after_search(self) -> None:
        self.start_sketch(grace=BUILD_GRACE_S)

    def start_sketch(self, grace: float = 0.0) -> None:
        """Start building the sketch in the background, unless it is built, a build is under
        way or one failed. ``grace``: seconds the build waits before its work, so that a
        process that closes its store at once (one command) never starts it."""
        with self._sketch_lock:
            if (
                self._sketch is None
                and self._building is None
                and not self._sketch_failed
                and not self._retired
            ):
                self._building = threading.Thread(
                    target=self._build_in_background,
                    args=(grace,),
                    name="memcore-sketch",
                    daemon=True,
                )
                with _BUILDS_LOCK:
                    _BUILDS.add(self._building)
                self._building.start()

    def building(self) -> threading.Thread | None:
        return self._building

    def wait_sketch(self, timeout: float | None = None) -> bool:
        """Wait for a sketch build under way; whether the sketch is there."""
        thread = self._building
        if thread is not None:
            thread.join(timeout)
        return self._sketch is not None

    def _stopped(self) -> bool:
        return self._retired or _EXITING.is_set()

    def stop_build(self, timeout: float = STOP_WAIT_S) -> None:
        """Retire the entry and wait for its background build to end (it stops at its next
        block of rows, or as soon as it would have had its turn)."""
        self.retire()
        thread = self._building
        if thread is not None and thread is not threading.current_thread():
            thread.join(timeout)

    def _build_in_background(self, grace: float) -> None:
        try:
            deadline = time.monotonic() + grace
            while (left := deadline - time.monotonic()) > 0:
                if self._stopped() or self._retiring.wait(min(left, 0.05)):
                    return
            # One build at a time in the process (why: ``_BUILD_TURN``); one waiting for its
            # turn gives up as soon as it is stopped, not when the build before it ends.
            while not _BUILD_TURN.acquire(timeout=0.05):
                if self._stopped():
                    return
            try:
                # A write that overtakes a build discards it; the next starts from its rows.
                for _ in range(3):
                    if self._stopped() or self._build_sketch(self._stopped) is not None:
                        return
            finally:
                _BUILD_TURN.release()
        except BuildStopped:
            return
        except Exception as exc:  # searches go on without it, as exact, only slower
            _log.warning("a scope's vector sketch was not built (%s)", type(exc).__name__)
            self._sketch_failed = True
        finally:
            with self._sketch_lock:
                self._building = None
            with _BUILDS_LOCK:
                _BUILDS.discard(threading.current_thread())

    def _build_sketch(self, stop: Stop | None = None) -> Sketch | None:
        """Build from a snapshot of the rows, outside the lock (writes go on meanwhile), and
        install it unless a write changed the rows since: then None. ``stop``: a background
        build's (:class:`~memcore_sqlite.vector.sketch.BuildStopped` when it says so)."""
        with self._sketch_lock:
            if self._sketch is not None:
                return self._sketch
            seen = self._changes
            codes = self.view()
            capacity = len(self._codes)
        built = Sketch.build(codes.q8, codes.scales, capacity, stop)
        with self._sketch_lock:
            if self._sketch is None and self._changes == seen:
                self._sketch = built
            return self._sketch

    def ascending(self) -> bool:
        """Whether the seqs rise with the row (the usual case; see :meth:`positions`)."""
        return self._sorted()[1] is None

    def _sorted(self) -> tuple[np.ndarray, np.ndarray | None]:
        np_ = _np()
        if self._order is None:
            have = self._codes.seqs[: self.n]
            if bool(np_.all(have[1:] > have[:-1])):
                self._order = (have, None)
            else:
                order = np_.argsort(have, kind="stable")
                self._order = (have[order], order)
        return self._order

    def positions(self, seqs: np.ndarray) -> np.ndarray:
        """The row of each of ``seqs`` in the codes, -1 for those without codes.

        Codes loaded from the pages of one scope, and rows appended after them, are in seq
        order, so this is a binary search; other entries sort their seqs once per change.
        When the seqs have no gap (one tenant's file, nothing deleted) a seq's place is its
        offset from the first: no search at all (100 lexical candidates at 100k rows: a
        binary search whose upper levels are out of cache after the shortlist, 0.05 ms).
        """
        np_ = _np()
        seqs = np_.asarray(seqs, dtype=np_.int64)
        if not self.n:
            out: np.ndarray = np_.full(len(seqs), -1, dtype=np_.int64)
            return out
        ordered, order = self._sorted()
        if order is None and int(ordered[-1]) - int(ordered[0]) == self.n - 1:
            # Strictly rising from the first to the last with n rows: every seq in between.
            at = np_.clip(seqs - ordered[0], 0, self.n - 1)
        else:
            at = np_.minimum(np_.searchsorted(ordered, seqs), self.n - 1)
        rows = at if order is None else order[at]
        out = np_.where(ordered[at] == seqs, rows, -1)
        return out

    def view(self) -> Codes:
        return self._codes.take(slice(0, self.n))

    def append(self, codes: Codes, vectors: np.ndarray, exact_rows: int) -> None:
        with self._sketch_lock:
            self._changes += 1
            self._append(codes, vectors, exact_rows)

    def _append(self, codes: Codes, vectors: np.ndarray, exact_rows: int) -> None:
        np_ = _np()
        have = self._codes
        total = self.n + len(codes)
        if self.matrix is not None and total > exact_rows:
            self.matrix = None  # grown past the exact size: two-stage from now on
        if total > len(have):
            cap = max(16, 2 * total)
            grown = Codes(
                np_.empty(cap, np_.int64),
                np_.empty(cap, np_.float32),
                plain_pages.zeros((cap, have.q8.shape[1]), np_.int8),
            )
            for new, old in zip(attrs_fields(grown), attrs_fields(have)):
                new[: self.n] = old[: self.n]
            self._codes = have = grown
            if self._sketch is not None:
                self._sketch.grow(cap, self.n)
            if self.matrix is not None:
                matrix = plain_pages.zeros((cap, self.matrix.shape[1]), np_.float32)
                matrix[: self.n] = self.matrix[: self.n]
                self.matrix = matrix
        for new, old in zip(attrs_fields(have), attrs_fields(codes)):
            new[self.n : total] = old
        if self.matrix is not None:
            self.matrix[self.n : total] = vectors
        if self._sketch is not None:
            self._sketch.put(self.n, codes.q8, codes.scales)
        if self._longest is not None and len(codes):
            self._longest = max(self._longest, _longest(codes.q8, codes.scales))
        self.n = total
        self._order = None

    def remove(self, seq: int) -> None:
        with self._sketch_lock:
            self._changes += 1
            self._remove(seq)

    def _remove(self, seq: int) -> None:
        np_ = _np()
        where = np_.flatnonzero(self._codes.seqs[: self.n] == seq)
        if not len(where):
            return
        i, last = int(where[0]), self.n - 1
        if i != last:
            columns = [*attrs_fields(self._codes)]
            if self.matrix is not None:
                columns.append(self.matrix)
            for column in columns:
                column[i] = column[last]
            if self._sketch is not None:
                self._sketch.move(i, last)
        self.n = last
        self._order = None


def attrs_fields(codes: Codes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    return codes.seqs, codes.scales, codes.q8


class VectorCache:
    """LRU of per-pattern codes, bounded by the number of rows held in total.

    Scopes of at most ``exact_rows`` rows keep their float vectors and are scanned exactly;
    larger ones are searched in stages that drop rows only on proven bounds (module docstring).
    """

    def __init__(
        self,
        dimension: int,
        *,
        max_rows: int = 1_000_000,
        exact_rows: int = EXACT_ROWS,
    ) -> None:
        self.dimension = dimension
        self.max_rows = max_rows
        self.exact_rows = exact_rows
        self._entries: OrderedDict[PatternKey, _Entry] = OrderedDict()
        self._lock = threading.Lock()

    def to_array(self, vectors: Sequence[Sequence[float]]) -> np.ndarray:
        np_ = _np()
        arr: np.ndarray = np_.asarray(vectors, dtype=np_.float32).reshape(
            len(vectors), self.dimension
        )
        return arr

    @staticmethod
    def to_blob(vector: np.ndarray) -> bytes:
        return stored.to_blob(vector)

    def encode(self, added: Sequence[tuple[Scope4, int, np.ndarray | None]]) -> list[Written]:
        """The codes of a write's new vectors (and the vectors), one batch per scope; both
        from the vectors as stored (a vector not rounded yet is rounded here)."""
        np_ = _np()
        by_scope: dict[Scope4, list[tuple[int, np.ndarray]]] = defaultdict(list)
        for scope, seq, vector in added:
            if vector is not None:
                by_scope[scope].append((seq, vector))
        out: list[Written] = []
        for scope, rows in by_scope.items():
            matrix = stored.rounded([v for _, v in rows])
            seqs = np_.asarray([s for s, _ in rows], dtype=np_.int64)
            out.append((scope, quantize.encode(seqs, matrix), matrix))
        return out

    def get(
        self, key: PatternKey, generation: int, load: Callable[[], Codes], fetch: FetchVectors
    ) -> _Entry:
        """The entry for ``key`` at ``generation``, loading it from the database when stale."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.generation == generation:
                self._entries.move_to_end(key)
                return entry
        codes = load()
        matrix = None
        if len(codes) <= self.exact_rows:
            codes, matrix = self._floats(codes, fetch)
        entry = _Entry(generation, codes, matrix)
        with self._lock:
            replaced = self._entries.get(key)
            if replaced is not None:
                replaced.retire()
            self._entries[key] = entry
            self._entries.move_to_end(key)
            self._evict()
        return entry

    def _floats(self, codes: Codes, fetch: FetchVectors) -> tuple[Codes, np.ndarray]:
        """The float vectors of a small scope, aligned with its codes."""
        np_ = _np()
        width = stored.width(self.dimension)
        blobs = {seq: blob for seq, blob in fetch(codes.seqs.tolist()) if len(blob) == width}
        if len(blobs) < len(codes):  # a vector of another model replaced this one
            codes = codes.take(np_.asarray([int(s) in blobs for s in codes.seqs], dtype=bool))
        matrix = stored.matrix([blobs[int(s)] for s in codes.seqs], self.dimension)
        return codes, matrix

    def _evict(self) -> None:
        total = sum(e.n for e in self._entries.values())
        while total > self.max_rows and len(self._entries) > 1:
            _, old = self._entries.popitem(last=False)
            old.retire()
            total -= old.n

    def apply_write(
        self,
        store_id: int,
        before: int,
        after: int,
        added: Sequence[Written],
        removed: Sequence[tuple[Scope4, int]],
    ) -> None:
        """Apply this process's own write; entries that missed another writer are dropped."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == store_id]:
                entry = self._entries[key]
                if entry.generation != before:
                    del self._entries[key]
                    entry.retire()
                    continue
                pattern = key[1]
                for scope, seq in removed:
                    if pattern_matches(pattern, scope):
                        entry.remove(seq)
                for scope, codes, matrix in added:
                    if pattern_matches(pattern, scope):
                        entry.append(codes, matrix, self.exact_rows)
                entry.generation = after

    def drop_store(self, store_id: int) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == store_id]:
                self._entries.pop(key).retire()

    def close(self) -> None:
        """The store is closing: its entries' builds stop (one under way at its next block of
        rows) and are waited for, so none is cut off by the process's exit inside a BLAS
        call (see :func:`_stop_builds`); a closed store's sketches would only take CPU."""
        with self._lock:
            entries = list(self._entries.values())
            self._entries.clear()
        for entry in entries:
            entry.retire()
        for entry in entries:
            entry.stop_build()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait for the sketch builds under way; False if one still runs at ``timeout``."""
        deadline = None if timeout is None else time.monotonic() + timeout
        with self._lock:
            entries = list(self._entries.values())
        for entry in entries:
            left = None if deadline is None else max(0.0, deadline - time.monotonic())
            entry.wait_sketch(left)
        return all(e.building() is None for e in entries)

    def top(
        self,
        entry: _Entry,
        query: np.ndarray,
        n: int,
        fetch: FetchVectors,
        allowed: np.ndarray | None = None,
    ) -> list[tuple[int, float]]:
        """The ``n`` best (seq, cosine) pairs; ``allowed`` restricts to those seqs."""
        np_ = _np()
        if entry.matrix is not None:
            codes = entry.view()
            matrix = entry.matrix[: entry.n]
            if allowed is not None:
                rows = np_.flatnonzero(np_.isin(codes.seqs, allowed))
                return exact_top(codes.seqs[rows], np_.take(matrix, rows, axis=0), query, n)
            return exact_top(codes.seqs, matrix, query, n)
        seqs, _, _ = self.shortlist(entry, query, n, allowed)
        return self._rescore(seqs, query, n, fetch)

    def shortlist(
        self, entry: _Entry, query: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(seqs, int8 estimates, error bounds) of every row of a two-stage entry that may be
        among the ``n`` best; the ``n`` best are the best ``n`` of these by exact cosine.
        One search that may widen its shortlist takes :meth:`shortlister` instead."""
        return self.shortlister(entry, query, allowed)(n)

    def shortlister(
        self,
        entry: _Entry,
        query: np.ndarray,
        allowed: np.ndarray | None = None,
        later: Later | None = None,
    ) -> Shortlister:
        """:meth:`shortlist` for one query, for any ``n``: a widened shortlist (the best
        ``FIRST_READ``, then the pool) reuses the sketch's bounds of the first, which are
        most of its cost (every row's head), instead of scanning the scope again. With
        ``later``, a sketch build it asks for starts when the search has returned
        (:meth:`_Entry.ready_sketch`)."""
        return Shortlister(entry, query, allowed, later)

    def ceiling(self, entry: _Entry, query: np.ndarray) -> float:
        """A bound on every row's cosine with ``query``: its norm times the longest code's,
        plus the largest int8 error (about 1.01 for unit vectors)."""
        np_ = _np()
        if not entry.n:
            return -float("inf")
        codes = entry.view()
        q = np_.asarray(query, dtype=np_.float64)
        error = float(quantize.error_bound(codes.scales.max(keepdims=True), query)[0])
        return float(np_.sqrt(q @ q)) * entry.longest() * 1.001 + error

    def estimates(
        self, entry: _Entry, seqs: np.ndarray, query: np.ndarray
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(has codes, int8 estimates, error bounds) of the cosines of ``seqs``."""
        np_ = _np()
        at = entry.positions(seqs)
        have = at >= 0
        codes = entry.view()
        if have.all():  # the usual case: no masks to fill
            scales = codes.scales[at]
            estimate = quantize.approx_dot(codes.q8, scales, query, at)
            return have, estimate, quantize.error_bound(scales, query)
        rows = at[have]
        scales = codes.scales[rows]
        estimate = np_.zeros(len(seqs), np_.float32)
        slack = np_.zeros(len(seqs), np_.float32)
        estimate[have] = quantize.approx_dot(codes.q8, scales, query, rows)
        slack[have] = quantize.error_bound(scales, query)
        return have, estimate, slack

    def cosines(
        self, entry: _Entry, seqs: Sequence[int], query: np.ndarray, fetch: FetchVectors
    ) -> dict[int, float]:
        """The exact cosine of each of ``seqs`` that has a vector: from memory in a small
        scope, else read by key."""
        np_ = _np()
        if not seqs:
            return {}
        if entry.matrix is not None:
            # By binary search: ``isin`` over the scope's seqs cost what their range spans,
            # which is the file's size for a tenant among many (0.09 against 0.06 ms at 1k).
            at = entry.positions(np_.asarray(seqs, dtype=np_.int64))
            rows = at[at >= 0]
            scores = np_.einsum("ij,j->i", np_.take(entry.matrix, rows, axis=0), query)
            have = entry.view().seqs
            return dict(zip(have[rows].tolist(), scores.tolist()))
        have, matrix = self._read(seqs, fetch)
        scores = np_.einsum("ij,j->i", matrix, query)
        return {int(s): float(c) for s, c in zip(have, scores)}

    def _read(self, seqs: Sequence[int], fetch: FetchVectors) -> tuple[np.ndarray, np.ndarray]:
        """(seqs, float32 matrix) of those of ``seqs`` that have a vector of this dimension."""
        np_ = _np()
        width = stored.width(self.dimension)
        found: list[int] = []
        blobs: list[bytes] = []
        for seq, blob in fetch(seqs):
            if len(blob) == width:
                found.append(int(seq))
                blobs.append(blob)
        matrix = stored.matrix(blobs, self.dimension)
        return np_.asarray(found, dtype=np_.int64), matrix

    def exact_cosines(
        self, seqs: Sequence[int], query: np.ndarray, fetch: FetchVectors
    ) -> tuple[np.ndarray, np.ndarray]:
        """(seqs that have a vector of this dimension, their exact cosines), read by key."""
        np_ = _np()
        have, matrix = self._read(seqs, fetch)
        scores: np.ndarray = np_.einsum("ij,j->i", matrix, query)
        return have, scores

    def _rescore(
        self, seqs: np.ndarray, query: np.ndarray, n: int, fetch: FetchVectors
    ) -> list[tuple[int, float]]:
        return exact_top(*self._read(seqs.tolist(), fetch), query, n)
