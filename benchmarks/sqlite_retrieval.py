"""SQLite store: recall@5 on the retrieval set (tests/data) for lexical, vector and hybrid search.

Uses the real ONNX embedder (the semantic extra). Prints one JSON document.

    uv run python -m benchmarks.sqlite_retrieval
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.embedders import missing_onnx_requirements

DATA = Path(__file__).resolve().parents[1] / "tests" / "data" / "sqlite_retrieval_set.json"
USER = Scope("app", "user1", "agent", "run")
K = 5


def evaluate(
    store: SqliteMemoryStore, data: dict[str, Any], ids: dict[str, str], mode: str
) -> dict[str, Any]:
    recall = 0.0
    hit_any = 0
    misses: list[str] = []
    for q in data["queries"]:
        hits = store.search("mem", USER.tenant_pattern(), q["query"], top_k=K, mode=mode)
        found = {h.memory.id for h in hits}
        relevant = {ids[r] for r in q["relevant"]}
        recall += len(found & relevant) / len(relevant)
        if found & relevant:
            hit_any += 1
        else:
            misses.append(q["query"])
    n = len(data["queries"])
    return {
        "recall_at_5": round(recall / n, 3),
        "hit_rate_at_5": round(hit_any / n, 3),
        "misses": misses[:10],
    }


def main() -> int:
    if missing_onnx_requirements():
        print(json.dumps({"skipped": "semantic extra not installed"}))
        return 0
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    data = json.loads(DATA.read_text(encoding="utf-8"))
    result: dict[str, Any] = {"facts": len(data["facts"]), "queries": len(data["queries"])}
    with (
        tempfile.TemporaryDirectory() as tmp,
        SqliteMemoryStore(Path(tmp) / "r.db", embedder=OnnxEmbedder()) as store,
    ):
        store.ensure_store("mem")
        started = time.perf_counter()
        new_ids = store.add_many("mem", [TextItem(USER, f["text"]) for f in data["facts"]])
        result["ingest_s"] = round(time.perf_counter() - started, 2)
        ids = {f["id"]: mid for f, mid in zip(data["facts"], new_ids)}
        for mode in ("lexical", "vector", "hybrid"):
            result[mode] = evaluate(store, data, ids, mode)
    print(json.dumps(result, indent=2, ensure_ascii=False))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
