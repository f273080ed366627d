"""``hermes tablestore-mem search --at``: time words in the query are read from when the
question is asked, as ``memcore search --at``; a bad value is the usual JSON error, exit 2."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memcore import Memory
from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore

QUESTION = "Where did I go hiking last month?"
SAM, ANA = "I went hiking with Sam", "I went hiking with Ana"


def _at(month: int, day: int) -> float:
    return datetime(2023, month, day, 12, tzinfo=timezone.utc).timestamp()


@pytest.fixture
def dated_home(hermes_home: Path, kit: Any, tmp_path: Path) -> Path:
    """Dana's hikes said in March and April 2023; lexical search, so only dates order them."""
    db = tmp_path / "dated.sqlite3"
    kit.write_config(hermes_home, backend="local", embedder="none", local_path=str(db))
    store = SqliteMemoryStore(db)
    store.ensure_store("hermes_mem")
    for text, run, when in ((SAM, "r1", _at(3, 12)), (ANA, "r2", _at(4, 19))):
        mem = Memory(
            store, scope=Scope("hermes", "telegram:dana", "hermes", run), store_name="hermes_mem"
        )
        mem.add(messages=[Message("user", text, timestamp=when)])
    store.close()
    return hermes_home


def test_search_at_reads_last_month_from_the_given_time(
    dated_home: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    def texts(*at: str) -> list[str]:
        code, found = kit.run_cli(
            capsys, "search", QUESTION, "--user-id", "dana", "--platform", "telegram", *at
        )
        assert code == 0, found
        return [r["text"] for r in found["results"]][:2]

    assert texts("--at", "2023-04-22T08:01:00Z") == [SAM, ANA]
    assert texts("--at", "2023-05-20") == [ANA, SAM]
    assert texts() == [ANA, SAM]  # now: neither is last month's, the newer first


@pytest.mark.parametrize("bad", ["last Tuesday", "2023-02-30", "0001-01-01"])
def test_a_bad_at_is_a_json_error_and_exit_2(
    dated_home: Path, kit: Any, capsys: pytest.CaptureFixture[str], bad: str
) -> None:
    code, answer = kit.run_cli(
        capsys, "search", QUESTION, "--user-id", "dana", "--platform", "telegram", "--at", bad
    )
    assert code == 2
    assert (answer["error"]["code"], answer["error"]["field"]) == ("invalid_input", "at")
    assert answer["error"]["message"].startswith("--at must be")
