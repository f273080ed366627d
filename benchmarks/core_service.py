"""Cost of the core itself: scope resolution, limit checks and the service over the fake store."""

from __future__ import annotations

import json
import time

from benchmarks._stats import summary_ms
from memcore.scope import SessionContext, resolve_scope
from memcore.service import MemoryService
from memcore.testing import InMemoryMemoryStore


def timed(fn, n: int) -> list[float]:  # type: ignore[no-untyped-def]
    out = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    n = 2_000
    store = InMemoryMemoryStore()
    store.ensure_store("bench")
    svc = MemoryService(store, store_name="bench", scope=resolve_scope(SessionContext(user_id="u")))
    raw_scope = svc.scope
    results = {
        "resolve_scope": summary_ms(
            timed(
                lambda i: resolve_scope(SessionContext(user_id=f"user {i} *", session_title="t/x")),
                n,
            )
        ),
        "service_remember": summary_ms(timed(lambda i: svc.remember(f"fact {i}", sync=True), n)),
        "raw_add_text": summary_ms(
            timed(lambda i: store.add_text("bench", raw_scope, f"raw {i}", sync=True), n)
        ),
        "service_search_4k": summary_ms(timed(lambda i: svc.search(f"fact {i}"), 200)),
    }
    print(json.dumps({"benchmark": "core_service", "results": results}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
