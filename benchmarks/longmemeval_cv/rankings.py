"""Each setting's ranking of a read question, in numpy (row positions into ``Question.seqs``,
best first), and its metrics."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable
from typing import Any

import numpy as np

from benchmarks.longmemeval import score_keys
from benchmarks.longmemeval_cv.questions import Question
from benchmarks.longmemeval_cv.settings import DEFAULT, DEPTH, LEXICAL, SHIPPED_PRIOR
from memcore_sqlite.search import ranking


def by_score(q: Question, scores: np.ndarray, rows: np.ndarray) -> np.ndarray:
    """``rows`` by score, then newest first (as the store breaks ties)."""
    return rows[np.lexsort((-q.seqs[rows], -scores[rows]))]


def _cosines(q: Question, centre: float, context: str = "turn") -> np.ndarray:
    if context != "turn":
        if centre:
            raise ValueError("a centred query with contextual row vectors is not measured")
        return q.context[context]
    return q.centred[centre] if centre else q.cosines


def _vector_pool(q: Question, centre: float = 0.0, context: str = "turn") -> np.ndarray:
    """The vector pool: the best POOL rows by the (centred) query's cosine."""
    return by_score(q, _cosines(q, centre, context), np.arange(len(q.seqs)))[: ranking.POOL]


def _positions(q: Question, seqs: Iterable[int]) -> np.ndarray:
    return np.searchsorted(q.seqs, np.asarray(list(seqs), dtype=np.int64))


def _lexical(q: Question, pool: dict[int, float]) -> np.ndarray:
    """Every row's lexical score from a pool (seq -> score); 0 where no query term is held."""
    scores = np.zeros(len(q.seqs))
    scores[_positions(q, pool.keys())] = list(pool.values())
    return scores


