"""What a run reports, and the command line."""

from __future__ import annotations

import argparse
import json
import sys
from collections import defaultdict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from benchmarks._stats import sign_test_p, wilson_interval
from benchmarks.longmemeval_cv.protocol import (
    Part,
    cross_validate,
    has_context,
    objective_of,
    table_of,
    type_folds,
)
from benchmarks.longmemeval_cv.questions import Question, dialog_questions, kept_stores
from benchmarks.longmemeval_cv.rankings import metrics, rank
from benchmarks.longmemeval_cv.settings import (
    CENTRED_VECTORS,
    CONTEXT_VECTORS,
    CONTEXTS,
    DEFAULT,
    DIALOG_OBJECTIVE,
    LAMBDAS,
    LEXICAL,
    NO_PRIOR,
    OBJECTIVE,
    RRF_K,
    RRF_OURS,
    candidates,
)


def summary_of(rows: Sequence[dict[str, float]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for metric in sorted({m for r in rows for m in r}):
        values = [r[metric] for r in rows if metric in r]
        mean = sum(values) / len(values)
        entry: dict[str, Any] = {"mean": round(mean, 4)}
        if "recall" in metric:
            low, high = wilson_interval(round(sum(values)), len(values))
            entry["wilson95"] = [round(low, 4), round(high, 4)]
        out[metric] = entry
    return out


def paired(a: Sequence[dict[str, float]], b: Sequence[dict[str, float]]) -> dict[str, Any]:
    out = {}
    for metric in ("session_recall_any@5", "turn_recall_any@5", "session_ndcg@10", "turn_ndcg@10"):
        diffs = [x.get(metric, 0.0) - y.get(metric, 0.0) for x, y in zip(a, b) if metric in x]
        better = sum(d > 1e-12 for d in diffs)
        worse = sum(d < -1e-12 for d in diffs)
        out[metric] = {
            "better": better,
            "worse": worse,
            "sign_test_p": round(sign_test_p(better, worse), 4),
        }
    return out


def _session_cv(
    questions: Sequence[Question], fold: list[int], chosen: list[tuple[Any, ...]], k: int
) -> dict[str, Any]:
    """On each fold's chosen fusion: lambda (0 simplest) and session-first chosen on the
    training folds like the fusion, held-out rows of what was chosen."""
    variants: list[tuple[str, float, str]] = [("lambda", lam, "") for lam in LAMBDAS]
    variants += [("session_first", 0.0, "first"), ("one_per_session_first", 0.0, "diverse")]
    held: list[dict[str, float]] = [{}] * len(questions)
    each: dict[tuple[str, float, str], list[dict[str, float]]] = {
        v: [{}] * len(questions) for v in variants
    }
    picks = []
    for f in range(k):
        setting = chosen[f]
        train = [i for i in range(len(questions)) if fold[i] != f]
        test = [i for i in range(len(questions)) if fold[i] == f]
        rows = {
            v: {
                i: metrics(questions[i], rank(questions[i], setting, v[1], v[2]))
                for i in train + test
            }
            for v in variants
        }
        value = {v: objective_of([rows[v][i] for i in train]) for v in variants}
        base = value[variants[0]]
        tolerance = 1.0 / len(train) + 1e-9
        best = max(value, key=lambda v: (round(value[v], 9), -v[1]))
        pick = best if value[best] > base + tolerance else variants[0]
        for i in test:
            held[i] = rows[pick][i]
            for v in variants:
                each[v][i] = rows[v][i]
        picks.append({"fold": f, "variant": pick[0], "lambda": pick[1]})
    # Each variant fixed, on the fold's chosen fusion (held out for that choice), against
    # the fusion alone: how far each one is from winning, not only which one was chosen.
    fixed = {
        f"{name} {lam}": {
            "session_recall_any@5": summary_of(each[v])["session_recall_any@5"]["mean"],
            "turn_recall_any@5": summary_of(each[v])["turn_recall_any@5"]["mean"],
            "vs_fusion": paired(each[v], each[variants[0]]),
        }
        for v in variants[1:]
        for name, lam, _ in [v]
    }
    return {"held": held, "choices": picks, "fixed_variants": fixed}


def _neighbours(questions: Sequence[Question], chosen_of: list[tuple[Any, ...]]) -> dict[str, Any]:
    """Evidence one turn away from a top-5 hit, and top 5 with neighbours against plain hits
    at the same budget (per question, the number of distinct turns the neighbours give)."""
    within = beside = 0
    with_n: list[dict[str, float]] = []
    plain: list[dict[str, float]] = []
    budgets = []
    for q, setting in zip(questions, chosen_of):
        if not q.evidence_turns:
            continue
        order = rank(q, setting)
        top = [q.turns[r] for r in order[:5]]
        expanded = list(dict.fromkeys(t for key in top for t in [key, *q.neighbours.get(key, [])]))
        budget = len(expanded)
        budgets.append(budget)
        deep = [q.turns[r] for r in order[:budget]]
        hit5 = bool(set(top) & q.evidence_turns)
        within += hit5
        beside += (not hit5) and bool(set(expanded) & q.evidence_turns)
        with_n.append({"turn_recall_any": float(bool(set(expanded) & q.evidence_turns))})
        plain.append({"turn_recall_any": float(bool(set(deep) & q.evidence_turns))})
    n = len(with_n)
    diffs = [a["turn_recall_any"] - b["turn_recall_any"] for a, b in zip(with_n, plain)]
    better, worse = sum(d > 0 for d in diffs), sum(d < 0 for d in diffs)
    return {
        "questions_with_evidence_turns": n,
        "evidence_in_top5": within,
        "evidence_only_a_neighbour_of_top5": beside,
        "mean_budget_turns": round(sum(budgets) / max(1, n), 2),
        "top5_with_neighbours": summary_of(with_n)["turn_recall_any"],
        "plain_hits_same_budget": summary_of(plain)["turn_recall_any"],
        "paired_neighbours_vs_plain": {
            "better": better,
            "worse": worse,
            "sign_test_p": round(sign_test_p(better, worse), 4),
        },
    }


def _agreement(questions: Sequence[Question]) -> dict[str, str]:
    """The replay is the store's ranking: the default's order against the store's own search."""
    agree = {
        mode: sum(
            [q.turns[r] for r in rank(q, setting)[:10]] == q.store_top[mode] for q in questions
        )
        for mode, setting in (("hybrid", DEFAULT), ("lexical", LEXICAL), ("vector", ("vector",)))
    }
    return {m: f"{v}/{len(questions)}" for m, v in agree.items()}


def _references(part: Part) -> dict[str, list[dict[str, float]]]:
    return (
        {
            "lexical": part.table[LEXICAL],
            "vector": part.table[("vector",)],
            "rrf_k60": part.table[("rrf", RRF_K)],
            "rrf_ours_k60": part.table[RRF_OURS],
            "shipped_default": part.table[DEFAULT],
            "no_english_prior": part.table[NO_PRIOR],
        }
        | {f"vector_centred_{s[1]}": part.table[s] for s in CENTRED_VECTORS}
        | {f"vector_{s[2]}": part.table[s] for s in CONTEXT_VECTORS if s in part.table}
    )


def _context_fixed(part: Part) -> dict[str, Any]:
    """Each contextual row vector fixed (nothing chosen, so in sample), at the shipped
    setting and alone, against the shipped default and against the stored vector alone."""
    out: dict[str, Any] = {}
    for label in CONTEXTS[1:]:
        shipped_with: tuple[Any, ...] = (*DEFAULT, 0.0, label)
        fused = part.table[shipped_with]
        alone = part.table[("vector", 0.0, label)]
        out[label] = {
            "shipped_setting": summary_of(fused),
            "shipped_setting_vs_shipped": paired(fused, part.table[DEFAULT]),
            "vector_alone": summary_of(alone),
            "vector_alone_vs_vector": paired(alone, part.table[("vector",)]),
            "vector_alone_vs_shipped": paired(alone, part.table[DEFAULT]),
        }
    return out


def _part_report(part: Part, held: list[dict[str, float]]) -> dict[str, Any]:
    """One set's held-out figures, its untuned references and the paired sign tests."""
    refs = _references(part)
    by_kind: dict[str, list[int]] = defaultdict(list)
    for i, q in enumerate(part.questions):
        by_kind[q.kind].append(i)
    return {
        "questions": len(part.questions),
        "objective": "+".join(part.objective),
        "agreement_with_store_top10": _agreement(part.questions),
        "held_out": {
            "cv_fusion": summary_of(held),
            "by_type_cv_fusion": {
                kind: {
                    m: v["mean"]
                    for m, v in summary_of([held[i] for i in idx]).items()
                    if m.endswith("@5")
                }
                | {"n": len(idx)}
                for kind, idx in sorted(by_kind.items())
            },
        },
        "untuned_references": {name: summary_of(rows) for name, rows in refs.items()},
        "paired_cv_fusion_vs": {name: paired(held, rows) for name, rows in refs.items()},
        "by_type": {kind: _type_report(held, refs, idx) for kind, idx in sorted(by_kind.items())},
    } | ({"context_fixed": _context_fixed(part)} if has_context(part.questions) else {})


#: The references each question type is compared with: each signal alone and the RRFs.
TYPE_REFERENCES = ("lexical", "vector", "rrf_k60", "rrf_ours_k60", "shipped_default")


def _type_report(
    held: Sequence[dict[str, float]], refs: dict[str, list[dict[str, float]]], idx: list[int]
) -> dict[str, Any]:
    """One question type's held-out figures (Wilson intervals), its references' means, the
    sign test against each, and where the chosen fusion's mean is below a single signal's
    or an RRF's (the questions to read first)."""
    mine = [held[i] for i in idx]
    means = {name: summary_of([refs[name][i] for i in idx]) for name in TYPE_REFERENCES}
    below = sorted(
        f"{name} {metric}"
        for name in TYPE_REFERENCES[:-1]
        for metric, value in summary_of(mine).items()
        if metric in means[name] and value["mean"] < means[name][metric]["mean"]
    )
    return {
        "n": len(idx),
        "cv_fusion": summary_of(mine),
        "reference_means": {
            name: {m: v["mean"] for m, v in summary.items()} for name, summary in means.items()
        },
        "paired_cv_fusion_vs": {
            name: paired(mine, [refs[name][i] for i in idx]) for name in TYPE_REFERENCES
        },
        "below_a_signal_or_rrf": below,
    }


def run(
    directory: Path,
    k: int,
    seed: int,
    seeds: int,
    limit: int,
    dialogs: Sequence[Path] = (),
    dialog_cache: Path | None = None,
    guard: bool = False,
    only: Sequence[str] = (),
    context_cache: Path | None = None,
    also: Sequence[Path] = (),
    max_weight: float = 1.0,
    dialog_folds: str = "form",
    protocol: str = "kfold",
) -> dict[str, Any]:
    by_type = protocol == "type"
    if by_type and seeds > 1:
        raise LookupError("--protocol type has one fold assignment: --seeds is for kfold")
    windows = None
    if context_cache is not None:
        from benchmarks._embed_cache import CachingEmbedder
        from memcore_sqlite.embedders.onnx import OnnxEmbedder

        windows = CachingEmbedder(OnnxEmbedder(), context_cache, read_only=True)
    index, questions = kept_stores(directory, limit, windows)
    parts = [Part("longmemeval", questions, table_of(questions), OBJECTIVE)]
    for other in also:
        other_index, asked = kept_stores(other, limit, windows)
        name = f"longmemeval_{other_index['roles']}_roles"
        if any(p.name == name for p in parts):
            raise LookupError(f"two sets of kept stores index the same roles: {other}")
        parts.append(Part(name, asked, table_of(asked), OBJECTIVE))
    for path in dialogs:
        if dialog_cache is None:
            raise LookupError("--dialogs needs --dialog-cache (vectors are never embedded here)")
        asked = dialog_questions(path, dialog_cache, windows)
        name = "dialogs" if path.stem == "dialogs_dev" else path.stem
        if any(p.name == name for p in parts):
            raise LookupError(f"two dialog sets of one name: {path}")
        parts.append(Part(name, asked, table_of(asked), DIALOG_OBJECTIVE, dialog_folds))
    lme = parts[0]
    searched = candidates(all(has_context(p.questions) for p in parts), only, max_weight)
    main = cross_validate(parts, k, seed, guard, searched, by_type)
    held = main["held"]
    k = main["k"]
    lme_fold = main["folds"][lme.name]
    chosen_by_fold = [tuple(c["setting"]) for c in main["choices"]]
    chosen_of = [chosen_by_fold[f] for f in lme_fold]
    session = _session_cv(questions, lme_fold, chosen_by_fold, k)
    repeats = []
    for extra in range(1, seeds):
        again = cross_validate(parts, k, seed + extra, guard, searched)
        repeats.append(
            {
                "seed": seed + extra,
                "held_out": {
                    p.name: {
                        m: v["mean"]
                        for m, v in summary_of(again["held"][p.name]).items()
                        if m.endswith("@5")
                    }
                    for p in parts
                },
                "vs_shipped": {
                    p.name: paired(again["held"][p.name], p.table[DEFAULT]) for p in parts
                },
                "choices": [c["family"] + " " + str(c["setting"]) for c in again["choices"]],
            }
        )
    return {
        "roles": index["roles"],
        "embedder": index["model"],
        "protocol": {
            "name": protocol,
            "folds": k,
            "seed": None if by_type else seed,
            "sets": {
                p.name: "one question type held out per fold, in every set that has it"
                if by_type
                else {
                    "question": "questions, by type",
                    "conversation": "whole conversations",
                    "form": "whole question forms, by type",
                }[p.fold_by]
                for p in parts
            },
            "held_out_types": type_folds(parts) if by_type else None,
            "objective": {p.name: "+".join(p.objective) for p in parts},
            "families_simplest_first": [name for name, _ in searched],
            "settings": len({s for _, group in searched for s in group}),
            "context_cache": None if context_cache is None else str(context_cache),
            "also": [str(d) for d in also],
            "max_weight": max_weight,
            "shipped_default": list(DEFAULT),
            "guard": guard,
            "families_searched": list(only) or "all",
        },
        "sets": {p.name: _part_report(p, held[p.name]) for p in parts},
        "choices": main["choices"],
        "longmemeval_session_and_context": {
            "held_out_cv_fusion_session": summary_of(session["held"]),
            "paired_cv_session_vs_cv_fusion": paired(session["held"], held[lme.name]),
            "session_choices": session["choices"],
            "session_variants_fixed": session["fixed_variants"],
            "neighbours": _neighbours(questions, chosen_of),
        },
        "other_fold_assignments": repeats,
    }


def protocol_parser() -> argparse.ArgumentParser:
    """The arguments of a benchmark run under this protocol: the kept stores and the folds."""
    parser = argparse.ArgumentParser()
    parser.add_argument("directory", type=Path, help="stores kept by longmemeval_replay capture")
    parser.add_argument("--folds", type=int, default=5)
    parser.add_argument("--seed", type=int, default=32)
    parser.add_argument("--seeds", type=int, default=1, help="fold assignments to repeat on")
    return parser


def report(compute: Callable[[], dict[str, Any]]) -> int:
    """Print ``compute()`` as JSON (exit 0), or a missing store or question as one JSON error
    line on stderr (exit 1)."""
    try:
        result = compute()
    except (LookupError, FileNotFoundError) as e:
        print(json.dumps({"error": f"{type(e).__name__}: {e}"}), file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


def main() -> int:
    parser = protocol_parser()
    parser.add_argument(
        "--protocol",
        choices=("kfold", "type"),
        default="kfold",
        help="kfold: --folds random folds, stratified by type; type: leave one question type"
        " out (one fold per type of every set, held out of each set that has it; --folds"
        " and --seed unused)",
    )
    parser.add_argument("--limit", type=int, default=0, help="first N kept questions (0: all)")
    parser.add_argument(
        "--dialogs",
        type=Path,
        action="append",
        default=[],
        help="also a dialog set (dialogs_dev.json, dialogs_echo.json); repeatable",
    )
    parser.add_argument(
        "--dialog-cache", type=Path, default=None, help="its vectors (read, never written)"
    )
    parser.add_argument(
        "--guard",
        action="store_true",
        help="choose only among settings no worse than the shipped default on any set's"
        " training folds (by more than one question)",
    )
    parser.add_argument(
        "--families",
        default="",
        help="comma-separated candidate families (default all; the shipped default is always one)",
    )
    parser.add_argument(
        "--context-cache",
        type=Path,
        default=None,
        help="window vectors (context_vectors embed): adds the contextual row-vector families",
    )
    parser.add_argument(
        "--also",
        type=Path,
        action="append",
        default=[],
        help="more kept stores (another --roles capture), chosen for jointly; repeatable",
    )
    parser.add_argument(
        "--max-weight",
        type=float,
        default=1.0,
        help="no candidate with a larger vector weight (what the latency goals allow)",
    )
    parser.add_argument(
        "--dialog-folds",
        choices=("form", "conversation"),
        default="form",
        help="what a dialog fold holds whole: a question form (default) or a conversation",
    )
    args = parser.parse_args()
    return report(
        lambda: run(
            args.directory,
            args.folds,
            args.seed,
            args.seeds,
            args.limit,
            tuple(args.dialogs),
            args.dialog_cache,
            args.guard,
            tuple(f for f in args.families.split(",") if f),
            args.context_cache,
            tuple(args.also),
            args.max_weight,
            args.dialog_folds,
            args.protocol,
        )
    )
