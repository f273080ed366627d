"""SQLite store: search latency at 10k/100k memories beside an exact numpy scan, the vector
stage's recall, query embedding, cold start, RSS, disk size and tenant isolation.

Prints one JSON document. Stored vectors are mixes of real MiniLM embeddings
(:mod:`benchmarks._real_vectors`); queries are real embeddings of real questions. Search
times are through ``search_vector`` (audit included) and ``search(mode="lexical")``, and
exclude query embedding; ``with_query_embedding`` runs ``search`` with the real ONNX model.
``hybrid`` runs the vector shortlist beside the lexical stage in scopes of at least
:data:`memcore_sqlite.search.overlap.MIN_ROWS` rows; ``hybrid_sequential`` is the same search with the
two stages one after the other, timed in the same loop. CPU means count every thread of the
process, so they show what the overlap costs. ``exact_numpy_scan`` is a bare float32 scan of
the same vectors (einsum + top-30, one thread as the search), timed in the same loop: the
memory-bandwidth bound of one core that the two-stage search is compared with; ``beside_blas``
times the hybrid search against the same scan through BLAS on every core, in a loop of its own.
Cold start is measured with the modules' bytecode cached, as an installed package has it, and
once without.

    uv run python -m benchmarks.sqlite_search [--queries 200] [--sizes 10000,100000]
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import sqlite3
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._real_vectors import DATA, RealVectors
from benchmarks._sqlite_timing import CHILD_EMBEDDER, CHILD_RSS, child_env, run_child, turns, warm
from benchmarks._stats import summary_ms
from memcore.scope import Scope
from memcore.speakers import spoken
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.embedders import missing_onnx_requirements
from memcore_sqlite.search import overlap
from memcore_sqlite.vector.stored import ITEM_BYTES
from memcore_sqlite.vector.stored import matrix as stored_matrix

STORE = "bench"
BATCH = 1_000
MODEL = "all-MiniLM-L6-v2-int8"


class PrecomputedEmbedder:
    """Returns the corpus's vector of each text: filling 100k rows costs no model time.

    The store embeds what a text says without its speaker label ("Question: ..." is asked
    for as "..."), so each text is found under that too; it keeps the labelled text's vector.
    """

    def __init__(self, texts: Sequence[str], vectors: Any) -> None:
        self._rows = {spoken(t): i for i, t in enumerate(texts)} | {
            t: i for i, t in enumerate(texts)
        }
        self._vectors = vectors

    dimension = 384
    name = MODEL

    def embed(self, texts: Sequence[str]) -> list[Any]:
        return [self._vectors[self._rows[t]] for t in texts]


class _AsStored:
    """The default model under the stored vectors' name.

    The store only reads vectors of its embedder's model, so under its own name the real model
    would find none of the corpus's vectors and every search would be lexical. The queries'
    vectors come from the default model and the corpus's from :data:`MODEL` (cosine about 0.99
    between the two), which is what is timed here, not recall.
    """

    def __init__(self, model: Any) -> None:
        self._model = model

    name = MODEL

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._model, attr)


def _scope(tenant: int) -> Scope:
    return Scope("app", f"tenant{tenant}", "agent", "run")


def _fill(
    store: SqliteMemoryStore, texts: Sequence[str], scope_of: Callable[[int], Scope]
) -> float:
    """Scopes are made batch by batch: 100k of them held through the timed loop would be most
    of the objects a full garbage collection walks there."""
    started = time.perf_counter()
    for i in range(0, len(texts), BATCH):
        batch = texts[i : i + BATCH]
        store.add_many(STORE, [TextItem(scope_of(i + k), t) for k, t in enumerate(batch)])
    return time.perf_counter() - started


def _exact(matrix: Any, query: Any, n: int = 30, blas: bool = False) -> Any:
    """The ``n`` best rows by exact cosine, best first. The product is einsum on one thread
    (as the search runs), or with ``blas`` ``matrix @ query`` on every core."""
    scores = matrix @ query if blas else np.einsum("ij,j->i", matrix, query)
    idx = np.argpartition(scores, len(scores) - n)[len(scores) - n :]
    return idx[np.argsort(-scores[idx])]


def _time_searches(
    stores: Sequence[SqliteMemoryStore],
    scope: Scope,
    texts: Sequence[str],
    queries: Sequence[str],
    qvecs: Any,
    matrix: Any,
) -> list[dict[str, Any]]:
    """One result per store, all holding ``texts`` in ``scope``. Modes take turns query by
    query, and so do the stores, so a burst of load on the shared machine hits all of them
    (the tenant ratio compares two stores timed in the same loop)."""
    pattern = scope.tenant_pattern()
    row = {t: i for i, t in enumerate(texts)}
    warm(STORE, [(store, pattern) for store in stores], queries, qvecs, 10)
    full_passes = gc.get_stats()[2]["collections"]
    for store in stores:
        store._tx.overlap.eligible = store._tx.overlap.overlapped = 0
    modes = ["hybrid", "vector", "lexical", "exact_numpy"]
    # hybrid_sequential shares hybrid's turn, before or after it by turns: in a turn of its
    # own it would always follow the same mode, whose reads leave the caches warm or cold.
    series = [*modes, "hybrid_sequential"]
    times: list[dict[str, list[float]]] = [{mode: [] for mode in series} for _ in stores]
    cpu: list[dict[str, list[float]]] = [{mode: [] for mode in series} for _ in stores]
    recall: list[list[float]] = [[] for _ in stores]
    for i, (q, v) in enumerate(zip(queries, qvecs)):
        got: dict[int, list[int]] = {}
        for turn in turns(modes, i):
            # Which goes first changes every four queries, so each order meets every turn
            # before it (the modes' order moves on by one a query).
            pair = ["hybrid", "hybrid_sequential"][:: 1 if i // 4 % 2 else -1]
            for mode in pair if turn == "hybrid" else [turn]:
                for k in turns(range(len(stores)), i):
                    store = stores[k]
                    t, c = time.perf_counter(), time.process_time()
                    if mode == "lexical":
                        store.search(STORE, pattern, q, mode="lexical")
                    elif mode == "exact_numpy":  # the same scan, timed beside each store
                        truth = _exact(matrix, v)[:10]
                    elif mode == "hybrid_sequential":
                        with _sequential(store):
                            store.search_vector(STORE, pattern, q, v)
                    else:
                        found = store.search_vector(STORE, pattern, q, v, mode=mode)
                    times[k][mode].append(time.perf_counter() - t)
                    cpu[k][mode].append(time.process_time() - c)
                    if mode == "vector":
                        got[k] = [row[h.memory.text] for h in found[:10]]
        for k, ids in got.items():
            recall[k].append(len(set(ids) & set(truth.tolist())) / 10)
    full_passes = gc.get_stats()[2]["collections"] - full_passes
    return [
        _summary(t, c, r) | {"gc_full_passes": full_passes, "hybrid_overlapped": _overlapped(s)}
        for t, c, r, s in zip(times, cpu, recall, stores)
    ]


def _beside_blas(
    store: SqliteMemoryStore, scope: Scope, queries: Sequence[str], qvecs: Any, matrix: Any
) -> dict[str, Any]:
    """The hybrid search beside an exact scan through BLAS (``matrix @ query``, OpenBLAS with
    all its threads, here every core), in blocks that take turns.

    ``exact_numpy`` (einsum) is one thread, as the search is; BLAS spreads the same scan over
    the cores and, where one core cannot draw the machine's memory bandwidth, is faster.
    Reported beside the main comparison so that neither flatters the search. In blocks, not
    query by query: OpenBLAS's threads spin for a while after each call and would slow the
    search that follows.
    """
    pattern = scope.tenant_pattern()
    times: dict[str, list[float]] = {"hybrid": [], "exact_numpy_blas_all_threads": []}
    block = 25
    pairs = list(zip(queries, qvecs))
    for start in range(0, len(pairs), block):
        for mode in list(times)[:: 1 if start // block % 2 else -1]:
            for q, v in pairs[start : start + block]:
                t = time.perf_counter()
                if mode == "hybrid":
                    store.search_vector(STORE, pattern, q, v)
                else:
                    _exact(matrix, v, blas=True)
                times[mode].append(time.perf_counter() - t)
    out: dict[str, Any] = {mode: summary_ms(values) for mode, values in times.items()}
    out["hybrid_speedup_vs_blas_all_threads"] = round(
        out["exact_numpy_blas_all_threads"]["p50_ms"] / out["hybrid"]["p50_ms"], 2
    )
    return out


def _overlapped(store: SqliteMemoryStore) -> str:
    """How many of the timed hybrid searches ran their two stages at once (the store runs them
    one after the other while the load average leaves no core free)."""
    return f"{store._tx.overlap.overlapped} of {store._tx.overlap.eligible}"


@contextmanager
def _sequential(store: SqliteMemoryStore) -> Iterator[None]:
    """The hybrid search with both stages on the caller's thread, one after the other (the
    path below the overlap's threshold), for a comparison within the same loop."""
    saved, store._tx.overlap.min_rows = store._tx.overlap.min_rows, float("inf")
    try:
        yield
    finally:
        store._tx.overlap.min_rows = saved


