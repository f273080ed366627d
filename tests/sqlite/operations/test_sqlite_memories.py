"""Messages, dedup, batch adds, deletes that really delete, the audit log and tasks."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from memcore.errors import InvalidInput
from memcore.paging import every_item
from memcore.scope import Scope, ScopePattern
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore, TextItem

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")


def test_each_message_becomes_one_memory(lexical_store: SqliteMemoryStore) -> None:
    msgs = [
        Message("user", "I adopted a cat named Miso", metadata={"lang": "en"}),
        Message("assistant", "Miso is a lovely name"),
        Message("user", "I adopted a cat named Miso"),
    ]
    receipt = lexical_store.add_messages(
        STORE, ALICE, msgs, metadata={"channel": "chat"}, sync=True
    )
    assert len(receipt.memory_ids) == 2  # the repeated message is one memory
    memories = lexical_store.list_memories(STORE, ALICE.pattern()).items
    assert [m.text for m in memories] == ["I adopted a cat named Miso", "Miso is a lovely name"]
    assert all(m.unit_type == "message" for m in memories)
    assert memories[0].metadata == {"channel": "chat", "lang": "en"}
    assert len(lexical_store.list_messages(STORE, ALICE).items) == 3


@pytest.mark.parametrize("fixture", ["lexical_store", "hybrid_store"])
def test_a_message_not_to_remember_is_logged_only(fixture: str, request: Any) -> None:
    store: SqliteMemoryStore = request.getfixturevalue(fixture)
    msgs = [
        Message("user", "I adopted a cat named Miso"),
        Message("assistant", "Noted!", remember=False),
        Message("assistant", "Miso is a lovely name for a tabby"),
    ]
    receipt = store.add_messages(STORE, ALICE, msgs, sync=True)
    texts = [store.get_memory(STORE, ALICE, mid).text for mid in receipt.memory_ids]
    assert texts == ["I adopted a cat named Miso", "Miso is a lovely name for a tabby"]
    assert [m.content for m in store.list_messages(STORE, ALICE).items] == [m.content for m in msgs]
    hits = store.search(STORE, ScopePattern("app"), "Noted", top_k=5)
    assert "Noted!" not in [h.memory.text for h in hits]


def test_messages_page_in_order(lexical_store: SqliteMemoryStore) -> None:
    for i in range(5):
        lexical_store.add_messages(
            STORE, ALICE, [Message("user", f"m{i}a"), Message("assistant", f"m{i}b")]
        )
    listing = every_item(
        lambda token: lexical_store.list_messages(STORE, ALICE, limit=3, next_token=token)
    )
    seen = [m.content for m in listing]
    assert seen == [f"m{i}{x}" for i in range(5) for x in "ab"]


def test_add_many_dedups_and_keeps_order(lexical_store: SqliteMemoryStore) -> None:
    ids = lexical_store.add_many(
        STORE, [TextItem(ALICE, "one"), TextItem(ALICE, "two"), TextItem(ALICE, "one ")]
    )
    assert ids[0] == ids[2] != ids[1]
    assert lexical_store.add_text(STORE, ALICE, "two", sync=True).memory_ids == (ids[1],)


def test_add_many_rejects_bad_items_before_writing(lexical_store: SqliteMemoryStore) -> None:
    with pytest.raises(InvalidInput) as info:
        lexical_store.add_many(STORE, [TextItem(ALICE, "fine"), TextItem(ALICE, "")])
    assert info.value.field == "items[1].text"
    assert lexical_store.list_memories(STORE, ALICE.pattern()).items == ()


def _raw_rows(path: Path, word: str) -> dict[str, int]:
    conn = sqlite3.connect(path)
    like = f"%{word}%"
    counts = {
        "memories": conn.execute(
            "SELECT COUNT(*) FROM memories WHERE text LIKE ?", (like,)
        ).fetchone()[0],
        "fts": conn.execute(
            "SELECT COUNT(*) FROM memory_fts WHERE body LIKE ?", (like,)
        ).fetchone()[0],
        "messages": conn.execute(
            "SELECT COUNT(*) FROM messages WHERE content LIKE ?", (like,)
        ).fetchone()[0],
        "requests": conn.execute(
            "SELECT COUNT(*) FROM requests WHERE COALESCE(scope, '') || COALESCE(target_id, '') LIKE ?",
            (like,),
        ).fetchone()[0],
        "vectors": conn.execute(
            "SELECT COUNT(*) FROM memory_vectors v LEFT JOIN memories m ON m.seq = v.seq WHERE m.seq IS NULL"
        ).fetchone()[0],
    }
    conn.close()
    return counts


def test_delete_removes_text_index_vector_and_source_messages(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    receipt = hybrid_store.add_messages(
        STORE, ALICE, [Message("user", "my passphrase is octarine")], sync=True
    )
    hybrid_store.search(STORE, ALICE.tenant_pattern(), "octarine passphrase")
    assert _raw_rows(db_path, "octarine")["memories"] == 1
    hybrid_store.delete_memory(STORE, ALICE, receipt.memory_ids[0])
    assert _raw_rows(db_path, "octarine") == dict.fromkeys(
        ("memories", "fts", "messages", "requests", "vectors"), 0
    )
    assert hybrid_store.list_messages(STORE, ALICE).items == ()
    assert hybrid_store.search(STORE, ALICE.tenant_pattern(), "octarine") == []


def test_compact_leaves_no_deleted_text_in_the_file(
    lexical_store: SqliteMemoryStore, db_path: Path
) -> None:
    lexical_store.add_many(STORE, [TextItem(ALICE, f"filler memory {i}") for i in range(50)])
    mid = lexical_store.add_text(STORE, ALICE, "launch code xyzzyplugh", sync=True).memory_ids[0]
    lexical_store.delete_memory(STORE, ALICE, mid)
    lexical_store.compact()
    raw = db_path.read_bytes()
    wal = db_path.with_name(db_path.name + "-wal")
    if wal.exists():
        raw += wal.read_bytes()
    assert b"xyzzyplugh" not in raw


def test_audit_log_records_operations_without_text(lexical_store: SqliteMemoryStore) -> None:
    mid = lexical_store.add_text(STORE, ALICE, "audited private sentence", sync=True).memory_ids[0]
    lexical_store.search(STORE, ALICE.tenant_pattern(), "private sentence")
    lexical_store.update_memory(STORE, ALICE, mid, metadata={"k": "v"})
    records = lexical_store.list_requests(STORE, limit=100).items
    assert [r.operation for r in records] == ["AddMemories", "SearchMemories", "UpdateMemory"]
    add = records[0]
    assert (add.scope, add.target_id, add.status) == (ALICE, mid, "succeeded")
    assert add.latency_ms is not None and add.latency_ms >= 0
    assert all("private" not in repr(r) for r in records)


def test_tasks_complete_at_once(lexical_store: SqliteMemoryStore) -> None:
    receipt = lexical_store.add_messages(STORE, ALICE, [Message("user", "hello there")], sync=False)
    task = lexical_store.get_task(STORE, receipt.task_id or "")
    assert (task.status, task.memory_ids, task.scope) == ("completed", receipt.memory_ids, ALICE)
    assert task.finished_at is not None


def test_delete_store_removes_everything(lexical_store: SqliteMemoryStore, db_path: Path) -> None:
    lexical_store.add_messages(STORE, ALICE, [Message("user", "gone with the store")])
    lexical_store.delete_store(STORE)
    assert _raw_rows(db_path, "gone") == dict.fromkeys(
        ("memories", "fts", "messages", "requests", "vectors"), 0
    )
    lexical_store.ensure_store(STORE)
    assert lexical_store.list_scopes(STORE).items == ()


def test_scopes_list_with_patterns(lexical_store: SqliteMemoryStore) -> None:
    other = Scope("app", "alice", "agent", "run2")
    lexical_store.add_text(STORE, ALICE, "a", sync=True)
    lexical_store.add_text(STORE, other, "b", sync=True)
    assert lexical_store.list_scopes(
        STORE, ScopePattern("app", "alice", "agent", "run2")
    ).items == (other,)


def test_backfill_vectors_embeds_memories_written_lexically(db_path: Path) -> None:
    from memcore.testing import HashingEmbedder

    with SqliteMemoryStore(db_path) as plain:
        plain.ensure_store(STORE)
        plain.add_many(STORE, [TextItem(ALICE, f"written without vectors {i}") for i in range(10)])
    with SqliteMemoryStore(db_path, embedder=HashingEmbedder(64)) as hybrid:
        assert hybrid.missing_vectors(STORE) == 10
        seen: list[int] = []
        assert hybrid.backfill_vectors(STORE, batch=4, progress=seen.append) == 10
        assert seen == [4, 8, 10]
        assert hybrid.missing_vectors(STORE) == 0
        assert hybrid.backfill_vectors(STORE) == 0
        vec = HashingEmbedder(64).embed(["written without vectors 3"])[0]
        top = hybrid.search_vector(STORE, ALICE.tenant_pattern(), "zzqq", vec)[0]
        assert top.memory.text == "written without vectors 3"


def test_backfill_skips_a_memory_deleted_while_its_batch_was_embedded(db_path: Path) -> None:
    from memcore.testing import HashingEmbedder

    with SqliteMemoryStore(db_path) as plain:
        plain.ensure_store(STORE)
        ids = plain.add_many(STORE, [TextItem(ALICE, f"backfilled later {i}") for i in range(6)])

    class DeletingEmbedder(HashingEmbedder):
        """Another writer deletes two of the batch's memories while it is embedded."""

        def embed(self, texts: Sequence[str]) -> list[list[float]]:
            with SqliteMemoryStore(db_path) as other:
                for gone in ids[1:3]:
                    other.delete_memory(STORE, ALICE, gone)
            return super().embed(texts)

    with SqliteMemoryStore(db_path, embedder=DeletingEmbedder(64)) as hybrid:
        assert hybrid.backfill_vectors(STORE, batch=10) == 6
        assert hybrid.missing_vectors(STORE) == 0
        with sqlite3.connect(db_path) as raw:
            seqs = {r[0] for r in raw.execute("SELECT seq FROM memory_vectors")}
            live = {r[0] for r in raw.execute("SELECT seq FROM memories")}
        assert seqs == live and len(live) == 4
        vec = HashingEmbedder(64).embed(["backfilled later 4"])[0]
        top = hybrid.search_vector(STORE, ALICE.tenant_pattern(), "zzqq", vec)[0]
        assert top.memory.text == "backfilled later 4"


