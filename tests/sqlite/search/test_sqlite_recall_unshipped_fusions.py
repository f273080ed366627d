"""Four fusions measured by ``benchmarks/longmemeval_cv`` and not shipped: the vector
quota (family ``quota``: the vector signal's best rows placed among the first hits of the fused
order, pushing the last of them down; an order that holds them already is left as it was),
the adaptive weight (``adaptive``: the vector weight raised where words match little),
pseudo-relevance feedback (``feedback``: the query vector moved towards the first hits') and
maximal marginal relevance (``mmr``: a hit that repeats one placed gives way to one that
adds something)."""

from __future__ import annotations

import sys
from pathlib import Path

import attrs
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3]))
from benchmarks.longmemeval_cv.questions import Question
from benchmarks.longmemeval_cv.rankings import by_score, fused_scores, with_novelty, with_quota
from benchmarks.longmemeval_cv.settings import DEFAULT, SHIPPED_PRIOR


def question(cosines: list[float]) -> Question:
    n = len(cosines)
    keys = [str(i) for i in range(n)]
    seqs = np.arange(n, dtype=np.int64)
    return Question("q", "t", seqs, keys, keys, np.asarray(cosines), {}, [], set(), set(), {}, {})


def with_vectors(rows: list[list[float]], query: list[float]) -> Question:
    """A question over rows with these vectors and no query word in the store."""
    matrix = np.asarray(rows, dtype=np.float32)
    qvec = np.asarray(query, dtype=np.float32)
    q = attrs.evolve(question((matrix @ qvec).tolist()), matrix=matrix, qvec=qvec)
    q.lexical[(*DEFAULT[2:], *SHIPPED_PRIOR)] = {}
    return q


def test_the_vectors_best_rows_take_the_last_places_of_the_prefix() -> None:
    q = question([0.1, 0.2, 0.3, 0.4, 0.9, 0.8])  # the vector's best: 4, then 5
    fused = np.asarray([0, 1, 2, 3, 4, 5])
    assert with_quota(q, fused, 1, 3).tolist() == [0, 1, 4, 2, 3, 5]
    assert with_quota(q, fused, 2, 3).tolist() == [0, 4, 5, 1, 2, 3]


def test_an_order_that_holds_them_is_unchanged() -> None:
    q = question([0.1, 0.9, 0.3, 0.4])
    fused = np.asarray([3, 1, 0, 2])
    assert with_quota(q, fused, 1, 3) is fused


def test_the_adaptive_weight_moves_to_the_vector_only_where_words_match_little() -> None:
    q = question([0.9, 0.1])
    key = (*DEFAULT[2:], *SHIPPED_PRIOR)
    q.lexical[key] = {1: 0.4}
    shipped, _ = fused_scores(q, DEFAULT)
    same, _ = fused_scores(q, ("adaptive", 0.4))  # the best lexical score reaches 0.4
    assert same.tolist() == shipped.tolist()
    raised, _ = fused_scores(q, ("adaptive", 0.8))  # half way from 0.3 to 1: 0.65
    assert np.allclose(raised, [0.65 * 0.9, 0.65 * 0.1 + 0.35 * 0.4])


def test_feedback_moves_the_query_towards_the_first_hits_and_rescores_the_candidates() -> None:
    q = with_vectors([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]], [0.8, 0.6])
    shipped, rows = fused_scores(q, DEFAULT)  # no query word: the vector alone
    assert by_score(q, shipped, rows).tolist() == [1, 0, 2]
    moved, same = fused_scores(q, ("feedback", 1, 2.0))  # towards row 1's vector
    assert same.tolist() == rows.tolist()
    query = np.asarray([0.8 + 1.2, 0.6 + 1.6]) / np.hypot(2.0, 2.2)
    assert np.allclose(moved, q.matrix @ query)
    assert by_score(q, moved, rows).tolist() == [1, 2, 0]


def test_novelty_moves_a_near_copy_of_a_placed_hit_below_a_hit_that_adds_something() -> None:
    q = with_vectors([[1.0, 0.0], [0.99, 0.141], [0.0, 1.0]], [0.9, 0.436])
    scores, rows = fused_scores(q, DEFAULT)  # no query word: the vector alone
    fused = by_score(q, scores, rows)
    assert fused.tolist() == [1, 0, 2]  # row 0 is nearly row 1
    assert with_novelty(q, fused, 1.0).tolist() == [1, 0, 2]  # relevance alone: as fused
    assert with_novelty(q, fused, 0.9).tolist() == [1, 0, 2]  # 0.81 - 0.099 > 0.39 - 0.014
    assert with_novelty(q, fused, 0.5).tolist() == [1, 2, 0]  # -0.045 < 0.218 - 0.07
