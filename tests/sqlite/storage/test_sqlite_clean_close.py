"""A writable open checks the whole file (``PRAGMA quick_check``) only when it may have changed
since a check found it sound: after a crash, a write by another program, a damaged file, or
once the last full check is a day old. A clean close of an unchanged file costs no check."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from memcore.errors import StoreCorrupted
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.storage import clean_close, integrity

from .test_sqlite_integrity import _filled

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The whole-file checks run, by path."""
    seen: list[str] = []
    real = integrity.quick_check

    def counted(path: str | Path) -> integrity.IntegrityReport:
        seen.append(str(path))
        return real(path)

    monkeypatch.setattr(integrity, "quick_check", counted)
    return seen


def _checked_and_closed(path: Path) -> None:
    """A store whose whole file was found sound, closed cleanly."""
    _filled(path)
    with SqliteMemoryStore(path) as store:
        assert store.check_integrity().ok


def _open_and_settle(path: Path) -> None:
    with SqliteMemoryStore(path) as store:
        store.list_memories(STORE, ALICE.tenant_pattern(), limit=1)
        time.sleep(0.2)  # a check started in the background has time to be counted


def test_a_cleanly_closed_unchanged_file_is_not_checked_at_open(
    tmp_path: Path, checks: list[str]
) -> None:
    db = tmp_path / "m.db"
    _checked_and_closed(db)
    checks.clear()
    _open_and_settle(db)
    _open_and_settle(db)  # reads only, closed cleanly again: still nothing to check
    assert checks == []


def test_writes_through_the_store_keep_the_next_open_free_of_the_check(
    tmp_path: Path, checks: list[str]
) -> None:
    db = tmp_path / "m.db"
    _checked_and_closed(db)
    with SqliteMemoryStore(db) as store:
        store.add_text(STORE, ALICE, "written through the store", sync=True)
    checks.clear()
    _open_and_settle(db)
    assert checks == []


def test_a_file_the_open_creates_is_not_checked(tmp_path: Path, checks: list[str]) -> None:
    """Nothing is in it yet; its clean close records it sound, so the next open checks none."""
    db = tmp_path / "m.db"
    with SqliteMemoryStore(db) as store:
        store.ensure_store(STORE)
        store.add_text(STORE, ALICE, "written into a new file", sync=True)
        time.sleep(0.2)
    assert clean_close.checked_since(str(db)) is not None
    _open_and_settle(db)
    assert checks == []


def test_a_file_never_checked_is_checked_at_open(tmp_path: Path, checks: list[str]) -> None:
    db = tmp_path / "m.db"
    _filled(db)
    clean_close.forget(str(db))
    checks.clear()
    _open_and_settle(db)
    assert checks == [str(db)]


def test_a_write_by_another_program_after_a_clean_close_is_checked(
    tmp_path: Path, checks: list[str]
) -> None:
    db = tmp_path / "m.db"
    _checked_and_closed(db)
    conn = sqlite3.connect(db)
    conn.execute("UPDATE stores SET description = 'changed elsewhere'")
    conn.commit()
    conn.close()
    checks.clear()
    _open_and_settle(db)
    assert checks == [str(db)]


def test_a_page_garbled_right_after_a_clean_close_is_found_at_open(
    tmp_path: Path, damage: Any
) -> None:
    """Within the same clock tick as the close: the close's own modification time is one no
    later write can give the file."""
    db = tmp_path / "m.db"
    _filled(db)
    page = damage.pages(db, "memories")[3]
    with SqliteMemoryStore(db) as store:
        assert store.check_integrity().ok
    damage.garble(db, page)
    with SqliteMemoryStore(db) as store:
        deadline = time.monotonic() + 20
        with pytest.raises(StoreCorrupted):
            for i in range(10_000):
                store.add_text(STORE, ALICE, f"probe {i}", sync=True)
                assert time.monotonic() < deadline, "the damage was never found"
                time.sleep(0.01)
    assert not clean_close.record_path(str(db)).exists()  # the next open checks again


def test_an_unclean_shutdown_is_checked_at_the_next_open(tmp_path: Path, checks: list[str]) -> None:
    db = tmp_path / "m.db"
    _checked_and_closed(db)
    killed = (
        "import os, sys\n"
        "from memcore.scope import Scope\n"
        "from memcore_sqlite import SqliteMemoryStore\n"
        "store = SqliteMemoryStore(sys.argv[1])\n"
        "store.add_text('mem', Scope('app', 'alice', 'agent', 'run'), 'last words', sync=True)\n"
        "os._exit(0)\n"
    )
    subprocess.run([sys.executable, "-c", killed, str(db)], check=True, timeout=120)
    checks.clear()
    _open_and_settle(db)
    assert checks == [str(db)]


def test_the_whole_file_is_checked_again_a_day_after_the_last_check(
    tmp_path: Path, checks: list[str]
) -> None:
    db = tmp_path / "m.db"
    _checked_and_closed(db)
    record = clean_close.record_path(str(db))
    fields = json.loads(record.read_text())
    fields["checked_at"] -= clean_close.MAX_AGE + 1
    record.write_text(json.dumps(fields))
    checks.clear()
    _open_and_settle(db)
    assert checks == [str(db)]


def test_a_store_still_open_elsewhere_leaves_no_record_that_hides_its_writes(
    tmp_path: Path, checks: list[str]
) -> None:
    db = tmp_path / "m.db"
    _checked_and_closed(db)
    with SqliteMemoryStore(db) as writer:
        with SqliteMemoryStore(db):
            pass  # closes while the writer is still open
        writer.add_text(STORE, ALICE, "written after the other closed", sync=True)
        checks.clear()
        with SqliteMemoryStore(db):
            time.sleep(0.2)
        assert checks == [str(db)]  # the writer's log has content: checked
