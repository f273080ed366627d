"""Memory ids are unique per tenant (schema 16), not across the file: an import keeps a
file's id whatever another tenant holds, so it cannot tell whether one holds it. Two tenants
may then hold one id; every read and write by id (links, recall, dream actions and their
undo) reaches the caller's tenant's memory only. Schema 16 rebuilds the uniqueness of an
older file and keeps every row."""

from __future__ import annotations

import sqlite3
from pathlib import Path

from memcore.scope import Scope, ScopePattern
from memcore.values import Message, TextItem, VersionLink
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.storage.schema import SCHEMA_VERSION
from tests.older_store import write_older

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")
BOB = Scope("app", "bob", "agent", "run1")
MODEL = "hashing-64"  # the hybrid_store fixture's embedder


def _turn(store: SqliteMemoryStore, scope: Scope, text: str, when: float) -> str:
    receipt = store.add_messages(STORE, scope, [Message("user", text, timestamp=when)])
    return receipt.memory_ids[0]


def _rows(store: SqliteMemoryStore, scope: Scope) -> list[tuple[object, ...]]:
    """Each memory of the scope as a dream or a link would change it."""
    return [
        (m.id, m.text, m.version, m.metadata, dict(m.extras))
        for m in store.list_memories(STORE, scope.pattern(), limit=100).items
    ]


def test_a_dream_in_one_tenant_leaves_another_tenant_s_same_ids_alone(
    hybrid_store: SqliteMemoryStore,
) -> None:
    a = _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    b = _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    kept = hybrid_store.add_many(
        STORE,
        [TextItem(BOB, "Bob rides a red bicycle", id=a), TextItem(BOB, "Bob paints fences", id=b)],
    )
    assert kept == [a, b]
    bobs = _rows(hybrid_store, BOB)
    task = hybrid_store.create_dream_task(STORE, [ALICE.tenant_pattern()], apply_mode="safe_auto")
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    assert action.status == "applied" and action.result_memory_id == b
    current = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert [m.id for m in current] == [b] and current[0].extras["supersedes"] == [a]
    assert _rows(hybrid_store, BOB) == bobs
    hybrid_store.undo_dream_action(STORE, task.id, action.id)
    current = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert sorted(m.id for m in current) == sorted([a, b])
    assert _rows(hybrid_store, BOB) == bobs


def test_a_dream_over_two_tenants_holding_the_same_ids_never_mixes_them(
    hybrid_store: SqliteMemoryStore,
) -> None:
    a = _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    b = _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    texts = ["Bob drinks black coffee at night", "bob drinks black COFFEE at night!"]
    hybrid_store.add_many(STORE, [TextItem(BOB, texts[0], id=a), TextItem(BOB, texts[1], id=b)])
    c = _turn(hybrid_store, BOB, "Bob walks his dog at dawn", 3.0)
    d = _turn(hybrid_store, BOB, "bob walks his DOG at dawn!", 4.0)
    both = [ALICE.tenant_pattern(), BOB.tenant_pattern()]
    task = hybrid_store.create_dream_task(STORE, both, apply_mode="safe_auto")
    actions = hybrid_store.list_dream_actions(STORE, task.id).items
    # The ids both tenants hold are left out of the pass; Bob's own pair is merged.
    assert [(x.action, x.status, set(x.memory_ids)) for x in actions] == [
        ("MERGE", "applied", {c, d})
    ]
    assert {m.id: m.text for m in hybrid_store.list_memories(STORE, BOB.pattern()).items} == {
        a: texts[0],
        b: texts[1],
        c: "Bob walks his dog at dawn",
        d: "bob walks his DOG at dawn!",
    }
    assert all(
        "superseded_by" not in m.extras
        for m in hybrid_store.list_memories(STORE, ALICE.pattern()).items
    )


def test_links_and_recall_read_the_tenant_s_own_memory_under_an_id(
    lexical_store: SqliteMemoryStore,
) -> None:
    old, new = "1" * 32, "2" * 32
    lexical_store.add_many(
        STORE,
        [TextItem(ALICE, "Alice drinks tea daily", id=old), TextItem(ALICE, "Alice quit", id=new)],
    )
    lexical_store.link_versions(STORE, [VersionLink(ALICE, old, new, "updated")])
    lexical_store.add_many(STORE, [TextItem(BOB, "Bob drinks tea on weekends", id=old)])
    assert lexical_store.get_memory(STORE, ALICE, old).extras["superseded_by"] == new
    assert "superseded_by" not in lexical_store.get_memory(STORE, BOB, old).extras
    assert all("superseded_by" not in m.extras for m in _listed(lexical_store, BOB))
    lexical_store.delete_memory(STORE, ALICE, new)  # Alice's chain now ends at a deleted memory
    [hit] = lexical_store.search(STORE, BOB.tenant_pattern(), "tea")
    assert (hit.memory.id, hit.memory.text) == (old, "Bob drinks tea on weekends")
    assert lexical_store.search(STORE, ALICE.tenant_pattern(), "tea") == []


