"""Time in the question, measured under the cross-validation protocol of
:mod:`benchmarks.longmemeval_cv` (5 folds by question, stratified by type, seed 32).

Each question is asked on its ``question_date``; :func:`memcore_sqlite.search.when.window` turns
its time words ("last Saturday", "5 days ago", "in February") into a span of dates, and a
candidate whose session date lies in it gains ``boost`` on the shipped fusion's relevance
(the product ships none: among equal scores only, the span's memories come first,
``shipped_dates_break_ties_vs_no_boost``, which nothing is tuned for). The boost is chosen on the training folds
like the fusion (0, "no time handling", is the simplest and is kept unless another value
beats it by more than one training question) and scored on the held-out fold. Reported:
held-out figures only, overall and per question type, the paired sign test against no
boost and against each signal and RRF, every boost fixed, and ``misses``: for the
temporal-reasoning and knowledge-update questions whose evidence turn is not in the top 5
without the boost, whether the question names a time and whether the evidence lies in it.

    uv run python -m benchmarks longmemeval_replay capture --roles user --cache DIR --out R
    uv run python -m benchmarks longmemeval_time R [--data SPLIT] [--folds 5] [--seed 32] [--seeds 5]
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks.longmemeval import DEFAULT_DATA, haystack_time, load
from benchmarks.longmemeval_cv.protocol import fold_of, objective_of
from benchmarks.longmemeval_cv.questions import Question, read_question
from benchmarks.longmemeval_cv.rankings import by_score, fused_scores, metrics
from benchmarks.longmemeval_cv.report import paired, protocol_parser, report, summary_of
from benchmarks.longmemeval_cv.settings import DEFAULT, DEPTH, LEXICAL, RRF_K
from benchmarks.longmemeval_replay import INDEX, ReplayEmbedder
from memcore_sqlite.search import when

BOOSTS = (0.0, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0)
KINDS = ("temporal-reasoning", "knowledge-update")


def haystack_date(text: str) -> datetime:
    """LongMemEval's dates ("2023/04/11 (Tue) 23:18"), read as UTC."""
    seconds = haystack_time(text)
    if seconds is None:
        raise LookupError(f"not a LongMemEval date: {text!r}")
    return datetime.fromtimestamp(seconds, timezone.utc)


def epochs(q: Question) -> np.ndarray:
    return np.array([haystack_time(d) or np.nan for d in q.dates], dtype=float)


def rank_in_time(
    q: Question, stamps: np.ndarray, span: when.Window | None, boost: float | None
) -> np.ndarray:
    """The shipped fusion's order with rows dated in ``span`` gaining ``boost``; with
    ``boost`` None, the product's rule (:class:`memcore_sqlite.search.when.DatedOrder`): rows
    in the span first among equal scores, otherwise newest first."""
    scores, rows = fused_scores(q, DEFAULT)
    if span is None or boost == 0.0:
        return by_score(q, scores, rows)[:DEPTH]
    inside = (stamps >= span.start) & (stamps < span.end)
    if boost is None:
        return rows[np.lexsort((-q.seqs[rows], ~inside[rows], -scores[rows]))][:DEPTH]
    return by_score(q, scores + boost * inside, rows)[:DEPTH]


def cross_validate(
    questions: Sequence[Question],
    table: dict[float, list[dict[str, float]]],
    k: int,
    seed: int,
) -> tuple[list[dict[str, float]], list[dict[str, Any]]]:
    """Held-out rows of the boost chosen fold by fold (0 unless another value beats it on
    the training folds by more than one question), and the choices."""
    fold = fold_of([(q.qid, q.kind) for q in questions], k, seed)
    held: list[dict[str, float]] = [{}] * len(questions)
    picks = []
    for f in range(k):
        train = [i for i in range(len(questions)) if fold[i] != f]
        value = {b: objective_of([table[b][i] for i in train]) for b in BOOSTS}
        best = max(BOOSTS, key=lambda b: (round(value[b], 9), -b))
        pick = best if value[best] > value[0.0] + 1.0 / len(train) + 1e-9 else 0.0
        picks.append({"fold": f, "boost": pick, "train_gain": round(value[best] - value[0.0], 4)})
        for i in range(len(questions)):
            if fold[i] == f:
                held[i] = table[pick][i]
    return held, picks