def _convex(weight: float, vector: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """The shipped fusion's step (``ranking.fuse``): ``weight`` of the cosine, the rest of
    the lexical score, within [0, 1]."""
    return np.clip(weight * vector + (1 - weight) * lexical, 0.0, 1.0)


def fused_scores(q: Question, setting: tuple[Any, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(score of every row, candidate rows) of a fusion setting."""
    kind = setting[0]
    if kind == "vector":  # ("vector",), ("vector", centre) or ("vector", centre, context)
        centre = setting[1] if len(setting) > 1 else 0.0
        context = setting[2] if len(setting) > 2 else "turn"
        return np.clip(_cosines(q, centre, context), 0.0, 1.0), _vector_pool(q, centre, context)
    if kind == "rrf":
        k = setting[1]
        vec = _vector_pool(q)
        if len(setting) > 2:  # ("rrf", k, "ours"): our lexical ranking instead of bm25
            pool = q.lexical[(*LEXICAL[2:], *SHIPPED_PRIOR)]
            lex = by_score(q, _lexical(q, pool), _positions(q, pool.keys()))
        else:
            lex = _positions(q, q.bm25)
        scores = np.zeros(len(q.seqs))
        scores[vec] += 1.0 / (k + 1 + np.arange(len(vec)))
        scores[lex] += 1.0 / (k + 1 + np.arange(len(lex)))
        return scores, np.union1d(vec, lex)
    if kind == "feedback":
        return _feedback_scores(q, int(setting[1]), float(setting[2]))
    if kind == "adaptive":  # the shipped fusion, its weight raised where words match little
        best = max(q.lexical[(*DEFAULT[2:], *SHIPPED_PRIOR)].values(), default=0.0)
        threshold = float(setting[1])
        weight = DEFAULT[1]
        if best < threshold:
            weight += (1 - DEFAULT[1]) * (threshold - best) / threshold
        return fused_scores(q, ("convex", weight, *DEFAULT[2:]))
    _, weight, b, cap, power = setting[:5]
    centre = setting[5] if len(setting) > 5 else 0.0
    context = setting[6] if len(setting) > 6 else "turn"
    pool = q.lexical[(b, cap, power, *(setting[7:9] or SHIPPED_PRIOR))]
    lex = _positions(q, pool.keys())
    if kind == "lexical":
        return _lexical(q, pool), lex
    vector = np.clip(_cosines(q, centre, context), 0.0, 1.0)
    if not pool:  # no query term in the store: the vector order (ranking.fuse)
        return vector, _vector_pool(q, centre, context)
    fused = _convex(weight, vector, _lexical(q, pool))
    return fused, np.union1d(_vector_pool(q, centre, context), lex)


def _feedback_scores(q: Question, k: int, beta: float) -> tuple[np.ndarray, np.ndarray]:
    """The shipped fusion with its query vector moved ``beta`` towards the mean vector of
    the shipped order's first ``k`` hits (pseudo-relevance feedback: a question that shares
    no word with its evidence, "how many musical instruments", borrows the vocabulary of its
    best hits, a Stratocaster). Only the shipped candidates are rescored, so the store would
    need no second scan (rescoring every row changed no figure on any set)."""
    if q.matrix is None or q.qvec is None:
        raise ValueError("feedback needs the rows' vectors")
    scores, rows = fused_scores(q, DEFAULT)
    first = by_score(q, scores, rows)[:k]
    centre = q.matrix[first].astype(np.float64).mean(axis=0)
    query = q.qvec.astype(np.float64)
    moved = query / np.linalg.norm(query) + beta * centre / np.linalg.norm(centre)
    vector = np.clip(q.matrix.astype(np.float64) @ (moved / np.linalg.norm(moved)), 0.0, 1.0)
    pool = q.lexical[(*DEFAULT[2:], *SHIPPED_PRIOR)]
    if not pool:
        return vector, rows
    return _convex(DEFAULT[1], vector, _lexical(q, pool)), rows


def rank(q: Question, setting: tuple[Any, ...], lam: float = 0.0, how: str = "") -> np.ndarray:
    """Row positions of the first DEPTH hits. ``lam``: each turn gains ``lam`` times the best
    other candidate turn of its session. ``how``: ``first``, sessions by their best turn and
    each session's turns together; ``diverse``, each session's best turn first (in fused
    order), then the other turns."""
    if setting[0] == "quota":
        return with_quota(q, rank(q, DEFAULT, lam, how), setting[1], setting[2])
    if setting[0] == "mmr":
        return with_novelty(q, rank(q, DEFAULT, lam, how), float(setting[1]))
    scores, rows = fused_scores(q, setting)
    if lam:
        best: dict[str, list[float]] = defaultdict(list)
        for r in rows.tolist():
            best[q.sessions[r]].append(float(scores[r]))
        tops = {s: [*sorted(v, reverse=True)[:2], 0.0] for s, v in best.items()}
        scores = scores.copy()
        for r in rows.tolist():
            one, two = tops[q.sessions[r]][:2]
            scores[r] += lam * (two if scores[r] >= one else one)
    order = by_score(q, scores, rows)
    if how:
        lead: dict[str, int] = {}
        for place, r in enumerate(order.tolist()):
            lead.setdefault(q.sessions[r], place)
        if how == "first":  # a session's turns follow its best one
            key = [(lead[q.sessions[r]], place) for place, r in enumerate(order.tolist())]
        else:  # every session's best turn, then the rest
            key = [(place != lead[q.sessions[r]], place) for place, r in enumerate(order.tolist())]
        order = order[sorted(range(len(order)), key=key.__getitem__)]
    return order[:DEPTH]


def with_quota(q: Question, order: np.ndarray, m: int, within: int) -> np.ndarray:
    """``order`` with the vector's best ``m`` rows among its first ``within``: each one
    missing there takes the last places of that prefix, in vector order; the rows it pushes
    out follow, in their order."""
    best = [int(r) for r in _vector_pool(q)[:m]]
    head = [int(r) for r in order[:within]]
    missing = [r for r in best if r not in head]
    if not missing:
        return order
    kept = [r for r in head if r not in missing][: within - len(missing)]
    rest = [int(r) for r in order if int(r) not in kept and int(r) not in missing]
    return np.asarray([*kept, *missing, *rest][:DEPTH], dtype=order.dtype)


def with_novelty(q: Question, order: np.ndarray, lam: float) -> np.ndarray:
    """``order`` re-ranked by maximal marginal relevance: each next hit is the row with the
    best ``lam`` * its fused score - (1 - ``lam``) * its largest cosine with a hit already
    placed (a turn that repeats a placed one gives its place to one that adds something)."""
    if q.matrix is None:
        raise ValueError("novelty needs the rows' vectors")
    scores, _ = fused_scores(q, DEFAULT)
    rows = [int(r) for r in order]
    unit = q.matrix[rows].astype(np.float64)
    unit /= np.maximum(np.linalg.norm(unit, axis=1, keepdims=True), 1e-12)
    similar = unit @ unit.T
    relevance = lam * scores[rows]
    left = list(range(len(rows)))
    placed: list[int] = []
    closest = np.zeros(len(rows))  # a row unlike every placed one (cosine <= 0) loses nothing
    while left:
        gain = [relevance[i] - (1 - lam) * closest[i] for i in left]
        best = left.pop(int(np.argmax(gain)))  # first of equals: the fused order's
        placed.append(best)
        closest = np.maximum(closest, similar[best])
    return np.asarray([rows[i] for i in placed], dtype=order.dtype)


def metrics(q: Question, order: np.ndarray) -> dict[str, float]:
    return score_keys(
        [q.sessions[r] for r in order],
        [q.turns[r] for r in order],
        q.evidence_sessions,
        q.evidence_turns,
    )
