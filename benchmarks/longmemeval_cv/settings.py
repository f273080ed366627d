"""The candidate settings a run chooses among, in families simplest first, and the references."""

from __future__ import annotations

from collections.abc import Sequence
from itertools import product
from typing import Any

from benchmarks import context_vectors
from memcore_sqlite.search import ranking

WEIGHTS = tuple(round(0.05 * i, 2) for i in range(21))


DISCOUNTS = (0.0, 0.25, 0.5, 0.75, 1.0)


TERM_CAPS = (8, 0)  # 0: no cap


#: ranking.COVERAGE_POWER candidates (with the shipped b and eight terms only).
POWERS = (1.0, 1.5, 2.0, 3.0)


#: Query centring: the vector signal's query is the question's vector minus this times the
#: mean of the scope's row vectors, renormalised (0: the plain cosine). Stored vectors and
#: their int8 codes are untouched, only the query moves.
CENTRES = (0.0, 0.25, 0.5, 0.75, 1.0)


#: The English prior on a query word's IDF (:func:`memcore_sqlite.lexical.english.share`):
#: (rare rank, strength) pairs; a word ranked at the rare rank or rarer keeps its IDF whole,
#: and a rare rank of 0 is no prior (the scope's IDF alone). Every other family's lexical
#: pool carries the shipped one.
SHIPPED_PRIOR = (ranking.ENGLISH_PRIOR, ranking.ENGLISH_STRENGTH)


RARE_RANKS = (1000, 3000, 10000, 30000)


STRENGTHS = (1.0, 2.0, 3.0)


PRIORS = ((0, 1.0), *product(RARE_RANKS, STRENGTHS))


RRF_K = 60


LAMBDAS = (0.0, 0.05, 0.1, 0.2, 0.3, 0.5)


#: The vector quota: the vector signal's best ``m`` rows are placed in the first ``within``
#: hits of the shipped fusion's order (where a question shares no word with its evidence,
#: any row holding a query word outranks the vector's best row at a vector weight of 0.3).
QUOTAS = tuple((m, within) for m in (1, 2) for within in (3, 5, 10))


#: The adaptive weight's thresholds: when the best lexical score L of a question is below
#: ``t`` the vector weight moves from the shipped one towards 1 by ``(t - L) / t`` (at L = 0,
#: no query word in the store, the shipped fusion already ranks by the vector alone).
ADAPTIVE = (0.1, 0.2, 0.3, 0.4, 0.5, 0.7)


#: Pseudo-relevance feedback (``feedback``): (first k hits, beta).
FEEDBACK = tuple(product((3, 5, 10), (0.25, 0.5, 1.0)))


#: Maximal marginal relevance over the shipped order's first DEPTH hits (``mmr``): the share
#: of a hit's worth that is its fused score, the rest its novelty against the hits placed.
NOVELTY = (0.95, 0.9, 0.8, 0.7, 0.5)


DEFAULT = ("convex", ranking.VECTOR_WEIGHT, ranking.LENGTH_B, 8, ranking.COVERAGE_POWER)


LEXICAL = ("lexical", 0.0, ranking.LENGTH_B, 8, ranking.COVERAGE_POWER)


#: RRF of our own lexical ranking and the vector ranking (:mod:`benchmarks.dialog_recall`'s).
RRF_OURS = ("rrf", 60, "ours")


#: The shipped fusion with no English prior on a query word's IDF, as a reference.
NO_PRIOR = (*DEFAULT, 0.0, "turn", 0, 1.0)


#: The vector signal alone with a centred query, as references.
CENTRED_VECTORS = (("vector", 0.5), ("vector", 1.0))


#: Contextual row vectors (:mod:`benchmarks.context_vectors`, ``--context-cache``): the row
#: vector's label, "turn" being the stored one. Each label alone, as references.
CONTEXTS = context_vectors.LABELS


CONTEXT_VECTORS = tuple(("vector", 0.0, label) for label in CONTEXTS[1:])


#: How far each label lies from the stored vector, for ties (as the centre's own value).
CONTEXT_DISTANCE = {"turn": 0.0, "ctx0.5": 0.5, "ctx1": 1.0, "ctx2": 2.0, "window": 3.0}


