"""Synthetic memories and queries for the SQLite benchmarks (deterministic, seeded).

Words follow a Zipf-like distribution over a generated vocabulary, so some query words are
common (long posting lists) and some are rare, as in real memories. Vectors are random unit
vectors: the benchmarks measure the store, not a model (query embedding is timed apart).
"""

from __future__ import annotations

import hashlib
import random
from collections.abc import Sequence
from typing import Any

import numpy as np

_SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "ra",
    "sen",
    "tor",
    "vel",
    "qui",
    "dan",
    "bre",
    "sto",
    "fa",
    "gil",
    "hon",
    "jup",
    "lek",
    "mor",
    "nis",
    "pra",
    "rul",
    "sal",
    "tem",
    "urn",
    "vox",
    "wil",
]
_COMMON = [
    "user",
    "likes",
    "prefers",
    "lives",
    "works",
    "owns",
    "wants",
    "visited",
    "bought",
    "meeting",
    "project",
    "family",
    "friend",
    "morning",
    "evening",
    "weekend",
    "coffee",
    "travel",
    "music",
    "book",
    "house",
    "car",
    "city",
    "team",
    "plan",
    "note",
]
_TEMPLATES = (
    "The user {0} the {1} {2} near {3}",
    "Remember that the user {0} {1} and {2} every {3}",
    "The user's {1} is called {2} and {0} {3}",
    "Note: {1} {2} was {0} during the {3} with {4}",
    "The user said the {1} {2} should {0} before {3}",
)


def vocabulary(size: int, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(_SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


class Corpus:
    def __init__(self, seed: int = 11, vocab_size: int = 20_000) -> None:
        self.rng = random.Random(seed)
        self.vocab = _COMMON + vocabulary(vocab_size)
        weights = [1.0 / (rank + 1) ** 1.05 for rank in range(len(self.vocab))]
        total = sum(weights)
        self.weights = [w / total for w in weights]

    def _words(self, n: int) -> list[str]:
        return self.rng.choices(self.vocab, weights=self.weights, k=n)

    def text(self, i: int) -> str:
        template = self.rng.choice(_TEMPLATES)
        words = self._words(6)
        return template.format(*words) + f" ({i})"

    def texts(self, n: int, start: int = 0) -> list[str]:
        return [self.text(start + i) for i in range(n)]

    def queries(self, docs: Sequence[str], n: int) -> list[str]:
        """Questions built from words of stored memories, with common and stop words mixed in."""
        out = []
        for _ in range(n):
            doc = self.rng.choice(docs)
            words = [w for w in doc.replace("(", " ").replace(")", " ").split() if w.isalpha()]
            picked = self.rng.sample(words, k=min(len(words), self.rng.randint(2, 4)))
            extra = self._words(self.rng.randint(0, 2))
            out.append("What does the user know about " + " ".join(picked + extra) + "?")
        return out


def unit_vector(text: str, dimension: int) -> Any:
    seed = int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "little")
    v = np.random.default_rng(seed).standard_normal(dimension).astype(np.float32)
    return v / np.linalg.norm(v)
