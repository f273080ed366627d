"""``memcore doctor`` on a file an older memcore wrote reads it without upgrading it: the
older release still in use goes on opening it, and a doctor run while that release has it
open diagnoses instead of failing.

The file is one memcore 0.1.0 wrote (schema 1, lexical: alice's two memories and bob's one,
``tests/data/sqlite_0_1_0_store.db.gz``); a plain sqlite3 connection in another process
stands in for the release that keeps it open.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from memcore_sqlite.storage.schema import SCHEMA_VERSION
from tests.cli.conftest import Cli
from tests.older_store import file_shape, held_open, write_older


def _old_home(local_cli: Cli) -> Path:
    db = local_cli.home / "memcore.db"
    write_older(db)
    return db


def _checks(stdout: str) -> dict[str, dict[str, object]]:
    return {c["name"]: c for c in json.loads(stdout)["checks"]}


def test_doctor_reads_an_older_file_without_upgrading_it(local_cli: Cli) -> None:
    db = _old_home(local_cli)
    before, shape = db.read_bytes(), file_shape(db)
    result = local_cli("--tenant", "alice", "--json", "doctor")
    assert result.exit_code == 0, result.stdout
    assert db.read_bytes() == before
    assert file_shape(db) == shape and shape[0] == 1
    checks = _checks(result.stdout)
    schema = checks["schema"]
    assert schema["ok"]
    assert f"version 1, older than this memcore's ({SCHEMA_VERSION})" in str(schema["detail"])
    assert "the next command that opens the file upgrades it" in str(schema["detail"])
    assert checks["integrity"]["ok"]
    assert str(checks["memory store"]["detail"]).startswith("hermes_mem (")
    assert "2 memories in hermes/alice/*/*" in str(checks["memory store"]["detail"])
    assert checks["search mode"]["ok"]
    for name in ("backend", "search"):
        assert checks[name]["ok"] and checks[name].get("skipped") is True, checks[name]
        assert f"schema {SCHEMA_VERSION}" in str(checks[name]["detail"])
    # What the report said: the next normal command upgrades the file.
    assert local_cli("--tenant", "alice", "count").exit_code == 0
    assert file_shape(db)[0] == SCHEMA_VERSION


def test_doctor_says_which_checks_did_not_run(local_cli: Cli) -> None:
    _old_home(local_cli)
    result = local_cli("doctor")
    assert result.exit_code == 0, result.stdout
    lines = {line.split()[1]: line.split()[0] for line in result.stdout.splitlines()}
    assert lines["schema"] == "PASS" and lines["backend"] == "SKIP" and lines["search"] == "SKIP"


@pytest.mark.skipif(
    not Path("/proc/locks").is_file(), reason="other processes' locks are listed on Linux only"
)
def test_doctor_diagnoses_an_older_file_another_process_has_open(local_cli: Cli) -> None:
    db = _old_home(local_cli)
    before, shape = db.read_bytes(), file_shape(db)
    with held_open(db) as holder:
        result = local_cli("--tenant", "alice", "--json", "doctor")
        # A command that would upgrade it is refused meanwhile (exit 5): doctor says so.
        assert local_cli("count").exit_code == 5
    assert result.exit_code == 5, result.stdout
    assert db.read_bytes() == before and file_shape(db) == shape
    checks = _checks(result.stdout)
    schema = checks["schema"]
    assert not schema["ok"]
    assert f"open in another process (pid {holder.pid})" in str(schema["detail"])
    assert "waits until it closes the file" in str(schema["detail"])
    assert checks["integrity"]["ok"]
    assert "2 memories in hermes/alice/*/*" in str(checks["memory store"]["detail"])


def test_a_current_file_is_checked_as_before(local_cli: Cli) -> None:
    local_cli.ok("add", "doctor needs a store")
    checks = _checks(local_cli("--json", "doctor").stdout)
    assert "schema" not in checks
    assert checks["backend"] == {
        "name": "backend",
        "ok": True,
        "detail": "SqliteMemoryStore opened",
    }
    assert checks["search"]["ok"] and "skipped" not in checks["search"]


def test_an_older_file_in_a_folder_it_cannot_write_is_not_called_upgradable(
    local_cli: Cli, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store opens such a file read-only and refuses to upgrade it (exit 4)."""
    db = _old_home(local_cli)
    before = db.read_bytes()
    real = os.access

    def access(path, mode, *args, **kwargs):  # what a process without write permission sees
        if Path(path) == local_cli.home and mode & os.W_OK:
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    result = local_cli("--json", "doctor")
    assert result.exit_code == 4, result.stdout
    schema = _checks(result.stdout)["schema"]
    assert not schema["ok"] and "cannot be upgraded" in str(schema["detail"])
    assert db.read_bytes() == before
