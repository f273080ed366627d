"""Searches leave the WAL to a checkpoint thread: the WAL stays short, writes stay visible."""

from __future__ import annotations

import threading
from pathlib import Path

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.storage.checkpoints import AUDITS

STORE = "mem"
SCOPE = Scope("app", "tenant", "agent", "run")
#: A WAL frame: a 4 KiB page and its 24-byte header.
FRAME = 4096 + 24


def _wal(path: Path) -> int:
    wal = Path(f"{path}-wal")
    return wal.stat().st_size if wal.exists() else 0


def _threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "memcore-sqlite-checkpoint"]


def test_the_wal_stays_short_over_many_searches(db_path: Path) -> None:
    with SqliteMemoryStore(db_path) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [_item(i) for i in range(20)])
        searches = 8 * AUDITS
        for i in range(searches):
            assert store.search(STORE, SCOPE.tenant_pattern(), f"walrus number {i % 20}")
        # Unfolded, every audit row would stay in the WAL: about two frames per search.
        assert _wal(db_path) < searches * FRAME // 2
        assert store.list_requests(STORE, limit=1).items


def test_closing_the_store_stops_its_checkpoint_thread(db_path: Path) -> None:
    before = len(_threads())
    store = SqliteMemoryStore(db_path)
    store.ensure_store(STORE)
    store.add_many(STORE, [_item(0)])
    for _ in range(AUDITS + 1):
        store.search(STORE, SCOPE.tenant_pattern(), "walrus")
    assert len(_threads()) == before + 1
    store.close()
    assert len(_threads()) == before


def test_another_connection_sees_writes_made_between_many_searches(db_path: Path) -> None:
    with SqliteMemoryStore(db_path) as store, SqliteMemoryStore(db_path) as other:
        store.ensure_store(STORE)
        for i in range(3 * AUDITS):
            if i % 100 == 0:
                store.add_many(STORE, [_item(i)])
            store.search(STORE, SCOPE.tenant_pattern(), "walrus")
        seen = other.search(STORE, SCOPE.tenant_pattern(), "walrus", top_k=50)
        assert len(seen) == 3 * AUDITS // 100


def _item(i: int) -> TextItem:
    return TextItem(SCOPE, f"walrus number {i} likes herring")
