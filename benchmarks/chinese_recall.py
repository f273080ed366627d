"""Chinese recall by meaning through the embedded store's own search, and what it costs in English.

Chinese: the facts of ``benchmarks/data/zh_paraphrases.json`` are stored in one scope and
each paraphrased question (sharing few characters with its fact: ``char_overlap`` is the mean
share of a question's Han characters found in its fact, ``用户`` aside) must find its own fact
through ``SqliteMemoryStore.search`` in each mode; recall@1 and @5 per embedder.

English: the tests' retrieval set (``tests/data/sqlite_retrieval_set.json``, 106 facts, 78
paraphrased questions) through the same search, recall@1/@5 of any relevant fact; and
LongMemEval_S (``benchmarks.longmemeval``'s harness, user turns indexed) on the
questions picked by ``--lme-questions`` (default: the first ``--lme-limit``), for the same
embedders, with session and turn recall@5/@10 per mode, so the multilingual model's cost in
English is measured on the same questions as the default.

Each embedder's median time to embed one question alone is given, and as a ratio to the
first embedder's in the same run (the machine may be shared).

    uv run python -m benchmarks.chinese_recall [--embedders default,multilingual,e5] \
        [--lme-limit 12] [--lme-questions 0,10,...]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from memcore.ports import Embedder
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem

ZH = Path(__file__).resolve().parent / "data" / "zh_paraphrases.json"
EN_SET = Path(__file__).resolve().parents[1] / "tests" / "data" / "sqlite_retrieval_set.json"
USER = Scope("app", "zh-user", "agent", "run")
MODES = ("hybrid", "vector", "lexical")


def make(name: str) -> Embedder:
    if name == "default":
        from memcore_sqlite.embedders.onnx import OnnxEmbedder

        return OnnxEmbedder()
    if name == "multilingual":
        from memcore_sqlite.embedders.multilingual import MultilingualEmbedder

        return MultilingualEmbedder()
    if name in ("e5", "e5-raw"):
        from memcore_sqlite.embedders.e5 import E5Embedder

        return E5Embedder(raw=name == "e5-raw")
    raise SystemExit(f"unknown embedder {name!r}")


def _han(text: str) -> set[str]:
    return {c for c in text if "\u4e00" <= c <= "\u9fff"}


def char_overlap(pairs: list[dict[str, str]]) -> float:
    """Mean share of each question's Han characters that its fact holds (``用户`` aside)."""
    shares = [
        len((_han(p["fact"]) - set("用户")) & _han(p["question"])) / len(_han(p["question"]))
        for p in pairs
    ]
    return round(statistics.mean(shares), 3)


def chinese(embedder: Embedder, pairs: list[dict[str, str]], tmp: Path) -> dict[str, Any]:
    with SqliteMemoryStore(tmp / f"zh-{embedder.name}.db", embedder=embedder) as store:
        store.ensure_store("mem")
        memories = store.add_many("mem", [TextItem(USER, p["fact"]) for p in pairs])
        ids = list(memories)
        out: dict[str, Any] = {}
        for mode in MODES:
            at1 = at5 = 0
            times = []
            for want, pair in zip(ids, pairs):
                started = time.perf_counter()
                hits = store.search(
                    "mem", USER.tenant_pattern(), pair["question"], top_k=5, mode=mode
                )
                times.append(time.perf_counter() - started)
                found = [h.memory.id for h in hits]
                at1 += found[:1] == [want]
                at5 += want in found
            out[mode] = {
                "recall@1": round(at1 / len(pairs), 3),
                "recall@5": round(at5 / len(pairs), 3),
                "search_ms_p50": round(statistics.median(times) * 1e3, 2),
            }
        embed = []
        for pair in pairs:
            started = time.perf_counter()
            embedder.embed([pair["question"]])
            embed.append(time.perf_counter() - started)
        out["query_embed_ms_p50"] = round(statistics.median(embed) * 1e3, 2)
        return out


def english_set(embedder: Embedder, tmp: Path) -> dict[str, Any]:
    """The tests' English retrieval set through the store's search: recall of any relevant fact."""
    data = json.loads(EN_SET.read_text(encoding="utf-8"))
    with SqliteMemoryStore(tmp / f"en-{embedder.name}.db", embedder=embedder) as store:
        store.ensure_store("mem")
        memories = store.add_many("mem", [TextItem(USER, f["text"]) for f in data["facts"]])
        ids = dict(zip((f["id"] for f in data["facts"]), memories))
        out: dict[str, Any] = {}
        for mode in MODES:
            at1 = at5 = 0
            for query in data["queries"]:
                hits = store.search(
                    "mem", USER.tenant_pattern(), query["query"], top_k=5, mode=mode
                )
                found = [h.memory.id for h in hits]
                relevant = {ids[r] for r in query["relevant"]}
                at1 += bool(set(found[:1]) & relevant)
                at5 += bool(set(found) & relevant)
            n = len(data["queries"])
            out[mode] = {"recall@1": round(at1 / n, 3), "recall@5": round(at5 / n, 3)}
        return out


def english(embedder: Embedder, picked: list[tuple[int, Any]], tmp: Path) -> dict[str, Any]:
    from benchmarks.longmemeval import run_question

    rows = [run_question(item, i, "user", embedder, tmp) for i, item in picked]
    keys = (
        "session_recall_any@5",
        "session_recall_any@10",
        "turn_recall_any@5",
        "turn_recall_any@10",
        "session_ndcg@10",
        "turn_ndcg@10",
    )
    out: dict[str, Any] = {}
    for mode in MODES:
        # a question whose evidence is all in assistant turns has no turn recall
        out[mode] = {
            k: round(statistics.mean(r[mode][k] for r in rows if k in r[mode]), 3) for k in keys
        }
    out["ingest_s_p50"] = round(statistics.median(r["ingest_s"] for r in rows), 2)
    out["hybrid_search_ms_p50"] = round(statistics.median(r["hybrid_s"] for r in rows) * 1e3, 1)
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--embedders", default="default,multilingual")
    parser.add_argument("--lme-data", default=None)
    parser.add_argument("--lme-limit", type=int, default=12, help="first N questions (0: none)")
    parser.add_argument("--lme-questions", default=None, help="comma-separated indexes")
    args = parser.parse_args()
    pairs = json.loads(ZH.read_text(encoding="utf-8"))["pairs"]
    picked: list[tuple[int, Any]] = []
    if args.lme_limit or args.lme_questions:
        from benchmarks.longmemeval import DEFAULT_DATA, load

        data = load(args.lme_data or os.environ.get("LONGMEMEVAL_DATA", str(DEFAULT_DATA)))
        if args.lme_questions:
            picked = [(int(i), data[int(i)]) for i in args.lme_questions.split(",")]
        else:
            picked = list(enumerate(data))[: args.lme_limit]
    result: dict[str, Any] = {
        "zh_pairs": len(pairs),
        "char_overlap": char_overlap(pairs),
        "lme_questions": [i for i, _ in picked],
        "note": "a shared, loaded 2-core machine: times are indicative",
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for name in args.embedders.split(","):
            embedder = make(name)
            row: dict[str, Any] = {"model": embedder.name, "zh": chinese(embedder, pairs, tmp)}
            row["en_set"] = english_set(embedder, tmp)
            if picked:
                row["lme_en"] = english(embedder, picked, tmp)
            result[name] = row
        first = result[args.embedders.split(",")[0]]["zh"]["query_embed_ms_p50"]
        for name in args.embedders.split(","):
            zh = result[name]["zh"]
            zh["query_embed_vs_first"] = round(zh["query_embed_ms_p50"] / first, 2)
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
