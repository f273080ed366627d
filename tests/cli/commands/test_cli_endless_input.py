"""Input with no end (``/dev/zero``, ``yes |``) or far past any limit, given to ``add -`` or
``add --messages-file``: refused once more was read than a write can take, not read whole
into memory (the process grew until the kernel killed it). Each run is a child process whose
address space is capped, so a regression fails the test instead of the machine."""

from __future__ import annotations

import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.skipif(not Path("/dev/zero").exists(), reason="needs /dev/zero")

MAIN = "from memcore_cli.entry import main; main()"
CAP = 1 << 30  # bytes of address space: a Python with the CLI loaded needs far less


def _capped() -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))


def _run(home: Path, *args: str, stdin: int | None = None) -> subprocess.CompletedProcess[str]:
    (home / "config.json").parent.mkdir(parents=True, exist_ok=True)
    (home / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
    return subprocess.run(
        [sys.executable, "-c", MAIN, *args],
        stdin=stdin,
        capture_output=True,
        text=True,
        env={**os.environ, "MEMCORE_HOME": str(home)},
        preexec_fn=_capped,
        timeout=120,
        check=False,
    )


def test_an_endless_stdin_is_refused_as_too_long(tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as zero:
        done = _run(tmp_path / "home", "add", "-", stdin=zero.fileno())
    assert done.returncode == 2, done.stderr[-500:]
    assert done.stderr == (
        "memcore: error: text is more than 32000 UTF-8 bytes; the limit is 32000\n"
    )
    assert not (tmp_path / "home" / "memcore.db").exists()


def test_an_endless_messages_file_is_refused_as_too_large(tmp_path: Path) -> None:
    done = _run(tmp_path / "home", "add", "--messages-file", "/dev/zero")
    assert done.returncode == 2, done.stderr[-500:]
    (line,) = done.stderr.splitlines()
    assert line.startswith("memcore: error: /dev/zero is larger than any write takes")
    assert not (tmp_path / "home" / "memcore.db").exists()


def test_text_at_the_limit_from_stdin_is_still_taken(tmp_path: Path) -> None:
    with open(tmp_path / "text", "w", encoding="utf-8") as fh:
        fh.write("é" * 16_000 + "\n")  # 32,000 UTF-8 bytes, then echo's line break
    with open(tmp_path / "text", "rb") as fh:
        done = _run(tmp_path / "home", "add", "--sync", "-", stdin=fh.fileno())
    assert done.returncode == 0, done.stderr


def test_an_endless_import_is_refused_as_too_long_a_line(tmp_path: Path) -> None:
    """``import /dev/zero`` read the whole input into memory, for ever: now a line longer
    than any record stops it, with the address space capped below what that took."""
    done = _run(tmp_path / "home", "import", "/dev/zero")
    assert done.returncode == 2, done.stderr[-500:]
    assert done.stderr == (
        "memcore: error: /dev/zero line 1 is longer than any record (16 MiB at most); "
        "give a file written by 'memcore export'\n"
    )
    assert not (tmp_path / "home" / "memcore.db").exists()


def test_an_endless_import_from_stdin_is_refused_too(tmp_path: Path) -> None:
    with open("/dev/zero", "rb") as zero:
        done = _run(tmp_path / "home", "import", "--lines", "-", stdin=zero.fileno())
    assert done.returncode == 2, done.stderr[-500:]
    assert done.stderr.startswith("memcore: error: - line 1 is longer than any record")
