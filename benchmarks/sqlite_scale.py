"""SQLite store at a million memories: as 1,000 tenants of 1k, and as one tenant of 1M.

For each layout: ingest rate (vectors given), disk per memory, open plus first search in a
fresh process, serving RSS, and hybrid/vector p50/p95 in the tenants searched. The 1k-tenant
layout is timed beside stores that hold one of its tenants alone, query by query in the same
loop, so the ratio says what the rest of the store costs a tenant. The one-tenant layout is
timed beside an exact float32 scan of the same vectors, and its vector hits are compared with
the scan's (strict recall@10). Ingest with the real embedder is measured on a sample and
reported as a rate (embedding a million texts on two cores would take hours).

Vectors are mixes of real MiniLM embeddings (:mod:`benchmarks._real_vectors`); queries are
real question embeddings.

    uv run python -m benchmarks.sqlite_scale [--total 1000000] [--tenant-size 1000]
        [--layouts tenants|single] [--workdir DIR --keep]

With ``--workdir`` and ``--keep`` the filled stores stay there, each beside a record of its
fill (rows, ingest rate, disk); a later run with the same sizes reuses them instead of filling
again (a file without its record, a fill that did not finish, is filled anew). Progress goes
to stderr, the figures to stdout.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import json
import os
import random
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._real_vectors import DATA, RealVectors
from benchmarks._sqlite_timing import CHILD_EMBEDDER, CHILD_RSS, child_env, run_child, turns, warm
from benchmarks._stats import summary_ms
from benchmarks.sqlite_search import (
    BATCH,
    STORE,
    PrecomputedEmbedder,
    _exact,
    _fill,
    _scope,
)
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.embedders import missing_onnx_requirements

_OPEN = (
    """
import json, sys, time
t0 = time.perf_counter()
import numpy as np
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
imported = time.perf_counter() - t0
"""
    + CHILD_EMBEDDER
    + """
qvecs = np.load(sys.argv[2])
tenants = [int(t) for t in sys.argv[3].split(",")]
t1 = time.perf_counter()
store = SqliteMemoryStore(sys.argv[1], embedder=Named())
opened = time.perf_counter() - t1
pattern = lambda t: Scope("app", f"tenant{t}", "agent", "run").tenant_pattern()
store.search_vector("bench", pattern(tenants[0]), "What did I plan for the weekend?", qvecs[0])
first = time.perf_counter() - t1
for i in range(1, 201):
    store.search_vector("bench", pattern(tenants[i % len(tenants)]), f"question {i}", qvecs[i % len(qvecs)])
store.settle()
"""
    + CHILD_RSS
    + """
print(json.dumps({"import_s": round(imported, 3), "open_s": round(opened, 3),
                  "open_first_search_s": round(first, 3)} | rss))
