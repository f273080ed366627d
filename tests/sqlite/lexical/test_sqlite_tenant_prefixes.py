"""Tenant prefixes in the full-text index are each tenant's own (schema 17). They were digests
of the store, app and tenant, and the tenants below had the same one: a common term's rows of
the one filled the other's cut, and a write to the one in another store left the other's
postings in use. Now each tenant has a number no other tenant of the file has."""

from __future__ import annotations

import hashlib
import sqlite3
from pathlib import Path

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.lexical.postings import cache as postings_cache
from memcore_sqlite.storage import tenant_prefixes as prefixes
from tests.older_store import write_older

STORE, OTHER_STORE = "mem", "other"
#: Found by trying tenant names: the same digest prefix, in store 1 and in stores 1 and 2.
SAME_STORE = (Scope("app", "t775757", "agent", "run1"), Scope("app", "t1808011", "agent", "run1"))
ACROSS = (Scope("app", "u690752", "agent", "run1"), Scope("app", "u120522", "agent", "run1"))


def _digest_prefix(store_id: int, scope: Scope) -> int:
    """The prefix releases before schema 17 gave a tenant."""
    raw = f"{store_id}\x1f{scope.app_id}\x1f{scope.tenant_id}".encode()
    return int.from_bytes(hashlib.blake2b(raw, digest_size=8).digest(), "little") % 10**12


def _ids(store: SqliteMemoryStore, store_name: str, scope: Scope, query: str) -> set[str]:
    hits = store.search(store_name, scope.tenant_pattern(), query, top_k=50, mode="lexical")
    return {h.memory.id for h in hits}


def test_the_pairs_shared_a_digest_prefix() -> None:
    assert _digest_prefix(1, SAME_STORE[0]) == _digest_prefix(1, SAME_STORE[1])
    assert _digest_prefix(1, ACROSS[0]) == _digest_prefix(2, ACROSS[1])


def test_a_tenant_finds_its_own_rows_whatever_a_colliding_tenant_holds(db_path: Path) -> None:
    victim, other = SAME_STORE
    with SqliteMemoryStore(db_path) as store:
        store.ensure_store(STORE)
        own = store.add_many(
            STORE, [TextItem(victim, f"note {i} about the garden and the tea") for i in range(5)]
        )
        # Newer rows of the other tenant, more than a common term's first rows.
        store.add_many(STORE, [TextItem(other, f"tea {i}") for i in range(600)])
        assert _ids(store, STORE, victim, "tea") == set(own)
        assert len(_ids(store, STORE, other, "tea")) == 50
        conn = store._tx.conn
        sid = conn.execute("SELECT id FROM stores WHERE name = ?", (STORE,)).fetchone()[0]
        assert sid == 1
        mine, theirs = (prefixes.lookup(conn, sid, s.app_id, s.tenant_id) for s in SAME_STORE)
        assert mine != theirs


def _scored(store: SqliteMemoryStore, scope: Scope, query: str) -> list[tuple[str, float]]:
    hits = store.search(STORE, scope.tenant_pattern(), query, top_k=50, mode="lexical")
    return [(h.memory.id, h.score) for h in hits]