def _listed(store: SqliteMemoryStore, scope: Scope) -> tuple[object, ...]:
    return store.list_memories(STORE, scope.tenant_pattern()).items  # type: ignore[return-value]


def _memories(path: Path) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(
            "SELECT seq, id, store_id, app_id, tenant_id, agent_id, run_id, text, version"
            " FROM memories ORDER BY seq"
        ).fetchall()
    finally:
        conn.close()


def _checked(path: Path) -> list[str]:
    """The memories' indexes, after SQLite's and the full-text index's own checks pass."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
        return sorted(
            name
            for (name,) in conn.execute(
                "SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories'"
            )
        )
    finally:
        conn.close()


_INDEXES = [
    "memories_hash",
    "memories_scope",
    "memories_superseded",
    "memories_tenant_id",
    "memories_tenant_words",
    "memories_words",
]


def test_schema_16_keeps_every_row_of_a_0_1_0_store(tmp_path: Path) -> None:
    path = write_older(tmp_path / "memcore.db")
    before = _memories(path)
    assert len({row[4] for row in before}) == 2  # two tenants
    alice = ScopePattern.parse("hermes/alice/*/*")
    with SqliteMemoryStore(path) as store:
        [hit] = store.search("hermes_mem", alice, "oolong", top_k=5)
        assert hit.memory.text == "Alice likes oolong tea in the morning"
        bobs = next(row for row in before if row[4] == "bob")
        kept = store.add_many(
            "hermes_mem", [TextItem(Scope("hermes", "alice", "a", "r"), "x", id=str(bobs[1]))]
        )
        assert kept == [bobs[1]]
    after = _memories(path)
    assert after[: len(before)] == before
    assert _checked(path) == _INDEXES


def test_schema_16_upgrades_a_schema_15_file(tmp_path: Path) -> None:
    path = tmp_path / "memcore.db"
    with SqliteMemoryStore(path) as store:
        store.ensure_store(STORE)
        [alices] = store.add_many(STORE, [TextItem(ALICE, "Alice keeps bees")])
    # The table as schemas 1 to 15 made it: the id unique across the file.
    conn = sqlite3.connect(path)
    table = conn.execute("SELECT sql FROM sqlite_master WHERE name = 'memories'").fetchone()[0]
    indexes = [
        sql
        for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories'"
            " AND name != 'memories_tenant_id'"
        )
    ]
    conn.executescript(
        "CREATE TABLE old AS SELECT * FROM memories; DROP TABLE memories;"
        + table.replace("id TEXT NOT NULL,", "id TEXT NOT NULL UNIQUE,", 1)
        + "; INSERT INTO memories SELECT * FROM old; DROP TABLE old;"
        + ";".join(indexes)
        + "; PRAGMA user_version = 15;"
    )
    conn.close()
    before = _memories(path)
    with SqliteMemoryStore(path) as store:
        assert store.add_many(STORE, [TextItem(BOB, "Bob keeps goats", id=alices)]) == [alices]
        assert store.get_memory(STORE, ALICE, alices).text == "Alice keeps bees"
        assert store.get_memory(STORE, BOB, alices).text == "Bob keeps goats"
    assert _memories(path)[:1] == before
    assert _checked(path) == _INDEXES


def test_a_dream_pass_reads_no_id_two_of_its_tenants_hold(
    hybrid_store: SqliteMemoryStore,
) -> None:
    """The planner names memories by id: one of two tenants under an id would be taken for
    the other (its vector, its scope), so a pass over both leaves the id out."""
    from memcore_sqlite.dream import inputs

    shared = _turn(hybrid_store, ALICE, "Alice sails on Sundays", 1.0)
    own = _turn(hybrid_store, ALICE, "Alice bakes rye bread", 2.0)
    hybrid_store.add_many(STORE, [TextItem(BOB, "Bob fixes old radios", id=shared)])
    patterns = [ALICE.tenant_pattern(), BOB.tenant_pattern()]
    with hybrid_store._tx.read() as conn:
        sid = hybrid_store._tx.store_id(conn, STORE)
        found, blobs = inputs.load_candidates(conn, sid, patterns, 100, MODEL)
        since = inputs.written_since(conn, sid, patterns, None, 100)
        alone, _ = inputs.load_candidates(conn, sid, patterns[:1], 100, MODEL)
    assert [c.id for c in found] == [own] and set(blobs) <= {own}
    assert since == [own]
    assert sorted(c.id for c in alone) == sorted([shared, own])
