"""A stdout that cannot write every character (``PYTHONIOENCODING=ascii``, a Latin-1 or
legacy console): what it cannot write is JSON's ``\\uXXXX`` escape, which JSON output reads
back as the character. Every listing of such a memory failed as an unexpected
``UnicodeEncodeError`` (exit 1), an update even after it had landed."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

from tests.cli.conftest import MEMCORE, run_memcore, write_config

TEXT = "naïve café ☕ 𝄞 咖啡"


def _memcore(home: Path, encoding: str, *args: str) -> subprocess.CompletedProcess[str]:
    env = {
        "PATH": os.environ.get("PATH", ""),
        "MEMCORE_HOME": str(home),
        "PYTHONIOENCODING": encoding,
    }
    done = subprocess.run([MEMCORE, *args], capture_output=True, env=env, timeout=120, check=False)
    out = done.stdout.decode(encoding)
    return subprocess.CompletedProcess(done.args, done.returncode, out, done.stderr.decode())


@pytest.mark.parametrize("encoding", ["ascii", "latin-1"])
def test_a_stdout_that_cannot_write_a_character_escapes_it(tmp_path: Path, encoding: str) -> None:
    home = tmp_path / "home"
    write_config(home, {"embedder": "none"})
    run_memcore(home, "add", "--sync", TEXT)
    listed = _memcore(home, encoding, "--json", "list")
    assert listed.returncode == 0, listed.stderr
    [memory] = json.loads(listed.stdout)["items"]
    assert memory["text"] == TEXT
    found = _memcore(home, encoding, "search", "café")
    assert found.returncode == 0, found.stderr
    assert "\\u2615" in found.stdout and "Traceback" not in found.stderr
    updated = _memcore(home, encoding, "--json", "update", memory["id"], "--text", f"{TEXT}!")
    assert updated.returncode == 0, updated.stderr
    assert json.loads(updated.stdout)["text"] == f"{TEXT}!"
