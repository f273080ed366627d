"""``memcore search --at``: time words in the query are read from when the question is asked."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

QUESTION = "Where did I go hiking last month?"


def _at(year: int, month: int, day: int) -> float:
    return datetime(year, month, day, 12, tzinfo=timezone.utc).timestamp()


def test_search_at_reads_last_month_from_the_given_time(local_cli, tmp_path: Path) -> None:
    """Two memories lexical search ties, dated March and April 2023 (``import`` keeps
    ``created_at``): the one said in the month before ``--at`` comes first."""
    lines = tmp_path / "hikes.jsonl"
    lines.write_text(
        "".join(
            json.dumps(
                {
                    "text": text,
                    "scope": {
                        "app_id": "hermes",
                        "tenant_id": "__default__",
                        "agent_id": "x",
                        "run_id": run,
                    },
                    "metadata": {},
                    "created_at": when,
                }
            )
            + "\n"
            for text, run, when in (
                ("I went hiking with Sam", "r1", _at(2023, 3, 12)),
                ("I went hiking with Ana", "r2", _at(2023, 4, 19)),
            )
        ),
        "utf-8",
    )
    local_cli.ok("import", str(lines))

    def texts(*at: str) -> list[str]:
        return [h["text"] for h in local_cli.json("search", *at, QUESTION)][:2]

    sam, ana = "I went hiking with Sam", "I went hiking with Ana"
    assert texts("--at", "2023-04-22T08:01:00Z") == [sam, ana]
    assert texts("--at", "2023-05-20") == [ana, sam]
    assert texts() == [ana, sam]  # now: neither is last month's, the newer first
