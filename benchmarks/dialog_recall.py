"""Turn recall on short two-speaker dialogs, through the product's own search path.

The development set ``benchmarks/data/dialogs_dev.json`` (written by ``benchmarks._dialog_gen``:
10 conversations of 139-155 short turns over six dated sessions, 170 questions: single-hop,
multi-hop, temporal, open-domain, each with its evidence turns; a line said twice in one
conversation is one memory, as the store keeps repeats, so 110-128 memories each) checks that what helps long
user turns does not hurt short ones. Each conversation gets a fresh SQLite store; each
session is one ``Memory.add(messages=...)`` call, each turn one message "Name: text" with
its turn id and its session's date as timestamp.

Per question: hybrid (``Memory.search``), lexical and vector (the store's ``search(mode=)``)
and RRF (k = 60) of the lexical and vector rankings (their first 50 each, the most a search returns). Metric: turn
recall_any@5 (an evidence turn among the first five), overall with its 95% Wilson interval and
per kind, and for multi-hop questions recall_all@5 (both evidence turns among the first five:
the question names what the first turn says, so recall_any finds that one easily); ``paired``: hybrid against each other ranking question by question (better, worse,
sign test p); ``hybrid_above_every_signal``: whether hybrid's recall is above lexical's,
vector's and RRF's. ``shared_words``: the share of questions that share a word with an
evidence turn (a stemmed term of the search's own analysis, stop-words and the speakers'
names aside), and each ranking's recall on those and on the others: how much the set asks in
other words decides what it says about the fusion's weight. ``--weights``: the fusion's
vector weight chosen by 5-fold cross-validation over whole question forms (the generator's
templates; held-out recall against the shipped 0.3, and each weight's in-sample recall for
reference), to see whether the weight chosen on long user turns suits short ones.

    uv run python -m benchmarks dialog_recall [--cache /tmp/dialog-cache] [--limit N] [--weights]
"""

from __future__ import annotations

import argparse
import json
import os
import sqlite3
import sys
import tempfile
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks._stats import sign_test_p, wilson_interval
from memcore import Memory
from memcore.ports import Embedder
from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.search import ranking

DATA = Path(__file__).parent / "data" / "dialogs_dev.json"
STORE = "dialog"
RANKINGS = ("hybrid", "lexical", "vector", "rrf")
RRF_K = 60
K = 5
WEIGHTS = tuple(round(0.05 * i, 2) for i in range(1, 20))
SEED = 32
FOLDS = 5


def ingest(mem: Memory, conversation: dict[str, Any]) -> int:
    sessions: dict[int, list[dict[str, Any]]] = defaultdict(list)
    for turn in conversation["turns"]:
        sessions[turn["session"]].append(turn)
    for number, turns in sorted(sessions.items()):
        day = turns[0]["date"]
        stamp = datetime.fromisoformat(day).replace(tzinfo=timezone.utc).timestamp()
        mem.add(
            messages=[
                Message(
                    "user",
                    f"{t['speaker']}: {t['text']}",
                    timestamp=stamp,
                    metadata={"turn": t["id"]},
                )
                for t in turns
            ],
            metadata={"session_id": f"{conversation['id']}:{number}", "date": day},
        )
    return len(conversation["turns"])


def shares_a_word(
    conn: sqlite3.Connection, question: str, evidence: Sequence[str], names: Sequence[str]
) -> bool:
    """Whether a term the search would look ``question`` up by is in an evidence text, the
    speakers' ``names`` aside: the question's terms (:func:`analysis.query_terms`) and each
    text as FTS5 indexes them, by its own tokenizer (:func:`query_tokens.row_tokens`, on
    ``conn``'s temp table)."""
    from memcore_sqlite.lexical import analysis
    from memcore_sqlite.lexical.query_tokens import row_tokens

    texts = [" ".join(analysis.query_terms(question)), " ".join(names), *evidence]
    tokens = row_tokens(conn, list(enumerate(texts)))
    found = [set(tokens[i]) for i in range(len(texts))]
    asked = found[0] - found[1]
    return any(asked & said for said in found[2:])


