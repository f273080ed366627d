"""SQLite store: search latency at 1k/10k/100k memories, tenant isolation cost, ingest rates.

Prints one JSON document. Vectors of stored memories and queries are deterministic random unit
vectors (384 dimensions, like all-MiniLM-L6-v2), so building 100k rows takes seconds, not the
~7 minutes the real model would need; "query_embedding" times the real ONNX model separately.
Search times are through ``search_vector`` (hybrid: FTS5 + exact cosine + RRF, audit included)
and ``search(mode="lexical")``; they exclude query embedding.

    uv run python -m benchmarks.sqlite_search [--queries 200] [--max-size 100000]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._sqlite_corpus import Corpus, RandomVectorEmbedder, unit_vector
from benchmarks._stats import summary_ms
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem

STORE = "bench"
BATCH = 1_000


def _scope(tenant: int) -> Scope:
    return Scope("app", f"tenant{tenant}", "agent", "run")


def _fill(store: SqliteMemoryStore, texts: list[str], scope_of: list[Scope]) -> float:
    started = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        store.add_many(
            STORE, [TextItem(s, t) for s, t in zip(scope_of[i : i + BATCH], texts[i : i + BATCH])]
        )
    return time.perf_counter() - started


def _time_searches(store: SqliteMemoryStore, scope: Scope, queries: list[str]) -> dict[str, object]:
    pattern = scope.tenant_pattern()
    vectors = [unit_vector(q, 384) for q in queries]
    for q, v in zip(queries[:10], vectors[:10]):  # warm the matrix cache and the page cache
        store.search_vector(STORE, pattern, q, v)
    times: dict[str, list[float]] = {"hybrid": [], "vector": [], "lexical": []}
    modes = list(times)
    # Modes take turns query by query, so a burst of load on the shared machine hits all three.
    for i, (q, v) in enumerate(zip(queries, vectors)):
        for mode in modes[i % 3 :] + modes[: i % 3]:
            t = time.perf_counter()
            if mode == "lexical":
                store.search(STORE, pattern, q, mode="lexical")
            else:
                store.search_vector(STORE, pattern, q, v, mode=mode)
            times[mode].append(time.perf_counter() - t)
    return {mode: summary_ms(values) for mode, values in times.items()}


def _query_embedding(queries: list[str]) -> dict[str, object]:
    from memcore_sqlite.embedders import missing_onnx_requirements

    if missing_onnx_requirements():
        return {"skipped": "semantic extra not installed"}
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    started = time.perf_counter()
    embedder = OnnxEmbedder()
    embedder.embed(["warm up"])
    ready = time.perf_counter() - started
    times = []
    for q in queries[:100]:
        t = time.perf_counter()
        embedder.embed([q])
        times.append(time.perf_counter() - t)
    return {"model_load_s": round(ready, 3), "per_query": summary_ms(times)}


def _ingest(tmp: Path, corpus: Corpus) -> dict[str, object]:
    texts = corpus.texts(50_000, start=1_000_000)
    scope = [_scope(0)] * len(texts)
    lexical = SqliteMemoryStore(tmp / "ingest_lexical.db")
    lexical.ensure_store(STORE)
    lex_s = _fill(lexical, texts, scope)
    lexical.close()
    vec = SqliteMemoryStore(tmp / "ingest_vectors.db", embedder=RandomVectorEmbedder())
    vec.ensure_store(STORE)
    vec_s = _fill(vec, texts[:20_000], scope[:20_000])
    vec.close()
    out: dict[str, object] = {
        "lexical_only_batched_per_s": round(len(texts) / lex_s),
        "with_precomputed_vectors_batched_per_s": round(20_000 / vec_s),
        "batch_size": BATCH,
    }
    from memcore_sqlite.embedders import missing_onnx_requirements

    if not missing_onnx_requirements():
        from memcore_sqlite.embedders.onnx import OnnxEmbedder

        onnx = SqliteMemoryStore(tmp / "ingest_onnx.db", embedder=OnnxEmbedder())
        onnx.ensure_store(STORE)
        onnx_s = _fill(onnx, texts[:1_000], scope[:1_000])
        onnx.close()
        out["with_onnx_embeddings_batched_per_s"] = round(1_000 / onnx_s)
    return out


_COLD = """
import json, resource, sys, time
t0 = time.perf_counter()
from benchmarks._sqlite_corpus import RandomVectorEmbedder, unit_vector
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
store = SqliteMemoryStore(sys.argv[1], embedder=RandomVectorEmbedder())
opened = time.perf_counter() - t0
pattern = Scope("app", "tenant0", "agent", "run").tenant_pattern()
q = "What does the user know about the project meeting?"
store.search_vector("bench", pattern, q, unit_vector(q, 384))
first = time.perf_counter() - t0
for i in range(50):
    store.search_vector("bench", pattern, q + str(i), unit_vector(q + str(i), 384))
rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"open_s": round(opened, 3), "open_and_first_search_s": round(first, 3),
                  "peak_rss_mb": round(rss / 1024, 1)}))
"""


def _cold_start(path: Path) -> dict[str, object]:
    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": str(root)}
    done = subprocess.run(
        [sys.executable, "-c", _COLD, str(path)],
        capture_output=True,
        text=True,
        env=env,
        check=True,
    )
    return dict(json.loads(done.stdout))


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--max-size", type=int, default=100_000)
    args = parser.parse_args()
    corpus = Corpus()
    result: dict[str, object] = {
        "machine": {"cpus": os.cpu_count()},
        "vectors": "random unit vectors, 384-d (see module docstring)",
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        # One tenant growing through 1k, 10k, 100k.
        store = SqliteMemoryStore(tmp / "one_tenant.db", embedder=RandomVectorEmbedder())
        store.ensure_store(STORE)
        texts: list[str] = []
        sizes = [s for s in (1_000, 10_000, 100_000) if s <= args.max_size]
        by_size: dict[str, object] = {}
        for size in sizes:
            new = corpus.texts(size - len(texts), start=len(texts))
            _fill(store, new, [_scope(0)] * len(new))
            texts.extend(new)
            by_size[str(size)] = _time_searches(
                store, _scope(0), corpus.queries(texts, args.queries)
            )
        store.close()
        result["search_one_tenant"] = by_size
        result["cold_start_largest"] = {"rows": sizes[-1], **_cold_start(tmp / "one_tenant.db")}

        # 100 tenants of 1k versus one tenant of 1k.
        tenants = SqliteMemoryStore(tmp / "tenants.db", embedder=RandomVectorEmbedder())
        tenants.ensure_store(STORE)
        many = corpus.texts(100_000, start=2_000_000)
        _fill(tenants, many, [_scope(i % 100) for i in range(len(many))])
        own = [t for i, t in enumerate(many) if i % 100 == 7]
        many_tenants = _time_searches(tenants, _scope(7), corpus.queries(own, args.queries))
        tenants.close()
        single = SqliteMemoryStore(tmp / "single.db", embedder=RandomVectorEmbedder())
        single.ensure_store(STORE)
        _fill(single, own, [_scope(7)] * len(own))
        one_tenant = _time_searches(single, _scope(7), corpus.queries(own, args.queries))
        single.close()
        result["tenants"] = {
            "100_tenants_x_1k": many_tenants,
            "1_tenant_x_1k": one_tenant,
            "hybrid_p50_ratio": round(
                many_tenants["hybrid"]["p50_ms"] / one_tenant["hybrid"]["p50_ms"],
                2,  # type: ignore[index]
            ),
        }
        result["ingest"] = _ingest(tmp, corpus)
    result["query_embedding"] = _query_embedding(corpus.queries(corpus.texts(200), 100))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
