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
