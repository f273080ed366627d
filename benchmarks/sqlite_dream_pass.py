"""What one session-end consolidation pass costs as the tenant grows (embedded store).

For each size N: one tenant holds N memories (distinct user turns of the LongMemEval_S
development split, written in order as sessions of 10 with increasing dates), a full pass has
consolidated the newest 500 of them (the pass a session end ran before), then one more
session of 10 turns is written. On two copies of that file, the pass a session end runs is
timed both ways: ``full`` (a dream task over the newest 500 memories, the pass Hermes queued
before) and ``session`` (the Hermes plugin's pass now: the memories written since the last
pass against their nearest neighbours). Figures are medians over ``--repeat`` copies.

    uv run python -m benchmarks sqlite_dream_pass [--sizes 100,500,2000,5000] [--repeat 3]
        [--cache /tmp/ds-cache] [--keep /tmp/ds-files] [--profile full|session]

``--keep DIR`` keeps each size's built file there and reuses it. ``--cache DIR`` reads and keeps vectors per text (``benchmarks._embed_cache``); ``--profile``
prints a cProfile summary of that pass at the largest size on stderr.
"""

from __future__ import annotations

import argparse
import cProfile
import io
import json
import pstats
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from benchmarks.longmemeval import DEFAULT_DATA, load
from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.embedders import missing_onnx_requirements

SCOPE = Scope("bench", "user", "assistant", "haystack")
STORE = "bench"
SESSION = 10
#: What Hermes' pass read before it became incremental.
OLD_MAX = 500


def _texts(path: Path, n: int) -> list[str]:
    """``n`` distinct user turns, in haystack order, each cut to 2,000 characters."""
    out: dict[str, None] = {}
    for q in load(path):
        for session in q["haystack_sessions"]:
            for t in session:
                text = t["content"].strip()[:2000]
                if t["role"] == "user" and text:
                    out.setdefault(text, None)
                    if len(out) >= n:
                        return list(out)
    return list(out)


def _write(store: SqliteMemoryStore, texts: list[str], start: float, label: str) -> None:
    for i in range(0, len(texts), SESSION):
        when = start + 3600.0 * (i // SESSION)
        batch = [Message("user", t, timestamp=when) for t in texts[i : i + SESSION]]
        store.add_messages(STORE, SCOPE, batch, metadata={"session": f"{label}{i}"})


def _full(store: SqliteMemoryStore) -> Any:
    return store.create_dream_task(
        STORE, SCOPE.tenant_pattern(), apply_mode="safe_auto", max_memories=OLD_MAX
    )


def _session(store: SqliteMemoryStore) -> Any:
    from memcore_hermes.session import consolidation

    runtime = SimpleNamespace(
        read_only=False,
        handle=SimpleNamespace(store=store, ready=lambda: store),
        store_name=STORE,
        scope=SCOPE,
    )
    task_id = consolidation.consolidate(runtime)
    return store.get_dream_task(STORE, task_id) if task_id else None


PASSES = {"full": _full, "session": _session}


def _timed(db: Path, embedder: Any, how: str, profile: bool) -> tuple[float, dict[str, Any]]:
    with SqliteMemoryStore(db, embedder=embedder) as store:
        store.list_memories(STORE, SCOPE.pattern(), limit=1)  # open and warm, not timed
        prof = cProfile.Profile() if profile else None
        started = time.perf_counter()
        if prof is not None:
            prof.enable()
        task = PASSES[how](store)
        if prof is not None:
            prof.disable()
        took = time.perf_counter() - started
        if prof is not None:
            out = io.StringIO()
            pstats.Stats(prof, stream=out).sort_stats("cumulative").print_stats(30)
            print(f"--- {how} pass, {db.name} ---\n{out.getvalue()}", file=sys.stderr)
        info = {} if task is None else dict(task.action_counts)
        return took, info


def _size(
    n: int, texts: list[str], embedder: Any, repeat: int, profile: str, keep: Path | None
) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp) / "base.db"
        kept = None if keep is None else keep / f"base-{n}.db"
        if kept is not None and kept.exists():
            shutil.copyfile(kept, base)
            ingest = last = None
        else:
            ingest, last = _build(base, n, texts, embedder)
            if kept is not None:
                kept.parent.mkdir(parents=True, exist_ok=True)
                shutil.copyfile(base, kept)
        row: dict[str, Any] = {
            "memories": n,
            "ingest_s": None if ingest is None else round(ingest, 2),
            "previous_pass_s": None if last is None else round(last, 3),
        }
        for how in PASSES:
            times = []
            for r in range(repeat):
                db = Path(tmp) / f"{how}{r}.db"
                shutil.copyfile(base, db)
                took, info = _timed(db, embedder, how, profile == how and r == 0)
                times.append(took)
            row[f"{how}_pass_s"] = round(statistics.median(times), 4)
            row[f"{how}_pass"] = info
        row["full_over_session"] = round(row["full_pass_s"] / max(row["session_pass_s"], 1e-6), 1)
        return row


def _build(base: Path, n: int, texts: list[str], embedder: Any) -> tuple[float | None, ...]:
    """N old memories, the pass a session end ran before, then one more session."""
    with SqliteMemoryStore(base, embedder=embedder) as store:
        store.ensure_store(STORE)
        started = time.perf_counter()
        _write(store, texts[:n], 1.6e9, "old")
        ingest = time.perf_counter() - started
        time.sleep(1.5)  # sessions are apart: the last pass came after these writes
        started = time.perf_counter()
        _full(store)  # the last session end's pass
        last = time.perf_counter() - started
        _write(store, texts[n : n + SESSION], 1.6e9 + 3600.0 * (n // SESSION + 1), "new")
    return ingest, last


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--sizes", default="100,500,2000,5000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--cache", type=Path, default=None)
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--profile", choices=("full", "session"), default=None)
    parser.add_argument("--keep", type=Path, default=None, help="reuse the built files here")
    args = parser.parse_args()
    if missing_onnx_requirements():
        print(json.dumps({"skipped": "semantic extra not installed"}))
        return 0
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    sizes = [int(s) for s in args.sizes.split(",")]
    texts = _texts(args.data, max(sizes) + SESSION)
    embedder: Any = OnnxEmbedder()
    if args.cache is not None:
        from benchmarks._embed_cache import CachingEmbedder

        embedder = CachingEmbedder(embedder, args.cache)
    rows = [
        _size(n, texts, embedder, args.repeat, args.profile if n == max(sizes) else "", args.keep)
        for n in sizes
    ]
    print(json.dumps({"session_turns": SESSION, "full_reads_at_most": OLD_MAX, "sizes": rows}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
