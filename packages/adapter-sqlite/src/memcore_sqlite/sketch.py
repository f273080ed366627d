"""A short projection of each code with a proven upper bound on its cosine, for every row.

The sign bits of :mod:`memcore_sqlite.quantize` order rows well but bound nothing useful:
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
(:func:`memcore_sqlite.quantize.error_bound`) and a margin for float rounding. Real
embeddings keep most of their energy in the first principal directions, so ``‖x̂₊‖`` is
small where the query's part is large, and the bound, a 128-byte dot product, clears most
rows of a scope. Any orthonormal basis keeps the bound valid: rows written after the basis
was chosen are projected on it too, only less tightly.
numpy is imported here only when a store has an embedder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: Principal coordinates kept per row (bytes per row, besides two float32 norms).
COLUMNS = 128
#: Rows the basis is estimated from (evenly spread over the scope).
SAMPLE_ROWS = 4_096
#: Rows projected at a time.
_BLOCK_ROWS = 2_048
#: Relative margin for float32 rounding in the projections and norms (their error is below
#: 384 * 2**-24, about 2.3e-5, of the norms' product).
_ROUNDING = 1e-3


def _np() -> Any:
    import numpy

    return numpy


class Sketch:
    """The projections of a growable set of codes (rows aligned with them).

    ``basis`` is (dimension, dimension) float64 with orthonormal columns, by decreasing
    variance; ``p8`` (rows, m) int8 times ``column_scale`` approximates the first m
    coordinates; ``quant_error`` bounds the distance between those and the true ones,
    ``rest`` the norm of the remaining coordinates and ``norm`` the code's own norm.
    """

    def __init__(self, basis: np.ndarray, column_scale: np.ndarray, capacity: int) -> None:
        np_ = _np()
        self.basis = basis
        self.m = column_scale.shape[0]
        self._project = np_.ascontiguousarray(basis[:, : self.m], dtype=np_.float32)
        self.column_scale = column_scale
        self.p8 = np_.zeros((capacity, self.m), np_.int8)
        self.quant_error = np_.zeros(capacity, np_.float32)
        self.rest = np_.zeros(capacity, np_.float32)
        self.norm = np_.zeros(capacity, np_.float32)

    @classmethod
    def build(cls, q8: np.ndarray, scales: np.ndarray, capacity: int) -> Sketch:
        """The sketch of the ``len(q8)`` codes given, with room for ``capacity`` rows."""
        np_ = _np()
        n, dimension = q8.shape
        m = min(COLUMNS, dimension)
        pick = np_.unique(np_.linspace(0, max(n - 1, 0), min(n, SAMPLE_ROWS)).astype(np_.int64))
        sample = q8[pick].astype(np_.float64) * scales[pick, None].astype(np_.float64)
        sample = sample[np_.isfinite(sample).all(axis=1)]
        if len(sample):
            _, vectors = np_.linalg.eigh(sample.T @ sample)
            basis = np_.ascontiguousarray(vectors[:, ::-1])
        else:
            basis = np_.eye(dimension)
        projected = cls._projections(basis[:, :m].astype(np_.float32), q8, scales)
        finite = np_.isfinite(projected).all(axis=1)
        peak = np_.abs(projected[finite]).max(axis=0) if finite.any() else np_.zeros(m)
        column_scale = np_.where(peak > 0, peak / 127.0, 1.0).astype(np_.float32)
        out = cls(basis, column_scale, max(capacity, n))
        out._fill(0, projected, q8, scales)
        return out

    @staticmethod
    def _projections(project: np.ndarray, q8: np.ndarray, scales: np.ndarray) -> np.ndarray:
        np_ = _np()
        out: np.ndarray = np_.empty((len(q8), project.shape[1]), np_.float32)
        for start in range(0, len(q8), _BLOCK_ROWS):
            stop = start + _BLOCK_ROWS
            out[start:stop] = q8[start:stop].astype(np_.float32) @ project
        out *= scales[:, None]
        return out

    def _fill(self, start: int, projected: np.ndarray, q8: np.ndarray, scales: np.ndarray) -> None:
        """Rows ``start:start + len(q8)`` from their projections (a row that is not numbers
        gets bounds that are not numbers, which keep it)."""
        np_ = _np()
        stop = start + len(q8)
        with np_.errstate(invalid="ignore", over="ignore"):
            p8 = np_.clip(np_.rint(projected / self.column_scale), -127, 127)
            p8 = np_.where(np_.isfinite(p8), p8, 0).astype(np_.int8)
            self.p8[start:stop] = p8
            p = projected.astype(np_.float64)
            miss = p - p8 * self.column_scale.astype(np_.float64)
            self.quant_error[start:stop] = np_.sqrt(np_.einsum("ij,ij->i", miss, miss))
            s = scales.astype(np_.float64)
            whole = np_.einsum("ij,ij->i", q8.astype(np_.float64), q8.astype(np_.float64)) * s * s
            head = np_.einsum("ij,ij->i", p, p)
            # A residual's square is a difference of two rounded sums: widened by their error.
            self.rest[start:stop] = np_.sqrt(np_.maximum(whole - head, 0.0) + 2 * _ROUNDING * whole)
            self.norm[start:stop] = np_.sqrt(whole)
        bad = ~np_.isfinite(projected).all(axis=1) | ~np_.isfinite(scales)
        if bad.any():
            self.rest[start:stop][bad] = np_.inf

    def grow(self, capacity: int, n: int) -> None:
        np_ = _np()
        for name in ("p8", "quant_error", "rest", "norm"):
            old = getattr(self, name)
            new = np_.zeros((capacity, *old.shape[1:]), old.dtype)
            new[:n] = old[:n]
            setattr(self, name, new)

    def put(self, start: int, q8: np.ndarray, scales: np.ndarray) -> None:
        """Project appended codes (rows ``start:start + len(q8)``) on the existing basis."""
        self._fill(start, self._projections(self._project, q8, scales), q8, scales)

    def move(self, to: int, source: int) -> None:
        for column in (self.p8, self.quant_error, self.rest, self.norm):
            column[to] = column[source]

    def bounds(
        self, query: np.ndarray, n: int, code_error: np.ndarray, rows: np.ndarray | None = None
    ) -> tuple[np.ndarray, np.ndarray]:
        """(point estimates, upper bounds) of the cosines of rows ``:n`` (or ``rows``) with
        ``query``; ``code_error`` bounds each int8 code's error (rows aligned)."""
        np_ = _np()
        q = np_.asarray(query, dtype=np_.float64)
        turned = self.basis.T @ q
        head, tail = turned[: self.m], turned[self.m :]
        weights = (head * self.column_scale).astype(np_.float32)
        p8 = self.p8[:n] if rows is None else self.p8
        count = n if rows is None else len(rows)
        estimate: np.ndarray = np_.empty(count, np_.float32)
        for start in range(0, count, _BLOCK_ROWS):
            stop = start + _BLOCK_ROWS
            part = p8[start:stop] if rows is None else np_.take(p8, rows[start:stop], axis=0)
            estimate[start:stop] = part.astype(np_.float32) @ weights
        pick = slice(0, n) if rows is None else rows
        q_norm = float(np_.sqrt(q @ q))
        slack = (
            np_.float32(float(np_.sqrt(head @ head))) * self.quant_error[pick]
            + np_.float32(float(np_.sqrt(tail @ tail))) * self.rest[pick]
            + np_.float32(_ROUNDING * q_norm) * self.norm[pick]
            + code_error
            + np_.float32(1e-6)
        )
        return estimate, estimate + slack
