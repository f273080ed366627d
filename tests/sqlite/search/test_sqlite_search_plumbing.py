"""What a search does besides ranking: one read snapshot that also asks for pending tasks,
deferred writes (this process's or another's) embedded before a semantic search, and memory
rows built with validated scopes, an invalid row still refused every time it is read."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")


def _statements(store: SqliteMemoryStore, run: object) -> list[str]:
    seen: list[str] = []
    store._tx.conn.set_trace_callback(seen.append)
    try:
        run()  # type: ignore[operator]
    finally:
        store._tx.conn.set_trace_callback(None)
    return seen


@pytest.mark.parametrize("mode", ["hybrid", "vector", "lexical"])
def test_a_search_without_pending_tasks_reads_in_one_snapshot(
    hybrid_store: SqliteMemoryStore, mode: str
) -> None:
    hybrid_store.add_text(STORE, ALICE, "the user likes green tea", sync=True)
    seen = _statements(
        hybrid_store, lambda: hybrid_store.search(STORE, ALICE.pattern(), "tea", mode=mode)
    )
    # One transaction: the audit record waits for the next write (test_sqlite_read_audits).
    assert [s for s in seen if s.startswith(("BEGIN", "COMMIT"))] == ["BEGIN", "COMMIT"], seen
    assert sum("FROM stores" in s for s in seen) == 1
    assert any("status = 'pending'" in s for s in seen) == (mode != "lexical")


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_a_semantic_search_embeds_what_deferred_writes_left(db_path: Path, mode: str) -> None:
    with SqliteMemoryStore(db_path, embedder=HashingEmbedder(64), defer_vectors=True) as store:
        store.ensure_store(STORE)
        store.add_text(STORE, ALICE, "the user likes green tea")
        assert store.missing_vectors(STORE) == 1
        assert store.list_tasks(STORE, status="pending").items
        hits = store.search(STORE, ALICE.pattern(), "green tea", mode=mode)
        assert [h.memory.text for h in hits] == ["the user likes green tea"]
        assert hits[0].signals["vector"] > 0
        assert store.missing_vectors(STORE) == 0
        assert not store.list_tasks(STORE, status="pending").items
        # Nothing pending any more: the next search is one snapshot again.
        seen = _statements(store, lambda: store.search(STORE, ALICE.pattern(), "tea", mode=mode))
        assert seen.count("BEGIN") == 1


def test_a_lexical_search_leaves_deferred_writes_pending(db_path: Path) -> None:
    with SqliteMemoryStore(db_path, embedder=HashingEmbedder(64), defer_vectors=True) as store:
        store.ensure_store(STORE)
        store.add_text(STORE, ALICE, "the user likes green tea")
        assert store.search(STORE, ALICE.pattern(), "tea", mode="lexical")
        assert store.missing_vectors(STORE) == 1


def test_a_search_by_vector_embeds_what_another_process_deferred(db_path: Path) -> None:
    embedder = HashingEmbedder(64)
    with SqliteMemoryStore(db_path, embedder=embedder) as reader:
        reader.ensure_store(STORE)
        reader.search(STORE, ALICE.pattern(), "tea")  # its snapshot knew no task
        with SqliteMemoryStore(db_path, embedder=embedder, defer_vectors=True) as writer:
            writer.add_text(STORE, ALICE, "the user likes green tea")
        vec = embedder.embed(["green tea"])[0]
        hits = reader.search_vector(STORE, ALICE.pattern(), "green tea", vec, mode="vector")
        assert [h.memory.text for h in hits] == ["the user likes green tea"]
        assert reader.missing_vectors(STORE) == 0


def test_rows_of_one_scope_share_one_validated_scope(hybrid_store: SqliteMemoryStore) -> None:
    for text in ("green tea", "black tea", "tea at noon"):
        hybrid_store.add_text(STORE, ALICE, text, sync=True)
    hits = hybrid_store.search(STORE, ALICE.pattern(), "tea")
    assert len(hits) == 3
    assert all(h.memory.scope is hits[0].memory.scope for h in hits)
    assert hits[0].memory.scope == ALICE


def test_a_row_with_an_invalid_scope_is_refused_each_time_it_is_read(db_path: Path) -> None:
    with SqliteMemoryStore(db_path, embedder=HashingEmbedder(64)) as store:
        store.ensure_store(STORE)
        store.add_text(STORE, ALICE, "green tea", sync=True)
        store.add_text(STORE, ALICE, "black tea", sync=True)
        raw = sqlite3.connect(db_path)
        with raw:  # a row written by hand, not through the store's checks
            raw.execute("UPDATE memories SET agent_id = 'a*b' WHERE text = 'black tea'")
        raw.close()
        for _ in range(2):
            with pytest.raises(InvalidInput, match="agent_id"):
                store.search(STORE, ALICE.tenant_pattern(), "tea")
            with pytest.raises(InvalidInput, match="agent_id"):
                store.list_memories(STORE, ALICE.tenant_pattern())
