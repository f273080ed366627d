"""A database path that names another program's SQLite file is refused and left as it was."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memcore.errors import InvalidInput
from memcore_sqlite import SqliteMemoryStore


@pytest.mark.parametrize("table", ["notes", "memories"])
def test_another_programs_database_is_refused_untouched(tmp_path: Path, table: str) -> None:
    """A ``local_path`` mistyped onto ``notes.sqlite`` got memcore's tables and WAL mode on
    a mere ``list`` (exit 0); one holding a ``memories`` table failed as "table memories
    already exists" (exit 5)."""
    db = tmp_path / "notes.sqlite"
    with sqlite3.connect(db) as conn:
        conn.execute(f"CREATE TABLE {table} (body TEXT)")
        conn.execute(f"INSERT INTO {table} VALUES ('buy milk')")
    conn.close()
    before = db.read_bytes()
    with pytest.raises(InvalidInput) as info:
        SqliteMemoryStore(db)
    assert "not a memcore database" in info.value.message and table in info.value.message
    assert db.read_bytes() == before
    assert not Path(f"{db}-wal").exists()


def test_an_empty_file_is_still_a_new_store(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    db.write_bytes(b"")
    with SqliteMemoryStore(db) as store:
        store.ensure_store("mem")
