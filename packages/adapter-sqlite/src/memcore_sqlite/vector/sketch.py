"""A short projection of each code with a proven upper bound on its cosine, for every row.

The sign bits of :mod:`memcore_sqlite.vector.quantize` order rows well but bound nothing useful:
on templated memories (one fact many times over, different names) rows of the true best
share their sign pattern with hundreds of others, and a sign-bit cut lost them. The int8
estimate bounds each cosine tightly, but converting every row costs about what the exact
float scan does. Between the two, this keeps each vector's first :data:`COLUMNS` coordinates
in a principal basis of its scope (computed when the scope's codes are first searched), as
int8 with one scale per column, and two norms per row; then for every row

    q·x = q·x̂ + q·(x - x̂)                       x̂ = scale * q8, the int8 code
        = (Vᵀq)ₘ·(Vᵀx̂)ₘ + (Vᵀq)₊·(Vᵀx̂)₊          V orthonormal: ₘ the first m, ₊ the rest
        ≤ qₘ·(c∘p8) + ‖qₘ‖‖(Vᵀx̂)ₘ - c∘p8‖ + ‖q₊‖‖x̂₊‖ + |q·(x - x̂)|

by Cauchy-Schwarz on each part, with ``|q·(x - x̂)|`` at most the int8 code's own bound
(:func:`memcore_sqlite.vector.quantize.error_bound`) and a margin for float rounding. Real
embeddings keep most of their energy in the first principal directions, so ``‖x̂₊‖`` is
small where the query's part is large, and the bound, a 128-byte dot product, clears most
rows of a scope. Any orthonormal basis keeps the bound valid: rows written after the basis
was chosen are projected on it too, only less tightly.

The same bound taken over the head's first block alone (up to the first of :data:`CUTS`;
``‖q₊‖‖x̂₊‖`` past it) is much looser, but it costs a third of the head's reads, which were
most of a large scope's shortlist (15 of 17 ms at a million rows). A hybrid search asks only
for the rows whose cosine may reach a threshold (:mod:`memcore_sqlite.search.fused_order`), and
that looser bound often leaves out almost every row (at 100k real rows, the median such search
keeps 3.5% of them, against none with the whole head; at a million, 13%), so the next block is
read only for the rows it keeps (:class:`memcore_sqlite.vector.shortlist.Shortlister`).
numpy is imported here only when a store has an embedder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memcore_sqlite.vector import plain_pages

if TYPE_CHECKING:
    import numpy as np

#: Principal coordinates kept per row as float32 (every row's first bound), in blocks that
#: end at these columns, each read alone for a bound looser than the next's; and, after them,
#: as int8 (the second bound, for the rows the first leaves).
CUTS = (32, 96)
HEAD = CUTS[-1]
COLUMNS = 160
#: Rows the basis is estimated from (evenly spread over the scope).
SAMPLE_ROWS = 4_096
#: Rows projected at a time.
_BLOCK_ROWS = 2_048


class BuildStopped(Exception):
    """A background build was asked to stop (its scope left the cache, its store closed, or
    the process is exiting), between two blocks of rows."""


#: Asked between blocks: True stops the build (:class:`BuildStopped`).
Stop = Callable[[], bool]


def _check(stop: Stop | None) -> None:
    if stop is not None and stop():
        raise BuildStopped


#: Relative margin for float32 rounding in the projections and norms (their error is below
#: 384 * 2**-24, about 2.3e-5, of the norms' product).
_ROUNDING = 1e-3


def _np() -> Any:
    import numpy

    return numpy


class Sketch:
    """The projections of a growable set of codes (rows aligned with them).

    ``basis`` is (dimension, dimension) float64 with orthonormal columns, by decreasing
    variance. ``blocks`` (rows, columns between two of ``cuts``) float32 hold the first h
    coordinates of each code, and ``rests`` bound the norm of the coordinates past each cut;
    ``p8`` (rows, m - h) int8 times ``column_scale`` the next ones, within ``quant_error`` (a
    distance); ``rest2`` bounds the norm of the coordinates past m, ``norm`` is the code's own.
    """

    def __init__(self, basis: np.ndarray, column_scale: np.ndarray, capacity: int) -> None:
        np_ = _np()
        self.basis = basis
        self.h = min(HEAD, basis.shape[0])
        self.cuts = tuple(sorted({min(cut, self.h) for cut in CUTS}))
        self.m = self.h + column_scale.shape[0]
        self._project = np_.ascontiguousarray(basis[:, : self.m], dtype=np_.float32)
        self.column_scale = column_scale
        self.blocks = [
            plain_pages.zeros((capacity, end - start), np_.float32)
            for start, end in zip((0, *self.cuts), self.cuts)
        ]
        self.rests = [np_.zeros(capacity, np_.float32) for _ in self.cuts]
        self.p8 = plain_pages.zeros((capacity, self.m - self.h), np_.int8)
        self.quant_error = np_.zeros(capacity, np_.float32)
        self.rest2 = np_.zeros(capacity, np_.float32)
        self.norm = np_.zeros(capacity, np_.float32)

    _COLUMNS = ("p8", "quant_error", "rest2", "norm")

    def _arrays(self) -> list[np.ndarray]:
        return [*self.blocks, *self.rests, *(getattr(self, name) for name in self._COLUMNS)]

    @classmethod
    def build(
        cls, q8: np.ndarray, scales: np.ndarray, capacity: int, stop: Stop | None = None
    ) -> Sketch:
        """The sketch of the ``len(q8)`` codes given, with room for ``capacity`` rows.

        ``stop`` is asked between blocks of rows (a few milliseconds apart): a build in a
        thread must be able to end before its process does, since a thread cut off inside a
        BLAS call can leave OpenBLAS waiting forever in its exit handler."""
        np_ = _np()
        _check(stop)
        n, dimension = q8.shape
        m = min(COLUMNS, dimension)
        h = min(HEAD, dimension)
        # Evenly spread and rising (steps of at least one row): no ``unique`` needed, which
        # would import ``numpy.ma`` (0.1 s in a fresh process) on the search path.
        pick = (
            np_.arange(n)
            if n <= SAMPLE_ROWS
            else np_.linspace(0, n - 1, SAMPLE_ROWS).astype(np_.int64)
        )
        sample = q8[pick].astype(np_.float32) * scales[pick, None]
        sample = sample[np_.isfinite(sample).all(axis=1)].astype(np_.float64)
        if len(sample):
            _, vectors = np_.linalg.eigh(sample.T @ sample)
            basis = np_.ascontiguousarray(vectors[:, ::-1])
        else:
            basis = np_.eye(dimension)
        projected = cls._projections(basis[:, :m].astype(np_.float32), q8, scales, stop)
        peak = np_.zeros(m - h, np_.float32)
        for at in range(0, n, _BLOCK_ROWS):  # in blocks, as :meth:`_fill` (why there)
            _check(stop)
            tail = projected[at : at + _BLOCK_ROWS, h:]
            finite = np_.isfinite(tail).all(axis=1)
            if finite.any():
                np_.maximum(peak, np_.abs(tail[finite]).max(axis=0), out=peak)
        column_scale = np_.where(peak > 0, peak / 127.0, 1.0).astype(np_.float32)
        out = cls(basis, column_scale, max(capacity, n))
        out._fill(0, projected, q8, scales, stop)
        return out

    @staticmethod
    def _projections(
        project: np.ndarray, q8: np.ndarray, scales: np.ndarray, stop: Stop | None = None
    ) -> np.ndarray:
        np_ = _np()
        out = plain_pages.zeros((len(q8), project.shape[1]), np_.float32, filled_at_once=True)
        for start in range(0, len(q8), _BLOCK_ROWS):
            _check(stop)
            end = start + _BLOCK_ROWS
            out[start:end] = q8[start:end].astype(np_.float32) @ project
        with np_.errstate(invalid="ignore", over="ignore"):
            out *= scales[:, None]
        return out

    def _fill(
        self,
        start: int,
        projected: np.ndarray,
        q8: np.ndarray,
        scales: np.ndarray,
        stop: Stop | None = None,
    ) -> None:
        """Rows ``start:start + len(q8)`` from their projections (a row that is not numbers
        gets bounds that are not numbers, which keep it), a block of rows at a time: whole
        columns of temporaries (26 MB each at 100k rows) made in a background build stayed
        in that thread's malloc arena, about 50 MB of the process's RSS for good."""
        for at in range(0, len(q8), _BLOCK_ROWS):
            _check(stop)
            end = at + _BLOCK_ROWS
            self._fill_block(start + at, projected[at:end], q8[at:end], scales[at:end])

    def _fill_block(
        self, start: int, projected: np.ndarray, q8: np.ndarray, scales: np.ndarray
    ) -> None:
        np_ = _np()
        stop = start + len(q8)
        h = self.h
        # Squared norms of the int8 rows: sums of integers below 2**24, exact in float32.
        codes = q8.astype(np_.float32)
        squares = np_.einsum("ij,ij->i", codes, codes)
        with np_.errstate(invalid="ignore", over="ignore"):
            tail = projected[:, h:]
            p8 = np_.clip(np_.rint(tail / self.column_scale), -127, 127)
            p8 = np_.where(np_.isfinite(p8), p8, 0).astype(np_.int8)
            self.p8[start:stop] = p8
            miss = tail - p8 * self.column_scale
            self.quant_error[start:stop] = np_.sqrt(np_.einsum("ij,ij->i", miss, miss)) * (
                1 + _ROUNDING
            )
            s = scales.astype(np_.float64)
            whole = squares.astype(np_.float64) * s * s
            # A residual's square is a difference of two rounded sums: widened by their error.
            margin = 2 * _ROUNDING * whole
            first = np_.zeros(len(q8), np_.float64)
            for begin, end, block, rest in zip((0, *self.cuts), self.cuts, self.blocks, self.rests):
                part = projected[:, begin:end]
                block[start:stop] = part
                first += np_.einsum("ij,ij->i", part, part)
                rest[start:stop] = np_.sqrt(np_.maximum(whole - first, 0.0) + margin)
            both = first + np_.einsum("ij,ij->i", tail, tail).astype(np_.float64)
            self.rest2[start:stop] = np_.sqrt(np_.maximum(whole - both, 0.0) + margin)
            self.norm[start:stop] = np_.sqrt(whole)
        bad = ~np_.isfinite(projected).all(axis=1) | ~np_.isfinite(scales)
        if bad.any():
            for rest in [*self.rests, self.rest2]:
                rest[start:stop][bad] = np_.inf

    def grow(self, capacity: int, n: int) -> None:
        def grown(old: np.ndarray) -> np.ndarray:
            new = plain_pages.zeros((capacity, *old.shape[1:]), old.dtype)
            new[:n] = old[:n]
            return new

        self.blocks = [grown(block) for block in self.blocks]
        self.rests = [grown(rest) for rest in self.rests]
        for name in self._COLUMNS:
            setattr(self, name, grown(getattr(self, name)))

    def put(self, start: int, q8: np.ndarray, scales: np.ndarray) -> None:
        """Project appended codes (rows ``start:start + len(q8)``) on the existing basis."""
        self._fill(start, self._projections(self._project, q8, scales), q8, scales)

    def move(self, to: int, source: int) -> None:
        for column in self._arrays():
            column[to] = column[source]

    def turn(self, query: np.ndarray) -> Turned:
        return Turned(self, query)


class Turned:
    """A query in a sketch's basis, and the bounds it gives each row: from the head's blocks
    read so far (:meth:`block`, :meth:`bound`), and with the int8 coordinates after the
    head (:meth:`second`)."""

    def __init__(self, sketch: Sketch, query: np.ndarray) -> None:
        np_ = _np()
        self.sketch = sketch
        q = np_.asarray(query, dtype=np_.float64)
        turned = sketch.basis.T @ q
        h, m = sketch.h, sketch.m
        self.parts = [
            turned[start:end].astype(np_.float32)
            for start, end in zip((0, *sketch.cuts), sketch.cuts)
        ]
        self.mid = (turned[h:m] * sketch.column_scale).astype(np_.float32)

        def norm(x: np.ndarray) -> Any:
            return np_.float32(float(np_.sqrt(x @ x)) * (1 + _ROUNDING))

        #: The norm of the query's coordinates past each cut.
        self.after = [norm(turned[cut:]) for cut in sketch.cuts]
        self.mid_norm, self.after_mid = norm(turned[h:m]), norm(turned[m:])
        self.rounding = np_.float32(_ROUNDING * float(np_.sqrt(q @ q)))

    def block(self, j: int, n: int, rows: np.ndarray | None = None) -> np.ndarray:
        """The query's dot products with block ``j`` of rows ``:n`` (or ``rows``)."""
        np_ = _np()
        part = self.sketch.blocks[j]
        # einsum, not ``@``: numpy's BLAS product took 8 ms of CPU at 100k rows against 1.7
        # (its threads spin on a busy machine); the bound's margin covers any sum order.
        if rows is None:
            out: np.ndarray = np_.einsum("ij,j->i", part[:n], self.parts[j])
        else:
            out = np_.einsum("ij,j->i", np_.take(part, rows, axis=0), self.parts[j])
        return out

    def margin(self, code_error: np.ndarray, n: int, rows: np.ndarray | None = None) -> Any:
        """What every bound of rows ``:n`` (or ``rows``) adds: their int8 code's error
        (``code_error``, rows aligned) and the float rounding."""
        pick: Any = slice(0, n) if rows is None else rows
        return self.rounding * self.sketch.norm[pick] + code_error

    def bound(self, j: int, point: np.ndarray, margin: Any, rows: Any) -> np.ndarray:
        """Upper bounds of the cosines of ``rows`` (a slice or positions) given ``point``,
        their dot products with the blocks up to ``j``, and their :meth:`margin`."""
        out: np.ndarray = point + (self.after[j] * self.sketch.rests[j][rows] + margin)
        return out

    def second(self, point: np.ndarray, rows: np.ndarray, code_error: np.ndarray) -> np.ndarray:
        """Upper bounds of the cosines of ``rows`` (sketch rows) given their first ``point``
        estimates: the int8 coordinates after the head added, a smaller rest."""
        np_ = _np()
        sk = self.sketch
        out: np.ndarray = np_.empty(len(rows), np_.float32)
        for start in range(0, len(rows), _BLOCK_ROWS):
            part = np_.take(sk.p8, rows[start : start + _BLOCK_ROWS], axis=0)
            out[start : start + _BLOCK_ROWS] = part.astype(np_.float32) @ self.mid
        out += point
        out += (
            self.mid_norm * sk.quant_error[rows]
            + self.after_mid * sk.rest2[rows]
            + self.rounding * sk.norm[rows]
            + code_error
        )
        return out