def test_another_process_write_to_a_colliding_tenant_of_another_store(db_path: Path) -> None:
    """The victim's postings, held by this process, stay exact when another process writes
    the other tenant (of another store, so the victim's store keeps its generation). With a
    shared prefix a term's count was the rows of both, and an entry read before the write
    kept the old count: "kayak"'s weight, and so a "kayak" row's score, was not the index's."""
    victim, other = ACROSS
    with SqliteMemoryStore(db_path) as setup:
        setup.ensure_store(STORE)
        setup.ensure_store(OTHER_STORE)
        ids = setup._tx.conn.execute("SELECT name, id FROM stores").fetchall()
        assert dict(ids) == {STORE: 1, OTHER_STORE: 2}
        setup.add_many(
            STORE,
            [TextItem(victim, f"kayak trip {i}") for i in range(20)]
            + [TextItem(victim, f"rivers story {i}") for i in range(20)]
            + [TextItem(victim, f"filler row {i}") for i in range(postings_cache.MIN_ROWS)],
        )
    store = SqliteMemoryStore(db_path)
    try:
        for _ in range(20):  # searched at one generation until its postings are built
            _scored(store, victim, "kayak rivers")
            assert store.settle(30)
            if store._tx.postings._entries:
                break
        assert store._tx.postings._entries
        with SqliteMemoryStore(db_path) as elsewhere:
            elsewhere.add_many(OTHER_STORE, [TextItem(other, f"kayak {i}") for i in range(60)])
        with SqliteMemoryStore(db_path) as fresh:
            fresh._tx.postings._connect = None  # every search on FTS5
            expected = _scored(fresh, victim, "kayak rivers")
        assert len(expected) == 40
        assert _scored(store, victim, "kayak rivers") == expected
    finally:
        store.close()


def test_a_store_deleted_never_gives_its_numbers_again(db_path: Path) -> None:
    victim = SAME_STORE[0]
    with SqliteMemoryStore(db_path) as store:
        store.ensure_store(STORE)
        store.add_text(STORE, victim, "first")
        conn = store._tx.conn
        before = prefixes.lookup(conn, 1, victim.app_id, victim.tenant_id)
        store.delete_store(STORE)
        assert prefixes.lookup(conn, 1, victim.app_id, victim.tenant_id) == prefixes.UNNUMBERED
        store.ensure_store(STORE)
        store.add_text(STORE, victim, "second")
        after = prefixes.lookup(conn, 1, victim.app_id, victim.tenant_id)
        assert after not in (before, prefixes.UNNUMBERED)
        assert [h.memory.text for h in store.search(STORE, victim.tenant_pattern(), "second")] == [
            "second"
        ]
    raw = sqlite3.connect(db_path)
    try:
        assert raw.execute("SELECT count(*) FROM tenant_prefixes").fetchone()[0] == 1
    finally:
        raw.close()


def _as_schema_16(path: Path) -> None:
    """The file as schema 16 left it: digest prefixes, no numbers, the index built so."""
    conn = sqlite3.connect(path)
    try:
        owners = conn.execute(
            "SELECT DISTINCT t.scope, m.store_id, m.app_id, m.tenant_id FROM memory_fts_text t"
            " JOIN memories m ON m.seq = t.seq"
        ).fetchall()
        for scope, store_id, app_id, tenant_id in owners:
            old = _digest_prefix(store_id, Scope(app_id, tenant_id, "a", "r"))
            conn.execute(
                "UPDATE memory_fts_scopes SET prefix = ? WHERE id = ?", (f"{old:012d}", scope)
            )
        conn.executescript(
            "INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');"
            "DROP TABLE tenant_prefixes; PRAGMA user_version = 16;"
        )
    finally:
        conn.close()


def _index_checked(path: Path) -> list[tuple[object, ...]]:
    """The numbers, after SQLite's and the full-text index's own checks pass."""
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == 17
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
        # Every row's terms carry its own tenant's number, and no scope row is left unused.
        assert not conn.execute(
            "SELECT r.seq FROM memory_fts_rows r JOIN memories m ON m.seq = r.seq"
            " JOIN tenant_prefixes p ON (p.store_id, p.app_id, p.tenant_id)"
            " = (m.store_id, m.app_id, m.tenant_id)"
            " WHERE substr(r.tbody, 1, 12) != printf('%012d', p.number)"
        ).fetchall()
        assert not conn.execute(
            "SELECT id FROM memory_fts_scopes WHERE id NOT IN (SELECT scope FROM memory_fts_text)"
        ).fetchall()
        return conn.execute(
            "SELECT number, store_id, app_id, tenant_id FROM tenant_prefixes ORDER BY number"
        ).fetchall()
    finally:
        conn.close()