def rrf(*rankings: Sequence[str]) -> list[str]:
    score: dict[str, float] = defaultdict(float)
    for order in rankings:
        for place, key in enumerate(order):
            score[key] += 1.0 / (RRF_K + 1 + place)
    return sorted(score, key=lambda key: -score[key])


def rankings(mem: Memory, store: SqliteMemoryStore, question: str) -> dict[str, list[str]]:
    pattern = mem.service.search_pattern

    def turns(hits: Sequence[Any]) -> list[str]:
        return [h.memory.metadata.get("turn", "") for h in hits]

    out = {"hybrid": turns(mem.search(question, top_k=10))}
    for mode in ("lexical", "vector"):
        out[mode] = turns(store.search(STORE, pattern, question, top_k=50, mode=mode))
    out["rrf"] = rrf(out["lexical"], out["vector"])
    return out


def weighted(mem: Memory, question: str, evidence: set[str]) -> dict[float, float]:
    """Hybrid turn recall@K at each vector weight: the store's own search with
    ``ranking.VECTOR_WEIGHT`` set, which every fusion step reads at call time."""
    shipped = ranking.VECTOR_WEIGHT
    out = {}
    try:
        for w in WEIGHTS:
            ranking.VECTOR_WEIGHT = w
            hits = mem.search(question, top_k=K)
            out[w] = float(bool({h.memory.metadata.get("turn", "") for h in hits} & evidence))
    finally:
        ranking.VECTOR_WEIGHT = shipped
    return out