def _summary(
    times: dict[str, list[float]], cpu: dict[str, list[float]], recall: list[float]
) -> dict[str, Any]:
    # CPU time as well: on a shared machine wall time mostly measures the neighbours.
    out: dict[str, Any] = {
        mode: summary_ms(values) | {"cpu_mean_ms": round(1000 * float(np.mean(cpu[mode])), 4)}
        for mode, values in times.items()
    }
    out["recall_at_10_vector_vs_exact"] = round(float(np.mean(recall)), 4)
    for mode in ("hybrid", "hybrid_sequential", "vector"):
        out[f"{mode}_speedup_vs_exact_numpy"] = round(
            out["exact_numpy"]["p50_ms"] / out[mode]["p50_ms"], 2
        )
        out[f"{mode}_cpu_speedup_vs_exact_numpy"] = round(
            out["exact_numpy"]["cpu_mean_ms"] / out[mode]["cpu_mean_ms"], 2
        )
    return out


def _with_embedding(
    path: Path, scope: Scope, queries: Sequence[str], qvecs: Any, **settings: Any
) -> dict[str, Any]:
    """Embedding alone, search alone and search with embedding, taking turns."""
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    model = OnnxEmbedder(**settings)
    model.warm_up()
    embedder = _AsStored(model)
    pattern = scope.tenant_pattern()
    times: dict[str, list[float]] = {"embed_only": [], "hybrid_no_embed": [], "hybrid": []}
    with SqliteMemoryStore(path, embedder=embedder) as store:
        for q in queries[:5]:
            store.search(STORE, pattern, q)
        store.settle()  # steady state, as in the other loops: the postings built meanwhile
        for i, (q, v) in enumerate(zip(queries, qvecs)):
            for k in (list(times) * 2)[i % 3 : i % 3 + 3]:
                t = time.perf_counter()
                if k == "embed_only":
                    embedder.embed([q])
                elif k == "hybrid_no_embed":
                    store.search_vector(STORE, pattern, q, v)
                else:
                    store.search(STORE, pattern, q)
                times[k].append(time.perf_counter() - t)
    del embedder, model
    gc.collect()
    return {k: summary_ms(v) for k, v in times.items()}


