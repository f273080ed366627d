"""Several real processes on one file, a writer killed with SIGKILL mid-stream, and a
store deleted and made again by another process while this one holds its caches."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memcore.paging import every_item
from memcore.scope import Scope, ScopePattern
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.lexical.postings import cache as postings_cache

WORKER = str(Path(__file__).parents[1] / "sqlite_worker.py")
STORE = "mem"


def _spawn(*args: str) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, WORKER, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


@pytest.mark.slow
def test_four_writers_and_four_readers_lose_nothing(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.db")
    SqliteMemoryStore(path).close()
    stop = tmp_path / "stop"
    per_writer = 300
    readers = [_spawn("read", path, str(stop)) for _ in range(4)]
    for reader in readers:  # writers start once every reader has the file open
        assert reader.stdout is not None
        assert reader.stdout.readline().strip() == "READY"
    writers = [_spawn("write", path, str(w), str(per_writer)) for w in range(4)]
    acked: dict[str, str] = {}
    try:
        for w, proc in enumerate(writers):
            out, err = proc.communicate(timeout=120)
            assert proc.returncode == 0, err
            assert "locked" not in err
            for line in out.splitlines():
                _, i, mid = line.split()
                acked[mid] = f"worker {w} fact number {i} about walruses"
    finally:
        stop.touch()
    summaries = []
    for proc in readers:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
        assert "locked" not in err
        summaries.append(json.loads(out))
    assert len(acked) == 4 * per_writer
    assert all(s["ops"] > 0 for s in summaries)
    with SqliteMemoryStore(path) as store:
        for w in range(4):
            pattern = Scope("app", f"tenant{w}", "agent", "run").pattern()
            listing = every_item(
                lambda token, pattern=pattern: store.list_memories(
                    STORE, pattern, limit=100, next_token=token
                )
            )
            stored = {m.id: m.text for m in listing}
            assert len(stored) == per_writer
            assert all(acked[mid] == text for mid, text in stored.items())


@pytest.mark.slow
def test_kill_9_loses_no_acknowledged_write(tmp_path: Path) -> None:
    path = str(tmp_path / "crash.db")
    acked: dict[str, str] = {}
    for round_ in range(3):
        proc = _spawn("write", path, str(round_), "-1")
        assert proc.stdout is not None
        for _ in range(60 + 70 * round_):
            line = proc.stdout.readline()
            assert line, proc.stderr.read() if proc.stderr else ""
            _, i, mid = line.split()
            acked[mid] = f"worker {round_} fact number {i} about walruses"
        os.kill(proc.pid, signal.SIGKILL)
        # Lines already in the pipe were acknowledged too.
        rest, _ = proc.communicate(timeout=30)
        for line in rest.splitlines():
            parts = line.split()
            if len(parts) == 3:
                acked[parts[2]] = f"worker {round_} fact number {parts[1]} about walruses"
        assert proc.returncode == -signal.SIGKILL
        with SqliteMemoryStore(path) as store:
            for mid, text in acked.items():
                scope = Scope("app", f"tenant{text.split()[1]}", "agent", "run")
                assert store.get_memory(STORE, scope, mid).text == text
            assert store.search(STORE, ScopePattern("app"), "walruses")
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
    conn.close()


@pytest.mark.slow
def test_processes_creating_one_new_file_at_once_all_open_it(tmp_path: Path) -> None:
    """The switch to WAL takes its lock without SQLite's busy handler; we wait it out."""
    rounds = 40
    start = time.time() + 2.0  # after every worker has imported memcore
    workers = [_spawn("open", str(tmp_path), str(rounds), str(start)) for _ in range(4)]
    for proc in workers:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        assert out == "", out
    for i in range(rounds):
        conn = sqlite3.connect(tmp_path / f"r{i}.db")
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
        conn.close()


_REMAKE = """
import sys
from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
scope = Scope("app", "alice", "agent", "run")
with SqliteMemoryStore(sys.argv[1], embedder=HashingEmbedder(64)) as store:
    store.delete_store("mem")
    store.create_store("mem")
    store.add_many("mem", [TextItem(scope, f"kayak trip {i} on a new river") for i in range(40)])
"""


def _store_row(path: Path) -> tuple[int, int]:
    conn = sqlite3.connect(path)
    try:
        sid, generation = conn.execute("SELECT id, generation FROM stores").fetchone()
    finally:
        conn.close()
    return int(sid), int(generation)


def _found(store: SqliteMemoryStore) -> list[object]:
    pattern = Scope("app", "alice", "agent", "run").tenant_pattern()
    return [
        [
            (h.memory.id, h.memory.text, repr(h.score))
            for h in store.search(STORE, pattern, query, top_k=50, mode=mode)
        ]
        for query in ("kayak paddle", "new river")
        for mode in ("lexical", "vector", "hybrid")
    ]


def test_a_store_made_again_by_another_process_is_searched_afresh(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process deletes the store and makes one of the same name, with as many writes
    as the old one had seen: a store's first id is taken again once it is gone, so the caches
    of this process (postings, lengths, vector codes) must not take it for the old one."""
    monkeypatch.setattr(postings_cache, "MIN_ROWS", 1)  # postings for a small tenant too
    path = tmp_path / "remade.db"
    scope = Scope("app", "alice", "agent", "run")
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(scope, f"kayak paddle note {i}") for i in range(40)])
        for _ in range(3):  # held in memory from the second search at one generation on
            _found(store)
            assert store.settle(30)
        assert store._tx.postings._entries
        old = _store_row(path)
        subprocess.run([sys.executable, "-c", _REMAKE, str(path)], check=True, timeout=60)
        assert _store_row(path)[0] == old[0]  # the same id, with as many writes since
        held = _found(store)
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as fresh:
        assert held == _found(fresh)
    assert all(text.startswith("kayak trip") for hits in held for _, text, _ in hits)
