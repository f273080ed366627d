"""``hermes tablestore-mem doctor`` on a local file an older memcore wrote reads it without
upgrading it: the older release still in use goes on opening it, and a doctor run while that
release has it open diagnoses instead of failing.

The file is one memcore 0.1.0 wrote (schema 1, lexical: alice's two memories and bob's one,
``tests/data/sqlite_0_1_0_store.db.gz``); a plain sqlite3 connection in another process
stands in for the release that keeps it open.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from memcore_hermes.commands.doctor import run_doctor
from memcore_hermes.config.home import HermesHome
from memcore_sqlite.storage.schema import SCHEMA_VERSION
from tests.older_store import file_shape, held_open, write_older


def _old_home(hermes_home: Path, kit: Any) -> tuple[HermesHome, Path]:
    kit.write_config(hermes_home, backend="local", embedder="none", tenant_scope="user")
    home = HermesHome(hermes_home)
    db = home.local_db_file(home.load_config())
    write_older(db)
    return home, db


def test_doctor_reads_an_older_file_without_upgrading_it(hermes_home: Path, kit: Any) -> None:
    home, db = _old_home(hermes_home, kit)
    before, shape = db.read_bytes(), file_shape(db)
    report = run_doctor(home, user_id="alice")
    assert db.read_bytes() == before
    assert file_shape(db) == shape and shape[0] == 1
    assert report["ok"], report
    schema = report["schema"]
    assert schema["version"] == 1 and schema["current"] == SCHEMA_VERSION
    assert not schema["upgraded"] and schema["open_in_pids"] == []
    assert "the next command or session that opens the file upgrades it" in schema["note"]
    assert report["integrity"]["ok"]
    assert report["search"]["mode"] == "lexical"
    store = report["store"]
    assert store["name"] == "hermes_mem" and store["status"] == "ready"
    assert store["memories"] == 2 and store["read"] == "hermes/alice/*/*"
    assert "sample" in report["not_run"]["checks"]
    assert f"schema {SCHEMA_VERSION}" in report["not_run"]["reason"]


def test_doctor_exits_0_on_an_older_file_and_leaves_it(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = _old_home(hermes_home, kit)
    code, answer = kit.run_cli(capsys, "doctor", "--user-id", "alice")
    assert code == 0, answer
    assert answer["schema"]["version"] == 1 and file_shape(db)[0] == 1


@pytest.mark.skipif(
    not Path("/proc/locks").is_file(), reason="other processes' locks are listed on Linux only"
)
def test_doctor_diagnoses_an_older_file_another_process_has_open(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    _, db = _old_home(hermes_home, kit)
    before, shape = db.read_bytes(), file_shape(db)
    with held_open(db) as holder:
        code, answer = kit.run_cli(capsys, "doctor", "--user-id", "alice")
    assert code == 1, answer
    assert not answer["ok"]
    assert db.read_bytes() == before and file_shape(db) == shape
    schema = answer["schema"]
    assert schema["open_in_pids"] == [holder.pid]
    assert "waits until" in schema["note"]
    assert answer["integrity"]["ok"] and answer["store"]["memories"] == 2
    assert "backend_error" not in answer


def test_doctor_creates_no_local_database(
    hermes_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """A diagnosis made the database file (300 KB and its clean-close mark) by opening the
    store; ``memcore doctor`` says instead that the first write creates it."""
    kit.write_config(hermes_home, backend="local", embedder="none")
    home = HermesHome(hermes_home)
    db = home.local_db_file(home.load_config())
    code, answer = kit.run_cli(capsys, "doctor")
    assert code == 0, answer
    assert not db.exists() and not list(db.parent.glob(db.name + "*"))
    assert answer["local_db"] == str(db)
    assert "does not exist yet" in answer["store"]["status"]
    assert answer["search"]["mode"] == "lexical"
