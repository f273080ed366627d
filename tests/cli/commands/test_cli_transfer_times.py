"""Imported times lie within the calendar a listing can show, and a stored time outside it
(written before imports were bounded) never breaks a listing of its tenant."""

from __future__ import annotations

import json
import sqlite3

import pytest

DEFAULT_SCOPE = {
    "app_id": "hermes",
    "tenant_id": "__default__",
    "agent_id": "hermes",
    "run_id": "__default__",
}


@pytest.mark.parametrize("field", ["created_at", "updated_at", "said_at"])
@pytest.mark.parametrize("value", [1e300, 1e18, 221_876_928_000.0])  # the last: 9001-01-01
def test_an_impossible_time_stops_the_import_with_one_line(tmp_path, local_cli, field, value):
    line = {"text": "User lives in Hangzhou", "scope": DEFAULT_SCOPE, field: value}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    result = local_cli("import", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"memcore: error: line 1: {field} must be a timestamp")
    assert len(result.stderr.splitlines()) == 1
    assert local_cli.json_lines("export") == []


def test_a_time_in_year_9000_still_imports(tmp_path, local_cli):
    line = {"text": "far ahead", "scope": DEFAULT_SCOPE, "created_at": 221_876_927_999.0}
    path = tmp_path / "ok.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    assert local_cli.json("import", str(path))["added"] == 1


@pytest.mark.parametrize("stamp", [1e300, 1e18])
def test_a_stored_time_no_date_holds_does_not_break_listings(home, local_cli, stamp):
    local_cli.ok("add", "--sync", "kept memory")
    [memory] = local_cli.json_lines("export")
    with sqlite3.connect(home / "memcore.db") as db:
        db.execute("UPDATE memories SET created_at = ?, updated_at = ?", (stamp, stamp))
    for args in (
        ["list"],
        ["list", "--newest"],
        ["list", "--since", "7d"],
        ["get", memory["id"]],
        ["--format", "plain", "list"],
    ):
        result = local_cli(*args)
        assert result.exit_code == 0, (args, result.stderr)
    assert "kept memory" in local_cli.ok("list").stdout


def test_a_memory_said_before_1970_survives_export_and_import(tmp_path, local_cli):
    """A message may be dated from year 1000 on, so its memory's times may lie before 1970:
    the export holds them, and the import must take them back rather than refuse the file."""
    said = -14_000_000.0  # 1969-07-25
    turn = tmp_path / "turn.json"
    turn.write_text(
        json.dumps(
            [{"role": "user", "content": "Born during the moon landing", "timestamp": said}]
        ),
        encoding="utf-8",
    )
    local_cli.ok("add", "--sync", "--messages-file", str(turn))
    backup = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(backup))
    local_cli.ok("forget", "--all", "--yes")
    result = local_cli("--json", "import", str(backup))
    assert result.exit_code == 0, result.stderr
    [memory] = [r for r in local_cli.json_lines("export") if r.get("kind") != "message"]
    assert (memory["text"], memory["created_at"], memory["said_at"]) == (
        "Born during the moon landing",
        said,
        said,
    )
