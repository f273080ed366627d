"""A killed writer's write-ahead log, in a folder this process may not write, with no
shared-memory file beside it (deleted, or not copied with a backup): the store cannot make
that file, so it used to read the database file alone (immutable) and every answer silently
left out the writes in the log. It now refuses, naming the log and the way out."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore

from .test_sqlite_integrity_read_only import run_unprivileged

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX folder permissions")

ALICE = Scope("app", "alice", "agent", "run")

#: Adds one memory and dies without closing the store (as ``kill -9`` would).
_KILLED_WRITER = """
import os, sys
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
store = SqliteMemoryStore(sys.argv[1])
store.add_text("mem", Scope("app", "alice", "agent", "run"), "only in the log", sync=True)
os._exit(0)
"""

#: Lists the memories as JSON, or the typed error.
_READER = """
import json, sys
from memcore.errors import MemcoreError
from memcore.scope import ScopePattern
from memcore_sqlite import SqliteMemoryStore
try:
    with SqliteMemoryStore(sys.argv[1]) as store:
        page = store.list_memories("mem", ScopePattern("app", "alice"), limit=100)
        print(json.dumps({"texts": sorted(m.text for m in page.items)}))
except MemcoreError as exc:
    print(json.dumps({"error": exc.to_dict()}))
"""


def _left_by_a_killed_writer(folder: Path) -> Path:
    db = folder / "m.db"
    with SqliteMemoryStore(db) as store:
        store.ensure_store("mem")
        store.add_text("mem", ALICE, "checkpointed into the file", sync=True)
    done = subprocess.run(
        [sys.executable, "-c", _KILLED_WRITER, str(db)], capture_output=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert Path(f"{db}-wal").stat().st_size > 32
    Path(f"{db}-shm").unlink()
    return db


def test_writes_left_in_the_log_are_refused_not_silently_left_out(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = _left_by_a_killed_writer(folder)
    folder.chmod(0o555)
    try:
        answer = run_unprivileged(_READER, str(db))
    finally:
        folder.chmod(0o755)
    assert "texts" not in answer, f"a read left out the log's writes: {answer}"
    error = answer["error"]
    assert isinstance(error, dict)
    assert error["type"] == "PermissionDenied"
    assert f"{db}-wal" in error["message"] and "where it can be written" in error["message"]
    # Where it can be written, the same files give both memories.
    with SqliteMemoryStore(db) as store:
        page = store.list_memories("mem", ALICE.tenant_pattern(), limit=100)
    assert sorted(m.text for m in page.items) == ["checkpointed into the file", "only in the log"]


def test_a_read_only_folder_without_a_log_is_still_read(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    with SqliteMemoryStore(folder / "m.db") as store:
        store.ensure_store("mem")
        store.add_text("mem", ALICE, "closed cleanly", sync=True)
    folder.chmod(0o555)
    try:
        answer = run_unprivileged(_READER, str(folder / "m.db"))
    finally:
        folder.chmod(0o755)
    assert answer == {"texts": ["closed cleanly"]}
