"""Recall on LongMemEval_S (Wu et al., ICLR 2025) through the product's own search path.

One fresh SQLite store per question; each haystack session is one ``Memory.add(messages=...)``
call with its session id and date in metadata; each message is one memory. Indexed: user turns
(the authors' default) and user+assistant turns (what a Hermes turn writes). Queries go through
``Memory.search`` (hybrid) and the store's ``search(mode=...)`` for each signal alone.

Each message carries its session's date as its timestamp, and the hybrid search is asked on the
question's date (``reference_time``), as a host would ask it.

Metrics: session recall_any@k (an evidence session among the sessions of the top k), turn
recall_any@k (an evidence turn among the top k), NDCG@10 over evidence turns and over
sessions, for k in 5 and 10, overall and per question type. ``topk_stable`` is the share of
queries whose first 5 hits are the same whether 5 or 10 were asked for.

``--roles auto`` indexes user turns and the assistant turns a Hermes turn keeps as memories
with ``store_assistant: auto`` (``memcore.turn_policy``); ``evidence_any@k`` (an evidence turn
of either role among the top k) scores every setting against the same evidence, which
``turn_recall_any`` (indexed evidence only) does not. ``--questions 0,10,...`` picks a subset.

``--cache DIR`` keeps vectors per text between runs (outside the repository): ingest and
search times then exclude embedding; ``--ingest-probe`` times one conversation with the real
embedder and no cache (wall and CPU, and the embedder's share of each).

``hybrid_below_a_signal`` lists the metrics (overall, then per question type) where hybrid
scores less than a signal alone; ``hits_a_signal_found_and_hybrid_missed`` names the questions
where a signal alone had an evidence session or turn in its top k and hybrid did not.
``paired`` compares hybrid with each signal question by question (how many it scored higher
and lower, and the sign test's p), overall and for each per-type cell below a signal, so a
gap of one question reads as one; ``hybrid_recall_95`` gives each hybrid recall a 95% Wilson
interval, the range in which the same search may score on other questions.

Settings are chosen by cross-validation, not on this split as a whole: the protocol (folds by
question, stratified by type, fixed seed; held-out figures only) is
:mod:`benchmarks.longmemeval_cv`, run on stores kept by :mod:`benchmarks.longmemeval_replay`.

    uv run python -m benchmarks.longmemeval --data ../shared/data/longmemeval_s_dev120.json.gz \
        [--limit 20] [--cache /tmp/lme-cache] [--roles user,all] [--ingest-probe]
"""

from __future__ import annotations

import argparse
import gzip
import json
import math
import os
import tempfile
import time
from collections import defaultdict
from collections.abc import Sequence
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks._embed_cache import WrappedEmbedder
from benchmarks._stats import sign_test_p, summary_ms, wilson_interval
from memcore import Memory
from memcore.ports import Embedder
from memcore.scope import Scope
from memcore.turn_policy import worth_recalling
from memcore.values import Message, SearchHit
from memcore_sqlite import SqliteMemoryStore

STORE = "lme"
ROLE_KEYS = {
    "user": "user_turns",
    "all": "user_and_assistant_turns",
    "auto": "user_and_worthwhile_assistant_turns",
}
MODES = ("hybrid", "lexical", "vector")
KS = (5, 10)
_NAME = Path("shared") / "data" / "longmemeval_s_dev120.json.gz"
#: The development split sits in ``shared/data`` beside the checkout (or above it, for a
#: worktree); ``--data`` or ``LONGMEMEVAL_DATA`` overrides.
DEFAULT_DATA = next(
    (p / _NAME for p in Path(__file__).resolve().parents if (p / _NAME).exists()),
    Path(__file__).resolve().parents[2] / _NAME,
)


def load(path: str | os.PathLike[str]) -> list[dict[str, Any]]:
    opener = gzip.open if str(path).endswith(".gz") else open
    with opener(path, "rt", encoding="utf-8") as f:
        return list(json.load(f))