def weight_cv(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The vector weight chosen by cross-validation over question forms (folds of whole
    forms by kind, seed 32, as :func:`benchmarks.longmemeval_cv.protocol.fold_by_group`: every
    conversation asks from the same forms, so folds of whole conversations held no form
    out): the shipped weight unless another beats it on the training folds by more than one
    question; held-out recall against the shipped weight."""
    from benchmarks.longmemeval_cv.protocol import fold_by_group

    if not all(r["form"] for r in rows):
        raise LookupError("--weights needs each question's form (benchmarks._dialog_gen)")
    shipped = ranking.VECTOR_WEIGHT
    fold = fold_by_group([r["form"] for r in rows], FOLDS, SEED, [r["kind"] for r in rows])
    held: list[float] = [0.0] * len(rows)
    picks = []
    for f in range(FOLDS):
        train = [r for r, g in zip(rows, fold) if g != f]
        value = {w: sum(r["weights"][w] for r in train) for w in WEIGHTS}
        best = max(WEIGHTS, key=lambda w: (value[w], -abs(w - shipped)))
        pick = best if value[best] > value[shipped] + 1 else shipped
        picks.append(pick)
        for i, r in enumerate(rows):
            if fold[i] == f:
                held[i] = r["weights"][pick]
    base = [r["hybrid"] for r in rows]
    better = sum(h > b for h, b in zip(held, base))
    worse = sum(h < b for h, b in zip(held, base))
    return {
        "folds": FOLDS,
        "chosen_weights": picks,
        "held_out_hybrid": round(sum(held) / len(held), 4),
        "shipped_hybrid": round(sum(base) / len(base), 4),
        "vs_shipped": {
            "better": better,
            "worse": worse,
            "sign_test_p": round(sign_test_p(better, worse), 4),
        },
        "in_sample_by_weight": {
            str(w): round(sum(r["weights"][w] for r in rows) / len(rows), 4) for w in WEIGHTS
        },
    }


def run(
    data: dict[str, Any], embedder: Embedder, limit: int, weights: bool = False
) -> dict[str, Any]:
    asked: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for q in data["questions"]:
        asked[q["conversation"]].append(q)
    rows: list[dict[str, Any]] = []
    turns = 0
    words = sqlite3.connect(":memory:")
    turn_text = {t["id"]: t["text"] for c in data["conversations"] for t in c["turns"]}
    with tempfile.TemporaryDirectory() as tmp:
        for conversation in data["conversations"][: limit or None]:
            path = Path(tmp) / f"{conversation['id']}.db"
            store = SqliteMemoryStore(path, embedder=embedder)
            try:
                mem = Memory(store, scope=Scope("dlg", conversation["id"], "agent", "run"),
                             store_name=STORE, top_k=10)  # fmt: skip
                turns += ingest(mem, conversation)
                for q in asked[conversation["id"]]:
                    ranked = rankings(mem, store, q["question"])
                    evidence = set(q["evidence"])
                    said = [turn_text[t] for t in evidence]
                    shared = shares_a_word(words, q["question"], said, conversation["speakers"])
                    rows.append(
                        {"kind": q["kind"], "form": q.get("form", ""), "shared": shared}
                        | ({"weights": weighted(mem, q["question"], evidence)} if weights else {})
                        | {r: float(bool(set(ranked[r][:K]) & evidence)) for r in RANKINGS}
                        | {f"{r}_all": float(evidence <= set(ranked[r][:K])) for r in RANKINGS}
                    )
            finally:
                store.close()
    by_kind: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        by_kind[row["kind"]].append(row)

    def mean(part: Sequence[dict[str, Any]], r: str) -> float:
        return round(sum(x[r] for x in part) / max(1, len(part)), 4)

    overall = {}
    for r in RANKINGS:
        low, high = wilson_interval(round(sum(x[r] for x in rows)), len(rows))
        overall[r] = {"mean": mean(rows, r), "wilson95": [round(low, 4), round(high, 4)]}
    paired = {}
    for r in RANKINGS[1:]:
        better = sum(x["hybrid"] > x[r] for x in rows)
        worse = sum(x["hybrid"] < x[r] for x in rows)
        paired[r] = {"better": better, "worse": worse, "sign_test_p": round(sign_test_p(better, worse), 4)}  # fmt: skip
    return {
        "conversations": len(data["conversations"][: limit or None]),
        "turns": turns,
        "questions": len(rows),
        f"turn_recall_any@{K}": overall,
        "by_kind": {
            kind: {r: mean(part, r) for r in RANKINGS} | {"n": len(part)}
            for kind, part in sorted(by_kind.items())
        },
        f"multi_hop_turn_recall_all@{K}": {
            r: mean(by_kind["multi-hop"], f"{r}_all") for r in RANKINGS
        },
        "paired_hybrid_vs": paired,
        "hybrid_above_every_signal": all(
            overall["hybrid"]["mean"] > overall[r]["mean"] for r in RANKINGS[1:]
        ),
        "shared_words": {
            "share": mean(rows, "shared"),
            **{
                label: {r: mean(part, r) for r in RANKINGS} | {"n": len(part)}
                for label, part in (
                    ("sharing", [x for x in rows if x["shared"]]),
                    ("not_sharing", [x for x in rows if not x["shared"]]),
                )
            },
        },
    } | ({"vector_weight_cv": weight_cv(rows)} if weights else {})


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--cache", default=None, help="directory for cached vectors")
    parser.add_argument("--limit", type=int, default=0, help="first N conversations (0: all)")
    parser.add_argument("--threads", type=int, default=None, help="ONNX intra-op threads")
    parser.add_argument(
        "--weights", action="store_true", help="also choose the vector weight by cross-validation"
    )
    args = parser.parse_args()
    from memcore_sqlite.embedders import missing_onnx_requirements

    if missing_onnx_requirements():
        print(json.dumps({"skipped": "semantic extra not installed"}))
        return 0
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    real: Embedder = OnnxEmbedder(threads=args.threads)
    embedder: Embedder = real
    if args.cache:
        from benchmarks._embed_cache import CachingEmbedder

        embedder = CachingEmbedder(real, args.cache)
    data = json.loads(args.data.read_text(encoding="utf-8"))
    result = {"data": args.data.name, "embedder": real.name, "machine": {"cpus": os.cpu_count()}}
    try:
        result |= run(data, embedder, args.limit, args.weights)
    except LookupError as e:
        print(json.dumps({"error": str(e)}), file=sys.stderr)
        return 1
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
