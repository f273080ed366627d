"""Adapter overhead per call against raw ``OTSClient`` calls, on the same emulator.

The emulator runs in a child process so it does not share the GIL with the client. Raw and
adapter calls alternate, so both see the same noise. Goal: the adapter's median per call is at
most 10% above the raw SDK's. Prints JSON.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from typing import Any

from benchmarks._stats import summary_ms
from memcore.scope import Scope
from memcore_tablestore.protocol.wire import scope_to_wire
from memcore_tablestore.testing import spawned_emulator, store_for

STORE = "bench_overhead"
SCOPE = Scope("bench", "tenant", "agent", "run")


def _time(fn: Callable[[], Any]) -> float:
    started = time.perf_counter()
    fn()
    return time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    args = parser.parse_args()
    from tablestore import OTSClient

    with spawned_emulator() as server:
        store = store_for(server)
        store.ensure_store(STORE)
        for i in range(20):
            store.add_text(STORE, SCOPE, f"seed memory {i} about tea and gardens", sync=True)
        mid = store.add_text(STORE, SCOPE, "the memory we read", sync=True).memory_ids[0]
        raw = OTSClient(server.url, "emu-ak", "emu-sk", server.instance_name)
        wire_scope = scope_to_wire(SCOPE)
        pattern = scope_to_wire(SCOPE.tenant_pattern())
        operations: dict[str, tuple[Callable[[], Any], Callable[[], Any]]] = {
            "get_memory": (
                lambda: raw.get_memory(
                    {"memoryStoreName": STORE, "scope": wire_scope, "memoryId": mid}
                ),
                lambda: store.get_memory(STORE, SCOPE, mid),
            ),
            "search": (
                lambda: raw.search_memories(
                    {
                        "memoryStoreName": STORE,
                        "scope": pattern,
                        "query": "tea gardens",
                        "topK": 10,
                        "enableRerank": True,
                    }
                ),
                lambda: store.search(STORE, SCOPE.tenant_pattern(), "tea gardens", top_k=10),
            ),
        }
        results: dict[str, Any] = {}
        for name, (raw_call, adapter_call) in operations.items():
            for _ in range(50):  # warm both paths and the connection pool
                raw_call()
                adapter_call()
            raw_times: list[float] = []
            adapter_times: list[float] = []
            for i in range(args.calls):
                if i % 2:
                    raw_times.append(_time(raw_call))
                    adapter_times.append(_time(adapter_call))
                else:
                    adapter_times.append(_time(adapter_call))
                    raw_times.append(_time(raw_call))
            raw_median = statistics.median(raw_times)
            adapter_median = statistics.median(adapter_times)
            results[name] = {
                "raw": summary_ms(raw_times),
                "adapter": summary_ms(adapter_times),
                "overhead_pct": round((adapter_median / raw_median - 1) * 100, 2),
                "goal_pct": 10,
            }
        store.close()
    print(
        json.dumps(
            {"benchmark": "tablestore_overhead", "calls_per_op": args.calls, "results": results},
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