OBJECTIVE = ("session_recall_any@5", "turn_recall_any@5", "turn_ndcg@10")


#: A dialog's sessions are a handful of one conversation: only its turns are scored.
DIALOG_OBJECTIVE = ("turn_recall_any@5", "turn_ndcg@10")


#: Hits kept per ranking: the neighbours' budget reaches 15.
DEPTH = 20


def families(context: bool = False) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """Candidate settings, simplest family first (the shipped power but in its own family).
    ``context``: with the contextual row vectors' families (the shipped weight, then any
    weight), after the query centre's."""
    b0, p0 = DEFAULT[2], DEFAULT[4]
    labels = CONTEXTS[1:]
    contextual = [
        ("context", [("convex", DEFAULT[1], b0, 8, p0, 0.0, c) for c in labels]),
        ("weight_context", [("convex", w, b0, 8, p0, 0.0, c) for w in WEIGHTS for c in labels]),
    ]
    return [
        ("rrf_k60", [("rrf", RRF_K)]),
        ("weight", [("convex", w, b0, 8, p0) for w in WEIGHTS]),
        ("weight_b", [("convex", w, b, 8, p0) for w in WEIGHTS for b in DISCOUNTS]),
        ("weight_power", [("convex", w, b0, 8, p) for w in WEIGHTS for p in POWERS]),
        (
            "centre",
            [("convex", DEFAULT[1], b0, 8, p0, c) for c in CENTRES[1:]],
        ),
        (
            "weight_centre",
            [("convex", w, b0, 8, p0, c) for w in WEIGHTS for c in CENTRES[1:]],
        ),
        *(contextual if context else []),
        ("prior", [(*DEFAULT, 0.0, "turn", r, s) for r, s in PRIORS]),
        (
            "weight_prior",
            [("convex", w, b0, 8, p0, 0.0, "turn", r, s) for w in WEIGHTS for r, s in PRIORS],
        ),
        ("quota", [("quota", m, within) for m, within in QUOTAS]),
        ("adaptive", [("adaptive", t) for t in ADAPTIVE]),
        ("feedback", [("feedback", k, beta) for k, beta in FEEDBACK]),
        ("mmr", [("mmr", lam) for lam in NOVELTY]),
        (
            "weight_b_terms",
            [("convex", w, b, c, p0) for w in WEIGHTS for b in DISCOUNTS for c in TERM_CAPS],
        ),
    ]


def distance(setting: tuple[Any, ...]) -> float:
    if setting[0] == "quota":
        return float(setting[1]) + 10.0 / float(setting[2])
    if setting[0] == "adaptive":
        return float(setting[1])
    if setting[0] == "feedback":
        return float(setting[2]) + float(setting[1]) / 10
    if setting[0] == "mmr":
        return 1.0 - float(setting[1])
    if setting[0] != "convex":
        return 0.0
    weight, b, cap = float(setting[1]), float(setting[2]), int(setting[3])
    power = float(setting[4])
    centre = float(setting[5]) if len(setting) > 5 else 0.0
    context = CONTEXT_DISTANCE[setting[6]] if len(setting) > 6 else 0.0
    prior = 0.0
    if len(setting) > 8:
        prior = float(tuple(setting[7:9]) != SHIPPED_PRIOR) + abs(setting[8] - SHIPPED_PRIOR[1])
    return (
        centre
        + context
        + prior
        + abs(weight - DEFAULT[1])
        + abs(b - DEFAULT[2])
        + float(cap != DEFAULT[3])
        + abs(power - DEFAULT[4])
    )


def candidates(
    context: bool, only: Sequence[str] = (), max_weight: float = 1.0
) -> list[tuple[str, list[tuple[Any, ...]]]]:
    """The families a run chooses among, simplest first: :func:`families`, only those named
    in ``only`` (with the shipped default), none with a vector weight above ``max_weight``."""
    groups = [
        (name, kept)
        for name, group in families(context)
        if (kept := [s for s in group if s[0] != "convex" or s[1] <= max_weight + 1e-9])
    ]
    if only:  # the default stays a candidate: "weight" holds it
        default = [("shipped", [DEFAULT])] if "weight" not in only else []
        groups = default + [(name, group) for name, group in groups if name in only]
    return groups
