"""``memcore doctor`` on a store it cannot write: says read-only, with exit 4 (as ``add``
fails then), and never calls the intact file damaged."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest


def _checks(result) -> dict[str, dict[str, object]]:
    return {c["name"]: c for c in json.loads(result.stdout)["checks"]}


def test_a_read_only_database_file_fails_as_read_only(local_cli, monkeypatch):
    local_cli.ok("add", "doctor needs a store")
    db = local_cli.home / "memcore.db"
    real = os.access

    def access(path, mode, *args, **kwargs):  # what a process without write permission sees
        if Path(path) == db and mode & os.W_OK:
            return False
        return real(path, mode, *args, **kwargs)

    monkeypatch.setattr(os, "access", access)
    result = local_cli("--json", "doctor")
    assert result.exit_code == 4, result.stdout
    checks = _checks(result)
    assert not checks["database"]["ok"]
    assert "read-only" in str(checks["database"]["detail"])
    assert checks["integrity"]["ok"]


def test_a_writable_database_says_so(local_cli):
    local_cli.ok("add", "doctor needs a store")
    checks = _checks(local_cli("--json", "doctor"))
    assert checks["database"]["ok"] and str(checks["database"]["detail"]).endswith(", writable)")


_DOCTOR = "from memcore_cli.app import main; main()"


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX folder permissions")
def test_a_read_only_folder_is_not_called_damage(local_cli):
    local_cli.ok("add", "doctor needs a store")
    db = local_cli.home / "memcore.db"
    sqlite3.connect(db).close()  # the last connection out removes the -wal and -shm files
    argv = [sys.executable, "-c", _DOCTOR, "--json", "doctor"]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without setpriv: folder permissions do not bind this process")
        argv = [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--reuid=0", *argv]
    env = {**os.environ, "MEMCORE_HOME": str(local_cli.home), "HOME": str(local_cli.home)}
    local_cli.home.chmod(0o555)
    try:
        done = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=120)
    finally:
        local_cli.home.chmod(0o755)
    if "setpriv" in done.stderr:
        pytest.skip(f"cannot drop privileges here: {done.stderr.strip()}")
    assert done.returncode == 4, (done.stdout, done.stderr)
    checks = _checks(done)
    assert checks["integrity"]["ok"], checks["integrity"]
    assert not checks["data home"]["ok"]
    assert "not writable" in str(checks["data home"]["detail"])


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX folder permissions")
def test_a_home_every_user_can_write_fails_as_every_command_does(tmp_path):
    """``add`` refuses a data home every user can write (exit 4); doctor said PASS and exit 0
    for it, and that the first ``add`` would create the database."""
    from tests.cli.conftest import Cli

    shared = tmp_path / "demo"
    shared.mkdir()
    shared.chmod(0o777)
    result = Cli(shared)("--json", "doctor")
    assert result.exit_code == 4, result.stdout
    home = _checks(result)["data home"]
    assert not home["ok"]
    assert "can be written by every user" in str(home["detail"])
    assert Cli(shared)("add", "x").exit_code == 4
