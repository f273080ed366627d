"""A file at an older schema, read as it is: what a diagnostic can tell without upgrading it.

Opening a store upgrades its file (:func:`memcore_sqlite.storage.schema.migrate`), and the
older memcore that wrote it then refuses it. ``doctor`` changes nothing, so on such a file it
reads the version, the processes that have the file open, and the memory store and its count
here instead, on a read-only connection, from the tables every schema since 1 has
(``stores``, ``memories``).
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

import attrs

from memcore.scope import ScopePattern
from memcore_sqlite.storage import other_openers
from memcore_sqlite.storage.errors import mapped
from memcore_sqlite.storage.integrity import reading
from memcore_sqlite.storage.rows import pattern_sql
from memcore_sqlite.storage.schema import SCHEMA_VERSION


@attrs.frozen
class OlderSchema:
    """``version`` is the file's schema, ``current`` this code's; ``others`` are the ids of
    other processes that have the file open (its upgrade waits until they close it)."""

    path: str
    version: int
    others: tuple[int, ...]
    current: int = SCHEMA_VERSION


@attrs.frozen
class StoredCount:
    """A memory store of the file, and how many of its memories a scope pattern covers."""

    name: str
    description: str
    memories: int


def older_schema(path: str | Path) -> OlderSchema | None:
    """The file's schema when it is older than this code's; None for a current or newer one,
    a new (empty) one, or one SQLite cannot read: opening the store treats those as before."""
    try:
        with reading(str(path)) as conn:
            version = int(conn.execute("PRAGMA user_version").fetchone()[0])
    except sqlite3.Error:
        return None
    if not 0 < version < SCHEMA_VERSION:
        return None
    return OlderSchema(str(path), version, tuple(sorted(other_openers.others(str(path)))))


def stored_count(path: str | Path, store: str, pattern: ScopePattern) -> StoredCount | None:
    """The memory store ``store`` of the file (None when it has none) and how many of its
    memories ``pattern`` covers, read without a write lock or an upgrade."""
    where, params = pattern_sql(pattern)
    with mapped(str(path)), reading(str(path)) as conn:
        row = conn.execute("SELECT id, name, description FROM stores WHERE name = ?", (store,))
        found = row.fetchone()
        if found is None:
            return None
        count = conn.execute(
            f"SELECT count(*) FROM memories WHERE store_id = ?{where}", (found[0], *params)
        ).fetchone()[0]
    return StoredCount(str(found[1]), str(found[2]), int(count))