def ingest(mem: Memory, item: dict[str, Any], roles: str) -> tuple[set[str], int]:
    """Write the haystack; returns the indexed evidence turns ("session:turn") and turn count."""
    evidence: set[str] = set()
    count = 0
    sessions = zip(item["haystack_session_ids"], item["haystack_dates"], item["haystack_sessions"])
    for si, (sid, date, session) in enumerate(sessions):
        messages = []
        for ti, turn in enumerate(session):
            if roles == "user" and turn["role"] != "user":
                continue
            if not turn["content"].strip():
                continue
            auto = roles == "auto" and turn["role"] == "assistant"
            if auto and not worth_recalling(turn["content"]):
                continue
            key = f"{si}:{ti}"
            said = haystack_time(date)
            messages.append(
                Message(turn["role"], turn["content"], timestamp=said, metadata={"turn": key})
            )
            if turn.get("has_answer"):
                evidence.add(key)
        if messages:
            mem.add(messages=messages, metadata={"session_id": str(sid), "date": str(date)})
            count += len(messages)
    return evidence, count


def haystack_time(text: str) -> float | None:
    """LongMemEval's dates ("2023/04/11 (Tue) 23:18") as seconds, read as UTC."""
    day, _, clock = str(text).partition(")")
    try:
        moment = datetime.strptime(f"{day[:10]} {clock.strip()}", "%Y/%m/%d %H:%M")
    except ValueError:
        return None
    return moment.replace(tzinfo=timezone.utc).timestamp()


def _dcg(relevant: Sequence[bool]) -> float:
    return sum(1.0 / math.log2(i + 2) for i, r in enumerate(relevant) if r)


def ndcg(ranked: Sequence[str], relevant: set[str], k: int = 10) -> float:
    seen: list[str] = []
    for key in ranked:
        if key not in seen:
            seen.append(key)
    gains = [key in relevant for key in seen[:k]]
    ideal = _dcg([True] * min(len(relevant), k))
    return _dcg(gains) / ideal if ideal else 0.0


def score(
    hits: Sequence[SearchHit],
    sessions: set[str],
    turns: set[str],
    answers: set[str] | None = None,
) -> dict[str, float]:
    """``answers``: every evidence turn, indexed or not, so settings that index different
    turns are scored against the same evidence (``evidence_any@k``)."""
    hit_sessions = [h.memory.metadata.get("session_id", "") for h in hits]
    hit_turns = [h.memory.metadata.get("turn", "") for h in hits]
    return score_keys(hit_sessions, hit_turns, sessions, turns, answers)


def score_keys(
    hit_sessions: Sequence[str],
    hit_turns: Sequence[str],
    sessions: set[str],
    turns: set[str],
    answers: set[str] | None = None,
) -> dict[str, float]:
    """:func:`score` of a ranking given as its hits' sessions and turns, best first."""
    out: dict[str, float] = {}
    for k in KS:
        if answers:
            out[f"evidence_any@{k}"] = float(bool(set(hit_turns[:k]) & answers))
        out[f"session_recall_any@{k}"] = float(bool(set(hit_sessions[:k]) & sessions))
        if turns:
            out[f"turn_recall_any@{k}"] = float(bool(set(hit_turns[:k]) & turns))
    out["session_ndcg@10"] = ndcg(hit_sessions, sessions)
    if turns:
        out["turn_ndcg@10"] = ndcg(hit_turns, turns)
    return out


def open_question(path: Path, embedder: Any, index: int) -> tuple[SqliteMemoryStore, Memory]:
    """The store of question ``index`` and the memory searched in it (one tenant each)."""
    store = SqliteMemoryStore(path, embedder=embedder)
    scope = Scope("lme", f"q{index}", "agent", "run")
    return store, Memory(store, scope=scope, store_name=STORE, top_k=10)


def run_question(
    item: dict[str, Any], index: int, roles: str, embedder: Embedder, tmp: Path
) -> dict[str, Any]:
    path = tmp / f"q{index}-{roles}.db"
    store, mem = open_question(path, embedder, index)
    try:
        started = time.perf_counter()
        turns, count = ingest(mem, item, roles)
        ingest_s = time.perf_counter() - started
        out = {"ingest_s": ingest_s, "turns": count}
        return {**out, **search_question(mem, store, item, turns)}
    finally:
        store.close()
        path.unlink(missing_ok=True)


