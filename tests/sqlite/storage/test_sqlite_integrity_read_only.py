"""A sound file that this process cannot write is not damaged: ``quick_check`` in a read-only
folder (where SQLite cannot create the WAL's shared-memory file) reads it as immutable."""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memcore_sqlite.storage import integrity


def _sound(path: Path) -> None:
    """A WAL database as the store leaves it after a clean close: no -wal, no -shm file."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE memories (id INTEGER PRIMARY KEY, text TEXT)")
    conn.executemany("INSERT INTO memories (text) VALUES (?)", [(f"m {i}",) for i in range(50)])
    conn.commit()
    conn.close()
    assert not Path(f"{path}-shm").exists()


def test_a_refused_shared_memory_file_is_not_damage(tmp_path: Path, monkeypatch) -> None:
    db = tmp_path / "m.db"
    _sound(db)
    real = sqlite3.connect
    tried: list[str] = []

    def connect(database: str, *args: object, **kwargs: object) -> sqlite3.Connection:
        tried.append(database)
        if "immutable=1" not in database:
            exc = sqlite3.OperationalError("attempt to write a readonly database")
            exc.sqlite_errorcode = 1544  # type: ignore[attr-defined]  # READONLY_DIRECTORY
            raise exc
        return real(database, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(integrity.sqlite3, "connect", connect)
    report = integrity.quick_check(db)
    assert report.ok, report.problems
    assert len(tried) == 2


def test_other_open_failures_are_still_problems(tmp_path: Path) -> None:
    garbage = tmp_path / "g.db"
    garbage.write_bytes(b"not a database at all" * 200)
    assert not integrity.quick_check(garbage).ok


_PROBE = (
    "import json, sys; from memcore_sqlite.storage.integrity import quick_check; "
    "r = quick_check(sys.argv[1]); print(json.dumps(list(r.problems)))"
)


def run_unprivileged(script: str, *args: str) -> Any:
    """The JSON that ``script`` prints, run by a process that folder permissions bind (root
    drops its capabilities through setpriv)."""
    argv = [sys.executable, "-c", script, *args]
    if os.geteuid() == 0:
        setpriv = shutil.which("setpriv")
        if setpriv is None:
            pytest.skip("root without setpriv: folder permissions do not bind this process")
        argv = [setpriv, "--bounding-set=-all", "--inh-caps=-all", "--reuid=0", *argv]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120, check=False)
    if done.returncode != 0 and "setpriv" in done.stderr:
        pytest.skip(f"cannot drop privileges here: {done.stderr.strip()}")
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def _as_unprivileged(db: Path) -> list[str]:
    """quick_check's problems, found by a process the folder's permissions bind."""
    problems: list[str] = run_unprivileged(_PROBE, str(db))
    return problems


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX folder permissions")
def test_a_sound_file_in_a_read_only_folder_passes(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    db = folder / "m.db"
    _sound(db)
    folder.chmod(0o555)
    try:
        assert _as_unprivileged(db) == []
    finally:
        folder.chmod(0o755)
