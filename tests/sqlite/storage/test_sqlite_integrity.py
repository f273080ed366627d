"""A damaged database file is found (quick_check, or any statement that meets the damage)
and no write lands in it afterwards; the error names the file and the fix."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memcore.errors import StoreCorrupted
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.storage.integrity import quick_check

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")


def _filled(path: Path) -> None:
    with SqliteMemoryStore(path) as store:
        store.ensure_store(STORE)
        store.add_many(
            STORE,
            [
                TextItem(ALICE, f"memory number {i}, with words to fill pages " * 3)
                for i in range(400)
            ],
        )
    assert not Path(f"{path}-wal").exists() or Path(f"{path}-wal").stat().st_size == 0


def test_quick_check_finds_one_page_of_garbage_and_says_how_long_it_took(
    tmp_path: Path, damage
) -> None:
    db = tmp_path / "m.db"
    _filled(db)
    sound = quick_check(db)
    assert sound.ok and sound.seconds > 0
    damage.garble(db, damage.pages(db, "memories")[3])
    damaged = quick_check(db)
    assert not damaged.ok
    assert damaged.problems and damaged.seconds > 0


def test_a_file_that_is_not_a_database_is_reported_not_raised(tmp_path: Path) -> None:
    db = tmp_path / "m.db"
    db.write_bytes(b"not a database" * 400)
    assert not quick_check(db).ok


def test_writes_are_refused_once_the_check_finds_damage(tmp_path: Path, damage) -> None:
    """Issue 28: with one page of garbage, writes kept landing in the damaged file."""
    db = tmp_path / "m.db"
    _filled(db)
    damage.garble(db, damage.pages(db, "memories")[3])
    with SqliteMemoryStore(db) as store:
        report = store.check_integrity()
        assert not report.ok
        with pytest.raises(StoreCorrupted) as info:
            store.add_text(STORE, ALICE, "written after the damage was found", sync=True)
        assert not info.value.retryable
        assert str(db) in info.value.message and ".recover" in info.value.message


def test_a_store_opened_on_a_damaged_file_stops_writing_by_itself(tmp_path: Path, damage) -> None:
    """The check that opening starts in the background latches the store without a doctor."""
    db = tmp_path / "m.db"
    _filled(db)
    damage.garble(db, damage.pages(db, "memories")[3])
    with SqliteMemoryStore(db) as store:
        deadline = time.monotonic() + 20
        with pytest.raises(StoreCorrupted):  # writes until the check reports
            for i in range(10_000):
                store.add_text(STORE, ALICE, f"probe {i}", sync=True)
                assert time.monotonic() < deadline, "the damage was never found"
                time.sleep(0.01)


def test_a_statement_meeting_the_damage_stops_every_later_write(tmp_path: Path, damage) -> None:
    db = tmp_path / "m.db"
    _filled(db)
    pages = damage.pages(db, "memories")
    with SqliteMemoryStore(db) as store:
        for page in pages:
            damage.garble(db, page)  # the whole table, under an open store
        with pytest.raises(StoreCorrupted):
            list(store.list_memories(STORE, ALICE.tenant_pattern(), limit=100).items)
        with pytest.raises(StoreCorrupted):
            store.add_text(STORE, ALICE, "never written", sync=True)


def test_a_file_found_damaged_refuses_the_first_write_of_every_later_open(
    tmp_path: Path, damage
) -> None:
    """The background check of an open reported after a short writer's commit: ``count``
    and ``doctor`` called the file damaged ("nothing more is written to it"), and the next
    CLI ``add`` of five landed four, exit 0."""
    db = tmp_path / "m.db"
    _filled(db)
    damage.garble(db, damage.pages(db, "memories")[3])
    with SqliteMemoryStore(db) as store:
        assert not store.check_integrity().ok
    for i in range(3):
        with SqliteMemoryStore(db) as store, pytest.raises(StoreCorrupted):
            store.add_text(STORE, ALICE, f"written at once after open {i}", sync=True)


def test_a_file_repaired_in_place_takes_writes_again(tmp_path: Path, damage) -> None:
    db = tmp_path / "m.db"
    _filled(db)
    original = db.read_bytes()
    damage.garble(db, damage.pages(db, "memories")[3])
    with SqliteMemoryStore(db) as store:
        assert not store.check_integrity().ok
    db.write_bytes(original)  # a sound copy put back
    with SqliteMemoryStore(db) as store:
        store.add_text(STORE, ALICE, "written into the repaired file", sync=True)
        assert store.check_integrity().ok


def test_a_damaged_file_replaced_by_an_empty_recovery_is_refused(tmp_path: Path, damage) -> None:
    """``sqlite3 X .recover | sqlite3 Y`` writes nothing where ``.recover`` is missing, and
    exits 0: moved over the damaged file, an empty file was served as a new store, every
    memory gone from view without a word."""
    db = tmp_path / "m.db"
    _filled(db)
    damage.garble(db, damage.pages(db, "memories")[3])
    with SqliteMemoryStore(db) as store:
        assert not store.check_integrity().ok
    empty = tmp_path / "m.db.recovered"
    empty.write_bytes(b"")
    empty.replace(db)
    with pytest.raises(StoreCorrupted) as info:
        SqliteMemoryStore(db)
    assert "now empty" in info.value.message and f"{db}-damaged" in info.value.message
    Path(f"{db}-damaged").unlink()  # starting afresh on purpose
    with SqliteMemoryStore(db) as store:
        store.ensure_store(STORE)
        store.add_text(STORE, ALICE, "a new beginning", sync=True)
