"""A count in a line of ``memcore`` output agrees with its noun: "1 memory", "2 memories".
Run as a user runs it, in a subprocess; ``--json`` keeps its numbers as they were."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import run_memcore


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
    run_memcore(one, "--tenant", "alice", "add", "--sync", "I keep bees on the roof")
    out = tmp_path / "one.jsonl"
    assert run_memcore(one, "--tenant", "alice", "export", "--out", str(out)).stdout == (
        f"exported 1 memory to {out}\n"
    )
    assert "exported 1 memory\n" in run_memcore(one, "--tenant", "alice", "export").stderr
    moved = run_memcore(two, "--tenant", "bob", "import", str(out))
    assert moved.stdout == "imported 1 record: 1 added, 0 already present\n"
    assert "1 record has a different id here than in the file" in moved.stderr


def test_json_output_keeps_its_numbers(homes: tuple[Path, Path], tmp_path: Path) -> None:
    one, two = homes
    run_memcore(one, "add", "--sync", "I keep bees on the roof")
    out = tmp_path / "one.jsonl"
    exported = json.loads(run_memcore(one, "--json", "export", "--out", str(out)).stdout)
    assert exported == {"exported": 1, "messages": 0, "out": str(out)}
    report = json.loads(run_memcore(two, "--json", "import", str(out)).stdout)
    assert (report["total"], report["added"], report["present"]) == (1, 1, 0)