def run(directory: Path, data: Path, k: int, seed: int, seeds: int = 1) -> dict[str, Any]:
    index = json.loads((directory / INDEX).read_text(encoding="utf-8"))
    kept = index["questions"]
    asked = {x["question_id"]: x for x in load(data)}
    vectors = {q["item"]["question"]: q["qvec"] for q in kept}
    embedder = ReplayEmbedder(index["model"], index["dimension"], vectors)
    questions = [read_question(directory, q, embedder) for q in kept]
    spans = [
        when.window(
            asked[q.qid]["question"],
            haystack_date(asked[q.qid]["question_date"]).replace(tzinfo=None),
        )
        for q in questions
    ]
    stamps = [epochs(q) for q in questions]
    table = {
        b: [metrics(q, rank_in_time(q, s, w, b)) for q, s, w in zip(questions, stamps, spans)]
        for b in BOOSTS
    }
    refs = {
        name: [metrics(q, by_score(q, *fused_scores(q, setting))[:DEPTH]) for q in questions]
        for name, setting in (
            ("lexical", LEXICAL),
            ("vector", ("vector",)),
            ("rrf_k60", ("rrf", RRF_K)),
        )
    }
    held, picks = cross_validate(questions, table, k, seed)
    base = table[0.0]
    repeats = []
    for extra in range(1, seeds):
        again, chosen = cross_validate(questions, table, k, seed + extra)
        repeats.append(
            {
                "seed": seed + extra,
                "boosts": [c["boost"] for c in chosen],
                "vs_no_boost": paired(again, base),
            }
        )
    ties = [metrics(q, rank_in_time(q, s, w, None)) for q, s, w in zip(questions, stamps, spans)]
    by_kind: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(questions):
        by_kind[q.kind].append(i)

    def per_kind(rows: Sequence[dict[str, float]]) -> dict[str, Any]:
        return {
            kind: {
                m: v["mean"]
                for m, v in summary_of([rows[i] for i in idx]).items()
                if m.endswith("@5") or m == "turn_ndcg@10"
            }
            | {"n": len(idx)}
            for kind, idx in sorted(by_kind.items())
        }

    misses = []
    for i, q in enumerate(questions):
        if q.kind not in KINDS or base[i].get("turn_recall_any@5", 1.0) >= 1.0:
            continue
        span = spans[i]
        evidence = [r for r, t in enumerate(q.turns) if t in q.evidence_turns]
        misses.append(
            {
                "id": q.qid,
                "type": q.kind,
                "question": asked[q.qid]["question"],
                "names_a_time": span is not None,
                "evidence_in_span": bool(span and any(span.holds(stamps[i][r]) for r in evidence)),
                "held_out_turn_recall@5": held[i].get("turn_recall_any@5"),
            }
        )
    return {
        "questions": len(questions),
        "questions_naming_a_time": sum(s is not None for s in spans),
        "by_type_naming_a_time": {
            kind: sum(spans[i] is not None for i in idx) for kind, idx in sorted(by_kind.items())
        },
        "protocol": {"folds": k, "seed": seed, "boosts": list(BOOSTS), "base": list(DEFAULT)},
        "held_out": {"time_boost_cv": summary_of(held), "by_type": per_kind(held)},
        "no_boost": {"all": summary_of(base), "by_type": per_kind(base)},
        "paired_time_boost_cv_vs": {"no_boost": paired(held, base)}
        | {name: paired(held, rows) for name, rows in refs.items()},
        "choices": picks,
        "shipped_dates_break_ties_vs_no_boost": paired(ties, base),
        "boost_fixed_vs_no_boost": {
            str(b): {
                "turn_recall_any@5": summary_of(table[b])["turn_recall_any@5"]["mean"],
                "paired": paired(table[b], base),
            }
            for b in BOOSTS[1:]
        },
        "misses_without_boost": misses,
        "other_fold_assignments": repeats,
    }


def main() -> int:
    parser = protocol_parser()
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    return report(lambda: run(args.directory, args.data, args.folds, args.seed, args.seeds))


if __name__ == "__main__":
    raise SystemExit(main())