def test_schema_17_numbers_the_tenants_of_a_schema_16_file(db_path: Path) -> None:
    victim, other = SAME_STORE
    bystander = Scope("app", "carol", "agent", "run1")
    with SqliteMemoryStore(db_path) as store:
        store.ensure_store(STORE)
        own = store.add_many(STORE, [TextItem(victim, f"note {i} on tea") for i in range(5)])
        store.add_many(STORE, [TextItem(bystander, f"tea and cake {i}") for i in range(30)])
        store.add_many(STORE, [TextItem(other, f"tea {i}") for i in range(600)])
        store.add_many(STORE, [TextItem(bystander, f"a cake {i}") for i in range(30)])
        gone = store.add_text(STORE, bystander, "tea that goes").memory_ids[0]
        store.delete_memory(STORE, bystander, gone)
        seen = [
            [(h.memory.id, h.score) for h in store.search(STORE, bystander.tenant_pattern(), q)]
            for q in ("tea", "cake", "tea cake")
        ]
    _as_schema_16(db_path)
    with SqliteMemoryStore(db_path):
        pass
    assert _index_checked(db_path) == [
        (1, 1, "app", victim.tenant_id),
        (2, 1, "app", bystander.tenant_id),
        (3, 1, "app", other.tenant_id),
    ]
    with SqliteMemoryStore(db_path) as store:
        assert _ids(store, STORE, victim, "tea") == set(own)
        assert len(_ids(store, STORE, other, "tea")) == 50
        assert seen == [
            [(h.memory.id, h.score) for h in store.search(STORE, bystander.tenant_pattern(), q)]
            for q in ("tea", "cake", "tea cake")
        ]


def test_schema_17_parts_two_tenants_that_shared_a_scope_row(db_path: Path) -> None:
    """Two tenants whose prefix and tags were alike (every digest the same) had one row in
    ``memory_fts_scopes``; each gets a row with its own number."""
    victim, other = SAME_STORE
    with SqliteMemoryStore(db_path) as store:
        store.ensure_store(STORE)
        own = store.add_many(STORE, [TextItem(victim, f"note {i} on tea") for i in range(3)])
        store.add_many(STORE, [TextItem(other, f"tea {i}") for i in range(4)])
    _as_schema_16(db_path)
    conn = sqlite3.connect(db_path)
    try:
        [(shared,)] = conn.execute(
            "SELECT DISTINCT t.scope FROM memory_fts_text t JOIN memories m USING (seq)"
            " WHERE m.tenant_id = ?",
            (victim.tenant_id,),
        ).fetchall()
        conn.execute(
            "UPDATE memory_fts_text SET scope = ? WHERE seq IN"
            " (SELECT seq FROM memories WHERE tenant_id = ?)",
            (shared, other.tenant_id),
        )
        conn.execute("DELETE FROM memory_fts_scopes WHERE id != ?", (shared,))
        conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
        conn.commit()
    finally:
        conn.close()
    with SqliteMemoryStore(db_path) as store:
        assert _ids(store, STORE, victim, "tea") == set(own)
    # The other tenant's rows keep the tags they had, and are indexed with its own number.
    assert [row[3] for row in _index_checked(db_path)] == [victim.tenant_id, other.tenant_id]


def test_schema_17_numbers_the_tenants_of_a_0_1_0_store(tmp_path: Path) -> None:
    path = write_older(tmp_path / "memcore.db")
    with SqliteMemoryStore(path) as store:
        [hit] = store.search(
            "hermes_mem", Scope("hermes", "alice", "a", "r").tenant_pattern(), "oolong"
        )
        assert hit.memory.text == "Alice likes oolong tea in the morning"
    assert [row[2:] for row in _index_checked(path)] == [("hermes", "alice"), ("hermes", "bob")]
