"""sqlite3 failures become memcore errors, classified by result code."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path

import pytest

from memcore.errors import PermissionDenied, ProtocolError, Unavailable
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.storage.errors import map_error
from memcore_sqlite.storage.schema import SCHEMA_VERSION

ALICE = Scope("app", "alice", "agent", "run1")


def test_a_held_write_lock_is_unavailable_and_retryable(db_path: Path) -> None:
    store = SqliteMemoryStore(db_path, busy_timeout=0.2)
    store.ensure_store("mem")
    blocker = sqlite3.connect(db_path, isolation_level=None)
    blocker.execute("BEGIN IMMEDIATE")
    try:
        with pytest.raises(Unavailable) as info:
            store.add_text("mem", ALICE, "blocked write", sync=True)
        assert info.value.retryable
        if sys.version_info >= (3, 11):  # older sqlite3 modules carry no result code
            assert "busy" in str(info.value)
    finally:
        blocker.execute("ROLLBACK")
        blocker.close()
    assert store.add_text("mem", ALICE, "blocked write", sync=True).status == "completed"
    store.close()


def test_a_database_that_cannot_be_written_says_how_to_move_it(db_path: Path) -> None:
    """As a file that cannot be created does (the README: "for the database it says how to
    move it"); an existing file made read-only said only that it could not be written."""
    advice = "set MEMCORE_HOME to a writable folder"
    store = SqliteMemoryStore(db_path, location_advice=advice)
    store.ensure_store("mem")
    store._tx.conn.execute("PRAGMA query_only = ON")  # SQLite's own read-only answer
    try:
        with pytest.raises(PermissionDenied) as info:
            store.add_text("mem", ALICE, "not written", sync=True)
        assert "cannot be written (read-only file or folder)" in str(info.value)
        assert str(info.value).endswith(f"; {advice}")
    finally:
        store._tx.conn.execute("PRAGMA query_only = OFF")
        store.close()


def test_a_full_disk_is_unavailable_with_a_clear_message(db_path: Path) -> None:
    store = SqliteMemoryStore(db_path)
    store.ensure_store("mem")
    pages = store._tx.conn.execute("PRAGMA page_count").fetchone()[0]
    # SQLite reports SQLITE_FULL when the file may not grow: the same code as a full disk.
    store._tx.conn.execute(f"PRAGMA max_page_count = {pages}")
    with pytest.raises(Unavailable) as info:
        store.add_text("mem", ALICE, "x" * 20_000, sync=True)
    assert "full" in str(info.value)
    assert store.list_memories("mem", ALICE.tenant_pattern()).items == ()
    store.close()


def test_a_file_that_is_not_a_database_is_a_protocol_error(tmp_path: Path) -> None:
    path = tmp_path / "garbage.db"
    path.write_bytes(b"this is not an sqlite file at all" * 200)
    with pytest.raises(ProtocolError) as info:
        SqliteMemoryStore(path)
    assert not info.value.retryable


def test_a_newer_schema_is_refused(db_path: Path) -> None:
    SqliteMemoryStore(db_path).close()
    conn = sqlite3.connect(db_path)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(ProtocolError) as info:
        SqliteMemoryStore(db_path)
    assert info.value.field == "schema_version"


def test_migrations_run_once_and_record_the_version(db_path: Path) -> None:
    SqliteMemoryStore(db_path).close()
    SqliteMemoryStore(db_path).close()
    conn = sqlite3.connect(db_path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    conn.close()


def test_map_error_uses_result_codes() -> None:
    conn = sqlite3.connect(":memory:")
    try:
        conn.execute("SELECT * FROM no_such_table")
    except sqlite3.Error as exc:
        mapped = map_error(exc, path=":memory:")
    assert isinstance(mapped, Unavailable)
    assert mapped.field == ":memory:"


def test_closed_store_refuses_work(db_path: Path) -> None:
    store = SqliteMemoryStore(db_path)
    store.close()
    store.close()
    with pytest.raises(Exception) as info:
        store.list_stores()
    assert "closed" in str(info.value)


def test_is_busy_knows_a_real_lock_and_nothing_else(tmp_path: Path) -> None:
    from memcore_sqlite.storage.wal import is_busy

    path = tmp_path / "locked.db"
    holder = sqlite3.connect(path, isolation_level=None)
    waiter = sqlite3.connect(path, isolation_level=None, timeout=0)
    try:
        holder.execute("BEGIN EXCLUSIVE")
        with pytest.raises(sqlite3.OperationalError) as locked:
            waiter.execute("SELECT * FROM sqlite_master")
        assert is_busy(locked.value)
        with pytest.raises(sqlite3.OperationalError) as syntax:
            waiter.execute("SELEC 1")
        assert not is_busy(syntax.value)
        assert not is_busy(ValueError("database is locked"))
    finally:
        holder.close()
        waiter.close()


@pytest.mark.parametrize(
    ("message", "error"),
    [
        ("attempt to write a readonly database", PermissionDenied),
        ("unable to open database file", PermissionDenied),
        ("database is locked", Unavailable),
        ("file is not a database", ProtocolError),
    ],
)
def test_map_error_reads_sqlites_fixed_message_when_there_is_no_code(
    message: str, error: type[Exception]
) -> None:
    # Python 3.10's sqlite3 errors carry no result code: a read-only home must still be a
    # permission problem (exit 4), not a transient failure.
    exc = sqlite3.OperationalError(message)
    assert getattr(exc, "sqlite_errorcode", None) is None
    mapped = map_error(exc, path="/x/memcore.db")
    assert isinstance(mapped, error)
    assert "/x/memcore.db" in str(mapped)


@pytest.mark.parametrize(
    "seconds",
    [-1.0, float("nan"), float("inf"), 86_400.5, 1e9, pytest.param(10**400, id="int-past-float")],
)
def test_a_busy_timeout_sqlite_cannot_keep_is_refused(db_path: Path, seconds: float) -> None:
    # 1e9 s is more milliseconds than SQLite's 32-bit busy timeout holds: it wrapped to no wait.
    # 10**400, an int no float holds, failed as a raw OverflowError.
    from memcore.errors import InvalidInput

    with pytest.raises(InvalidInput) as info:
        SqliteMemoryStore(db_path, busy_timeout=seconds)
    assert info.value.field == "busy_timeout" and "0 to 86400" in str(info.value)


def test_the_longest_busy_timeout_is_kept_as_given(db_path: Path) -> None:
    with SqliteMemoryStore(db_path, busy_timeout=86_400.0) as store:
        store.ensure_store("mem")
        waits = store._tx.conn.execute("PRAGMA busy_timeout").fetchone()[0]
    assert waits == 86_400_000
