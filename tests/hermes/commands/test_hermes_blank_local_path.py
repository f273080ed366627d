"""A blank ``local_path`` (``" "``) is refused, as ``memcore`` refuses it: it was a file named
" " in the Hermes home, where no one would look for the memories."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider


@pytest.mark.parametrize("blank", [" ", "\t  "])
def test_a_hand_written_blank_local_path_exits_2_through_hermes(
    hermes_home: Path, kit: Any, blank: str
) -> None:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none", local_path=blank)
    result = kit.run_hermes(hermes_home, "tablestore-mem", "add", "where does this go", "--sync")
    assert result.returncode == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith("tablestore-mem: error: local_path is blank"), line
    error = json.loads(result.stdout)["error"]
    assert error["code"] == "config_error" and error["field"] == "local_path"
    assert str(hermes_home / "tablestore_memory.json") in error["message"]
    assert not (hermes_home / blank).exists()
    assert not list(hermes_home.glob("tablestore_memory_local*"))


def test_backup_paths_leave_out_a_blank_local_path(hermes_home: Path, kit: Any) -> None:
    kit.write_config(hermes_home, backend="local", local_path=" ")
    assert MemcoreMemoryProvider().backup_paths() == []


def test_a_blank_local_path_saved_by_setup_or_the_dashboard_means_the_default(
    hermes_home: Path,
) -> None:
    """A form's empty field is how the default is asked for: nothing named " " is written."""
    MemcoreMemoryProvider().save_config({"backend": "local", "local_path": "  "}, str(hermes_home))
    saved = json.loads((hermes_home / "tablestore_memory.json").read_text(encoding="utf-8"))
    assert "local_path" not in saved
