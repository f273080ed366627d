"""What a diagnostic reads of a file without upgrading it: only an older schema is reported,
and reading it leaves the file as it was."""

from __future__ import annotations

import gzip
import sqlite3
from pathlib import Path

from memcore.scope import ScopePattern
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.storage.older_schema import older_schema, stored_count
from memcore_sqlite.storage.schema import SCHEMA_VERSION

FIXTURE = Path(__file__).parents[2] / "data" / "sqlite_0_1_0_store.db.gz"


def test_an_older_file_is_read_as_it_is(tmp_path: Path) -> None:
    path = tmp_path / "memcore.db"
    path.write_bytes(gzip.decompress(FIXTURE.read_bytes()))
    before = path.read_bytes()
    older = older_schema(path)
    assert older is not None and (older.version, older.current) == (1, SCHEMA_VERSION)
    assert older.others == ()
    found = stored_count(path, "hermes_mem", ScopePattern.parse("hermes/alice/*/*"))
    assert found is not None and found.memories == 2
    assert stored_count(path, "hermes_mem", ScopePattern.parse("hermes/*/*/*")).memories == 3
    assert stored_count(path, "elsewhere", ScopePattern.parse("hermes/*/*/*")) is None
    assert path.read_bytes() == before


def test_a_current_newer_or_unreadable_file_is_not_an_older_one(tmp_path: Path) -> None:
    current = tmp_path / "current.db"
    SqliteMemoryStore(current).close()
    assert older_schema(current) is None
    conn = sqlite3.connect(current)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    assert older_schema(current) is None
    junk = tmp_path / "junk.db"
    junk.write_bytes(b"not a database" * 100)
    assert older_schema(junk) is None
    assert older_schema(tmp_path / "missing.db") is None
