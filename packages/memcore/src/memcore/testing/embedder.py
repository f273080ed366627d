"""A deterministic embedder for fast tests: hashed word and character-trigram features."""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence

_WORD = re.compile(r"\w+", re.UNICODE)


class HashingEmbedder:
    """Unit-length vectors from hashed features; similar wording gives similar vectors.

    It has no notion of meaning (``coffee`` and ``beverage`` are unrelated), so semantic-recall
    tests must use a real embedder.
    """

    def __init__(self, dimension: int = 64) -> None:
        self._dimension = dimension

    @property
    def dimension(self) -> int:
        return self._dimension

    @property
    def name(self) -> str:
        return f"hashing-{self._dimension}"

    def _features(self, text: str) -> list[str]:
        words = [w.lower() for w in _WORD.findall(text)]
        grams = [w[i : i + 3] for w in words for i in range(max(1, len(w) - 2))]
        return words + grams

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        out: list[list[float]] = []
        for text in texts:
            vec = [0.0] * self._dimension
            for feature in self._features(text):
                digest = hashlib.blake2b(feature.encode("utf-8"), digest_size=8).digest()
                index = int.from_bytes(digest[:4], "little") % self._dimension
                vec[index] += 1.0 if digest[4] & 1 else -1.0
            norm = math.sqrt(sum(v * v for v in vec)) or 1.0
            out.append([v / norm for v in vec])
        return out


class CountingEmbedder(HashingEmbedder):
    """The hashing embedder, keeping every text it was asked for (to check what work a
    call did, such as which memories a search embedded)."""

    def __init__(self, dimension: int = 64) -> None:
        super().__init__(dimension)
        self.texts: list[str] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.texts.extend(texts)
        return super().embed(texts)
