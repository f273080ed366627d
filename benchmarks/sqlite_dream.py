"""Local dream on the LongMemEval_S development split: does recall prefer the newest fact?

Protocol (see ../shared/data/README.md): one fresh SQLite store per question, each haystack
session written in order as one ``add_messages`` call of its user turns (timestamped with the
session date, session id in metadata), searched with the question. Then one local dream pass
(``safe_auto``, the service's default thresholds) and the same searches again.

Figures, before and after the pass:
- knowledge-update questions: the share where the newest evidence turn ranks above every
  stale one (evidence turns of earlier answer sessions) in the top 50;
- every question asked for: session recall_any@5/@10, turn recall_any@5/@10, NDCG@10.

    uv run python -m benchmarks sqlite_dream [--types knowledge-update] [--limit N]
        [--cache /tmp/lme-cache]

``--cache DIR`` keeps the embeddings (``benchmarks._embed_cache``, outside the repository)
so a second run does not embed again.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from benchmarks.longmemeval import DEFAULT_DATA, load, ndcg
from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.embedders import missing_onnx_requirements

SCOPE = Scope("bench", "user", "assistant", "haystack")
STORE = "bench"
TOP = 50


def _when(date: str) -> float:
    day, clock = date.split(" (")[0], date.split(") ")[1]
    return (
        datetime.strptime(f"{day} {clock}", "%Y/%m/%d %H:%M")
        .replace(tzinfo=timezone.utc)
        .timestamp()
    )


def _clip(text: str, limit: int = 30_000) -> str:
    """A turn longer than the service takes (32,000 bytes per call) is cut, never dropped."""
    return text.encode("utf-8")[:limit].decode("utf-8", "ignore")


def _ingest(store: SqliteMemoryStore, q: dict[str, Any]) -> None:
    for sid, date, session in zip(
        q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]
    ):
        when = _when(date)
        batch: list[Message] = []
        size = 0
        for t in session:
            if t["role"] != "user" or not t["content"].strip():
                continue
            text = _clip(t["content"])
            n = len(text.encode("utf-8"))
            # The service takes at most 20 messages and 32,000 bytes per call.
            if batch and (len(batch) == 20 or size + n > 32_000):
                store.add_messages(STORE, SCOPE, batch, metadata={"session": sid})
                batch, size = [], 0
            batch.append(Message("user", text, timestamp=when))
            size += n
        if batch:
            store.add_messages(STORE, SCOPE, batch, metadata={"session": sid})


def _evidence(q: dict[str, Any]) -> tuple[set[str], set[str], set[str]]:
    """(all evidence texts, the newest session's, the older sessions')."""
    by_time: dict[float, set[str]] = {}
    for sid, date, session in zip(
        q["haystack_session_ids"], q["haystack_dates"], q["haystack_sessions"]
    ):
        if sid in q["answer_session_ids"]:
            for t in session:
                if t.get("has_answer") and t["role"] == "user":
                    by_time.setdefault(_when(date), set()).add(_clip(t["content"]))
    if not by_time:
        return set(), set(), set()
    newest = max(by_time)
    stale = set().union(*(v for k, v in by_time.items() if k != newest)) - by_time[newest]
    return set().union(*by_time.values()), by_time[newest], stale


def _merged_into(store: SqliteMemoryStore) -> dict[str, str]:
    """Text of each memory a MERGE folded away -> text of the memory it lives on in."""
    texts: dict[str, str] = {}
    folded: dict[str, str] = {}
    token = None
    while True:
        page = store.list_memories(STORE, SCOPE.pattern(), limit=100, next_token=token)
        for m in page.items:
            texts[m.id] = m.text
            if m.extras.get("superseded_how") == "merged":
                folded[m.id] = m.extras["superseded_by"]
        token = page.next_token
        if not token:
            break
    return {texts[a]: texts[b] for a, b in folded.items() if b in texts}


def _score(q: dict[str, Any], hits: list[Any], merged: dict[str, str]) -> dict[str, float]:
    """Metrics of one ranking; a merged memory stands for the evidence folded into it."""
    texts = [h.memory.text for h in hits]
    sessions = [h.memory.metadata.get("session") for h in hits]
    evidence, newest, stale = (s | {merged[t] for t in s if t in merged} for s in _evidence(q))
    answers = set(q["answer_session_ids"])
    out: dict[str, float] = {}
    for k in (5, 10):
        out[f"session_recall_any@{k}"] = float(bool(answers & set(sessions[:k])))
        out[f"turn_recall_any@{k}"] = float(bool(evidence & set(texts[:k])))
    out["ndcg@10"] = ndcg(texts, evidence)  # a repeated text counts once: at most 1
    if q["question_type"] == "knowledge-update" and stale:
        rank_new = min((i for i, t in enumerate(texts) if t in newest), default=math.inf)
        rank_old = min((i for i, t in enumerate(texts) if t in stale), default=math.inf)
        out["newest_above_stale"] = float(rank_new < rank_old)
    return out


def _mean(rows: list[dict[str, float]], key: str) -> float | None:
    values = [r[key] for r in rows if key in r]
    return round(sum(values) / len(values), 3) if values else None


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--types", default="", help="comma-separated question types (default all)")
    parser.add_argument("--limit", type=int, default=0)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    args = parser.parse_args()
    if missing_onnx_requirements():
        print(json.dumps({"skipped": "semantic extra not installed"}))
        return 0
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    questions = load(args.data)
    if args.types:
        wanted = set(args.types.split(","))
        questions = [q for q in questions if q["question_type"] in wanted]
    if args.limit:
        questions = questions[: args.limit]
    embedder: Any = OnnxEmbedder()
    if args.cache is not None:
        from benchmarks._embed_cache import CachingEmbedder

        embedder = CachingEmbedder(embedder, args.cache)
    before: list[dict[str, float]] = []
    after: list[dict[str, float]] = []
    actions: dict[str, int] = {}
    dream_s: list[float] = []
    per_type: dict[str, list[tuple[dict[str, float], dict[str, float]]]] = {}
    for q in questions:
        with (
            tempfile.TemporaryDirectory() as tmp,
            SqliteMemoryStore(Path(tmp) / "b.db", embedder=embedder) as store,
        ):
            store.ensure_store(STORE)
            _ingest(store, q)
            b = _score(q, store.search(STORE, SCOPE.pattern(), q["question"], top_k=TOP), {})
            started = time.perf_counter()
            task = store.create_dream_task(STORE, SCOPE.pattern(), apply_mode="safe_auto")
            dream_s.append(time.perf_counter() - started)
            for a in store.list_dream_actions(STORE, task.id, limit=100).items:
                key = f"{a.action}:{a.status}"
                actions[key] = actions.get(key, 0) + 1
            hits = store.search(STORE, SCOPE.pattern(), q["question"], top_k=TOP)
            a_ = _score(q, hits, _merged_into(store))
        before.append(b)
        after.append(a_)
        per_type.setdefault(q["question_type"], []).append((b, a_))
    keys = [
        "session_recall_any@5",
        "session_recall_any@10",
        "turn_recall_any@5",
        "turn_recall_any@10",
        "ndcg@10",
        "newest_above_stale",
    ]
    result: dict[str, Any] = {
        "questions": len(questions),
        "knowledge_update_questions_with_stale_evidence": sum(
            "newest_above_stale" in r for r in before
        ),
        "before": {k: _mean(before, k) for k in keys},
        "after_dream": {k: _mean(after, k) for k in keys},
        "by_type": {
            t: {
                "n": len(rows),
                "before": {
                    k: _mean([r[0] for r in rows], k)
                    for k in keys
                    if _mean([r[0] for r in rows], k) is not None
                },
                "after_dream": {
                    k: _mean([r[1] for r in rows], k)
                    for k in keys
                    if _mean([r[1] for r in rows], k) is not None
                },
            }
            for t, rows in sorted(per_type.items())
        },
        "dream_actions": dict(sorted(actions.items())),
        "dream_seconds_median": round(sorted(dream_s)[len(dream_s) // 2], 3) if dream_s else None,
    }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
