"""``get`` and ``tasks get`` show every time (``said_at``, ``created_at``...) as a date, not
as seconds since the epoch; ``--json`` keeps the numbers."""

from __future__ import annotations

import re

STAMP = re.compile(r"^\d{4}-\d\d-\d\d \d\d:\d\d:\d\d$")


def _fields(stdout: str) -> dict[str, str]:
    return dict(line.split("\t", 1) for line in stdout.splitlines() if "\t" in line)


def test_get_formats_said_at(local_cli):
    memory_id = local_cli.json("add", "--sync", "a dated memory")["memory_ids"][0]
    record = local_cli.json("get", memory_id)
    assert isinstance(record["said_at"], float)
    shown = _fields(local_cli.ok("--format", "plain", "get", memory_id).stdout)
    for key in ("created_at", "updated_at", "said_at"):
        assert STAMP.match(shown[key]), (key, shown[key])


def test_tasks_get_formats_its_times(local_cli):
    local_cli.ok("add", "a memory written by a task")
    task = local_cli.json("tasks", "list")["items"][0]
    shown = _fields(local_cli.ok("--format", "plain", "tasks", "get", task["id"]).stdout)
    times = [k for k in shown if k.endswith("_at") and shown[k]]
    assert "created_at" in times
    for key in times:
        assert STAMP.match(shown[key]), (key, shown[key])
