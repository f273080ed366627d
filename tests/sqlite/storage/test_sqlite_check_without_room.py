"""A whole-file check that cannot run for want of room is no verdict on the file.

A reader of a WAL database creates its shared-memory file (32 KiB) beside it; on a full disk
or under a file-size limit (``ulimit -f``) that write fails and SQLite answers
``SQLITE_IOERR_SHMSIZE``. That says nothing of the pages: the file is not "damaged", writes
are not refused for it, and the error says the disk is full (or names the size limit,
when the disk has room). The limit is set in a child
process (SIGXFSZ ignored, so writes fail with EFBIG as on a full disk), which needs no root.
"""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memcore.errors import Unavailable
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.storage import clean_close, integrity

ALICE = Scope("app", "alice", "agent", "run")
#: sqlite3.h: SQLITE_IOERR | (19 << 8).
SQLITE_IOERR_SHMSIZE = 4874

#: What the refusal says: the size limit, the likely cause where the disk has room.
NO_ROOM = "ulimit -f"

#: Runs quick_check with files limited to 16,000 bytes (below the shared-memory file).
_LIMITED_CHECK = """
import json, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (16000, 16000))
from memcore.errors import MemcoreError
from memcore_sqlite.storage.integrity import quick_check
try:
    print(json.dumps({"problems": list(quick_check(sys.argv[1]).problems)}))
except MemcoreError as exc:
    print(json.dumps({"error": exc.to_dict()}))
"""


def _closed_store(path: Path) -> None:
    """A store closed cleanly: no -wal or -shm file beside it."""
    with SqliteMemoryStore(path) as store:
        store.ensure_store("mem")
        store.add_text("mem", ALICE, "a sound memory", sync=True)
    assert not Path(f"{path}-shm").exists()


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")
def test_a_check_refused_room_for_its_shared_memory_file_names_the_limit(
    tmp_path: Path,
) -> None:
    db = tmp_path / "m.db"
    _closed_store(db)
    done = subprocess.run(
        [sys.executable, "-c", _LIMITED_CHECK, str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    answer = json.loads(done.stdout)
    assert "problems" not in answer, f"a full disk was called damage: {answer}"
    assert answer["error"]["type"] == "Unavailable"
    assert NO_ROOM in answer["error"]["message"]
    assert answer["error"]["retryable"] is True
    assert integrity.quick_check(db).ok  # with room, the same file is sound


def test_an_open_whose_check_could_not_run_still_writes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = tmp_path / "m.db"
    _closed_store(db)
    clean_close.forget(db.as_posix())  # as after a crash: the open checks the whole file
    tried: list[str] = []

    def refused(uri: str) -> sqlite3.Connection:
        tried.append(uri)
        exc = sqlite3.OperationalError("disk I/O error")
        exc.sqlite_errorcode = SQLITE_IOERR_SHMSIZE  # type: ignore[attr-defined]
        raise exc

    monkeypatch.setattr(integrity, "_opened", refused)
    with SqliteMemoryStore(db) as store:
        deadline = time.monotonic() + 10
        while not tried and time.monotonic() < deadline:
            time.sleep(0.02)
        time.sleep(0.1)  # the check's thread has answered
        assert tried, "the open did not check the file"
        assert store.add_text("mem", ALICE, "written after the check", sync=True).status == (
            "completed"
        )
    with pytest.raises(Unavailable):
        integrity.quick_check(db)
