"""A count in a line of ``memcore`` output agrees with its noun: "1 memory", "2 memories".
Run as a user runs it, in a subprocess; ``--json`` keeps its numbers as they were."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

_MEMCORE = str(Path(sys.executable).with_name("memcore"))


def _memcore(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {"PATH": os.environ.get("PATH", ""), "MEMCORE_HOME": str(home)}
    done = subprocess.run(
        [_MEMCORE, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    return done


@pytest.fixture
def homes(tmp_path: Path) -> tuple[Path, Path]:
    pair = (tmp_path / "one", tmp_path / "two")
    for home in pair:
        home.mkdir()
        (home / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
    return pair


def test_one_memory_exported_and_imported_is_said_in_the_singular(
    homes: tuple[Path, Path], tmp_path: Path
) -> None:
    one, two = homes
    _memcore(one, "--tenant", "alice", "add", "--sync", "I keep bees on the roof")
    out = tmp_path / "one.jsonl"
    assert _memcore(one, "--tenant", "alice", "export", "--out", str(out)).stdout == (
        f"exported 1 memory to {out}\n"
    )
    assert "exported 1 memory\n" in _memcore(one, "--tenant", "alice", "export").stderr
    moved = _memcore(two, "--tenant", "bob", "import", str(out))
    assert moved.stdout == "imported 1 record: 1 added, 0 already present\n"
    assert "1 record has a different id here than in the file" in moved.stderr


def test_json_output_keeps_its_numbers(homes: tuple[Path, Path], tmp_path: Path) -> None:
    one, two = homes
    _memcore(one, "add", "--sync", "I keep bees on the roof")
    out = tmp_path / "one.jsonl"
    exported = json.loads(_memcore(one, "--json", "export", "--out", str(out)).stdout)
    assert exported == {"exported": 1, "messages": 0, "out": str(out)}
    report = json.loads(_memcore(two, "--json", "import", str(out)).stdout)
    assert (report["total"], report["added"], report["present"]) == (1, 1, 0)
