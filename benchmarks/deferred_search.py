"""Who pays for deferred writes: one tenant's plain adds (no vector yet), then the first
semantic search of another tenant and of the writer, on the embedded store.

A deferred write (the CLI's ``memcore add`` without ``--sync``) leaves its embedding to the
next semantic search. Each trial builds a fresh file: ``--adds`` deferred memories of tenant
``alice``, one synced memory of ``bob``; then, with the default embedder already loaded and
the query embedded once, times bob's first search, alice's first and alice's next.
``uv run python -m benchmarks deferred_search``.
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from benchmarks._stats import summary_ms

if TYPE_CHECKING:
    from memcore.ports import Embedder


def trial(embedder: Embedder | None, adds: int) -> dict[str, float]:
    from memcore.scope import Scope
    from memcore_sqlite import SqliteMemoryStore

    alice, bob = Scope("app", "alice", "agent", "run"), Scope("app", "bob", "agent", "run")
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "memories.sqlite3"
        with SqliteMemoryStore(path, embedder=embedder, defer_vectors=True) as writer:
            writer.ensure_store("mem")
            writer.add_text("mem", bob, "bob likes black coffee", sync=True)
            for i in range(adds):
                text = f"alice note {i}: the meeting about project {i} moved to room {i % 7}"
                writer.add_text("mem", alice, text)
        times: dict[str, float] = {}
        with SqliteMemoryStore(path, embedder=embedder) as store:
            for name, scope, query in (
                ("other_tenant_first", bob, "coffee"),
                ("writer_first", alice, "meeting room"),
                ("writer_next", alice, "meeting room 3"),
            ):
                started = time.perf_counter()
                store.search("mem", scope.tenant_pattern(), query)
                times[name] = time.perf_counter() - started
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--adds", type=int, default=240, help="deferred adds of one tenant")
    parser.add_argument("--trials", type=int, default=5)
    args = parser.parse_args()
    from memcore_sqlite.backend import choose_embedder

    embedder = choose_embedder("auto")
    if embedder is not None:
        embedder.embed(["coffee", "meeting room", "meeting room 3"])  # loaded, queries cached
    runs = [trial(embedder, args.adds) for _ in range(args.trials)]
    print(
        json.dumps(
            {
                "adds": args.adds,
                "embedder": getattr(embedder, "name", None),
                **{name: summary_ms([r[name] for r in runs]) for name in runs[0]},
            },
            indent=2,
        )
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
