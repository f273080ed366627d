"""Hybrid search ranks at least as well as each of its signals, on public benchmark data.

The sample (``tests/data/longmemeval_sample.json``) is the first question of each type of the
LongMemEval_S development split, with its evidence sessions and four other sessions; user and
assistant turns are indexed, as a Hermes turn writes them. ``benchmarks/longmemeval.py`` runs
the whole split.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore

DATA = Path(__file__).resolve().parents[2] / "data" / "longmemeval_sample.json"
MODES = ("hybrid", "lexical", "vector")


def _ndcg(ranked: list[str], relevant: set[str], k: int = 10) -> float:
    gains = sum(1 / math.log2(i + 2) for i, key in enumerate(ranked[:k]) if key in relevant)
    ideal = sum(1 / math.log2(i + 2) for i in range(min(len(relevant), k)))
    return gains / ideal


def _run(store: SqliteMemoryStore, item: dict[str, Any], index: int) -> dict[str, list[float]]:
    scope = Scope("lme", f"q{index}", "agent", "run")
    evidence: set[str] = set()
    sessions = zip(item["haystack_session_ids"], item["haystack_sessions"])
    for si, (sid, session) in enumerate(sessions):
        messages = []
        for ti, turn in enumerate(session):
            key = f"{si}:{ti}"
            messages.append(Message(turn["role"], turn["content"], metadata={"turn": key}))
            if turn.get("has_answer"):
                evidence.add(key)
        store.add_messages("mem", scope, messages, metadata={"session": sid})
    answer = set(item["answer_session_ids"])
    out: dict[str, list[float]] = {}
    for mode in MODES:
        hits = store.search("mem", scope.tenant_pattern(), item["question"], top_k=10, mode=mode)
        turns = [h.memory.metadata["turn"] for h in hits]
        sess = [h.memory.metadata["session"] for h in hits]
        out[mode] = [
            float(bool(set(turns[:5]) & evidence)),
            float(bool(set(turns[:10]) & evidence)),
            float(bool(set(sess[:5]) & answer)),
            _ndcg(turns, evidence),
        ]
    return out


def test_hybrid_ranks_at_least_as_well_as_each_signal(tmp_path: Path, onnx_embedder) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(DATA.read_text(encoding="utf-8"))["questions"]
    totals = {mode: [0.0] * 4 for mode in MODES}
    for i, item in enumerate(data):
        with SqliteMemoryStore(tmp_path / f"q{i}.db", embedder=onnx_embedder) as store:
            store.ensure_store("mem")
            for mode, values in _run(store, item, i).items():
                totals[mode] = [a + b for a, b in zip(totals[mode], values)]
    names = ("turn_recall@5", "turn_recall@10", "session_recall@5", "turn_ndcg@10")
    report = {mode: dict(zip(names, map(round, totals[mode], [3] * 4))) for mode in MODES}
    for j, name in enumerate(names):
        for signal in ("lexical", "vector"):
            assert totals["hybrid"][j] >= totals[signal][j], (name, report)
    # The signals must disagree somewhere, or the comparison says nothing.
    assert totals["lexical"] != totals["vector"], report
