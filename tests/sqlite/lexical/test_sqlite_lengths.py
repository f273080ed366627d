"""The lexical stage's cached lengths: they follow this process's writes and another
process's, and rank exactly as lengths read from the file do."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.lexical import lengths

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")
BOB = Scope("app", "bob", "agent", "run1")
LONG = " ".join(["kayak paddle"] + [f"filler{i}" for i in range(400)])
QUERIES = ("kayak paddle", "kayak river", "paddle note")


def _open(path: Path, hybrid: bool) -> SqliteMemoryStore:
    store = SqliteMemoryStore(path, embedder=HashingEmbedder(64) if hybrid else None)
    store.ensure_store(STORE)
    return store


def _ranked(store: SqliteMemoryStore) -> list[list[tuple[str, float]]]:
    return [
        [
            (h.memory.id, h.score)
            for h in store.search(STORE, ALICE.tenant_pattern(), q, top_k=50, mode="lexical")
        ]
        for q in QUERIES
    ]


def _read_from_file(path: Path) -> list[list[tuple[str, float]]]:
    """The same searches in a fresh store, whose first search reads the lengths."""
    with SqliteMemoryStore(path) as fresh:
        return _ranked(fresh)


def _fill(store: SqliteMemoryStore) -> list[str]:
    items = [TextItem(ALICE, f"kayak paddle note {i}") for i in range(30)]
    items += [TextItem(ALICE, f"kayak river {i} " + "word " * (i * 20)) for i in range(10)]
    items += [TextItem(BOB, f"kayak paddle bob {i}") for i in range(10)]
    return store.add_many(STORE, items)


def _loaded(store: SqliteMemoryStore) -> list[list[tuple[str, float]]]:
    """Searched twice at one generation: the tenant's lengths are then held in memory."""
    out = _ranked(store)
    assert store._tx.lengths._entries, "the tenant's lengths were not loaded"
    return out


@pytest.mark.parametrize("hybrid", [False, True])
def test_cached_lengths_follow_this_process_writes(db_path: Path, hybrid: bool) -> None:
    store = _open(db_path, hybrid)
    ids = _fill(store)
    assert _loaded(store) == _read_from_file(db_path)

    # A short memory made long now scores below the short ones holding the same words.
    store.update_memory(STORE, ALICE, ids[5], text=LONG)
    first = _ranked(store)
    assert first == _read_from_file(db_path)
    scores = dict(first[0])
    assert scores[ids[5]] < scores[ids[6]]

    # The newest row deleted, its seq is reused by the next add: it must not keep the
    # deleted row's length.
    newest = int(store._tx.conn.execute("SELECT max(seq) FROM memories").fetchone()[0])
    last = store._tx.conn.execute("SELECT id FROM memories WHERE seq = ?", (newest,)).fetchone()[0]
    store.delete_memory(STORE, BOB, last)
    _ranked(store)
    added = store.add_text(STORE, ALICE, LONG + " again", sync=True).memory_ids[0]
    seq = store._tx.conn.execute("SELECT seq FROM memories WHERE id = ?", (added,)).fetchone()[0]
    assert seq == newest
    assert _ranked(store) == _read_from_file(db_path)

    store.add_many(
        STORE, [TextItem(ALICE, f"kayak paddle later {i} " + "x " * 300) for i in range(5)]
    )
    assert _ranked(store) == _read_from_file(db_path)
    store.close()


@pytest.mark.parametrize("hybrid", [False, True])
def test_cached_lengths_follow_another_process_writes(db_path: Path, hybrid: bool) -> None:
    reader = _open(db_path, hybrid)
    ids = _fill(reader)
    _loaded(reader)
    with _open(db_path, hybrid) as writer:
        writer.update_memory(STORE, ALICE, ids[3], text=LONG)
    after = _ranked(reader)
    assert after == _read_from_file(db_path)
    scores = dict(after[0])
    assert scores[ids[3]] < scores[ids[4]]
    reader.close()


@pytest.mark.parametrize("spread", [False, True])
def test_cached_lengths_equal_the_lengths_read(db_path: Path, spread: bool) -> None:
    """Alice's rows in one run of seqs are held by seq, spread among Bob's they are sorted."""
    store = _open(db_path, False)
    if spread:
        store.add_many(
            STORE,
            [TextItem(BOB if i % 4 else ALICE, f"kayak {i} " + "w " * i) for i in range(80)],
        )
    else:
        _fill(store)
    conn = store._tx.conn
    sid = int(conn.execute("SELECT id FROM stores WHERE name = ?", (STORE,)).fetchone()[0])
    tenant = (sid, "app", "alice")
    every = [int(r[0]) for r in conn.execute("SELECT seq FROM memories")] + [0, 10_000]
    cache = lengths.LengthCache()
    cache.reader(conn, tenant, 0)(every)  # seen once: read, not loaded
    assert not cache._entries
    held = cache.reader(conn, tenant, 0)(every)
    (entry,) = cache._entries.values()
    assert (entry._by_offset is None) == spread
    # Bob's rows and unknown seqs are not the tenant's: they are read by seq alone.
    assert held == lengths.read(conn, every, tenant)
    assert 10_000 not in held and 0 not in held
    store.close()


def test_a_tenant_searched_at_a_new_generation_each_time_is_never_loaded(db_path: Path) -> None:
    store = _open(db_path, False)
    _fill(store)
    for i in range(3):
        store.search(STORE, ALICE.tenant_pattern(), "kayak paddle", mode="lexical")
        store.add_text(STORE, ALICE, f"kayak paddle more {i}")
        with _open(db_path, False) as other:  # another process's write
            other.add_text(STORE, ALICE, f"kayak river more {i}")
    assert not store._tx.lengths._entries
    assert _ranked(store) == _read_from_file(db_path)
    store.close()


def test_one_search_reading_lengths_twice_does_not_load_them(db_path: Path) -> None:
    """A search reads lengths in slices; only the tenant's next search counts as a second."""
    store = _open(db_path, False)
    _fill(store)
    conn = store._tx.conn
    sid = int(conn.execute("SELECT id FROM stores WHERE name = ?", (STORE,)).fetchone()[0])
    cache = lengths.LengthCache()
    one_search = cache.reader(conn, (sid, "app", "alice"), 0)
    one_search([1, 2])
    one_search([3, 4])
    assert not cache._entries
    cache.reader(conn, (sid, "app", "alice"), 0)([1])
    assert cache._entries
    store.close()
