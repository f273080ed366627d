"""What the SQLite search benchmarks share: warming stores before a timed loop, the turns
the loop takes, and the parts of the script a fresh process runs to time a start."""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any, TypeVar

from memcore_sqlite import SqliteMemoryStore

T = TypeVar("T")

# The embedder a child opens the store with.
CHILD_EMBEDDER = """
class Named:  # the stored vectors' model; queries come as vectors, so no model is loaded
    name, dimension = "all-MiniLM-L6-v2-int8", 384
    def embed(self, texts):
        raise AssertionError("not used")
"""

# The child's resident memory once serving, as ``rss`` (merged into the line it prints).
CHILD_RSS = """
# VmHWM, not ru_maxrss: the latter keeps the parent's peak across fork and exec.
status = dict(line.split(":", 1) for line in open("/proc/self/status"))
rss = {"serving_peak_rss_mb": round(int(status["VmHWM"].split()[0]) / 1024, 1),
       "serving_rss_mb": round(int(status["VmRSS"].split()[0]) / 1024, 1)}
"""


def child_env() -> dict[str, str]:
    """This environment, with the repository on the path so a child imports ``benchmarks``."""
    root = Path(__file__).resolve().parents[1]
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }


def run_child(script: str, args: Sequence[str], env: dict[str, str]) -> dict[str, Any]:
    """Run ``script`` in a fresh Python and read the JSON line it prints."""
    done = subprocess.run(
        [sys.executable, "-c", script, *args], capture_output=True, text=True, env=env, check=True
    )
    loaded: dict[str, Any] = json.loads(done.stdout)
    return loaded


def warm(
    name: str,
    stores: Sequence[tuple[SqliteMemoryStore, str]],
    queries: Sequence[str],
    qvecs: Any,
    n: int,
    mode: str = "hybrid",
) -> None:
    """``n`` searches in each (store, tenant pattern) to warm the codes and the page cache,
    then what the store builds in the background (a large tenant's postings, from its third
    search) and a full garbage collection: the timed loop starts in the steady state, and the
    filling's garbage is not collected (a full pass, 40-60 ms) in whichever search comes when
    it is due."""
    for store, pattern in stores:
        for q, v in zip(queries[:n], qvecs[:n]):
            store.search_vector(name, pattern, q, v, mode=mode)
        store.settle()
    gc.collect()


def turns(items: Sequence[T], i: int) -> list[T]:
    """``items`` from the ``i``-th on (modulo their number) and round: each goes first by
    turns, so a burst of load on a shared machine hits all alike."""
    k = i % len(items)
    return [*items[k:], *items[:k]]
