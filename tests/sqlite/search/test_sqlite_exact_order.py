"""A small scope's fused order, scored as arrays: every prefix equals ``fuse`` + ``ordered``
(seqs, ``repr`` of scores and signals, their order), at the edges of the clipping (cosines
below 0 and above 1, NaN, -0.0), with ties, lexical candidates without a vector, and one
signal; the prefix read in slices equals the one read at once. And the cosines of its lexical
candidates, looked up by binary search, are those the ``isin`` filter gave."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest

from memcore_sqlite.search import ranking
from memcore_sqlite.search.exact_order import ExactOrder
from memcore_sqlite.search.fused_order import ordered
from memcore_sqlite.search.ranking import LexicalHit
from memcore_sqlite.vector.cache import VectorCache, _Entry
from memcore_sqlite.vector.quantize import encode

EDGES = [-1.5, -0.3, -0.0, 0.0, 1e-300, 0.3, 0.999999, 1.0, 1.0000001, 3.0, math.nan, math.inf]


def _plain(lexical: dict[int, LexicalHit] | None, semantic: dict[int, float]) -> list[object]:
    return _shown(ordered(ranking.fuse(lexical, semantic)))


def _shown(ranked: list[tuple[int, ranking.Relevance]]) -> list[object]:
    return [(seq, repr(r.score), [(k, repr(v)) for k, v in r.signals.items()]) for seq, r in ranked]


def _case(seed: int) -> tuple[dict[int, LexicalHit] | None, dict[int, float]]:
    rng = random.Random(seed)
    seqs = rng.sample(range(1, 400), rng.randint(0, 160))
    levels = [0.0, 0.25, 0.5, 1.0, rng.random()]
    semantic = {
        s: rng.choice(EDGES) if rng.random() < 0.2 else rng.choice([0.5, rng.uniform(-1, 1)])
        for s in seqs
    }
    lexical: dict[int, LexicalHit] | None = {
        s: LexicalHit(rng.choice(levels), rng.random() < 0.5)
        for s in rng.sample(range(1, 400), rng.randint(0, 60))
    }
    if seed % 5 == 0:
        lexical = None
    elif seed % 5 == 1:
        lexical = {}
    return lexical, semantic


@pytest.mark.parametrize("seed", range(60))
def test_every_prefix_equals_the_plain_fusion(seed: int) -> None:
    lexical, semantic = _case(seed)
    plain = _plain(lexical, semantic)
    for k in (0, 1, 10, 50, len(plain), len(plain) + 5):
        assert _shown(ExactOrder(lexical, semantic).first(k)) == plain[:k]


def test_slices_read_one_after_another_equal_one_read() -> None:
    lexical, semantic = _case(7)
    order = ExactOrder(lexical, semantic)
    parts = [order.first(k) for k in (3, 3, 10, 20, 400)]
    assert _shown(parts[-1]) == _plain(lexical, semantic)
    assert all(_shown(p) == _shown(parts[-1][: len(p)]) for p in parts)


def test_lexical_candidates_without_a_cosine_count_zero_and_nan_counts_zero() -> None:
    lexical = {1: LexicalHit(0.5, True), 2: LexicalHit(1.0, False)}
    semantic = {2: math.nan, 3: 0.9}
    got = ExactOrder(lexical, semantic).first(10)
    w = ranking.VECTOR_WEIGHT
    scores = {1: (1 - w) * 0.5, 2: (1 - w) * 1.0, 3: w * 0.9}
    assert [s for s, _ in got] == sorted(scores, key=lambda s: -scores[s])
    assert [r.score for _, r in got] == pytest.approx(sorted(scores.values(), reverse=True))
    assert dict(got[0][1].signals) == {"lexical": 1.0, "vector": 0.0}
    assert _shown(got) == _plain(lexical, semantic)


@pytest.mark.parametrize("shuffled", [False, True])
def test_cosines_of_a_small_scope_spread_over_a_large_file(shuffled: bool) -> None:
    """The cosines of lexical candidates from the in-memory matrix, by binary search: the same
    pairs as filtering the scope's seqs with ``isin``, for seqs with and without a vector, in
    a scope whose seqs span a large range (a tenant among many) and in unsorted codes."""
    rng = np.random.default_rng(3)
    seqs = np.arange(1, 1_001, dtype=np.int64) * 97
    if shuffled:
        rng.shuffle(seqs)
    rows = rng.standard_normal((1_000, 32)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    query = rows[5].copy()
    entry = _Entry(0, encode(seqs, rows), rows)
    wanted = [int(s) for s in rng.choice(seqs, 40, replace=False)] + [3, 98, 10**9]

    have = entry.view().seqs
    picked = np.flatnonzero(np.isin(have, np.asarray(wanted, dtype=np.int64)))
    scores = np.einsum("ij,j->i", rows[picked], query)
    before = {int(s): float(c) for s, c in zip(have[picked], scores)}

    got = VectorCache(32).cosines(entry, wanted, query, lambda _: iter(()))
    assert got == before
    assert len(got) == 40
