"""A new file gets the schema's page size; a file made with smaller pages keeps them and works."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.storage.schema import PAGE_SIZE

STORE = "mem"
SCOPE = Scope("app", "tenant", "agent", "run")
TEXTS = [f"the user keeps note {i} about the garden" for i in range(40)] + [
    "the user parks the blue bicycle at the station"
]


def _page_size(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA page_size").fetchone()[0])
    finally:
        conn.close()


def _searches(path: Path) -> list[list[str]]:
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:
        return [
            [h.memory.text for h in store.search(STORE, SCOPE.tenant_pattern(), q, mode=m)]
            for q in ("blue bicycle", "garden note 7")
            for m in ("hybrid", "lexical", "vector")
        ]


def _fill(path: Path) -> None:
    with SqliteMemoryStore(path, embedder=HashingEmbedder(64)) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(SCOPE, t) for t in TEXTS])


def test_a_new_file_gets_the_schema_page_size(tmp_path: Path) -> None:
    path = tmp_path / "new.db"
    _fill(path)
    assert PAGE_SIZE != 4096
    assert _page_size(path) == PAGE_SIZE


def test_a_file_with_4096_byte_pages_keeps_them_and_searches_the_same(tmp_path: Path) -> None:
    old = tmp_path / "old.db"
    conn = sqlite3.connect(old)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("VACUUM")  # the header now holds 4096, as a file made by an earlier release
    conn.close()
    _fill(old)
    new = tmp_path / "new.db"
    _fill(new)
    assert _page_size(old) == 4096
    assert _searches(old) == _searches(new)
    assert "the user parks the blue bicycle at the station" in _searches(old)[0]
