"""A large scope's start and end in new processes: exits that hang, the close, and the first
search beside a warm-up. Prints JSON.

One tenant of ``--rows`` memories (the real MiniLM mixes of :mod:`benchmarks._real_vectors`),
filled once and closed cleanly. Then, in new processes (queries given as vectors):

- ``exit``: ``--runs`` processes that search once and close the store, and as many that
  search once and exit without closing it; a process still alive after ``--limit`` seconds
  is counted as hung and killed. The first search of a scope of more than 2,000 rows starts
  its sketch's build in a thread; a build cut off by the exit inside an OpenBLAS call left
  OpenBLAS's exit handler waiting forever. Also the median time of ``close()``.
- ``warm``: a server's start, ``--warm-runs`` times each: the first question with no warm-up,
  and the first question asked 50 ms after ``warm()`` began in a thread (a search that waited
  for the warm-up's whole sketch build before); then a second question, and when the warm-up
  ended.

    uv run python -m benchmarks sqlite_lifecycle [--rows 100000] [--runs 40] [--warm-runs 7]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from benchmarks._real_vectors import RealVectors
from benchmarks._sqlite_timing import CHILD_EMBEDDER, child_env
from benchmarks.sqlite_search import STORE, PrecomputedEmbedder, _fill, _scope
from memcore_sqlite import SqliteMemoryStore

_OPEN = (
    """
import json, sys, threading, time
import numpy as np
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
"""
    + CHILD_EMBEDDER
    + """
store = SqliteMemoryStore(sys.argv[1], embedder=Named())
qvecs = np.load(sys.argv[2])
i = int(sys.argv[4])
pattern = Scope("app", "tenant0", "agent", "run").tenant_pattern()
"""
)

_EXIT = (
    _OPEN
    + """
store.search_vector("bench", pattern, "What did I plan for the weekend?", qvecs[i % len(qvecs)])
closed = None
if sys.argv[3] == "close":
    t = time.perf_counter()
    store.close()
    closed = time.perf_counter() - t
print(json.dumps({"close_s": closed}))
"""
)

_WARM = (
    _OPEN
    + """
t0 = time.perf_counter()
if sys.argv[3] == "warm":
    warming = threading.Thread(target=store.warm, args=("bench", pattern))
    warming.start()
    time.sleep(0.05)
t = time.perf_counter()
store.search_vector("bench", pattern, "What did I plan for the weekend?", qvecs[i % len(qvecs)])
first = time.perf_counter() - t
t = time.perf_counter()
store.search_vector("bench", pattern, "a second question", qvecs[(i + 1) % len(qvecs)])
second = time.perf_counter() - t
if sys.argv[3] == "warm":
    warming.join()
ended = time.perf_counter() - t0
store.close()
print(json.dumps({"first_s": first, "second_s": second, "warm_up_ended_s": ended}))
"""
)


def _fill_store(path: Path, rows: int) -> Path:
    data = RealVectors(base=6_000, queries=200)
    texts, vectors = data.corpus(rows, seed=1)
    with SqliteMemoryStore(path, embedder=PrecomputedEmbedder(texts, vectors)) as store:
        store.ensure_store(STORE)
        _fill(store, texts, lambda i: _scope(0))
    queries = path.with_suffix(".queries.npy")
    np.save(queries, data.queries[:51])
    return queries


def _child(script: str, args: list[str], limit: float) -> dict[str, Any] | None:
    """The JSON line the child printed, or None when it had to be killed."""
    try:
        done = subprocess.run(
            [sys.executable, "-c", script, *args],
            capture_output=True,
            text=True,
            env=child_env(),
            timeout=limit,
            check=True,
        )
    except subprocess.TimeoutExpired:
        return None
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def _median(values: list[float]) -> float:
    return round(statistics.median(values), 4)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=40)
    parser.add_argument("--warm-runs", type=int, default=7)
    parser.add_argument("--limit", type=float, default=15.0, help="seconds before 'hung'")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "lifecycle.db"
        queries = _fill_store(path, args.rows)
        base = [str(path), str(queries)]
        exits: dict[str, dict[str, Any]] = {
            way: {"processes": 0, "hung": 0, "close_s": []} for way in ("close", "no_close")
        }
        for i in range(args.runs):
            for way, seen in exits.items():  # the two ways take turns
                out = _child(_EXIT, [*base, way, str(i)], args.limit)
                seen["processes"] += 1
                if out is None:
                    seen["hung"] += 1
                elif out["close_s"] is not None:
                    seen["close_s"].append(out["close_s"])
        for seen in exits.values():
            times = seen.pop("close_s")
            if times:
                seen["close_s_median"] = _median(times)
        warm: dict[str, list[dict[str, Any]]] = {"none": [], "warm": []}
        for i in range(args.warm_runs):
            for way, samples in warm.items():
                out = _child(_WARM, [*base, way, str(i)], args.limit)
                if out is not None:
                    samples.append(out)
        result = {
            "rows": args.rows,
            "exit": exits,
            "first_question": {
                way: {key: _median([s[key] for s in samples]) for key in samples[0]}
                for way, samples in warm.items()
                if samples
            },
            "machine": {"cpus": os.cpu_count(), "load_avg_at_end": os.getloadavg()},
        }
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