_COLD = (
    """
import json, resource, sys, time
t0, c0 = time.perf_counter(), time.process_time()
import numpy as np
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
"""
    + CHILD_EMBEDDER
    + """
store = SqliteMemoryStore(sys.argv[1], embedder=Named())
opened = time.perf_counter() - t0
qvecs = np.load(sys.argv[2])
pattern = Scope("app", "tenant0", "agent", "run").tenant_pattern()
store.search_vector("bench", pattern, "What did I plan for the weekend?", qvecs[0])
first = time.perf_counter() - t0
first_cpu = time.process_time() - c0
for i in range(1, 51):
    store.search_vector("bench", pattern, f"question {i} about the weekend", qvecs[i % len(qvecs)])
    if i == 10:
        store.settle()  # serving: with the tenant's postings built (from the third search)
"""
    + CHILD_RSS
    + """
print(json.dumps({"import_open_s": round(opened, 3), "import_open_first_search_s": round(first, 3),
                  "cpu_s_to_first_search": round(first_cpu, 3)} | rss))
"""
)


def _cold_start(path: Path, qvecs: Any, runs: int = 3) -> dict[str, Any]:
    """Fresh processes in three install states, each the median of ``runs``.

    - cached: the modules' bytecode is on disk, as pip leaves an install (``uv sync`` leaves
      it to the first import, which writes it unless ``PYTHONDONTWRITEBYTECODE`` is set);
    - ``_fresh_sync``: what a fresh ``uv sync`` gives under ``PYTHONDONTWRITEBYTECODE``: the
      interpreter's standard library compiled (every Python distribution ships it so), memcore
      and its dependencies compiled from source at every start;
    - ``_no_bytecode``: nothing compiled, the standard library included (an empty
      ``PYTHONPYCACHEPREFIX``): a bound no real install reaches.
    """
    env = child_env()
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env.pop("PYTHONPYCACHEPREFIX", None)
    npy = path.with_suffix(".queries.npy")
    np.save(npy, qvecs[:51])

    def start(environ: dict[str, str]) -> dict[str, Any]:
        return run_child(_COLD, [str(path), str(npy)], environ)

    def median(samples: list[dict[str, Any]], key: str) -> Any:
        return sorted(s[key] for s in samples)[len(samples) // 2]

    start(env)  # caches the bytecode, as an install does
    samples = [start(env) for _ in range(runs)]
    with tempfile.TemporaryDirectory() as stdlib, tempfile.TemporaryDirectory() as empty:
        subprocess.run(  # the standard library alone, compiled into a prefix of its own
            [sys.executable, "-m", "compileall", "-q", sysconfig.get_paths()["stdlib"]],
            env=env | {"PYTHONPYCACHEPREFIX": stdlib},
            capture_output=True,
            check=False,
        )
        fresh = [
            start(env | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": stdlib})
            for _ in range(runs)
        ]
        bare = [
            start(env | {"PYTHONDONTWRITEBYTECODE": "1", "PYTHONPYCACHEPREFIX": empty})
            for _ in range(runs)
        ]
    return {k: median(samples, k) for k in samples[0]} | {
        "runs": runs,
        "import_open_first_search_s_fresh_sync": median(fresh, "import_open_first_search_s"),
        "import_open_first_search_s_no_bytecode": median(bare, "import_open_first_search_s"),
    }


def _postings_build(path: Path, runs: int = 3) -> dict[str, Any]:
    """What building the tenant's postings for the lexical stage costs (in the background,
    from its third search), on a read-only connection of its own as the store's build."""
    from memcore_sqlite.lexical.postings import table as postings
    from memcore_sqlite.search import ranking

    scope = _scope(0)
    wall, cpu = [], []
    for _ in range(runs):
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, isolation_level=None)
        try:
            (sid,) = conn.execute("SELECT id FROM stores WHERE name = ?", (STORE,)).fetchone()
            t, c = time.perf_counter(), time.process_time()
            built = postings.build(
                conn, sid, scope.app_id, scope.tenant_id, ranking.COMMON_TERM_ROWS + 1
            )
            wall.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
        finally:
            conn.close()
    return {
        "wall_s_median": round(sorted(wall)[runs // 2], 3),
        "cpu_s_median": round(sorted(cpu)[runs // 2], 3),
        "held_mb": round(built.nbytes / 1e6, 1),
    }


def _disk_mb(path: Path) -> float:
    files = [path, Path(f"{path}-wal")]
    return round(sum(f.stat().st_size for f in files if f.exists()) / 1e6, 1)


def _tenants(tmp: Path, data: RealVectors, queries: Sequence[str], qvecs: Any) -> dict[str, Any]:
    """One tenant of 1k among 100 tenants of 1k each, against the same tenant alone."""
    texts, vectors = data.corpus(100_000, seed=1)
    embedder = PrecomputedEmbedder(texts, vectors)
    own = [i for i in range(len(texts)) if i % 100 == 7]
    own_texts = [texts[i] for i in own]
    files = (
        ("100_tenants_x_1k", texts, lambda i: _scope(i % 100)),
        ("1_tenant_x_1k", own_texts, lambda i: _scope(7)),
    )
    stores = [SqliteMemoryStore(tmp / f"{name}.db", embedder=embedder) for name, _, _ in files]
    try:
        for store, (_, rows, scopes) in zip(stores, files):
            store.ensure_store(STORE)
            _fill(store, rows, scopes)
        timed = _time_searches(
            stores, _scope(7), own_texts, queries, qvecs, vectors[np.asarray(own)]
        )
    finally:
        for store in stores:
            store.close()
    results: dict[str, Any] = {name: r for (name, _, _), r in zip(files, timed)}
    many, one = results["100_tenants_x_1k"], results["1_tenant_x_1k"]
    for mode in ("hybrid", "vector", "lexical"):
        results[f"{mode}_p50_ratio"] = round(many[mode]["p50_ms"] / one[mode]["p50_ms"], 2)
        results[f"{mode}_cpu_ratio"] = round(
            many[mode]["cpu_mean_ms"] / one[mode]["cpu_mean_ms"], 2
        )
    return results


def _exact_order(matrix: Any, query: Any, n: int = 10) -> list[int]:
    """Rows of the ``n`` best by exact float32 cosine, ties newest (later row) first: the
    order the store promises."""
    scores = matrix @ query
    return [int(i) for i in np.lexsort((-np.arange(len(scores)), -scores))[:n]]


def _stored_matrix(path: Path, texts: Sequence[str]) -> Any:
    """The vectors of ``texts`` as the file holds them, decoded as the store decodes them
    (:mod:`memcore_sqlite.vector.stored`)."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        by_text = dict(
            conn.execute(
                "SELECT m.text, v.vector FROM memories m JOIN memory_vectors v USING (seq)"
            ).fetchall()
        )
    finally:
        conn.close()
    blobs = [by_text[t] for t in texts]
    return stored_matrix(blobs, len(blobs[0]) // ITEM_BYTES)


def _exactness(
    path: Path,
    texts: Sequence[str],
    vectors: Any,
    queries: Sequence[str],
    qvecs: Any,
) -> dict[str, Any]:
    """Strict recall@10 of the store (default settings, two-stage at this size) against an
    exact scan: vector mode against numpy over the stored vectors as read back from the file
    (cosine descending, newest first), and beside it against the embedder's float32 vectors
    (what storing float16 costs), hybrid mode against the same file opened with every scope scanned exactly from
    its float vectors (the same lexical stage and fusion, no vector codes). Timed in the same
    loop: both modes and the exact float32 scan (einsum, one thread)."""
    row = {t: i for i, t in enumerate(texts)}
    pattern = _scope(0).tenant_pattern()
    embedder = PrecomputedEmbedder(texts, vectors)
    stored = _stored_matrix(path, texts)
    original: list[float] = []
    recall: dict[str, list[float]] = {"vector": [], "hybrid": []}
    same: dict[str, int] = {"vector": 0, "hybrid": 0}
    times: dict[str, list[float]] = {"hybrid": [], "vector": [], "exact_numpy": []}
    with (
        SqliteMemoryStore(path, embedder=embedder) as store,
        SqliteMemoryStore(path, embedder=embedder) as exact,
    ):
        assert exact._tx.vectors is not None
        exact._tx.vectors.exact_rows = 10**9
        for q, v in zip(queries[:5], qvecs[:5]):
            store.search_vector(STORE, pattern, q, v)
        store.settle()
        for q, v in zip(queries, qvecs):
            t = time.perf_counter()
            _exact(vectors, v)  # the reference scan, as timed in the main loop
            times["exact_numpy"].append(time.perf_counter() - t)
            truth = _exact_order(stored, v)
            got = {}
            for mode in ("vector", "hybrid"):
                t = time.perf_counter()
                hits = store.search_vector(STORE, pattern, q, v, mode=mode)
                times[mode].append(time.perf_counter() - t)
                got[mode] = [row[h.memory.text] for h in hits]
            reference = {
                "vector": truth,
                "hybrid": [row[h.memory.text] for h in exact.search_vector(STORE, pattern, q, v)],
            }
            original.append(len(set(got["vector"]) & set(_exact_order(vectors, v))) / 10)
            for mode in got:
                want = reference[mode]
                recall[mode].append(len(set(got[mode]) & set(want)) / max(1, len(want)))
                same[mode] += got[mode] == want
    out: dict[str, Any] = {"queries": len(queries)}
    out["vector_recall_at_10_vs_float32"] = round(float(np.mean(original)), 4)
    out["vector_min_recall_at_10_vs_float32"] = round(float(np.min(original)), 2)
    for mode in recall:
        out[f"{mode}_recall_at_10"] = round(float(np.mean(recall[mode])), 4)
        out[f"{mode}_min_recall_at_10"] = round(float(np.min(recall[mode])), 2)
        out[f"{mode}_same_order_queries"] = same[mode]
    out |= {f"{mode}_ms": summary_ms(values) for mode, values in times.items()}
    for mode in ("hybrid", "vector"):
        out[f"{mode}_speedup_vs_exact_numpy"] = round(
            out["exact_numpy_ms"]["p50_ms"] / out[f"{mode}_ms"]["p50_ms"], 2
        )
    return out


def _embedder_settings(path: Path, queries: Sequence[str], qvecs: Any) -> dict[str, Any]:
    """The query path with embedding under onnxruntime settings (threads, spinning, arena)."""
    out = {}
    for threads, spinning, arena in ((1, False, False), (2, False, False), (2, True, True)):
        key = f"threads={threads},spinning={int(spinning)},arena={int(arena)}"
        try:
            run = _with_embedding(
                path, _scope(0), queries, qvecs, threads=threads, spinning=spinning, arena=arena
            )
        except TypeError:  # an embedder without these settings (an older release)
            continue
        out[key] = {k: v["p50_ms"] for k, v in run.items()}
    return out


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--sizes", default="10000,100000")
    parser.add_argument("--base", type=int, default=6_000, help="real texts embedded")
    parser.add_argument("--skip-tenants", action="store_true")
    parser.add_argument("--skip-embedding", action="store_true", help="no ONNX model runs")
    parser.add_argument(
        "--exactness-only", action="store_true", help="only the strict recall against exact scans"
    )
    parser.add_argument("--data", type=Path, default=DATA, help="LongMemEval_S development split")
    args = parser.parse_args()
    sizes = sorted(int(s) for s in args.sizes.split(","))
    data = RealVectors(base=args.base, queries=args.queries, path=args.data)
    texts, vectors = data.corpus(sizes[-1])
    queries, qvecs = data.query_texts, data.queries
    onnx = not missing_onnx_requirements() and not args.skip_embedding
    result: dict[str, Any] = {
        "machine": {"cpus": os.cpu_count(), "load_avg_at_start": os.getloadavg()},
        # Scopes from this many rows run the vector shortlist beside the lexical stage.
        "overlap_min_rows": overlap.MIN_ROWS,
        "vectors": f"mixes of {args.base} real MiniLM embeddings; {len(queries)} real queries",
    }
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        exactness: dict[str, Any] = {}
        t_texts, t_vectors, t_queries, t_qvecs = data.templated(sizes[-1], len(queries))
        for name, (c_texts, c_vectors, c_queries, c_qvecs) in {
            "templated": (t_texts, t_vectors, t_queries, t_qvecs),
            "mixed_real": (texts, vectors, queries, qvecs),
        }.items():
            c_path = tmp / f"exactness_{name}.db"
            with SqliteMemoryStore(
                c_path, embedder=PrecomputedEmbedder(c_texts, c_vectors)
            ) as store:
                store.ensure_store(STORE)
                _fill(store, c_texts, lambda i: _scope(0))
            exactness[name] = {"rows": len(c_texts)} | _exactness(
                c_path, c_texts, c_vectors, c_queries, c_qvecs
            )
            c_path.unlink()
        result["exactness_largest"] = exactness
        if args.exactness_only:
            result["machine"]["load_avg_at_end"] = os.getloadavg()
            print(json.dumps(result, indent=2))
            return 0
        path = tmp / "one_tenant.db"
        by_size: dict[str, Any] = {}
        with SqliteMemoryStore(path, embedder=PrecomputedEmbedder(texts, vectors)) as store:
            store.ensure_store(STORE)
            done = 0
            for size in sizes:
                _fill(store, texts[done:size], lambda i: _scope(0))
                done = size
                by_size[str(size)] = _time_searches(
                    [store], _scope(0), texts, queries, qvecs, vectors[:size]
                )[0]
                by_size[str(size)]["beside_blas"] = _beside_blas(
                    store, _scope(0), queries, qvecs, vectors[:size]
                )
                by_size[str(size)]["disk_mb"] = _disk_mb(path)
                by_size[str(size)]["postings_build"] = _postings_build(path)
                if onnx:
                    by_size[str(size)]["with_query_embedding"] = {
                        k: v for k, v in _with_embedding(path, _scope(0), queries, qvecs).items()
                    }
        result["search_one_tenant"] = by_size
        result["cold_start_largest"] = {"rows": sizes[-1], **_cold_start(path, qvecs)}
        if onnx:
            result["embedder_settings_largest"] = _embedder_settings(path, queries, qvecs)
        if not args.skip_tenants:
            result["tenants"] = _tenants(tmp, data, queries, qvecs)
    result["machine"]["load_avg_at_end"] = os.getloadavg()
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