def search_question(
    mem: Memory, store: SqliteMemoryStore, item: dict[str, Any], turns: set[str]
) -> dict[str, Any]:
    """The question's hits in each mode, scored, with their search times."""
    sessions = {str(s) for s in item["answer_session_ids"]}
    answers = {
        f"{si}:{ti}"
        for si, session in enumerate(item["haystack_sessions"])
        for ti, turn in enumerate(session)
        if turn.get("has_answer")
    }
    pattern = mem.service.search_pattern
    out: dict[str, Any] = {"id": item["question_id"], "type": item["question_type"]}
    for mode in MODES:
        started = time.perf_counter()
        if mode == "hybrid":
            asked = haystack_time(item.get("question_date", ""))
            hits = mem.search(
                item["question"],
                top_k=10,
                reference_time=None
                if asked is None
                else datetime.fromtimestamp(asked, timezone.utc),
            )
        else:
            hits = store.search(STORE, pattern, item["question"], top_k=10, mode=mode)
        out[f"{mode}_s"] = time.perf_counter() - started
        out[mode] = score(hits, sessions, turns, answers)
        if mode == "hybrid":
            five = mem.search(item["question"], top_k=5)
            out["topk_stable"] = float(
                [h.memory.id for h in five] == [h.memory.id for h in hits[:5]]
            )
    return out


def _mean(rows: Sequence[dict[str, float]]) -> dict[str, float]:
    keys = sorted({k for r in rows for k in r})
    return {
        k: round(sum(r[k] for r in rows if k in r) / sum(k in r for r in rows), 4) for k in keys
    }


