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
numpy is imported here only when a store has an embedder.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memcore_sqlite.vector import plain_pages

if TYPE_CHECKING:
    import numpy as np

#: Principal coordinates kept per row as float32 (every row's first bound) and, after
#: them, as int8 (the second bound, for the rows the first leaves).
HEAD = 96
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
    variance. ``head`` (rows, h) float32 holds the first h coordinates of each code;
    ``p8`` (rows, m - h) int8 times ``column_scale`` the next ones, within ``quant_error``
    (a distance); ``rest1`` and ``rest2`` bound the norm of the coordinates past h and past
    m, ``norm`` is the code's own norm.
    """

    def __init__(self, basis: np.ndarray, column_scale: np.ndarray, capacity: int) -> None:
        np_ = _np()
        self.basis = basis
        self.h = min(HEAD, basis.shape[0])
        self.m = self.h + column_scale.shape[0]
        self._project = np_.ascontiguousarray(basis[:, : self.m], dtype=np_.float32)
        self.column_scale = column_scale
        self.head = plain_pages.zeros((capacity, self.h), np_.float32)
        self.p8 = plain_pages.zeros((capacity, self.m - self.h), np_.int8)
        self.quant_error = np_.zeros(capacity, np_.float32)
        self.rest1 = np_.zeros(capacity, np_.float32)
        self.rest2 = np_.zeros(capacity, np_.float32)
        self.norm = np_.zeros(capacity, np_.float32)

    _COLUMNS = ("head", "p8", "quant_error", "rest1", "rest2", "norm")

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
        block = q8.astype(np_.float32)
        squares = np_.einsum("ij,ij->i", block, block)
        with np_.errstate(invalid="ignore", over="ignore"):
            self.head[start:stop] = projected[:, :h]
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
            first = np_.einsum("ij,ij->i", projected[:, :h], projected[:, :h]).astype(np_.float64)
            both = first + np_.einsum("ij,ij->i", tail, tail).astype(np_.float64)
            # A residual's square is a difference of two rounded sums: widened by their error.
            margin = 2 * _ROUNDING * whole
            self.rest1[start:stop] = np_.sqrt(np_.maximum(whole - first, 0.0) + margin)
            self.rest2[start:stop] = np_.sqrt(np_.maximum(whole - both, 0.0) + margin)
            self.norm[start:stop] = np_.sqrt(whole)
        bad = ~np_.isfinite(projected).all(axis=1) | ~np_.isfinite(scales)
        if bad.any():
            self.rest1[start:stop][bad] = np_.inf
            self.rest2[start:stop][bad] = np_.inf

    def grow(self, capacity: int, n: int) -> None:
        for name in self._COLUMNS:
            old = getattr(self, name)
            new = plain_pages.zeros((capacity, *old.shape[1:]), old.dtype)
            new[:n] = old[:n]
            setattr(self, name, new)

    def put(self, start: int, q8: np.ndarray, scales: np.ndarray) -> None:
        """Project appended codes (rows ``start:start + len(q8)``) on the existing basis."""
        self._fill(start, self._projections(self._project, q8, scales), q8, scales)

    def move(self, to: int, source: int) -> None:
        for name in self._COLUMNS:
            column = getattr(self, name)
            column[to] = column[source]

    def turn(self, query: np.ndarray) -> Turned:
        return Turned(self, query)


class Turned:
    """A query in a sketch's basis, and the two bounds it gives each row."""

    def __init__(self, sketch: Sketch, query: np.ndarray) -> None:
        np_ = _np()
        self.sketch = sketch
        q = np_.asarray(query, dtype=np_.float64)
        turned = sketch.basis.T @ q
        h, m = sketch.h, sketch.m
        self.head = turned[:h].astype(np_.float32)
        self.mid = (turned[h:m] * sketch.column_scale).astype(np_.float32)

        def norm(x: np.ndarray) -> Any:
            return np_.float32(float(np_.sqrt(x @ x)) * (1 + _ROUNDING))

        self.after_head, self.mid_norm, self.after_mid = (
            norm(turned[h:]),
            norm(turned[h:m]),
            norm(turned[m:]),
        )
        self.rounding = np_.float32(_ROUNDING * float(np_.sqrt(q @ q)))

    def first(
        self, n: int, code_error: np.ndarray, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(point estimates, upper bounds) of the cosines of rows ``:n`` (or ``rows``), from
        the float32 head; ``code_error`` bounds each int8 code's error (rows aligned)."""
        np_ = _np()
        sk = self.sketch
        # einsum, not ``@``: numpy's BLAS product took 8 ms of CPU at 100k rows against 1.7
        # (its threads spin on a busy machine); the bound's margin covers either sum order.
        if rows is None:
            point: np.ndarray = np_.einsum("ij,j->i", sk.head[:n], self.head)
            pick: Any = slice(0, n)
        else:
            point = np_.einsum("ij,j->i", np_.take(sk.head, rows, axis=0), self.head)
            pick = rows
        high = point + (
            self.after_head * sk.rest1[pick] + self.rounding * sk.norm[pick] + code_error
        )
        return point, high

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
