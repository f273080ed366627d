"""The shortlist of one query in one two-stage scope: every row that may be among its best
``n`` by cosine (:meth:`memcore_sqlite.vector.cache.VectorCache.shortlist`).

Every row's cosine is bounded from its sketch (:mod:`memcore_sqlite.vector.sketch`). The
``n``-th best int8 lower bound among the rows the sketch rates best is a lower bound on the
``n``-th best cosine; a row whose sketch bound is below it cannot be among the ``n`` best,
and the int8 stage drops, from the rest, the rows whose upper bound is below the ``n``-th
best lower bound. Nothing is dropped without a bound.

A caller that asks only for rows whose cosine may reach ``at_least`` (a hybrid search,
:mod:`memcore_sqlite.search.fused_order`) gets the head read block by block: the rows whose
bound from the blocks read so far is below ``at_least`` go, and the next block is read only for
the others, gathered, or for every row in order when they are many (which costs less than
gathering them). At a million rows that took a fifth of a hybrid search's CPU off (14.4 to
11.7 ms; ``benchmarks/fusion_cost.py``, the notes in ``docs/benchmarks/sqlite.md``). Whatever widenings follow, one query reads each block of a row
at most once, until a caller asks for the rows without ``at_least``, which reads the blocks not
yet read by every row for every row.
numpy is imported here only when a store has an embedder.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cached_property
from typing import TYPE_CHECKING, Any, Protocol

from memcore_sqlite.vector import quantize

if TYPE_CHECKING:
    import numpy as np

    from memcore_sqlite.vector.quantize import Codes
    from memcore_sqlite.vector.sketch import Sketch, Turned

#: What a search starts once it has returned (a scope's sketch build), in the order asked.
Later = list[Callable[[], None]]


class Coded(Protocol):
    """What a shortlist reads of a scope's codes (:class:`memcore_sqlite.vector.cache._Entry`)."""

    n: int

    def view(self) -> Codes: ...

    def ready_sketch(self, later: Later | None = None) -> Sketch | None: ...


#: Rows (at least) whose int8 bounds give the first lower bound on the n-th best cosine.
BOOTSTRAP_ROWS = 256
#: When the rows that need the head's next block are more than this share of the scope, it
#: is read for every row in order. A row gathered cost about 3.5 times a row read in order
#: (64 float32 columns of a million rows, 2 cores), and its bound is then indexed too: with
#: 0.25 the searches that gathered most made the p95 at a million rows worse than reading
#: every row (36-55 ms against 31-37); with 0.1 it is back (36.9 against 37.4).
GATHER_SHARE = 0.1


def _np() -> Any:
    import numpy

    return numpy


