"""``hermes tablestore-mem doctor`` reads the local store and the spool through (quick_check),
says how long it took, and reports a damaged file as such, with the fix; it changes nothing."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from memcore.outbox import OutboxEntry
from memcore.scope import Scope
from memcore_hermes.commands.doctor import run_doctor
from memcore_hermes.config.home import HermesHome
from memcore_hermes.outbox.spool import SqliteOutbox
from memcore_sqlite import SqliteMemoryStore, TextItem

SCOPE = Scope("hermes", "gus", "hermes", "s1")


def _local_home(hermes_home: Path, kit: Any) -> HermesHome:
    kit.write_config(hermes_home, backend="local", embedder="none")
    home = HermesHome(hermes_home)
    config = home.load_config()
    with SqliteMemoryStore(home.local_db_file(config)) as store:
        store.ensure_store(config.memory_store_name)
        store.add_many(
            config.memory_store_name,
            [
                TextItem(SCOPE, f"memory number {i}, with words to fill pages " * 3)
                for i in range(400)
            ],
        )
    SqliteOutbox(home.spool_file).close()
    return home


def test_doctor_passes_sound_files_and_says_how_long_the_check_took(
    hermes_home: Path, kit: Any
) -> None:
    report = run_doctor(_local_home(hermes_home, kit))
    assert report["ok"], report
    assert report["integrity"]["ok"] and report["integrity"]["check"] == "quick_check"
    assert isinstance(report["integrity"]["ms"], float)
    assert report["spool"]["integrity"]["ok"]


def test_doctor_reports_a_page_of_garbage_in_the_local_store(
    hermes_home: Path, kit: Any, damage: Any
) -> None:
    home = _local_home(hermes_home, kit)
    db = home.local_db_file(home.load_config())
    damage.garble(db, damage.pages(db, "memories")[3])
    report = run_doctor(home)
    assert not report["ok"]
    found = report["integrity"]
    assert not found["ok"] and found["problems"]
    assert f"{db}.damaged-" in found["fix"] and ".recover" in found["fix"]


def test_doctor_reports_a_truncated_spool_and_leaves_it_alone(
    hermes_home: Path, kit: Any, damage: Any
) -> None:
    home = _local_home(hermes_home, kit)
    spool = SqliteOutbox(home.spool_file)
    spool.put_many(
        [
            OutboxEntry(key=f"k{i}", kind="messages", payload="x" * 300, created_at=0.0)
            for i in range(200)
        ]
    )
    spool.checkpoint()
    spool.close()
    damage.truncate(home.spool_file, 0.5)
    before = home.spool_file.read_bytes()
    report = run_doctor(home)
    assert not report["ok"]
    assert not report["spool"]["integrity"]["ok"]
    assert home.spool_file.read_bytes() == before
    assert not list(home.spool_file.parent.glob(f"{home.spool_file.name}.damaged-*"))


def test_turns_wait_in_the_spool_while_the_local_store_is_damaged(
    hermes_home: Path, kit: Any, damage: Any
) -> None:
    """No write lands in a damaged local store: turns stay in the spool (not dead letters) and
    are delivered once the file has been replaced (repaired) and Hermes starts again."""
    from memcore_hermes import MemcoreMemoryProvider

    home = _local_home(hermes_home, kit)
    db = home.local_db_file(home.load_config())
    damage.garble(db, damage.pages(db, "memories")[3])
    first = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    first.initialize("s1", hermes_home=str(hermes_home), user_id="gus")
    try:
        runtime = first.runtime
        assert not runtime.handle.ready().check_integrity().ok
        first.sync_turn("My cat is called Miso", "What a lovely name.", session_id="s1")
        assert not runtime.flush(3.0)
        assert runtime.spool.stats(time.time()).depth >= 1
        assert runtime.spool.dead_letter_count() == 0
    finally:
        first.shutdown()
    for side in db.parent.glob(f"{db.name}*"):
        side.unlink()  # the repair: the damaged file replaced (here by a fresh one)
    second = MemcoreMemoryProvider(retry=kit.FAST_RETRY)
    second.initialize("s2", hermes_home=str(hermes_home), user_id="gus")
    try:
        assert second.runtime.flush(10.0)
        assert "Miso" in json.dumps(
            json.loads(second.handle_tool_call("tablestore_search", {"query": "cat Miso"}))
        )
    finally:
        second.shutdown()


def test_doctor_fails_a_spool_folder_every_user_can_write(tmp_path: Path) -> None:
    """The provider refuses to make its spool in a folder every user can write; before the
    spool existed, doctor reported it as fine (no error, nothing waiting)."""
    from memcore_hermes.commands.doctor import spool_report

    shared = tmp_path / "hermes-home"
    shared.mkdir()
    shared.chmod(0o777)
    home = HermesHome(shared)
    report = spool_report(home)
    assert "can be written by every user" in report["error"]["message"]
    assert not home.spool_file.exists()


def test_doctor_that_could_not_read_the_files_calls_neither_damaged(
    hermes_home: Path, kit: Any, monkeypatch: Any
) -> None:
    """A full disk refuses the shared-memory file a reader creates (SQLITE_IOERR_SHMSIZE):
    the files are not damaged, and the spool is not said to be rebuilt."""
    import sqlite3

    from memcore_sqlite.storage import integrity

    home = _local_home(hermes_home, kit)

    def refused(uri: str) -> sqlite3.Connection:
        exc = sqlite3.OperationalError("disk I/O error")
        exc.sqlite_errorcode = 4874  # type: ignore[attr-defined]  # SQLITE_IOERR_SHMSIZE
        raise exc

    monkeypatch.setattr(integrity, "_opened", refused)
    report = run_doctor(home)
    assert not report["ok"]
    for found in (report["integrity"], report["spool"]["integrity"]):
        assert not found["ok"] and "problems" not in found and "fix" not in found, found
        assert "is full" in found["error"]["message"]
    assert "damaged" not in json.dumps(report)
