"""An older file is upgraded only when no other process has it open: an older memcore that
opened it first would go on writing the old format into the upgraded one.

The file is one memcore 0.1.0 wrote (schema 1, lexical: alice's two memories and bob's one,
``tests/data/sqlite_0_1_0_store.db.gz``); a plain sqlite3 connection in another process
stands in for the release that keeps it open.
"""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memcore.errors import Conflict
from memcore.scope import Scope, ScopePattern
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.storage.schema import SCHEMA_VERSION
from tests.older_store import file_shape, held_open, write_older

pytestmark = pytest.mark.skipif(
    not Path("/proc/locks").is_file(), reason="other processes' locks are listed on Linux only"
)

STORE = "hermes_mem"
ALICE = ScopePattern.parse("hermes/alice/*/*")
ALICE_TEXTS = ["Alice likes oolong tea in the morning", "Alice prefers Rust for systems code"]


def _texts(store: SqliteMemoryStore) -> list[str]:
    return sorted(m.text for m in store.list_memories(STORE, ALICE, limit=100).items)


def test_an_older_file_open_in_another_process_is_left_as_it_was(tmp_path: Path) -> None:
    path = write_older(tmp_path / "memcore.db")
    with held_open(path) as holder:
        with pytest.raises(Conflict) as info:
            SqliteMemoryStore(path)
        assert info.value.retryable and info.value.field == "schema_version"
        assert f"pid {holder.pid}" in str(info.value)
        assert "left as it was" in str(info.value)
        assert file_shape(path)[0] == 1
    store = SqliteMemoryStore(path)
    try:
        assert file_shape(path)[0] == SCHEMA_VERSION
        assert _texts(store) == ALICE_TEXTS
        [hit] = store.search(STORE, ALICE, "oolong", top_k=5)
        assert hit.memory.text == ALICE_TEXTS[0]
        store.add_text(STORE, Scope("hermes", "alice", "hermes", "s2"), "Alice owns a kayak")
        assert len(_texts(store)) == 3
    finally:
        store.close()
    conn = sqlite3.connect(path)
    try:
        conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    finally:
        conn.close()


OPEN = """
import sys
from memcore_sqlite import SqliteMemoryStore
print("READY", flush=True)
sys.stdin.readline()
SqliteMemoryStore(sys.argv[1]).close()
"""


def test_current_processes_upgrading_one_older_file_at_once_all_open_it(tmp_path: Path) -> None:
    path = write_older(tmp_path / "memcore.db")
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", OPEN, str(path)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(3)
    ]
    for proc in procs:  # every interpreter is up before any of them opens the file
        assert proc.stdout is not None and proc.stdout.readline().strip() == "READY"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write("go\n")
        proc.stdin.flush()
    for proc in procs:
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err
    assert file_shape(path)[0] == SCHEMA_VERSION
    store = SqliteMemoryStore(path)
    try:
        assert _texts(store) == ALICE_TEXTS
    finally:
        store.close()