def _best_rows(point: np.ndarray, want: int) -> np.ndarray:
    """Positions of about ``want`` rows (at least ``want``, or all) of the highest ``point``.

    A cut taken from an even sample of the values, so the rows are found by one comparison
    over the scope rather than a partition of all of it (1-2 ms at 100k rows); the rows are
    only where the search starts, so their number need not be exact.
    """
    np_ = _np()
    count = len(point)
    if count <= 4 * want:
        out: np.ndarray = np_.arange(count)
        return out
    step = max(1, count // 4_096)
    sample = point[::step]
    share = min(1.0, 2.0 * want / count)
    edge = np_.partition(sample, int((1 - share) * (len(sample) - 1)))[
        int((1 - share) * (len(sample) - 1))
    ]
    rows: np.ndarray = np_.flatnonzero(point >= edge)
    if len(rows) < want:
        rows = np_.argpartition(point, count - want)[count - want :]
    return rows


def _floor(lows: np.ndarray, n: int, at_least: np.float32 | None) -> Any:
    """The ``n``-th best of some rows' lower bounds (finite), raised to ``at_least``: a row
    whose upper bound is below it cannot be among the ``n`` best, nor reach ``at_least``.
    None: no such floor (fewer than ``n`` bounds, no ``at_least``)."""
    np_ = _np()
    floor = np_.partition(lows, len(lows) - n)[len(lows) - n] if len(lows) >= n else None
    if at_least is not None:
        floor = at_least if floor is None else max(floor, at_least)
    return floor


def _could_be_best(
    estimate: np.ndarray, slack: np.ndarray, n: int, at_least: np.float32 | None = None
) -> Any:
    """Positions of the candidates whose exact score may reach the ``n``-th best, and
    ``at_least`` (:meth:`Shortlister.__call__`).

    A row is dropped only when even its upper bound is below the ``n``-th best lower
    bound (or ``at_least``), so no row of the exact top ``n`` among the candidates is lost,
    however many rows are near-ties (a bound that is not a number keeps its row).
    """
    np_ = _np()
    low = estimate - slack
    floor = _floor(low[np_.isfinite(low)], n, at_least)
    if floor is None:
        out: np.ndarray = np_.arange(len(estimate))
        return out
    keep: np.ndarray = np_.flatnonzero(~(estimate + slack < floor))
    return keep


class Shortlister:
    """The shortlists of one query in one two-stage entry, for any ``n`` and ``at_least``
    (the module docstring), keeping the sketch's bounds made for one for the next."""

    def __init__(
        self,
        entry: Coded,
        query: np.ndarray,
        allowed: np.ndarray | None,
        later: Later | None = None,
    ) -> None:
        self._entry = entry
        self._query = query
        self._allowed = allowed
        self._later = later
        #: The query turned into the sketch's basis and each row's code error, once the
        #: sketch is there (rows aligned with the picked ones, as every array below).
        self._turned: Turned | None = None
        self._code_error: np.ndarray | None = None
        #: Per row: its dot product with the head's blocks read so far, how many blocks that
        #: is, and its bound from them (all made as far as some call needed them).
        self._point: np.ndarray | None = None
        self._level: np.ndarray | None = None
        self._high: np.ndarray | None = None
        self._margin: np.ndarray | None = None
        #: How many blocks every row has read, when they all have read as many.
        self._every: int | None = 0

    @cached_property
    def _picked(self) -> tuple[Any, np.ndarray] | None:
        """(rows the filters allow, None for all; their scales), or None when none is."""
        np_ = _np()
        codes = self._entry.view()
        if self._allowed is None:
            return None, codes.scales
        rows = np_.flatnonzero(np_.isin(codes.seqs, self._allowed))
        return (rows, codes.scales[rows]) if len(rows) else None

    def _turn(self, rows: Any, scales: np.ndarray) -> Turned | None:
        """The query in the sketch's basis; None while the scope's sketch is being built
        (every row then goes to the int8 stage: the same rows come out, at more cost)."""
        if self._turned is None:
            sketch = self._entry.ready_sketch(self._later)
            if sketch is None:
                return None
            self._turned = sketch.turn(self._query)
            self._code_error = quantize.error_bound(scales, self._query)
        return self._turned

    def _heads(self, turned: Turned, rows: Any, bound: Any) -> Any:
        """Bound, from the whole head, every row that may reach ``bound`` (None: every row);
        answer the positions of the rows that may (None: any row may, when most do).

        Block by block: the rows whose bound so far reaches ``bound`` get the next block
        read, gathered, or for all rows in order when they are many (then every row reads
        it while every row has read as many blocks, ``_every``, so none is indexed one by
        one: indexing most of a million rows cost more than the reads saved)."""
        np_ = _np()
        entry, code_error = self._entry, self._code_error
        assert code_error is not None
        count, last = len(code_error), len(turned.parts)
        everyone: Any = slice(0, entry.n) if rows is None else rows
        if self._point is None or self._level is None or self._high is None:
            self._point = np_.zeros(count, np_.float32)
            self._level = np_.zeros(count, np_.int8)
            self._high = np_.empty(count, np_.float32)
            self._margin = turned.margin(code_error, entry.n, rows)
        point, level, high, margin = self._point, self._level, self._high, self._margin
        assert margin is not None
        if bound is None:
            if self._every != last:
                if self._every is None:  # rows read different blocks: every row starts again
                    point[:] = 0.0
                for j in range(self._every or 0, last):  # the blocks every row read are kept
                    point += turned.block(j, entry.n, rows)
                high[:] = turned.bound(last - 1, point, margin, everyone)
                level[:] = self._every = last
            return None
        keep: Any = None
        for j in range(last):
            if self._every == j and (keep is None or len(keep) > GATHER_SHARE * count):
                # Every row is at block j and many need it: all read it, none indexed.
                point += turned.block(j, entry.n, rows)
                high[:] = turned.bound(j, point, margin, everyone)
                level[:] = self._every = j + 1
            else:
                at_level = level if keep is None else level[keep]
                need = np_.flatnonzero(at_level == j)
                if keep is not None:
                    need = keep[need]
                if len(need):
                    at = need if rows is None else rows[need]
                    if len(need) > GATHER_SHARE * count:
                        point[need] += turned.block(j, entry.n, rows)[need]
                    else:
                        point[need] += turned.block(j, entry.n, at)
                    level[need] = j + 1
                    high[need] = turned.bound(j, point[need], margin[need], at)
                    self._every = None
            reach = ~((high if keep is None else high[keep]) < bound)
            every_next = keep is None and self._every == j + 1
            if every_next and np_.count_nonzero(reach) > GATHER_SHARE * count:
                continue  # every row reads the next block anyway: no positions needed
            keep = np_.flatnonzero(reach) if keep is None else keep[np_.flatnonzero(reach)]
            if not len(keep):
                break
        return keep

    def __call__(
        self, n: int, at_least: float = -float("inf")
    ) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The rows that may be among the ``n`` best and whose cosine may reach ``at_least``
        (a float32 value; the caller's proof that a row below it cannot matter,
        :mod:`memcore_sqlite.search.fused_order`): each stage drops a row only when its
        upper bound is below the larger of the two."""
        np_ = _np()
        entry, query = self._entry, self._query
        bound = np_.float32(at_least) if at_least > -float("inf") else None
        empty = np_.empty(0, np_.float32)
        if not entry.n or n <= 0:
            return np_.empty(0, np_.int64), empty, empty
        picked = self._picked
        if picked is None:
            return np_.empty(0, np_.int64), empty, empty
        rows, scales = picked
        codes = entry.view()
        turned = self._turn(rows, scales) if len(scales) > n else None
        if turned is not None:
            keep = self._heads(turned, rows, bound)
            if keep is not None and not len(keep):  # no row's cosine may reach ``at_least``
                return np_.empty(0, np_.int64), empty, empty
            all_points, high, code_error = self._point, self._high, self._code_error
            assert all_points is not None and high is not None and code_error is not None
            point = all_points
            if keep is not None:
                point, high = point[keep], high[keep]
            # A lower bound on the n-th best cosine: the n-th best int8 lower bound among the
            # rows the sketch rates best (the more of them, the closer to the true one).
            best = _best_rows(point, max(4 * n, BOOTSTRAP_ROWS))
            if bound is not None:  # rows below ``at_least`` go; any n rows' bounds will do
                best = best[~(high[best] < bound)]
            best = best if keep is None else keep[best]
            at = best if rows is None else rows[best]
            low = quantize.approx_dot(codes.q8, scales[best], query, at) - code_error[best]
            floor = _floor(low[np_.isfinite(low)], n, bound)
            if floor is not None:
                # Bounds that are not numbers keep their rows.
                kept = np_.flatnonzero(~(high < floor))
                if keep is not None:
                    kept = keep[kept]
                at = kept if rows is None else rows[kept]
                second = turned.second(all_points[kept], at, code_error[kept])
                kept = kept[np_.flatnonzero(~(second < floor))]
                rows = kept if rows is None else rows[kept]
                scales = scales[kept]
            elif keep is not None:
                rows = keep if rows is None else rows[keep]
                scales = scales[keep]
        estimate = quantize.approx_dot(codes.q8, scales, query, rows)
        slack = quantize.error_bound(scales, query)
        keep_rows = _could_be_best(estimate, slack, n, bound)
        at = keep_rows if rows is None else rows[keep_rows]
        return codes.seqs[at], estimate[keep_rows], slack[keep_rows]