def _below(means: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """The metrics on which hybrid scores less than one of its signals alone."""
    return {
        metric: {m: means[m][metric] for m in MODES}
        for metric in means["hybrid"]
        if means["hybrid"][metric] < max(means[m].get(metric, 0.0) for m in MODES[1:])
    }


def _paired(
    rows: Sequence[dict[str, Any]], metrics: Sequence[str] | None = None
) -> dict[str, dict[str, dict[str, float]]]:
    """Hybrid against each signal, question by question: on how many questions it scored
    higher, on how many lower, and the sign test's p for that split. A per-type mean below a
    signal's with p near 1 is a question or two moving, not a worse ranking."""
    names = metrics or sorted({k for r in rows for k in r["hybrid"]})
    out: dict[str, dict[str, dict[str, float]]] = {}
    for metric in names:
        scored = [r for r in rows if metric in r["hybrid"]]
        out[metric] = {}
        for signal in MODES[1:]:
            diffs = [r["hybrid"][metric] - r[signal].get(metric, 0.0) for r in scored]
            better = sum(d > 1e-12 for d in diffs)
            worse = sum(d < -1e-12 for d in diffs)
            out[metric][signal] = {
                "hybrid_better": better,
                "hybrid_worse": worse,
                "sign_test_p": round(sign_test_p(better, worse), 4),
            }
    return out


def _interval(rows: Sequence[dict[str, Any]]) -> dict[str, list[float]]:
    """Hybrid's recall figures with their 95% Wilson interval: where the same search may land
    on other questions drawn like these (acceptance uses questions we do not have)."""
    out: dict[str, list[float]] = {}
    for metric in sorted({k for r in rows for k in r["hybrid"] if "recall" in k}):
        values = [r["hybrid"][metric] for r in rows if metric in r["hybrid"]]
        low, high = wilson_interval(round(sum(values)), len(values))
        out[metric] = [round(low, 4), round(high, 4)]
    return out


def _lost(results: Sequence[dict[str, Any]]) -> dict[str, list[str]]:
    """Per question, the recall metrics on which a signal alone found a hit that hybrid
    missed: where to look first (NDCG moves a little either way in most questions)."""
    out: dict[str, list[str]] = {}
    for r in results:
        worse = [
            k
            for k, v in r["hybrid"].items()
            if "recall" in k and v < max(r[m].get(k, 0.0) for m in MODES[1:])
        ]
        if worse:
            out[f"{r['id']} ({r['type']})"] = sorted(worse)
    return out


def summarize(results: Sequence[dict[str, Any]]) -> dict[str, Any]:
    overall = {mode: _mean([r[mode] for r in results]) for mode in MODES}
    by_type: dict[str, Any] = {}
    groups: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for r in results:
        groups[r["type"]].append(r)
    below_by_type: dict[str, Any] = {}
    below_paired: dict[str, Any] = {}
    for name, rows in sorted(groups.items()):
        means = {m: _mean([r[m] for r in rows]) for m in MODES}
        by_type[name] = {"n": len(rows), **means}
        if below := _below(means):
            below_by_type[name] = below
            below_paired[name] = _paired(rows, sorted(below))
    return {
        "questions": len(results),
        "metrics": overall,
        "hybrid_below_a_signal": _below(overall),
        "hybrid_below_a_signal_by_type": below_by_type,
        "hybrid_below_a_signal_by_type_paired": below_paired,
        "paired": _paired(results),
        "hybrid_recall_95": _interval(results),
        "hits_a_signal_found_and_hybrid_missed": _lost(results),
        "topk_stable": round(sum(r["topk_stable"] for r in results) / len(results), 4),
        "by_type": by_type,
        "ingest_s_per_question": summary_ms([r["ingest_s"] for r in results]),
        "turns_per_question": round(sum(r["turns"] for r in results) / len(results), 1),
        "search_ms": {m: summary_ms([r[f"{m}_s"] for r in results]) for m in MODES},
    }


class _TimedEmbedder(WrappedEmbedder):
    """Passes embedding through, adding up its wall and CPU time (all threads of the process)."""

    def __init__(self, inner: Embedder) -> None:
        super().__init__(inner)
        self.wall = self.cpu = 0.0
        self.texts = 0

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            return self.inner.embed(texts)
        finally:
            self.wall += time.perf_counter() - wall
            self.cpu += time.process_time() - cpu
            self.texts += len(texts)


def ingest_probe(item: dict[str, Any], embedder: Embedder, tmp: Path) -> dict[str, Any]:
    """One whole conversation (all turns) with the real embedder, no cache.

    CPU time is the process's (every thread), so it holds on a loaded machine where wall
    time does not; ``embed_*`` is the share spent inside the embedder, the rest is SQLite,
    passages and bookkeeping.
    """
    timed = _TimedEmbedder(embedder)
    store = SqliteMemoryStore(tmp / "probe.db", embedder=timed)
    mem = Memory(store, scope=Scope("lme", "probe", "agent", "run"), store_name=STORE)
    try:
        embedder.embed(["warm up"])
        load_before = os.getloadavg()[0]
        wall, cpu = time.perf_counter(), time.process_time()
        _, count = ingest(mem, item, "all")
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
        return {
            "turns": count,
            "ingest_s": round(wall, 2),
            "ingest_cpu_s": round(cpu, 2),
            "embed_s": round(timed.wall, 2),
            "embed_cpu_s": round(timed.cpu, 2),
            "texts_embedded": timed.texts,
            "load_average": [round(load_before, 2), round(os.getloadavg()[0], 2)],
        }
    finally:
        store.close()


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--data", default=os.environ.get("LONGMEMEVAL_DATA", str(DEFAULT_DATA)))
    parser.add_argument("--limit", type=int, default=0, help="first N questions (0: all)")
    parser.add_argument(
        "--roles",
        default="user,all",
        help="comma-separated: user, all, auto (user turns and the assistant turns "
        "store_assistant=auto keeps)",
    )
    parser.add_argument("--questions", default=None, help="comma-separated question indexes")
    parser.add_argument("--cache", default=None, help="directory for cached vectors")
    parser.add_argument("--ingest-probe", action="store_true")
    parser.add_argument("--threads", type=int, default=None, help="ONNX intra-op threads")
    args = parser.parse_args()

    from memcore_sqlite.embedders import missing_onnx_requirements

    if missing_onnx_requirements():
        print(json.dumps({"skipped": "semantic extra not installed"}))
        return 0
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    data = load(args.data)
    picked = list(enumerate(data))
    if args.questions:
        picked = [(int(i), data[int(i)]) for i in args.questions.split(",")]
    if args.limit:
        picked = picked[: args.limit]
    real: Embedder = OnnxEmbedder(threads=args.threads)
    embedder: Embedder = real
    if args.cache:
        from benchmarks._embed_cache import CachingEmbedder

        embedder = CachingEmbedder(real, args.cache)
    result: dict[str, Any] = {
        "data": Path(args.data).name,
        "embedder": real.name,
        "cached_vectors": bool(args.cache),
        "machine": {"cpus": os.cpu_count()},
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        for roles in args.roles.split(","):
            rows = [run_question(item, i, roles, embedder, tmp) for i, item in picked]
            result[ROLE_KEYS[roles]] = summarize(rows)
        if args.ingest_probe:
            result["ingest_probe"] = ingest_probe(picked[0][1], real, tmp)
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
