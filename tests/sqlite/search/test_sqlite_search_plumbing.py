"""What a search does besides ranking: one read snapshot that also asks for pending tasks,
deferred writes (this process's or another's) embedded before a semantic search, and memory
rows built with validated scopes, an invalid row still refused every time it is read."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest

from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.testing import CountingEmbedder, HashingEmbedder
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


def test_a_search_does_not_wait_for_another_process_write_lock_to_embed(
    db_path: Path,
) -> None:
    """A semantic search embeds what deferred writes left in a write of its own: with another
    process holding the write lock it waited the busy timeout and failed ("busy", exit 5 in
    the CLI), though any tenant's pending memory caused it and a read needs no lock. It now
    answers at once without their vectors (their words still find them), and embeds them
    on a later search."""
    import sqlite3

    embedder = HashingEmbedder(64)
    with SqliteMemoryStore(
        db_path, embedder=embedder, defer_vectors=True, busy_timeout=2.0
    ) as store:
        store.ensure_store(STORE)
        store.add_text(STORE, ALICE, "the user likes green tea")
        other = sqlite3.connect(db_path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # another process in a long write
        try:
            hits = store.search(STORE, ALICE.pattern(), "green tea")
            assert [h.memory.text for h in hits] == ["the user likes green tea"]
            assert store.missing_vectors(STORE) == 1
        finally:
            other.execute("ROLLBACK")
            other.close()
        hits = store.search(STORE, ALICE.pattern(), "green tea")
        assert hits[0].signals["vector"] > 0 and store.missing_vectors(STORE) == 0


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


_EDIT = """
import sys
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
with SqliteMemoryStore(sys.argv[1]) as store:  # lexical-only: it stores no vector
    store.update_memory("mem", Scope("app", "alice", "agent", "run"), sys.argv[2], text=sys.argv[3])
"""


class _EditedWhileEmbedding(HashingEmbedder):
    """Another process (without an embedder) changes the memory's text while this one
    embeds the text it read."""

    def __init__(self, path: Path, memory_id: str, text: str) -> None:
        super().__init__(64)
        self.edit: list[str] | None = [sys.executable, "-c", _EDIT, str(path), memory_id, text]

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.edit is not None and "the user likes green tea" in texts:
            subprocess.run(self.edit, check=True, timeout=60)
            self.edit = None
        return super().embed(texts)


def test_a_deferred_memory_edited_while_its_vector_is_made_keeps_no_stale_vector(
    db_path: Path,
) -> None:
    """A deferred write's vector is made from the text read before embedding; a text changed
    meanwhile (by a process that stores no vector) must not get the old text's vector."""
    with SqliteMemoryStore(db_path, embedder=HashingEmbedder(64), defer_vectors=True) as writer:
        writer.ensure_store(STORE)
        mid = writer.add_text(STORE, ALICE, "the user likes green tea").memory_ids[0]
    new = "the user moved to Lisbon in May"
    embedder = _EditedWhileEmbedding(db_path, mid, new)
    with SqliteMemoryStore(db_path, embedder=embedder) as store:
        old_vector, new_vector = HashingEmbedder(64).embed(["the user likes green tea", new])
        hits = store.search_vector(STORE, ALICE.pattern(), "q", old_vector, mode="vector")
        assert embedder.edit is None  # the text was changed while it was embedded
        assert [h.signals["vector"] for h in hits] != [pytest.approx(1.0, abs=1e-3)]
        # Still pending: the next semantic search embeds the text the memory holds now.
        hits = store.search_vector(STORE, ALICE.pattern(), "q", new_vector, mode="vector")
        assert [(h.memory.text, round(h.score, 3)) for h in hits] == [(new, 1.0)]
        assert store.missing_vectors(STORE) == 0
        assert not store.list_tasks(STORE, status="pending").items


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


@pytest.mark.parametrize("mode", ["hybrid", "vector"])
def test_a_search_embeds_only_its_own_tenants_deferred_writes(db_path: Path, mode: str) -> None:
    """A semantic search embedded every tenant's deferred memories before its own: one
    tenant's plain ``memcore add`` calls made another tenant's next search pay for embedding
    them all (240 memories: 667 ms instead of 7 with the default model), for vectors it never
    reads.
    Each tenant's searches now embed that tenant's own, and another's search is one snapshot."""
    bob = Scope("app", "bob", "agent", "run")
    with SqliteMemoryStore(db_path, embedder=HashingEmbedder(64), defer_vectors=True) as writer:
        writer.ensure_store(STORE)
        for i in range(30):
            writer.add_text(STORE, ALICE, f"alice note {i} about green tea")
        writer.add_text(STORE, bob, "bob likes black coffee", sync=True)
    embedder = CountingEmbedder()
    with SqliteMemoryStore(db_path, embedder=embedder) as store:
        seen = _statements(
            store, lambda: store.search(STORE, bob.tenant_pattern(), "coffee", mode=mode)
        )
        assert seen.count("BEGIN") == 1, seen  # no write, no second snapshot
        assert not any("alice note" in text for text in embedder.texts), embedder.texts
        assert store.missing_vectors(STORE) == 30
        hits = store.search(STORE, ALICE.tenant_pattern(), "green tea", mode=mode)
        assert len([t for t in embedder.texts if "alice note" in t]) == 30
        assert hits and hits[0].signals["vector"] > 0
        assert store.missing_vectors(STORE) == 0
        assert not store.list_tasks(STORE, status="pending").items
