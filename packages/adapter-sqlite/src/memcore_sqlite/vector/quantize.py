"""Compact codes of unit vectors for the first, approximate stages of vector search.

Each vector gets an int8 copy scaled by its largest component, whose dot products come with a
proven error bound. The int8 estimates and their bounds discard every candidate that cannot be
among the best (:mod:`memcore_sqlite.vector.cache`), and the stored vectors rescore the few that
remain. Sign bits (compared by Hamming distance) were kept beside them until schema 9: they
bound no cosine usefully, a cut on them lost rows on templated memories, and they had come to
order nothing, so their 48 bytes a memory went.
numpy is imported here only when a store has an embedder.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    import numpy as np


def _np() -> Any:
    import numpy

    return numpy


#: Rows converted to float32 at a time by :func:`approx_dot` (768 KB at 384 dimensions).
_BLOCK_ROWS = 512


@attrs.frozen
class Codes:
    """Codes of ``len(seqs)`` vectors: ``scales`` (n,) float32, ``q8`` (n, dimension) int8;
    a vector is about ``q8 * scale``."""

    seqs: np.ndarray
    scales: np.ndarray
    q8: np.ndarray

    def __len__(self) -> int:
        return len(self.seqs)

    def take(self, index: Any) -> Codes:
        """The codes at ``index``: a slice (views), a boolean mask or positions (copies).

        Copies go through :func:`numpy.take`, which copies whole rows (twice as fast as fancy
        indexing for int8 rows).
        """
        if isinstance(index, slice):
            return Codes(self.seqs[index], self.scales[index], self.q8[index])
        np_ = _np()
        rows = np_.asarray(index)
        rows = np_.flatnonzero(rows) if rows.dtype == bool else rows.astype(np_.intp, copy=False)
        return Codes(
            np_.take(self.seqs, rows),
            np_.take(self.scales, rows),
            np_.take(self.q8, rows, axis=0),
        )


def encode(seqs: np.ndarray, vectors: np.ndarray) -> Codes:
    """The codes of float32 ``vectors`` (n, dimension); a zero vector gets scale 0."""
    np_ = _np()
    vectors = np_.asarray(vectors, dtype=np_.float32)
    peak = np_.abs(vectors).max(axis=1) if vectors.size else np_.zeros(len(vectors), np_.float32)
    scales = (peak / 127.0).astype(np_.float32)
    safe = np_.where(scales > 0, scales, 1.0).astype(np_.float32)
    q8 = np_.clip(np_.rint(vectors / safe[:, None]), -127, 127).astype(np_.int8)
    return Codes(np_.asarray(seqs, dtype=np_.int64), scales, q8)


def concat(parts: list[Codes], dimension: int) -> Codes:
    np_ = _np()
    if not parts:
        return Codes(
            np_.empty(0, np_.int64),
            np_.empty(0, np_.float32),
            np_.empty((0, dimension), np_.int8),
        )
    return Codes(
        np_.concatenate([p.seqs for p in parts]),
        np_.concatenate([p.scales for p in parts]),
        np_.concatenate([p.q8 for p in parts]),
    )


def approx_dot(
    q8: np.ndarray, scales: np.ndarray, query: np.ndarray, rows: np.ndarray | None = None
) -> np.ndarray:
    """(n,) float32 estimates of each vector's dot product with ``query``.

    ``rows`` picks the rows of ``q8`` to estimate (``scales`` is then theirs, in that order):
    each block is gathered as it is converted, so the int8 rows are not copied out first.
    In blocks, so the float copy of the int8 rows stays in cache (twice as fast at 5k rows).
    The rows are gathered with :func:`numpy.take`, which copies whole rows: for ~3,000 rows
    scattered over 100k (fresh from memory each query) it takes 0.10 ms against 0.23 ms for
    fancy indexing, whose copy goes element by element.
    """
    np_ = _np()
    n = len(q8) if rows is None else len(rows)
    out: np.ndarray = np_.empty(n, dtype=np_.float32)
    for start in range(0, n, _BLOCK_ROWS):
        stop = start + _BLOCK_ROWS
        part = q8[start:stop] if rows is None else np_.take(q8, rows[start:stop], axis=0)
        # einsum, not ``@``: BLAS took 7 ms of CPU for 2,000 rows against 0.8 (its threads).
        out[start:stop] = np_.einsum("ij,j->i", part.astype(np_.float32), query)
    out *= scales
    return out


def error_bound(scales: np.ndarray, query: np.ndarray) -> np.ndarray:
    """(n,) bounds on ``|approx_dot - exact dot|``: each int8 component is within half a
    step (scale / 2) of the float one, so the error is at most scale / 2 * sum(|query|).
    A small absolute margin covers float32 rounding in both sums."""
    np_ = _np()
    bound: np.ndarray = scales * np_.float32(0.5 * float(np_.abs(query).sum())) + np_.float32(1e-4)
    return bound
