"""A path in the home folder of a user this system does not know (``~nobody-here/x``) is a
one-line error with its documented code, never Python's ``RuntimeError`` and a traceback:
``export --out`` and a config's ``local_path``. (A Hermes home is taken as written, as Hermes
takes it: ``test_hermes_home_as_written``.)"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from memcore_hermes import MemcoreMemoryProvider

UNKNOWN = "~no-such-user-here"


def _one_line_error(result: Any, code: int) -> dict[str, Any]:
    """The JSON error of a failed ``hermes tablestore-mem`` run, after checking the exit code
    and the single stderr line."""
    assert result.returncode == code, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("tablestore-mem: error: "), line
    error: dict[str, Any] = json.loads(result.stdout)["error"]
    assert error["exit_code"] == code
    return error


def test_export_out_in_an_unknown_users_home_exits_2_through_hermes(
    hermes_home: Path, tmp_path: Path, kit: Any
) -> None:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none")
    out = f"{UNKNOWN}/memories.jsonl"
    error = _one_line_error(
        kit.run_hermes(hermes_home, "tablestore-mem", "export", "--out", out), 2
    )
    assert error["code"] == "invalid_input" and error["field"] == "out"
    assert error["message"] == f"cannot write {out} (a home folder this system does not know)"


def test_a_local_path_in_an_unknown_users_home_exits_2_through_hermes(
    hermes_home: Path, kit: Any
) -> None:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none", local_path=f"{UNKNOWN}/m.db")
    error = _one_line_error(kit.run_hermes(hermes_home, "tablestore-mem", "stats"), 2)
    assert error["code"] == "config_error" and error["field"] == "local_path"
    assert str(hermes_home / "tablestore_memory.json") in error["message"]


def test_doctor_reports_a_local_path_in_an_unknown_users_home(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none", local_path=f"{UNKNOWN}/m.db")
    result = kit.run_hermes(hermes_home, "tablestore-mem", "doctor")
    assert result.returncode == 1, (result.stdout, result.stderr)
    assert "Traceback" not in result.stderr, result.stderr
    report = json.loads(result.stdout)
    assert report["ok"] is False
    assert report["backend_error"]["field"] == "local_path"


def test_backup_paths_do_not_raise_when_local_path_cannot_be(hermes_home: Path, kit: Any) -> None:
    """Hermes' backup drops every path of a provider whose ``backup_paths`` raises."""
    kit.write_config(hermes_home, backend="local", local_path=f"{UNKNOWN}/m.db")
    assert MemcoreMemoryProvider().backup_paths() == []


def test_home_expanded_is_none_only_for_a_home_this_system_does_not_know() -> None:
    from memcore_hermes.config.home import home_expanded

    assert home_expanded(f"{UNKNOWN}/x") is None
    assert home_expanded("~/x") == Path.home() / "x"
    assert home_expanded("relative/x") == Path("relative/x")
