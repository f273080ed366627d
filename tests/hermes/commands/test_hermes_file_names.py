"""File names given to ``export --out`` and ``import`` are read as ``memcore``'s: an empty one
(an unset shell variable) is named as empty, and ``~`` is the home folder on both sides."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        (["export", "--out", ""], "--out"),
        (["export", "--out", "  "], "--out"),
        (["import", ""], "the file name"),
        (["import", " "], "the file name"),
    ],
)
def test_an_empty_file_name_is_named_as_empty(
    hermes_home: Path, kit: Any, argv: list[str], option: str
) -> None:
    """It was read as "." (``cannot write . (a folder)``) or as a file named "" (`` does not
    exist``): a file the user never named."""
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none")
    result = kit.run_hermes(hermes_home, "tablestore-mem", *argv)
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"tablestore-mem: error: {option} is empty"), line
    assert json.loads(result.stdout)["error"]["exit_code"] == 2


def test_import_reads_the_home_folder_export_wrote_to(
    hermes_home: Path, tmp_path: Path, kit: Any
) -> None:
    """``export --out '~/x'`` wrote to the home folder, but ``import '~/x'`` looked for a
    folder named "~" and said the file did not exist (``memcore import`` reads it)."""
    for home in (hermes_home, tmp_path / "other-hermes-home"):
        home.mkdir(exist_ok=True)
        kit.install_plugin(home)
        kit.write_config(home, backend="local", embedder="none")
    added = kit.run_hermes(hermes_home, "tablestore-mem", "add", "I keep bees", "--sync")
    assert added.returncode == 0, added.stderr
    out = kit.run_hermes(hermes_home, "tablestore-mem", "export", "--out", "~/bees.jsonl")
    assert out.returncode == 0, out.stderr
    assert (tmp_path / "user-home" / "bees.jsonl").exists()
    result = kit.run_hermes(
        tmp_path / "other-hermes-home", "tablestore-mem", "import", "~/bees.jsonl"
    )
    assert result.returncode == 0, (result.stdout, result.stderr)
    listed = kit.run_hermes(tmp_path / "other-hermes-home", "tablestore-mem", "list")
    assert [m["text"] for m in json.loads(listed.stdout)["items"]] == ["I keep bees"]


def test_import_from_an_unknown_users_home_says_so(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none")
    result = kit.run_hermes(hermes_home, "tablestore-mem", "import", "~no-such-user-here/x")
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line == (
        "tablestore-mem: error: ~no-such-user-here/x names a home folder this system does not know"
    )
