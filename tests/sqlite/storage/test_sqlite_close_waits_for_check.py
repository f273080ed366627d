"""A close waits for the whole-file check its open started.

A file with no clean-close record (a new one, or one a crash left) is checked on a thread of
its own beside the store's work. A close that left that check running kept its read-only
connection open: the ``-shm`` file stayed beside a store closed cleanly, and the clean-close
record was not written, so the next open checked the whole file again. Seen as a test that
failed only on a loaded machine, where the check outlived the store.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.storage import clean_close, integrity

ALICE = Scope("app", "alice", "agent", "run")


def test_a_close_waits_for_the_check_its_open_started(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = integrity.quick_check

    def slow(path: str | Path) -> integrity.IntegrityReport:
        with integrity.reading(path):  # the check's connection, open while it works
            time.sleep(0.5)
        return real(path)

    monkeypatch.setattr(integrity, "quick_check", slow)
    db = tmp_path / "m.db"
    with SqliteMemoryStore(db) as store:
        store.ensure_store("mem")
        store.add_text("mem", ALICE, "a sound memory", sync=True)
    assert not Path(f"{db}-shm").exists()
    assert clean_close.record_path(str(db)).exists()
