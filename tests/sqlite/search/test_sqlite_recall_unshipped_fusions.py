"""Two fusions measured by ``benchmarks/longmemeval_cv.py`` and not shipped: the vector quota
(family ``quota``: the vector signal's best rows placed among the first hits of the fused
order, pushing the last of them down; an order that holds them already is left as it was)
and the adaptive weight (``adaptive``: the vector weight raised where words match little)."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks import longmemeval_cv as cv


def question(cosines: list[float]) -> cv.Question:
    n = len(cosines)
    keys = [str(i) for i in range(n)]
    seqs = np.arange(n, dtype=np.int64)
    return cv.Question(
        "q", "t", seqs, keys, keys, np.asarray(cosines), {}, [], set(), set(), {}, {}
    )


def test_the_vectors_best_rows_take_the_last_places_of_the_prefix() -> None:
    q = question([0.1, 0.2, 0.3, 0.4, 0.9, 0.8])  # the vector's best: 4, then 5
    fused = np.asarray([0, 1, 2, 3, 4, 5])
    assert cv._with_quota(q, fused, 1, 3).tolist() == [0, 1, 4, 2, 3, 5]
    assert cv._with_quota(q, fused, 2, 3).tolist() == [0, 4, 5, 1, 2, 3]


def test_an_order_that_holds_them_is_unchanged() -> None:
    q = question([0.1, 0.9, 0.3, 0.4])
    fused = np.asarray([3, 1, 0, 2])
    assert cv._with_quota(q, fused, 1, 3) is fused


def test_the_adaptive_weight_moves_to_the_vector_only_where_words_match_little() -> None:
    q = question([0.9, 0.1])
    key = (*cv.DEFAULT[2:], *cv.SHIPPED_PRIOR)
    q.lexical[key] = {1: 0.4}
    shipped, _ = cv.fused_scores(q, cv.DEFAULT)
    same, _ = cv.fused_scores(q, ("adaptive", 0.4))  # the best lexical score reaches 0.4
    assert same.tolist() == shipped.tolist()
    raised, _ = cv.fused_scores(q, ("adaptive", 0.8))  # half way from 0.3 to 1: 0.65
    assert np.allclose(raised, [0.65 * 0.9, 0.65 * 0.1 + 0.35 * 0.4])