def test_a_request_for_a_missing_memory_is_audited_as_failed(
    lexical_store: SqliteMemoryStore,
) -> None:
    from memcore.errors import NotFound

    with pytest.raises(NotFound):
        lexical_store.get_memory(STORE, ALICE, "nope")
    with pytest.raises(NotFound):
        lexical_store.delete_memory(STORE, ALICE, "nope")
    records = lexical_store.list_requests(STORE).items
    assert [(r.operation, r.status, r.target_id) for r in records] == [
        ("GetMemory", "failed", "nope"),
        ("DeleteMemory", "failed", "nope"),
    ]


def test_add_many_keeps_given_ids_and_refuses_taken_ones(lexical_store) -> None:
    from memcore.errors import Conflict
    from memcore.scope import Scope
    from memcore_sqlite import TextItem

    lexical_store.ensure_store("imp")
    scope = Scope("app", "t", "a", "r")
    [kept] = lexical_store.add_many(
        "imp", [TextItem(scope, "imported fact", id="orig-1", created_at=1.0)]
    )
    assert kept == "orig-1"
    memory = lexical_store.get_memory("imp", scope, "orig-1")
    assert (memory.text, memory.created_at) == ("imported fact", 1.0)
    # Same text again: dedup returns the existing memory, whatever id the caller brings.
    assert lexical_store.add_many("imp", [TextItem(scope, "imported fact", id="other")]) == [
        "orig-1"
    ]
    with pytest.raises(Conflict):
        lexical_store.add_many("imp", [TextItem(scope, "a different fact", id="orig-1")])
    assert lexical_store.get_memory("imp", scope, "orig-1").text == "imported fact"


def test_update_removing_keys_merges_then_removes_in_one_write(
    lexical_store: SqliteMemoryStore,
) -> None:
    """``KeyRemoval``: the merge and the removal are one update (one audit record), and the
    limit applies to what is kept, not to the merge before the removal."""
    from memcore.ports import KeyRemoval

    assert isinstance(lexical_store, KeyRemoval)
    lexical_store.ensure_store(STORE)
    full = {f"k{i}": "v" for i in range(16)}
    [memory_id] = lexical_store.add_many(STORE, [TextItem(scope=ALICE, text="Tea", metadata=full)])
    done = lexical_store.update_memory_removing(
        STORE, ALICE, memory_id, remove={"k0", "absent"}, metadata={"new": "1"}
    )
    assert done.metadata == {**{f"k{i}": "v" for i in range(1, 16)}, "new": "1"}
    updates = lexical_store.list_requests(STORE, operation="UpdateMemory").items
    assert len(updates) == 1
