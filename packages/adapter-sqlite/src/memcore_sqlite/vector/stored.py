"""How a memory's float vector is stored: little-endian float16, half the bytes of float32.

At 100k memories the float32 vectors were 1,641 of the file's 3,447 bytes a memory; as
float16 they take about 820. Every stage of a search computes on exactly the stored values
(upcast to float32): a write's blob and its codes are both made from the rounded vector
(:func:`rounded`), and so are the sketch, the small scopes' matrices and the rescoring, so the
search stays exact against an exact scan of what is stored. Float16 keeps 11 significant
bits: each component of a unit vector moves by at most 2**-12 of itself, a cosine with a
unit query by at most about 2**-12 (measured against the float32 originals in
``docs/benchmarks/sqlite.md``).
numpy is imported here only when a store has an embedder.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memcore.errors import InvalidInput

if TYPE_CHECKING:
    import numpy as np

#: The stored element type (numpy's spelling).
DTYPE = "<f2"
#: Bytes per stored component.
ITEM_BYTES = 2


def _np() -> Any:
    import numpy

    return numpy


def width(dimension: int) -> int:
    """Bytes of one stored vector; a blob of another length is another model's or format's."""
    return ITEM_BYTES * dimension


def rounded(vectors: Any) -> np.ndarray:
    """(n, dimension) float32: each vector as it will be stored and read back.

    A finite value float16 cannot hold (beyond 65504) would be stored as infinity; such a
    vector is refused, so that what a search scores is what the embedder meant.
    """
    np_ = _np()
    exact = np_.asarray(vectors, dtype=np_.float32)
    with np_.errstate(over="ignore"):
        out: np.ndarray = exact.astype(DTYPE).astype(np_.float32)
    if not np_.array_equal(np_.isfinite(out), np_.isfinite(exact)):
        raise InvalidInput(
            "the embedder returned values too large to store (beyond 65504)", field="embedder"
        )
    return out


def to_blob(vector: Any) -> bytes:
    """The stored bytes of one vector (rounded first when it is not already)."""
    np_ = _np()
    with np_.errstate(over="ignore"):  # refused by :func:`rounded` in the same write
        return bytes(np_.asarray(vector, dtype=np_.float32).astype(DTYPE).tobytes())


def matrix(blobs: Sequence[bytes], dimension: int) -> np.ndarray:
    """(len(blobs), dimension) float32 of stored vectors, each blob :func:`width` bytes."""
    np_ = _np()
    out: np.ndarray = (
        np_.frombuffer(b"".join(blobs), dtype=DTYPE)
        .reshape(len(blobs), dimension)
        .astype(np_.float32)
    )
    return out


def vector(blob: bytes) -> np.ndarray:
    """One stored vector as float32."""
    np_ = _np()
    out: np.ndarray = np_.frombuffer(blob, dtype=DTYPE).astype(np_.float32)
    return out
