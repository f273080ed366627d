"""``memcore search --neighbours N``: each hit is shown with the turns of its own
conversation around it, in the table (rows -N..-1 above it, +1..+N below), the tab-separated
output and ``--json``; a store that cannot (TableStore) is one error line and exit 2."""

from __future__ import annotations

import json
from pathlib import Path

TURNS = [
    ("user", "Which trail should we take on Saturday?"),
    ("assistant", "Take the ridge trail above Lake Bled, it is dry this week."),
    ("user", "I booked the mountain hut near Triglav for the night"),
    ("assistant", "Good: the hut serves dinner until eight."),
    ("user", "Remind me to pack the blue rain jacket."),
]
QUERY = "mountain hut Triglav"


def _seed(cli, tmp_path: Path) -> None:
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"role": r, "content": c} for r, c in TURNS]), "utf-8")
    cli.ok("add", "--sync", "--messages-file", str(turns))


def test_search_json_carries_each_hits_neighbours(local_cli, tmp_path: Path) -> None:
    _seed(local_cli, tmp_path)
    [hit] = local_cli.json("search", "--top-k", "1", "--neighbours", "1", QUERY)
    assert hit["text"] == TURNS[2][1]
    around = hit["neighbours"]
    turns = {side: [(t["role"], t["content"]) for t in around[side]] for side in around}
    assert turns == {"before": [TURNS[1]], "after": [TURNS[3]]}
    assert all(isinstance(t["timestamp"], float) for t in around["before"] + around["after"])
    [plain] = local_cli.json("search", "--top-k", "1", QUERY)
    assert "neighbours" not in plain


def test_search_prints_the_turns_around_each_hit(local_cli, tmp_path: Path) -> None:
    _seed(local_cli, tmp_path)
    out = local_cli.ok(
        "--format", "plain", "search", "--top-k", "1", "--neighbours", "2", QUERY
    ).stdout
    rows = [line.split("\t") for line in out.splitlines()]
    assert [(r[2], r[3]) for r in rows] == [
        ("-2", f"user: {TURNS[0][1]}"),
        ("-1", f"assistant: {TURNS[1][1]}"),
        ("0", TURNS[2][1]),
        ("+1", f"assistant: {TURNS[3][1]}"),
        ("+2", f"user: {TURNS[4][1]}"),
    ]
    assert [r[0] == "" for r in rows] == [True, True, False, True, True]  # score: the hit's only


def test_neighbours_out_of_range_is_one_line_and_exit_2(local_cli) -> None:
    result = local_cli("search", "--neighbours", "6", "hut")
    assert result.exit_code == 2
    assert result.stderr.strip().splitlines() == ["memcore: error: neighbours must be from 0 to 5"]


def test_neighbours_on_tablestore_is_one_line_and_exit_2(emulator_cli) -> None:
    emulator_cli.ok("add", "--sync", "Alice booked the hut near Triglav")
    result = emulator_cli("search", "--neighbours", "1", "Triglav")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("memcore: error: ")
    assert "only the embedded store can" in lines[0] and "Traceback" not in result.stderr
    assert emulator_cli.json("search", "Triglav")  # without it, the same store answers


def test_the_help_of_evidence_says_the_embedded_store_has_none(local_cli, tmp_path: Path) -> None:
    _seed(local_cli, tmp_path)
    hits = local_cli.json("search", "--evidence", QUERY)
    assert hits and not any("evidence" in hit for hit in hits)  # nothing is attached here
    usage = " ".join(local_cli.ok("search", "--help").stdout.split())
    assert "--evidence Attach the messages each hit came from (TableStore; the embedded" in usage


def test_the_help_of_neighbours_says_where_the_turns_are_shown(local_cli) -> None:
    """The turns before a hit are printed above its row, those after below it."""
    usage = " ".join(local_cli.ok("search", "--help").stdout.split())
    assert "rows -N..-1 above the hit, +1..+N below it" in usage, usage
