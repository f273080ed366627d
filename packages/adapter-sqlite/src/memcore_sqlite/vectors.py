"""Per-scope vector matrices kept in memory for exact cosine search with numpy.

One entry per (store, scope pattern) holds the unit vectors of the memories that pattern
matches. Writes made by this process update the entries in place; a write by another process
shows up as a new store generation and the entry is reloaded on its next use.
numpy is imported here only, and only when a store has an embedder.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

PatternKey = tuple[int, tuple[str, str, str, str]]
#: Rows read per chunk when a matrix is loaded, to bound the extra memory of the load.
_LOAD_CHUNK_ROWS = 4_096


def _np() -> Any:
    import numpy

    return numpy


def pattern_matches(pattern: tuple[str, str, str, str], scope: tuple[str, str, str, str]) -> bool:
    return all(p == "*" or p == s for p, s in zip(pattern, scope))


class _Entry:
    """A growable matrix: appends are amortised O(d), removals swap in the last row."""

    def __init__(self, generation: int, seqs: np.ndarray, matrix: np.ndarray) -> None:
        self.generation = generation
        self.n = len(seqs)
        self.seqs = seqs
        self.matrix = matrix

    def append(self, seq: int, vector: np.ndarray) -> None:
        np_ = _np()
        if self.n == len(self.seqs):
            cap = max(16, self.n * 2)
            seqs = np_.empty(cap, dtype=np_.int64)
            seqs[: self.n] = self.seqs[: self.n]
            matrix = np_.empty((cap, self.matrix.shape[1]), dtype=np_.float32)
            matrix[: self.n] = self.matrix[: self.n]
            self.seqs, self.matrix = seqs, matrix
        self.seqs[self.n] = seq
        self.matrix[self.n] = vector
        self.n += 1

    def remove(self, seq: int) -> None:
        np_ = _np()
        where = np_.flatnonzero(self.seqs[: self.n] == seq)
        if not len(where):
            return
        i = int(where[0])
        last = self.n - 1
        if i != last:
            self.seqs[i] = self.seqs[last]
            self.matrix[i] = self.matrix[last]
        self.n = last


class VectorCache:
    """LRU of per-pattern matrices, bounded by the number of rows held in total."""

    def __init__(self, dimension: int, *, max_rows: int = 1_000_000) -> None:
        self.dimension = dimension
        self.max_rows = max_rows
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
        return bytes(vector.astype("<f4", copy=False).tobytes())

    def get(
        self,
        key: PatternKey,
        generation: int,
        load: Callable[[], Iterable[tuple[int, bytes]]],
    ) -> _Entry:
        """The entry for ``key`` at ``generation``, loading it from the database when stale."""
        with self._lock:
            entry = self._entries.get(key)
            if entry is not None and entry.generation == generation:
                self._entries.move_to_end(key)
                return entry
        np_ = _np()
        seqs: list[int] = []
        chunks: list[np.ndarray] = []
        blobs: list[bytes] = []
        width = 4 * self.dimension
        for seq, blob in load():
            if len(blob) == width:
                seqs.append(seq)
                blobs.append(blob)
                if len(blobs) == _LOAD_CHUNK_ROWS:
                    chunks.append(np_.frombuffer(b"".join(blobs), dtype="<f4"))
                    blobs = []
        if blobs:
            chunks.append(np_.frombuffer(b"".join(blobs), dtype="<f4"))
        # One copy into a writable float32 matrix; the bytes never exist twice in full.
        flat = np_.concatenate(chunks) if chunks else np_.empty(0, dtype=np_.float32)
        matrix = flat.astype(np_.float32, copy=False).reshape(len(seqs), self.dimension)
        entry = _Entry(generation, np_.asarray(seqs, dtype=np_.int64), matrix)
        with self._lock:
            self._entries[key] = entry
            self._entries.move_to_end(key)
            self._evict()
        return entry

    def _evict(self) -> None:
        total = sum(e.n for e in self._entries.values())
        while total > self.max_rows and len(self._entries) > 1:
            _, old = self._entries.popitem(last=False)
            total -= old.n

    def apply_write(
        self,
        store_id: int,
        before: int,
        after: int,
        added: Sequence[tuple[tuple[str, str, str, str], int, np.ndarray | None]],
        removed: Sequence[tuple[tuple[str, str, str, str], int]],
    ) -> None:
        """Apply this process's own write; entries that missed another writer are dropped."""
        with self._lock:
            for key in [k for k in self._entries if k[0] == store_id]:
                entry = self._entries[key]
                if entry.generation != before:
                    del self._entries[key]
                    continue
                pattern = key[1]
                for scope, seq in removed:
                    if pattern_matches(pattern, scope):
                        entry.remove(seq)
                for scope, seq, vector in added:
                    if vector is not None and pattern_matches(pattern, scope):
                        entry.append(seq, vector)
                entry.generation = after

    def drop_store(self, store_id: int) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == store_id]:
                del self._entries[key]

    def top(
        self, entry: _Entry, query: np.ndarray, n: int, allowed: np.ndarray | None = None
    ) -> list[tuple[int, float]]:
        """The ``n`` best (seq, cosine) pairs; ``allowed`` restricts to those seqs."""
        np_ = _np()
        if entry.n == 0:
            return []
        seqs = entry.seqs[: entry.n]
        # einsum runs one thread of SIMD loops. A threaded BLAS gemv was 10x slower on the
        # shared 2-core machine whenever another process held a core (0.6 vs 8 ms at 10k rows),
        # and it is no faster when idle: the scan is bound by memory bandwidth.
        scores = np_.einsum("ij,j->i", entry.matrix[: entry.n], query)
        if allowed is not None:
            mask = np_.isin(seqs, allowed)
            scores = np_.where(mask, scores, -np_.inf)
        n = min(n, entry.n)
        idx = (
            np_.argpartition(scores, entry.n - n)[entry.n - n :]
            if n < entry.n
            else np_.arange(entry.n)
        )
        idx = idx[np_.argsort(-scores[idx], kind="stable")]
        return [(int(seqs[i]), float(scores[i])) for i in idx if np_.isfinite(scores[i])]
