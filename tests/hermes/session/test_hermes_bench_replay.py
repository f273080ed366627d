"""The loop benchmarks' dated replay (``benchmarks/hermes_loop_recall.py --reference-time``,
``benchmarks/hermes_group_recall.py``) dates each turn on the day its session was said.

Hermes runs ``sync_all`` on a worker of its own after the call has returned, and the provider
stamps a turn with ``turn_time`` when that worker runs it. A replay that moved its clock to the
next session without waiting for the worker dated the turns still queued with a later
session's day: the recall blocks those benchmarks measure showed them so."""

from __future__ import annotations

import time
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memcore.paging import pages
from memcore.scope import ScopePattern
from memcore_hermes.session import runtime as runtime_module
from memcore_sqlite import SqliteMemoryStore

REPO = Path(__file__).resolve().parents[3]
CAT, KITCHEN = "I adopted a cat named Miso", "I repainted my kitchen green"
ITEM = {
    "question_id": "replay-1",
    "question_type": "temporal-reasoning",
    "question": "When did I adopt my cat?",
    "question_date": "2023/05/01 (Mon) 10:00",
    "haystack_dates": ["2023/03/01 (Wed) 09:00", "2023/04/10 (Mon) 18:30"],
    "haystack_sessions": [
        [{"role": "user", "content": CAT, "has_answer": True}],
        [{"role": "user", "content": KITCHEN}],
    ],
}


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(REPO))
    import benchmarks.hermes_loop_recall as bench

    return bench


@pytest.fixture
def home(bench: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A Hermes home with the plugin copied in, on an embedded store at ``replay.db``."""
    config = {"backend": "local", "local_path": str(tmp_path / "replay.db"), "embedder": "none"}
    made: Path = bench._home(tmp_path, "home", config, None)
    monkeypatch.setenv("HERMES_HOME", str(made))
    monkeypatch.setenv("HOME", str(tmp_path))
    return made


@pytest.fixture
def late_worker(monkeypatch: pytest.MonkeyPatch) -> None:
    """Hermes' worker runs each turn 50 ms after ``sync_all`` returned (a busy machine)."""
    real = runtime_module.MemoryRuntime.record_turn

    def late(self: Any, *args: Any, **kwargs: Any) -> Any:
        time.sleep(0.05)
        return real(self, *args, **kwargs)

    monkeypatch.setattr(runtime_module.MemoryRuntime, "record_turn", late)


def _said(db: Path) -> dict[str, date]:
    with SqliteMemoryStore(db) as store:
        listing = pages(
            lambda token: store.list_memories(
                "hermes_mem", ScopePattern("hermes"), next_token=token
            )
        )
        return {
            m.text: datetime.fromtimestamp(m.said_at or m.created_at or 0, timezone.utc).date()
            for page in listing
            for m in page.items
        }


@pytest.mark.usefixtures("late_worker")
def test_a_replayed_turn_is_dated_on_its_sessions_day(bench: Any, home: Path) -> None:
    row = bench.run_question(ITEM, 0, home, None, None, dated=True)
    said = _said(home.parent / "replay.db")
    assert (said[CAT], said[KITCHEN]) == (date(2023, 3, 1), date(2023, 4, 10)), said
    assert row["now_hit"] and row["at_hit"] and row["now_dates"] == [1, 1], row


@pytest.mark.usefixtures("late_worker", "bench")
def test_a_group_replay_dates_each_line_on_its_sessions_day(home: Path) -> None:
    from benchmarks.hermes_group_recall import live

    turns = [
        {"id": "t1", "speaker": "Priya", "text": CAT, "session": 1, "date": "2023-03-01T09:00"},
        {"id": "t2", "speaker": "Tom", "text": KITCHEN, "session": 2, "date": "2023-04-10T18:30"},
    ]
    question = {"question": "When did Priya adopt a cat?", "evidence": ["t1"], "kind": "temporal"}
    rows = live({"id": "c1", "turns": turns}, [question], home, None)
    said = _said(home.parent / "replay.db")
    assert (said[f"[Priya] {CAT}"], said[f"[Tom] {KITCHEN}"]) == (
        date(2023, 3, 1),
        date(2023, 4, 10),
    ), said
    assert rows == [{"kind": "temporal", "asker": 1.0, "plain": 1.0}], rows


REPLY = "The results section reports an average framerate improvement of about 20 percent."


def test_evidence_only_in_a_sessions_opening_reply_is_counted_apart(bench: Any) -> None:
    """Hermes' ``sync_all`` drops a turn with no user message, so a reply that opens a
    session never reaches the provider: a question answered only there is not a miss of
    the recall, and the summary says which questions those are."""
    opening = [{"role": "assistant", "content": REPLY, "has_answer": True}]
    assert bench._pairs([*opening, *ITEM["haystack_sessions"][0]]) == [(CAT, "")]
    assert bench._given(ITEM, bench._evidence(ITEM))
    cut = {**ITEM, "haystack_sessions": [opening, ITEM["haystack_sessions"][1]]}
    assert not bench._given(cut, bench._evidence(cut))
    row = {"id": "q", "type": "t", "first_hit": False, "second_hit": False, "first_chars": 1}
    rows = [
        {**row, "id": "given", "first_hit": True, "evidence_given": True},
        {**row, "id": "never", "evidence_given": False},
    ]
    summary = bench.summarize(
        [
            {
                **r,
                "second_chars": 1,
                "prefetch_s": [0.001, 0.002, 0.001],
                "ingest_s": 0.0,
                "turns": 1,
                "phases": [{}, {}, {}],
            }
            for r in rows
        ]
    )
    assert summary["evidence_never_given"] == ["never"]
    assert summary["first_message_evidence"] == 0.5
    assert summary["first_message_evidence_of_given"] == 1.0


def test_top_k_asks_once_more_with_that_many_memories_shown(bench: Any, home: Path) -> None:
    """``--top-k K``: the same question, on the same ingest, with the plugin's ``top_k`` at K."""
    both = {**ITEM, "question": "Did I adopt a cat or repaint my kitchen?"}
    row = bench.run_question(both, 0, home, None, None, top_k=1)
    shown = {
        name: sum(bench.fold(text) in row[f"{name}_block"] for text in (CAT, KITCHEN))
        for name in ("now", "tk")
    }
    assert shown == {"now": 2, "tk": 1}, row
    assert row["now_hit"] and row["tk_chars"] < row["now_chars"], row
