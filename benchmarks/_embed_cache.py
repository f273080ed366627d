"""An embedder that remembers vectors per text in a SQLite file outside the repository.

Benchmarks over public data sets embed tens of thousands of texts; on a small machine that
takes longer than one iteration should. Vectors are keyed by the model name and the text, so
a cache is only ever reused for the model that computed it.
"""

from __future__ import annotations

import hashlib
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memcore.ports import Embedder


def _key(model: str, text: str) -> bytes:
    return hashlib.sha256(f"{model}\x00{text}".encode("utf-8", "surrogatepass")).digest()


class WrappedEmbedder:
    """Stands in for ``inner``: the same model name and dimension (so stored vectors match)."""

    def __init__(self, inner: Embedder) -> None:
        self.inner = inner

    @property
    def dimension(self) -> int:
        return self.inner.dimension

    @property
    def name(self) -> str:
        return self.inner.name


class CachingEmbedder(WrappedEmbedder):
    """Wraps ``inner``; texts seen before (in any run) are not embedded again.

    ``read_only``: a text that is not cached raises :class:`LookupError` instead of being
    embedded, so a run can never add another model's vectors to a shared cache.
    """

    def __init__(self, inner: Embedder, directory: str | Path, *, read_only: bool = False) -> None:
        super().__init__(inner)
        self.read_only = read_only
        Path(directory).mkdir(parents=True, exist_ok=True)
        self._conn = sqlite3.connect(
            Path(directory) / "vectors.db", timeout=60, check_same_thread=False
        )
        self._conn.execute("PRAGMA journal_mode = WAL")
        self._conn.execute("CREATE TABLE IF NOT EXISTS v (k BLOB PRIMARY KEY, vec BLOB NOT NULL)")
        self._lock = threading.Lock()
        self.hits = 0
        self.misses = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        import numpy as np

        keys = [_key(self.name, t) for t in texts]
        found: dict[bytes, Any] = {}
        with self._lock:
            for i in range(0, len(keys), 500):
                part = keys[i : i + 500]
                marks = ",".join("?" * len(part))
                for k, blob in self._conn.execute(
                    f"SELECT k, vec FROM v WHERE k IN ({marks})", part
                ):
                    found[k] = np.frombuffer(blob, dtype="<f4")
        missing = list(dict.fromkeys(t for t, k in zip(texts, keys) if k not in found))
        self.hits += len(texts) - len(missing)
        self.misses += len(missing)
        if missing and self.read_only:
            raise LookupError(f"{len(missing)} texts are not in the vector cache for {self.name}")
        if missing:
            vectors = self.inner.embed(missing)
            rows = []
            for text, vec in zip(missing, vectors):
                arr = np.asarray(vec, dtype="<f4")
                found[_key(self.name, text)] = arr
                rows.append((_key(self.name, text), arr.tobytes()))
            with self._lock:
                self._conn.executemany("INSERT OR REPLACE INTO v VALUES (?, ?)", rows)
                self._conn.commit()
        return [found[k].tolist() for k in keys]
