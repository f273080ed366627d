"""SQLite store: which searches make the hybrid tail at 100k memories in one tenant.

A store's first searches of a scope build what later ones reuse (the vector codes, the basis
and sketch of a two-stage scope, the rows' lengths, the tenant's postings in a background
thread), so a percentile over a loop that starts with them mixes two costs. Here the first
searches of a freshly opened store are reported apart from the steady state that follows
(after ``store.settle()``), and every search is counted as well as timed, with counts that
do not depend on the machine's load: whether the search built the sketch, whether a postings
build was running beside it or its lexical stage took the postings, how many vector
shortlists it built (to the best ``FIRST_READ`` rows, and on to the pool), how many rows the
sketch's head and its int8 columns bounded, how many rows' int8 codes were scored, and how
many exact cosines were read. The steady searches are then grouped by the shape these counts
give them, with each group's times beside an exact float32 scan timed in the same loop.

The corpus and queries are :mod:`benchmarks.sqlite_scale`'s (mixes of real MiniLM
embeddings of LongMemEval user turns; real questions), so the figures line up with its
single-tenant layout. ``--db`` keeps the filled file between runs.

With ``--warm`` the scope is warmed (``store.warm``, as a Hermes session does in the
background after opening) before the first searches, which then show what is left.

    uv run python -m benchmarks.search_tail [--total 100000] [--queries 100] [--first 5] [--warm]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._real_vectors import RealVectors
from benchmarks._stats import summary_ms
from benchmarks.sqlite_search import STORE, PrecomputedEmbedder, _exact, _fill, _scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.lexical.postings.cache import PostingsCache
from memcore_sqlite.search import fused_order, ranking
from memcore_sqlite.vector import cache, quantize, sketch


@contextmanager
def counted() -> Iterator[Counter[str]]:
    """Count, while inside, what each search does (the counter is reset by the caller)."""
    counts: Counter[str] = Counter()
    order, entry, turned = fused_order.BoundedOrder, cache._Entry, sketch.Turned
    saved: list[tuple[Any, str, Any]] = [
        (order, "_widened", order._widened),
        (order, "_read", order._read),
        (entry, "sketch", entry.sketch),
        (turned, "first", turned.first),
        (turned, "second", turned.second),
        (quantize, "approx_dot", quantize.approx_dot),
        (PostingsCache, "term_rows", PostingsCache.term_rows),
        (ranking, "lexical", ranking.lexical),
    ]
    widened, read, get_sketch, first, second, approx, term_rows, lexical = (s[2] for s in saved)

    def c_widened(self: Any) -> bool:
        grew = bool(widened(self))
        if grew:
            counts["shortlist_to_pool" if self._n >= self._pool else "shortlist_first"] += 1
        return grew

    def c_read(self: Any, rows: Any) -> None:
        counts["exact_cosines_read"] += len(rows)
        read(self, rows)

    def c_sketch(self: Any) -> Any:
        if self._sketch is None:
            counts["sketch_built"] += 1
        return get_sketch(self)

    def c_first(self: Any, n: int, code_error: Any, rows: Any = None) -> Any:
        counts["head_rows"] += n if rows is None else len(rows)
        return first(self, n, code_error, rows)

    def c_second(self: Any, point: Any, rows: Any, code_error: Any) -> Any:
        counts["int8_column_rows"] += len(rows)
        return second(self, point, rows, code_error)

    def c_approx(q8: Any, scales: Any, query: Any, rows: Any = None) -> Any:
        counts["int8_code_rows"] += len(scales)
        return approx(q8, scales, query, rows)

    def c_term_rows(self: Any, *args: Any) -> Any:
        if self._thread is not None:
            counts["postings_build_running"] += 1
        out = term_rows(self, *args)
        counts["lexical_from_postings" if out is not None else "lexical_from_fts5"] += 1
        return out

    def c_lexical(*args: Any) -> Any:
        out = lexical(*args)
        counts["lexical_candidates"] += len(out or ())
        return out

    patched = [c_widened, c_read, c_sketch, c_first, c_second, c_approx, c_term_rows, c_lexical]
    for (owner, name, _), value in zip(saved, patched):
        setattr(owner, name, value)
    try:
        yield counts
    finally:
        for owner, name, value in saved:
            setattr(owner, name, value)


def shape(c: Counter[str]) -> str:
    """A search's shape from its counts."""
    if c["sketch_built"]:
        return "built the sketch"
    if c["shortlist_to_pool"]:
        return "shortlist widened to the pool"
    if c["shortlist_first"] or c["head_rows"]:
        return "shortlist of the best 10"
    return "no shortlist"


def _search(
    store: SqliteMemoryStore, counts: Counter[str], q: str, v: Any, mode: str
) -> dict[str, Any]:
    counts.clear()
    t, cpu = time.perf_counter(), time.process_time()
    store.search_vector(STORE, _scope(0).tenant_pattern(), q, v, mode=mode)
    wall, cpu = time.perf_counter() - t, time.process_time() - cpu
    return {"ms": 1000 * wall, "cpu_ms": 1000 * cpu, **counts}


