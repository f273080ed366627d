"""Write throughput against an emulator that adds 20 ms to every request.

Serial: one ``TableStoreMemoryStore``, one write after another. Concurrent: the asyncio twin
with a bounded number of writes in flight. Every write is counted back with ``ListMemories``
afterwards, so a lost write shows. Goal: concurrent >= 10x serial, nothing lost. Prints JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import time

from memcore.paging import pages
from memcore.scope import Scope
from memcore_tablestore.emulator import Faults
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import async_store_for, spawned_emulator, store_for

STORE = "bench_throughput"


def _count(store: TableStoreMemoryStore, scope: Scope) -> int:
    listing = pages(
        lambda token: store.list_memories(STORE, scope.pattern(), limit=100, next_token=token)
    )
    return sum(len(page.items) for page in listing)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--serial", type=int, default=100)
    parser.add_argument("--concurrent", type=int, default=1000)
    parser.add_argument("--in-flight", type=int, default=64)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()

    with spawned_emulator(Faults(latency_ms=args.latency_ms, apis=("AddMemories",))) as server:
        store = store_for(server, timeout=30.0)
        store.ensure_store(STORE)

        serial_scope = Scope("bench", "serial", "agent", "run")
        started = time.perf_counter()
        for i in range(args.serial):
            store.add_text(STORE, serial_scope, f"serial write {i}", sync=True)
        serial_s = time.perf_counter() - started

        concurrent_scope = Scope("bench", "concurrent", "agent", "run")

        async def burst() -> float:
            async with async_store_for(
                server, timeout=30.0, max_connections=args.in_flight
            ) as astore:
                gate = asyncio.Semaphore(args.in_flight)

                async def one(i: int) -> None:
                    async with gate:
                        await astore.add_text(
                            STORE, concurrent_scope, f"concurrent write {i}", sync=True
                        )

                await astore.list_stores()  # open the session before timing
                began = time.perf_counter()
                await asyncio.gather(*(one(i) for i in range(args.concurrent)))
                return time.perf_counter() - began

        concurrent_s = asyncio.run(burst())
        serial_found = _count(store, serial_scope)
        concurrent_found = _count(store, concurrent_scope)
        store.close()

    serial_rate = args.serial / serial_s
    concurrent_rate = args.concurrent / concurrent_s
    print(
        json.dumps(
            {
                "benchmark": "tablestore_throughput",
                "latency_ms": args.latency_ms,
                "serial": {
                    "writes": args.serial,
                    "seconds": round(serial_s, 3),
                    "writes_per_s": round(serial_rate, 1),
                    "counted_back": serial_found,
                },
                "concurrent": {
                    "writes": args.concurrent,
                    "in_flight": args.in_flight,
                    "seconds": round(concurrent_s, 3),
                    "writes_per_s": round(concurrent_rate, 1),
                    "counted_back": concurrent_found,
                },
                "speedup": round(concurrent_rate / serial_rate, 2),
                "goal_speedup": 10,
                "lost_writes": (args.serial - serial_found) + (args.concurrent - concurrent_found),
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
