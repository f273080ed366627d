"""Realistic vectors for the search benchmark: real MiniLM embeddings, mixed up to any size.

Embedding 100k texts with the real model would take many minutes on two cores, so a few
thousand real user turns of LongMemEval (the development split in ``shared/data`` beside the checkout; path configurable)
are embedded once (cached under ``~/.cache/memcore-bench``) and every stored vector is a
random convex-ish mix of three of them plus a little noise, re-normalised. The mixes stay in the
span of real embeddings, so the corpus keeps the model's anisotropy and clustering (which is
what makes quantised search hard), while every vector is distinct. Queries are the real
embeddings of the benchmark's questions and of held-out user turns, never mixed.
"""

from __future__ import annotations

import hashlib
import random
from pathlib import Path
from typing import Any

import numpy as np

#: The LongMemEval file and its loader are those of the LongMemEval benchmark.
from benchmarks.longmemeval import DEFAULT_DATA as DATA
from benchmarks.longmemeval import load

CACHE = Path.home() / ".cache" / "memcore-bench"


def _texts(path: Path) -> tuple[list[str], list[str]]:
    """(unique user turns in a seeded order, the benchmark's questions)."""
    items = load(path)
    turns = sorted(
        {
            t["content"].strip()
            for q in items
            for s in q["haystack_sessions"]
            for t in s
            if t["role"] == "user" and t["content"].strip()
        }
    )
    random.Random(5).shuffle(turns)
    return turns, [q["question"] for q in items]


class RealVectors:
    """``base`` real turns (texts and vectors) and ``queries`` real query embeddings."""

    def __init__(self, base: int = 6_000, queries: int = 200, path: Path = DATA) -> None:
        turns, questions = _texts(path)
        self.texts = turns[:base]
        query_texts = (questions + turns[base : base + queries])[:queries]
        self.query_texts = query_texts
        self.vectors = self._embed_cached(self.texts, "base")
        self.queries = self._embed_cached(query_texts, "queries")

    @staticmethod
    def _embed_cached(texts: list[str], kind: str) -> Any:
        digest = hashlib.blake2b("\x00".join(texts).encode(), digest_size=8).hexdigest()
        file = CACHE / f"minilm-{kind}-{len(texts)}-{digest}.npy"
        if file.exists():
            return np.load(file)
        from memcore_sqlite.embedders.onnx import OnnxEmbedder

        out = np.asarray(OnnxEmbedder(batch_size=64).embed(texts), dtype=np.float32)
        CACHE.mkdir(parents=True, exist_ok=True)
        np.save(file, out)
        return out

    def corpus(self, n: int, seed: int = 0) -> tuple[list[str], Any]:
        """``n`` distinct (text, unit vector) pairs: the main real turn's text of each mix."""
        rng = np.random.default_rng(seed)
        m = len(self.texts)
        a = rng.integers(0, m, n)
        b = rng.integers(0, m, n)
        c = rng.integers(0, m, n)
        w = rng.uniform((0.6, 0.0, 0.0), (1.0, 0.5, 0.3), size=(n, 3)).astype(np.float32)
        v = w[:, :1] * self.vectors[a] + w[:, 1:2] * self.vectors[b] + w[:, 2:] * self.vectors[c]
        v += rng.standard_normal(v.shape, dtype=np.float32) * (0.05 / np.sqrt(v.shape[1]))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        # At most 90 words: the store embeds a longer text as passages, which would not be
        # the vector given here.
        short = [" ".join(t.split()[:90]) for t in self.texts]
        texts = [f"{short[int(i)]} (#{seed}-{k})" for k, i in enumerate(a)]
        return texts, v.astype(np.float32)

    def templated(
        self, n: int, queries: int = 200, seed: int = 29
    ) -> tuple[list[str], Any, list[str], Any]:
        """``n`` memories of one kind of fact many times over, and questions about them:
        (texts, vectors, query texts, query vectors).

        As "The user's sister Anna lives in Oslo" and its variants: each of
        :data:`TEMPLATES` sentence shapes is a real embedding, and each memory adds the
        deviations (from the mean) of two other real embeddings, scaled down, for the two
        names filled in, so memories of one template are near-duplicates that share most of
        their sign bits. A question leans on two templates ("where does my sister work?")
        and one of the names; on this corpus a cut by sign bits kept 77-84% of the true
        top 10.
        """
        rng = np.random.default_rng(seed)
        bases = self.vectors[:TEMPLATES]
        mean = self.vectors.mean(axis=0)
        names = self.vectors[1_000 : 1_000 + FILLERS] - mean
        t = rng.integers(0, TEMPLATES, n)
        a = rng.integers(0, FILLERS, n)
        b = rng.integers(0, FILLERS, n)
        v = bases[t] + 0.15 * names[a] + 0.1 * names[b]
        v += rng.standard_normal(v.shape, dtype=np.float32) * (0.02 / np.sqrt(v.shape[1]))
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        words = _filler_words()
        texts = [
            f"The user's {_RELATIONS[t[k] % len(_RELATIONS)]} {words[a[k]]} {_VERBS[t[k] % len(_VERBS)]}"
            f" {words[b[k]].capitalize()} (#{k})"
            for k in range(n)
        ]
        qt = rng.integers(0, TEMPLATES, queries)
        qa = rng.integers(0, FILLERS, queries)
        qv = bases[qt] + 0.5 * bases[(qt + 1) % TEMPLATES] + 0.15 * names[qa]
        qv += rng.standard_normal(qv.shape, dtype=np.float32) * (0.2 / np.sqrt(qv.shape[1]))
        qv /= np.linalg.norm(qv, axis=1, keepdims=True)
        qtexts = [
            f"Where does the user's {_RELATIONS[x % len(_RELATIONS)]} {words[y]} work?"
            for x, y in zip(qt, qa)
        ]
        return texts, v.astype(np.float32), qtexts, qv.astype(np.float32)


#: Sentence shapes and names of the templated corpus (:meth:`RealVectors.templated`).
TEMPLATES = 8
FILLERS = 300
_RELATIONS = ["sister", "brother", "dentist", "manager", "neighbour", "trainer", "cousin", "aunt"]
_VERBS = ["lives in", "works at", "moved to", "trains at", "was born in"]


def _filler_words() -> list[str]:
    from benchmarks._sqlite_corpus import vocabulary

    return vocabulary(FILLERS, seed=29)