def _groups(rows: list[dict[str, Any]], scans: list[float]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name in sorted({r["shape"] for r in rows}):
        group = [r for r in rows if r["shape"] == name]
        keys = sorted({k for r in group for k in r if k not in ("ms", "cpu_ms", "shape", "i")})
        out[name] = {
            "searches": len(group),
            **summary_ms([r["ms"] / 1000 for r in group]),
            "cpu_median_ms": round(statistics.median(r["cpu_ms"] for r in group), 3),
            "scan_p50_ms_same_queries": round(
                1000 * statistics.median(scans[r["i"]] for r in group), 3
            ),
            "median_counts": {k: statistics.median(r.get(k, 0) for r in group) for k in keys},
        }
    return out


def _summary(rows: list[dict[str, Any]]) -> dict[str, Any]:
    keys = sorted({k for r in rows for k in r if k not in ("ms", "cpu_ms", "shape", "i")})
    times = [r["ms"] / 1000 for r in rows]
    slow = sorted(rows, key=lambda r: -r["ms"])[: max(1, len(rows) // 20)]
    return {
        **summary_ms(times),
        "cpu_median_ms": round(statistics.median(r["cpu_ms"] for r in rows), 3),
        "shapes": dict(Counter(r["shape"] for r in rows)),
        "shapes_of_slowest_5pct": dict(Counter(r["shape"] for r in slow)),
        "total_counts": {k: sum(r.get(k, 0) for r in rows) for k in keys},
    }


def run(path: Path, total: int, queries: int, first: int, warm: bool = False) -> dict[str, Any]:
    data = RealVectors(queries=queries)
    texts, vectors = data.corpus(total)
    embedder = PrecomputedEmbedder(texts, vectors)
    out: dict[str, Any] = {"rows": total}
    if not path.exists():
        with SqliteMemoryStore(path, embedder=embedder) as store:
            store.ensure_store(STORE)
            out["fill_s"] = round(_fill(store, texts, lambda i: _scope(0)), 1)
    matrix = np.asarray(vectors, dtype=np.float32)
    pairs = list(zip(data.query_texts, data.queries))
    with counted() as counts, SqliteMemoryStore(path, embedder=embedder) as store:
        # As sqlite_scale: the first searches of a freshly opened store, then settle. With
        # ``warm``, as a serving process does (a Hermes session): warm the scope first.
        if warm:
            t = time.perf_counter()
            store.warm(STORE, _scope(0).tenant_pattern())
            store.settle()
            out["warm_then_settle_s"] = round(time.perf_counter() - t, 3)
            out["warm_counts"] = dict(counts)
        opening = []
        for i, (q, v) in enumerate(pairs[:first]):
            opening.append({"i": i, **_search(store, counts, q, v, "hybrid")})
            opening[-1]["shape"] = shape(Counter(opening[-1]))
        store.settle()
        gc.collect()
        steady: dict[str, list[dict[str, Any]]] = {"hybrid": [], "vector": []}
        scans: list[float] = []
        for i, (q, v) in enumerate(pairs):
            turn = ["hybrid", "vector", "scan"]
            for what in turn[i % 3 :] + turn[: i % 3]:
                if what == "scan":
                    t = time.perf_counter()
                    _exact(matrix, v, 10)
                    scans.append(time.perf_counter() - t)
                    continue
                row = {"i": i, **_search(store, counts, q, v, what)}
                row["shape"] = shape(Counter(row))
                steady[what].append(row)
    out["first_searches"] = [
        {k: round(x, 3) if isinstance(x, float) else x for k, x in r.items()} for r in opening
    ]
    out["exact_scan"] = summary_ms(scans)
    for mode, rows in steady.items():
        out[mode] = _summary(rows) | {"by_shape": _groups(rows, scans)}
        out[mode]["p50_vs_scan"] = round(
            statistics.median(scans) / statistics.median(r["ms"] / 1000 for r in rows), 2
        )
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--total", type=int, default=100_000)
    parser.add_argument("--queries", type=int, default=100)
    parser.add_argument("--first", type=int, default=5, help="first searches, reported apart")
    parser.add_argument("--warm", action="store_true", help="store.warm(scope) first")
    parser.add_argument("--db", type=Path, help="keep the filled store here between runs")
    args = parser.parse_args()
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_avg_at_start": os.getloadavg()}
    }
    if args.db is not None:
        result |= run(args.db, args.total, args.queries, args.first, args.warm)
    else:
        with tempfile.TemporaryDirectory() as tmp:
            result |= run(Path(tmp) / "tail.db", args.total, args.queries, args.first, args.warm)
    result["machine"]["load_avg_at_end"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
