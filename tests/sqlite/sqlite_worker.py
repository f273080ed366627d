"""A separate process that writes to or reads from one store file (used by the process tests).

usage: sqlite_worker.py write PATH WORKER COUNT   -> prints "ACK <i> <memory id>" per write
       sqlite_worker.py read PATH STOPFILE        -> prints one JSON summary line
       sqlite_worker.py open DIR ROUNDS START     -> opens DIR/r<i>.db at START + i * 50 ms,
                                                     prints "FAIL <i> <error>" per failed open
"""

from __future__ import annotations

import json
import os
import sys
import time

from memcore.scope import Scope, ScopePattern
from memcore_sqlite import SqliteMemoryStore

STORE = "mem"


def write(path: str, worker: str, count: int) -> int:
    store = SqliteMemoryStore(path)
    store.ensure_store(STORE)
    scope = Scope("app", f"tenant{worker}", "agent", "run")
    i = 0
    while count < 0 or i < count:
        receipt = store.add_text(
            STORE, scope, f"worker {worker} fact number {i} about walruses", sync=True
        )
        # The line is written only after add_text returned: this write was acknowledged.
        sys.stdout.write(f"ACK {i} {receipt.memory_ids[0]}\n")
        sys.stdout.flush()
        i += 1
    store.close()
    return 0


def read(path: str, stopfile: str) -> int:
    store = SqliteMemoryStore(path)
    store.ensure_store(STORE)
    print("READY", flush=True)
    ops = 0
    seen_max = 0
    # At least a few rounds even when the writers finish first, so every reader really reads.
    while ops < 20 or not os.path.exists(stopfile):
        hits = store.search(STORE, ScopePattern("app"), "walruses fact", top_k=20)
        page = store.list_memories(STORE, ScopePattern("app"), limit=100)
        seen_max = max(seen_max, len(page.items))
        assert all(0.0 <= h.score <= 1.0 for h in hits)
        ops += 2
        time.sleep(0.002)
    store.close()
    print(json.dumps({"ops": ops, "seen_max": seen_max}))
    return 0


def open_fresh(folder: str, rounds: int, start: float) -> int:
    """Open a new file per round at an agreed instant, so that several processes create it."""
    for i in range(rounds):
        time.sleep(max(0.0, start + i * 0.05 - time.time()))
        try:
            with SqliteMemoryStore(os.path.join(folder, f"r{i}.db")) as store:
                store.ensure_store(STORE)
        except Exception as exc:  # reported to the test, which fails on any line
            print(f"FAIL {i} {exc!r}", flush=True)
    return 0


if __name__ == "__main__":
    mode = sys.argv[1]
    if mode == "open":
        sys.exit(open_fresh(sys.argv[2], int(sys.argv[3]), float(sys.argv[4])))
    if mode == "write":
        sys.exit(write(sys.argv[2], sys.argv[3], int(sys.argv[4])))
    sys.exit(read(sys.argv[2], sys.argv[3]))