"""
)


def _say(message: str) -> None:
    print(f"{time.strftime('%H:%M:%S')} {message}", file=sys.stderr, flush=True)


def _filled(
    path: Path,
    texts: Sequence[str],
    vectors: Any,
    scope_of: Callable[[int], Scope],
    keep: bool,
) -> dict[str, Any]:
    """Fill ``path`` with ``texts`` (or reuse a kept fill): rows, ingest rate and disk.

    A kept fill's record is written only after the store closed, so a file without one (a
    run stopped mid-fill) is never reused."""
    record = path.with_suffix(".fill.json")
    if keep and path.exists() and record.exists():
        out: dict[str, Any] = json.loads(record.read_text())
        if out.get("rows") == len(texts):
            _say(f"reusing {path} ({out})")
            return {**out, "reused": True}
    for stale in [record, *path.parent.glob(path.name + "*")]:
        stale.unlink(missing_ok=True)
    started = time.perf_counter()
    with SqliteMemoryStore(path, embedder=PrecomputedEmbedder(texts, vectors)) as store:
        store.ensure_store(STORE)
        for i in range(0, len(texts), BATCH):
            batch = texts[i : i + BATCH]
            store.add_many(STORE, [TextItem(scope_of(i + k), t) for k, t in enumerate(batch)])
            if (i + BATCH) % 50_000 == 0:
                took = time.perf_counter() - started
                _say(f"{path.name}: {i + BATCH} rows, {(i + BATCH) / took:.0f} rows/s")
        filled = time.perf_counter() - started
    out = {"rows": len(texts), "ingest_rows_per_s": round(len(texts) / filled)}
    out |= _disk(path, len(texts))
    if keep:
        record.write_text(json.dumps(out))
    return out


def _disk(path: Path, rows: int) -> dict[str, Any]:
    size = sum(p.stat().st_size for p in path.parent.glob(path.name + "*"))
    return {"disk_mb": round(size / 2**20, 1), "disk_bytes_per_memory": round(size / rows)}


def _fresh_process(path: Path, qvecs: Any, tenants: Sequence[int], runs: int = 3) -> dict[str, Any]:
    """Open plus first search in new processes (bytecode cached, page cache warm: a restart),
    medians of ``runs``; RSS after 200 searches over ``tenants``."""
    npy = path.with_suffix(".queries.npy")
    np.save(npy, qvecs[:50])
    args = [str(path), str(npy), ",".join(map(str, tenants))]
    results = [run_child(_OPEN, args, child_env()) for _ in range(runs)]
    return {k: statistics.median(r[k] for r in results) for k in results[0]}


def _time(
    stores: dict[str, tuple[SqliteMemoryStore, int]],
    queries: Sequence[str],
    qvecs: Any,
    modes: Sequence[str],
) -> dict[str, Any]:
    """Each query in every (store, mode), taking turns, so load bursts hit all alike.

    Warmed in every mode timed, then settled: a hybrid search may never need the vector
    shortlist, so only a vector search surely starts a large scope's sketch (built in the
    background), and the steady state is with it built."""
    patterns = [(s, _scope(t).tenant_pattern()) for s, t in stores.values()]
    for mode in modes:
        warm(STORE, patterns, queries, qvecs, 5, mode=mode)
    gc.collect()
    times: dict[str, list[float]] = {f"{s}/{m}": [] for s in stores for m in modes}
    keys = list(times)
    for i, (q, v) in enumerate(zip(queries, qvecs)):
        for key in turns(keys, i):
            name, mode = key.split("/")
            store, tenant = stores[name]
            t = time.perf_counter()
            store.search_vector(STORE, _scope(tenant).tenant_pattern(), q, v, mode=mode)
            times[key].append(time.perf_counter() - t)
    return {k: summary_ms(v) for k, v in times.items()}


def _tenants(
    tmp: Path,
    texts: Sequence[str],
    vectors: Any,
    queries: Sequence[str],
    qvecs: Any,
    size: int,
    sample: int,
    keep: bool,
) -> dict[str, Any]:
    path = tmp / f"tenants-{len(texts)}-{size}.db"
    count = len(texts) // size
    out: dict[str, Any] = {"tenants": count, "tenant_size": size}
    out |= _filled(path, texts, vectors, lambda i: _scope(i // size), keep)
    picked = random.Random(29).sample(range(count), min(sample, count))
    _say("tenants: fresh processes")
    out["fresh_process"] = _fresh_process(path, qvecs, picked)
    ratios: list[float] = []
    per_tenant: list[dict[str, Any]] = []
    with SqliteMemoryStore(path, embedder=PrecomputedEmbedder(texts, vectors)) as shared:
        for tenant in picked:
            _say(f"tenants: tenant {tenant} beside a store holding it alone")
            alone_path = tmp / f"alone{tenant}.db"
            rows = texts[tenant * size : (tenant + 1) * size]
            with SqliteMemoryStore(
                alone_path, embedder=PrecomputedEmbedder(texts, vectors)
            ) as alone:
                alone.ensure_store(STORE)
                alone.add_many(STORE, [TextItem(_scope(tenant), t) for t in rows])
                timed = _time(
                    {"shared": (shared, tenant), "alone": (alone, tenant)},
                    queries,
                    qvecs,
                    ("hybrid",),
                )
            for part in tmp.glob(alone_path.name + "*"):
                part.unlink()
            ratios.append(timed["shared/hybrid"]["p50_ms"] / timed["alone/hybrid"]["p50_ms"])
            per_tenant.append({"tenant": tenant, **timed})
    out["hybrid_p50_ratio_shared_over_alone"] = {
        "median": round(statistics.median(ratios), 3),
        "max": round(max(ratios), 3),
    }
    out["hybrid_shared_p50_ms_median"] = round(
        statistics.median(t["shared/hybrid"]["p50_ms"] for t in per_tenant), 3
    )
    out["hybrid_shared_p95_ms_median"] = round(
        statistics.median(t["shared/hybrid"]["p95_ms"] for t in per_tenant), 3
    )
    out["per_tenant"] = per_tenant
    if not keep:
        path.unlink()
    return out


def _single(
    tmp: Path,
    texts: Sequence[str],
    vectors: Any,
    queries: Sequence[str],
    qvecs: Any,
    keep: bool,
) -> dict[str, Any]:
    path = tmp / f"single-{len(texts)}.db"
    out = _filled(path, texts, vectors, lambda i: _scope(0), keep)
    _say("single: fresh processes")
    out["fresh_process"] = _fresh_process(path, qvecs, [0])
    _say("single: searches beside the exact scan")
    matrix = np.asarray(vectors, dtype=np.float32)
    with SqliteMemoryStore(path, embedder=PrecomputedEmbedder(texts, vectors)) as store:
        out["search"] = _time({"store": (store, 0)}, queries, qvecs, ("hybrid", "vector"))
        scan: list[float] = []
        exact_hits = 0
        for q, v in zip(queries, qvecs):
            t = time.perf_counter()
            want = _exact(matrix, v, 10)
            scan.append(time.perf_counter() - t)
            got = store.search_vector(STORE, _scope(0).tenant_pattern(), q, v, mode="vector")
            exact_hits += len({h.memory.text for h in got} & {texts[i] for i in want})
        out["exact_numpy_scan"] = summary_ms(scan)
        out["vector_strict_recall_at_10"] = round(exact_hits / (10 * len(queries)), 4)
    if not keep:
        path.unlink()
    return out


def _embedder_ingest(tmp: Path, texts: Sequence[str], n: int) -> dict[str, Any]:
    """Rows per second through ``add_many`` with the real default model embedding them."""
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    embedder = OnnxEmbedder()
    path = tmp / "embedded.db"
    for part in tmp.glob(path.name + "*"):
        part.unlink()
    with SqliteMemoryStore(path, embedder=embedder) as store:
        store.ensure_store(STORE)
        started = time.perf_counter()
        _fill(store, texts[:n], lambda i: _scope(i // 1000))
        store.settle()
        took = time.perf_counter() - started
    for part in tmp.glob(path.name + "*"):
        part.unlink()
    return {"rows": n, "rows_per_s": round(n / took, 1)}


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--total", type=int, default=1_000_000)
    parser.add_argument("--tenant-size", type=int, default=1_000)
    parser.add_argument("--sample-tenants", type=int, default=10)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--embedded-sample", type=int, default=2_000)
    parser.add_argument("--layouts", default="tenants,single")
    parser.add_argument("--data", type=Path, default=DATA, help="LongMemEval_S development split")
    parser.add_argument("--workdir", type=Path, help="where the stores are built (default: temp)")
    parser.add_argument("--keep", action="store_true", help="keep and reuse filled stores")
    args = parser.parse_args(argv)
    if args.keep and args.workdir is None:
        parser.error("--keep needs --workdir")
    data = RealVectors(queries=args.queries, path=args.data)
    texts, vectors = data.corpus(args.total)
    queries, qvecs = data.query_texts, data.queries
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_avg_at_start": os.getloadavg()},
        "total": args.total,
    }
    with contextlib.ExitStack() as stack:
        if args.workdir is None:
            tmp = Path(stack.enter_context(tempfile.TemporaryDirectory()))
        else:
            tmp = args.workdir
            tmp.mkdir(parents=True, exist_ok=True)
        layouts = args.layouts.split(",")
        if "tenants" in layouts:
            result["tenants"] = _tenants(
                tmp,
                texts,
                vectors,
                queries,
                qvecs,
                args.tenant_size,
                args.sample_tenants,
                args.keep,
            )
        if "single" in layouts:
            result["single_tenant"] = _single(tmp, texts, vectors, queries, qvecs, args.keep)
        if args.embedded_sample and not missing_onnx_requirements():
            _say("ingest with the embedder")
            result["ingest_with_embedder"] = _embedder_ingest(tmp, texts, args.embedded_sample)
    result["machine"]["load_avg_at_end"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
