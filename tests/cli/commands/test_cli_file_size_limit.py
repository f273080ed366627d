"""Real ``memcore`` processes that may not grow a file (``ulimit -f``, SIGXFSZ ignored): each
write fails as on a full disk (EFBIG for ENOSPC). Every command says so in one line, exit 5;
``doctor`` does not call the sound file damaged; nothing refused lands; with room again all
works. No root needed: the limit is the child's own."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX resource limits")

_MEMCORE = str(Path(sys.executable).with_name("memcore"))

#: What the refusal says: the limit, the likely cause (the disk has room). It said "the disk
#: is full" with 65 GB free.
NO_ROOM = "ulimit -f"

#: Sets the file-size limit to argv[1] bytes, then runs the rest of argv.
_LIMITED = """
import os, resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv[1]), int(sys.argv[1])))
os.execv(sys.argv[2], sys.argv[2:])
"""


def _memcore(home: Path, *argv: str, limit: int | None = None) -> subprocess.CompletedProcess[str]:
    prefix = [] if limit is None else [sys.executable, "-c", _LIMITED, str(limit)]
    return subprocess.run(
        [*prefix, _MEMCORE, *argv],
        capture_output=True,
        text=True,
        # A bytecode file cut short by the limit would be loaded by the next run.
        env={"MEMCORE_HOME": str(home), "PYTHONDONTWRITEBYTECODE": "1"},
        timeout=120,
        check=False,
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    """A home whose store holds one memory, closed cleanly (no -wal or -shm file left)."""
    home = tmp_path / "home"
    done = _memcore(home, "add", "--sync", "a memory written with room to spare")
    assert done.returncode == 0, done.stderr
    assert not (home / "memcore.db-shm").exists()
    return home


def test_doctor_says_the_disk_is_full_not_that_the_file_is_damaged(home: Path) -> None:
    done = _memcore(home, "--json", "doctor", limit=16_000)
    assert done.returncode == 5, done.stderr
    checks = {c["name"]: c for c in json.loads(done.stdout)["checks"]}
    integrity = checks["integrity"]
    assert not integrity["ok"]
    assert "damaged" not in integrity["detail"] and ".recover" not in integrity["detail"]
    assert NO_ROOM in integrity["detail"]
    again = _memcore(home, "--json", "doctor")
    assert again.returncode == 0, again.stdout
    assert all(c["ok"] for c in json.loads(again.stdout)["checks"])


def test_a_refused_add_says_the_disk_is_full_and_lands_nowhere(home: Path) -> None:
    """No room for the shared-memory file (32 KiB): SQLite's SQLITE_IOERR_SHMSIZE, which a
    real full disk gives too (a tmpfs filled up) when no other process holds that file."""
    done = _memcore(home, "--json", "add", "--sync", "refused for want of room", limit=16_000)
    assert done.returncode == 5, done.stderr
    error = json.loads(done.stderr.strip().splitlines()[-1])["error"]
    assert error["type"] == "Unavailable" and NO_ROOM in error["message"]
    assert "is full" not in error["message"]
    assert _texts(home) == ["a memory written with room to spare"]


def test_an_add_the_log_has_no_room_for_fails_cleanly_and_lands_nowhere(home: Path) -> None:
    """Room for the shared-memory file, not for the add's pages in the write-ahead log."""
    done = _memcore(home, "add", "--sync", "refused for want of room " * 200, limit=40_000)
    assert done.returncode == 5, done.stderr
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr
    assert _texts(home) == ["a memory written with room to spare"]
    assert _memcore(home, "add", "--sync", "written with room again").returncode == 0
    found = _memcore(home, "--json", "search", "room again")
    assert found.returncode == 0 and "written with room again" in found.stdout


def _texts(home: Path) -> list[str]:
    listed = _memcore(home, "--json", "list", "--all")
    assert listed.returncode == 0, listed.stderr
    return [json.loads(line)["text"] for line in listed.stdout.splitlines()]


def test_a_write_past_the_file_size_limit_names_the_limit(home: Path) -> None:
    """Past the limit a write fails with EFBIG, which SQLite calls an I/O error: the line
    names the limit, the likely cause, rather than leaving a bare I/O error."""
    done = _memcore(home, "add", "--sync", "refused for want of room " * 200, limit=40_000)
    assert done.returncode == 5, done.stderr
    assert "may not write a file past 40,000 bytes (ulimit -f)" in done.stderr
