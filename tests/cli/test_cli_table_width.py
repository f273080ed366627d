"""A table for people keeps one line per row on the terminal it is printed on: on a narrow
one its ids show as the shortest prefix (at least eight characters) that tells the rows apart,
which every command takes back, and long text is cut to the width left."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memcore_cli.output.fitting import unique_prefixes

SCOPE = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes", "run_id": "r1"}
#: Two ids that share their first eight characters, and one that shares none.
TWINS = ("5f0c2a1e9d0f4c1b8e2a7c6d5b4a3f21", "5f0c2a1e7a6b4c3d9e8f1a2b3c4d5e6f")
OTHER = "c41e8c6a0b1d4e2f9a8b7c6d5e4f3a2b"
LONG = "For the Lisbon apartment the landlord wants three months of deposit " * 3


def test_each_id_gets_the_shortest_prefix_that_tells_it_apart() -> None:
    assert unique_prefixes([*TWINS, OTHER]) == {
        TWINS[0]: "5f0c2a1e9",
        TWINS[1]: "5f0c2a1e7",
        OTHER: "c41e8c6a",
    }
    # A repeated id is one id; an id shorter than eight, or the prefix of another, stays whole.
    assert unique_prefixes([OTHER, OTHER, "abc", "abcdefghij", "abcdefghijkl", ""]) == {
        OTHER: "c41e8c6a",
        "abc": "abc",
        "abcdefghij": "abcdefghij",
        "abcdefghijkl": "abcdefghijk",
    }


@pytest.fixture
def imported(local_cli, tmp_path: Path):
    lines = [
        {"format": 2, "id": TWINS[0], "text": "I moved to Lisbon in March 2024", "scope": SCOPE},
        {
            "format": 2,
            "id": TWINS[1],
            "text": "My sister Ana is allergic to peanuts",
            "scope": SCOPE,
        },
        {"format": 2, "id": OTHER, "text": LONG.strip(), "scope": SCOPE},
    ]
    path = tmp_path / "export.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    local_cli.ok("import", str(path))
    return local_cli


def _body(table: str) -> list[str]:
    """The table's rows: the lines between the header's rule and the bottom rule."""
    lines = table.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("┡"))
    return lines[start + 1 : -1]


def test_a_narrow_terminal_shows_one_line_per_memory_with_ids_a_command_takes(imported) -> None:
    result = imported("--format", "table", "list", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    assert all(len(line) <= 80 for line in result.stdout.splitlines())
    rows = _body(result.stdout)
    assert len(rows) == 3  # one line each: nothing wrapped, the scope not broken
    shown = [row.split("│")[1].strip() for row in rows]
    assert sorted(shown) == ["5f0c2a1e7", "5f0c2a1e9", "c41e8c6a"]
    long_row = rows[shown.index("c41e8c6a")]
    assert "For the Lisbon" in long_row and "…" in long_row
    assert all("hermes/r1" in row for row in rows)
    for prefix, whole in (("5f0c2a1e9", TWINS[0]), ("5f0c2a1e7", TWINS[1]), ("c41e8c6a", OTHER)):
        assert imported.json("get", prefix)["id"] == whole


def test_search_on_a_narrow_terminal_is_one_line_per_hit(imported) -> None:
    result = imported("--format", "table", "search", "Lisbon deposit", env={"COLUMNS": "80"})
    assert result.exit_code == 0, result.stderr
    rows = _body(result.stdout)
    assert rows and all(OTHER not in row and TWINS[0] not in row for row in rows)
    assert "c41e8c6a" in rows[0] and "…" in rows[0]


def test_a_wide_terminal_and_every_script_format_keep_ids_whole(imported) -> None:
    wide = imported("--format", "table", "list", env={"COLUMNS": "200"})
    assert sorted(row.split("│")[1].strip() for row in _body(wide.stdout)) == sorted(
        [*TWINS, OTHER]
    )
    narrow = {"COLUMNS": "80"}
    plain = imported("--format", "plain", "list", env=narrow).stdout.splitlines()
    assert sorted(line.split("\t")[0] for line in plain) == sorted([*TWINS, OTHER])
    listed = json.loads(imported("--json", "list", env=narrow).stdout)["items"]
    assert sorted(m["id"] for m in listed) == sorted([*TWINS, OTHER])
