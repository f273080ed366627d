"""The full-text index is merged after many writes: same hits as an unmerged index, writes
never lost when the merge fails, and another process's store keeps working."""

from __future__ import annotations

import sqlite3
import time
from pathlib import Path
from typing import Any

import pytest

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.lexical import fts_upkeep

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")
BOB = Scope("app", "bob", "agent", "run")
WORDS = [
    "coffee",
    "tea",
    "museum",
    "trip",
    "paris",
    "garden",
    "dog",
    "cat",
    "piano",
    "code",
    "bread",
]
QUERIES = ["coffee in paris", "dog cat", "piano lessons", "a rainy bike trip", "bread"]


def _text(i: int) -> str:
    return " ".join(WORDS[(i * k) % len(WORDS)] for k in (1, 3, 7)) + f" item {i}"


def _fill(path: Path, n: int, embedder: Any) -> list[list[tuple[str, float]]]:
    with SqliteMemoryStore(path, embedder=embedder) as store:
        store.ensure_store(STORE)
        for i in range(n):  # one write each: one new index segment each
            store.add_text(STORE, ALICE if i % 3 else BOB, _text(i))
        return _answers(store)


def _answers(store: SqliteMemoryStore) -> list[list[tuple[str, float]]]:
    out = []
    for scope in (ALICE, BOB):
        for q in QUERIES:
            hits = store.search(STORE, scope.tenant_pattern(), q, top_k=20)
            out.append([(h.memory.text, h.score) for h in hits])
    return out


def _segments(path: Path) -> list[int]:
    conn = sqlite3.connect(path)
    try:
        return fts_upkeep.segment_pages(conn)
    finally:
        conn.close()


@pytest.mark.parametrize("embedder", [None, HashingEmbedder(32)], ids=["lexical", "hybrid"])
def test_merged_index_gives_the_same_hits(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any
) -> None:
    monkeypatch.setattr(fts_upkeep, "LOOSE_SHARE", 2.0)  # never loose: never merged
    monkeypatch.setattr(fts_upkeep, "TIDY_SEGMENTS", 10**9)
    kept = _fill(tmp_path / "kept.db", 150, embedder)
    assert len(_segments(tmp_path / "kept.db")) > 3
    monkeypatch.setattr(fts_upkeep, "LOOSE_SHARE", 0.2)
    monkeypatch.setattr(fts_upkeep, "TIDY_SEGMENTS", 3)
    monkeypatch.setattr(fts_upkeep, "CHECK_WRITES", 1)
    merged = _fill(tmp_path / "merged.db", 150, embedder)
    assert not fts_upkeep.loose(_segments(tmp_path / "merged.db"))
    assert merged == kept
    assert any(merged)


@pytest.mark.parametrize("embedder", [None, HashingEmbedder(32)], ids=["lexical", "hybrid"])
def test_small_segments_are_merged_among_themselves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, embedder: Any
) -> None:
    """Not loose, but many segments: the small ones merge, the largest is left as it was,
    and the hits are those of the index before."""
    monkeypatch.setattr(fts_upkeep, "LOOSE_SHARE", 2.0)
    monkeypatch.setattr(fts_upkeep, "TIDY_SEGMENTS", 10**9)
    path = tmp_path / "m.db"
    kept = _fill(path, 150, embedder)
    before = _segments(path)
    assert len(before) > 3
    monkeypatch.setattr(fts_upkeep, "TIDY_SEGMENTS", 3)
    monkeypatch.setattr(fts_upkeep, "CHECK_WRITES", 1)
    with SqliteMemoryStore(path, embedder=embedder) as store:
        for _ in range(10):
            store._tx.fts_upkeep.note_write()
            if not store._tx.fts_upkeep.after_commit(store._tx.conn):
                break
        after = _segments(path)
        assert len(after) < len(before)
        assert max(after) >= max(before)  # the largest was kept or grew, never split
        assert _answers(store) == kept


def test_searches_and_reads_do_not_count_as_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(fts_upkeep, "CHECK_WRITES", 1)
    looked: list[int] = []
    real = fts_upkeep.segment_pages
    monkeypatch.setattr(fts_upkeep, "segment_pages", lambda c: looked.append(1) or real(c))
    with SqliteMemoryStore(tmp_path / "m.db") as store:
        store.ensure_store(STORE)
        store.add_text(STORE, ALICE, "coffee in paris")
        after_write = len(looked)
        for _ in range(5):
            store.search(
                STORE, ALICE.tenant_pattern(), "coffee"
            )  # audited: a write, not a memory write
    assert after_write >= 1
    assert len(looked) == after_write


def test_a_failed_merge_keeps_the_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(fts_upkeep, "CHECK_WRITES", 1)

    def busy(conn: sqlite3.Connection) -> list[int]:
        raise sqlite3.OperationalError("database is locked")

    monkeypatch.setattr(fts_upkeep, "segment_pages", busy)
    with SqliteMemoryStore(tmp_path / "m.db") as store:
        store.ensure_store(STORE)
        for i in range(5):
            store.add_text(STORE, ALICE, _text(i))
        assert len(store.search(STORE, ALICE.tenant_pattern(), "item", top_k=10)) == 5


def _unmerged(path: Path, n: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file of ``n`` one-write memories never merged; from now on every write merges."""
    monkeypatch.setattr(fts_upkeep, "LOOSE_SHARE", 2.0)
    monkeypatch.setattr(fts_upkeep, "TIDY_SEGMENTS", 10**9)
    _fill(path, n, None)
    monkeypatch.setattr(fts_upkeep, "LOOSE_SHARE", 0.0)
    monkeypatch.setattr(fts_upkeep, "CHECK_WRITES", 1)


def test_a_merge_by_another_store_is_seen_by_an_open_one(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path) as reader:
        _unmerged(path, 60, monkeypatch)
        _answers(reader)  # statements and pages of the unmerged index in use
        with SqliteMemoryStore(path) as writer:
            writer.add_text(STORE, ALICE, "a zebra in the garden")
        assert len(_segments(path)) == 1
        seen = _answers(reader)
        zebra = reader.search(STORE, ALICE.tenant_pattern(), "zebra")
    with SqliteMemoryStore(path) as fresh:
        assert seen == _answers(fresh)
    assert [h.memory.text for h in zebra] == ["a zebra in the garden"]


def test_a_merge_never_waits_for_another_writer(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    _unmerged(path, 20, monkeypatch)
    with SqliteMemoryStore(path, busy_timeout=5.0) as store:
        upkeep = store._tx.fts_upkeep
        upkeep.note_write()
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process holds the write lock
        try:
            started = time.perf_counter()
            assert upkeep.after_commit(store._tx.conn) is False
            assert time.perf_counter() - started < 1.0
        finally:
            other.execute("ROLLBACK")
            other.close()
        assert int(store._tx.conn.execute("PRAGMA busy_timeout").fetchone()[0]) == 5000
        store.add_text(STORE, ALICE, "after the lock")  # merges now
    assert len(_segments(path)) == 1
