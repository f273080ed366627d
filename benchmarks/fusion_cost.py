"""SQLite store: what a fusion setting costs the hybrid search, settings timed in one loop.

A setting is (vector weight, lexical coverage power, BM25's b): ``ranking.VECTOR_WEIGHT``,
``ranking.COVERAGE_POWER`` and ``ranking.LENGTH_B``, which the search reads at call time, so
every setting runs on the same store in the same process and they take turns query by query:
a burst of load on a shared machine hits all of them. The corpus and the queries are
:mod:`benchmarks.sqlite_search`'s (mixes of real MiniLM embeddings of LongMemEval user turns,
real questions), in one tenant.

Besides the times, per setting: how many searches had to build the vector shortlist (to the
best ``FIRST_READ`` rows, and on to the whole pool) and how many exact cosines were read. The
fused order (:mod:`memcore_sqlite.search.fused_order`) leaves the vector stage out when the
lexical candidates' relevance already beats what any other row could score; the smaller the
lexical share of the relevance, the less often that holds. These counts do not depend on the
machine's load.

    uv run python -m benchmarks fusion_cost [--size 20000] [--queries 200] [--settings 0.3:1,0.4:1:1]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import tempfile
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._real_vectors import RealVectors
from benchmarks._stats import summary_ms
from benchmarks.sqlite_search import STORE, PrecomputedEmbedder, _fill, _scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.search import fused_order, ranking

Setting = tuple[float, float, float]


def parse_settings(text: str) -> list[Setting]:
    """``"0.3:1,0.4:2:1"`` -> [(0.3, 1.0, b), (0.4, 2.0, 1.0)], b the shipped ``LENGTH_B``."""
    out = []
    for part in text.split(","):
        weight, power, *b = part.split(":")
        out.append((float(weight), float(power), float(b[0]) if b else ranking.LENGTH_B))
    return out


def _name(setting: Setting) -> str:
    return ":".join(str(x) for x in setting)


def _use(setting: Setting) -> None:
    """Make ``setting`` the one every search reads from now on."""
    ranking.VECTOR_WEIGHT, ranking.COVERAGE_POWER, ranking.LENGTH_B = setting


@contextmanager
def _counted(counts: Counter[str]) -> Iterator[None]:
    """Count the fused order's shortlist builds and exact cosine reads while inside."""
    order = fused_order.BoundedOrder
    widened, read = order._widened, order._read

    def counting_widened(self: fused_order.BoundedOrder) -> bool:
        grew = widened(self)
        if grew:
            counts["shortlist_to_pool" if self._n >= self._pool else "shortlist_built"] += 1
        return grew

    def counting_read(self: fused_order.BoundedOrder, rows: np.ndarray) -> None:
        counts["exact_cosines_read"] += len(rows)
        read(self, rows)

    order._widened, order._read = counting_widened, counting_read  # type: ignore[method-assign]
    try:
        yield
    finally:
        order._widened, order._read = widened, read  # type: ignore[method-assign]


def run(size: int, queries: int, settings: Sequence[Setting]) -> dict[str, Any]:
    data = RealVectors(queries=queries)
    texts, vectors = data.corpus(size)
    shipped = (ranking.VECTOR_WEIGHT, ranking.COVERAGE_POWER, ranking.LENGTH_B)
    names = [_name(s) for s in settings]
    times: dict[str, list[float]] = {n: [] for n in names}
    cpu: dict[str, list[float]] = {n: [] for n in names}
    counts: dict[str, Counter[str]] = {n: Counter() for n in names}
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "fusion_cost.db"
        with SqliteMemoryStore(path, embedder=PrecomputedEmbedder(texts, vectors)) as store:
            store.ensure_store(STORE)
            _fill(store, texts, lambda i: _scope(0))
            pattern = _scope(0).tenant_pattern()
            pairs = list(zip(data.query_texts, data.queries))
            for q, v in pairs[:10]:  # warm the codes, the postings and the page cache
                store.search_vector(STORE, pattern, q, v)
            store.settle()
            gc.collect()
            try:
                for i, (q, v) in enumerate(pairs):
                    turn = i % len(settings)
                    for k in [*range(turn, len(settings)), *range(turn)]:
                        _use(settings[k])
                        with _counted(counts[names[k]]):
                            t, c = time.perf_counter(), time.process_time()
                            store.search_vector(STORE, pattern, q, v)
                            times[names[k]].append(time.perf_counter() - t)
                            cpu[names[k]].append(time.process_time() - c)
            finally:
                _use(shipped)
    return {
        "rows": size,
        "searches_per_setting": len(pairs),
        "shipped": _name(shipped),
        "hybrid": {
            n: summary_ms(times[n])
            | {"cpu_mean_ms": round(1000 * float(np.mean(cpu[n])), 4)}
            | dict(sorted(counts[n].items()))
            for n in names
        },
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--size", type=int, default=20_000)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument(
        "--settings",
        default="0.3:1,0.4:1:1",
        help="vector weight:coverage power[:BM25 b], comma separated",
    )
    args = parser.parse_args()
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_avg_at_start": os.getloadavg()}
    }
    result |= run(args.size, args.queries, parse_settings(args.settings))
    result["machine"]["load_avg_at_end"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
