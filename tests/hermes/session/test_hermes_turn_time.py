"""The turn's time reaches the search: the recall before a turn, the search tool and the
pre-compression search read "last month" from when the turn is asked. Hermes passes no time
with a turn, so the provider reads it from its ``turn_time`` (now unless a replay sets it).
Driven by Hermes' real ``MemoryManager`` over the embedded store, lexical so the two
memories below tie and only their dates can order them."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from memcore import Memory
from memcore.scope import Scope
from memcore.values import Message
from memcore_hermes import MemcoreMemoryProvider
from memcore_sqlite import SqliteMemoryStore

STORE = "hermes_mem"
QUESTION = "Where did I go hiking last month?"
SAM, ANA = "I went hiking with Sam", "I went hiking with Ana"
APRIL_22 = datetime(2023, 4, 22, 8, 1, tzinfo=timezone.utc)  # "last month" is March
MAY_20 = datetime(2023, 5, 20, 9, tzinfo=timezone.utc)  # "last month" is April


def _at(month: int, day: int) -> float:
    return datetime(2023, month, day, 12, tzinfo=timezone.utc).timestamp()


class TurnClock:
    """The time of the turn being answered, as a replay of dated conversations sets it."""

    def __init__(self, now: datetime) -> None:
        self.now = now

    def __call__(self) -> datetime:
        return self.now


@pytest.fixture
def dated_store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    """Dana's hikes, said in March and in April 2023 in earlier sessions."""
    store = SqliteMemoryStore(tmp_path / "dated.sqlite3")
    store.ensure_store(STORE)
    for text, run, when in ((SAM, "r1", _at(3, 12)), (ANA, "r2", _at(4, 19))):
        mem = Memory(store, scope=Scope("hermes", "telegram:dana", "hermes", run), store_name=STORE)
        mem.add(messages=[Message("user", text, timestamp=when)])
    yield store
    store.close()


@pytest.fixture
def manager(hermes_home: Path, kit: Any, dated_store: SqliteMemoryStore) -> Iterator[Any]:
    """Builds Hermes' ``MemoryManager`` over the dated store, the provider given
    ``provider`` keywords; each is shut down after the test."""
    from agent.memory_manager import MemoryManager

    kit.write_config(hermes_home, backend="local", embedder="none")
    made: list[Any] = []

    def make(**provider: Any) -> Any:
        mm = MemoryManager()
        mm.add_provider(
            MemcoreMemoryProvider(
                store_factory=lambda _config: dated_store, retry=kit.FAST_RETRY, **provider
            )
        )
        mm.initialize_all(
            session_id="s1", platform="telegram", agent_context="primary", user_id="dana"
        )
        made.append(mm)
        return mm

    yield make
    for mm in made:
        mm.shutdown_all()


def _order(text: str) -> list[str]:
    """SAM and ANA in the order ``text`` names them."""
    return sorted((n for n in (SAM, ANA) if n in text), key=text.index)


def _tool_order(mm: Any, **args: Any) -> list[str]:
    answer = json.loads(mm.handle_tool_call("tablestore_search", {"query": QUESTION, **args}))
    return [r["text"] for r in answer["results"]][:2]


def test_the_recall_before_a_turn_reads_time_words_from_the_turns_time(manager: Any) -> None:
    clock = TurnClock(APRIL_22)
    mm = manager(turn_time=clock)
    assert _order(mm.prefetch_all(QUESTION, session_id="s1")) == [SAM, ANA]
    clock.now = MAY_20  # the next turn, a month later
    assert _order(mm.prefetch_all(QUESTION, session_id="s1")) == [ANA, SAM]


def test_the_search_tool_uses_the_turns_time_unless_the_model_names_one(manager: Any) -> None:
    mm = manager(turn_time=TurnClock(APRIL_22))
    schema = next(s for s in mm.get_all_tool_schemas() if s["name"] == "tablestore_search")
    assert schema["parameters"]["properties"]["reference_time"]["type"] == "string"
    assert _tool_order(mm) == [SAM, ANA]
    assert _tool_order(mm, reference_time="2023-05-20T09:00:00Z") == [ANA, SAM]
    for bad in ("next week", "2023-02-30", 20230520, "0001-01-01"):
        answer = mm.handle_tool_call(
            "tablestore_search", {"query": QUESTION, "reference_time": bad}
        )
        error = json.loads(answer)["error"]
        assert (error["code"], error["field"]) == ("invalid_input", "reference_time"), bad


def test_the_pre_compression_search_uses_the_turns_time(manager: Any) -> None:
    mm = manager(turn_time=TurnClock(APRIL_22))
    said = mm.on_pre_compress([{"role": "user", "content": QUESTION}])
    assert _order(said) == [SAM, ANA]


def test_without_a_turn_time_the_turn_is_asked_now(manager: Any) -> None:
    """Asked today, last month holds neither hike: equal hits keep their order, newest first."""
    mm = manager()
    assert _order(mm.prefetch_all(QUESTION, session_id="s1")) == [ANA, SAM]
    assert _tool_order(mm) == [ANA, SAM]


@pytest.fixture
def replay(hermes_home: Path, kit: Any, tmp_path: Path) -> Iterator[Any]:
    """Replays Dana's turns through Hermes' ``MemoryManager``: ``replay(turns)`` syncs each
    ``(text, said)`` with ``turn_time`` set to when it was said, waits until they landed,
    and returns the manager and the clock (shut down after the test)."""
    from agent.memory_manager import MemoryManager

    kit.write_config(hermes_home, backend="local", embedder="none")
    store = SqliteMemoryStore(tmp_path / "replay.sqlite3")
    clock = TurnClock(datetime(2023, 3, 1, tzinfo=timezone.utc))
    provider = MemcoreMemoryProvider(
        store_factory=lambda _config: store, retry=kit.FAST_RETRY, turn_time=clock
    )
    mm = MemoryManager()
    mm.add_provider(provider)
    mm.initialize_all(session_id="s1", platform="telegram", agent_context="primary", user_id="dana")

    def run(turns: list[tuple[str, datetime]]) -> tuple[Any, TurnClock]:
        for text, said in turns:
            clock.now = said
            mm.sync_all(text, "", session_id="s1")
            # Hermes' worker stamps the turn when it runs it: not after the clock moved on.
            assert mm.flush_pending(30)
        provider.runtime.flush(30)
        provider.runtime.wait_idle(30)
        return mm, clock

    try:
        yield run
    finally:
        mm.shutdown_all()
        store.close()


def test_a_replay_stamps_each_turn_with_its_time(replay: Any) -> None:
    """A replay of dated conversations sets ``turn_time`` while it syncs the turns too: each
    is stored as said then, so "last month" finds it when asked later and the recall block
    dates it then."""
    mm, clock = replay(
        [
            (SAM, datetime(2023, 3, 12, 12, tzinfo=timezone.utc)),
            (ANA, datetime(2023, 4, 19, 12, tzinfo=timezone.utc)),
        ]
    )
    clock.now = APRIL_22
    block = mm.prefetch_all(QUESTION, session_id="s1")
    assert _order(block) == [SAM, ANA]
    # Each memory shows the day it was said (its created_at), not the day of the replay.
    assert f"[2023-03-12] {SAM}" in block and f"[2023-04-19] {ANA}" in block, block
    # The search tool gives the model the same dates, and the times they come from.
    answer = json.loads(mm.handle_tool_call("tablestore_search", {"query": QUESTION}))
    dated = {r["text"]: (r["date"], r["created_at"]) for r in answer["results"]}
    assert dated == {
        SAM: ("2023-03-12", _at(3, 12)),
        ANA: ("2023-04-19", _at(4, 19)),
    }, answer
    clock.now = MAY_20
    assert _order(mm.prefetch_all(QUESTION, session_id="s1")) == [ANA, SAM]


def test_a_turn_said_again_in_a_replay_shows_the_day_it_was_last_said(replay: Any) -> None:
    """The same turn said again later is one memory; the recall block and the search tool
    date it by its last saying (April 30), not by the day the replay wrote it (today)."""
    mm, clock = replay(
        [
            (SAM, datetime(2023, 3, 12, 12, tzinfo=timezone.utc)),
            (SAM, datetime(2023, 4, 30, 12, tzinfo=timezone.utc)),
        ]
    )
    clock.now = MAY_20
    block = mm.prefetch_all("Who did I go hiking with?", session_id="s1")
    assert f"[2023-04-30] {SAM}" in block, block
    answer = json.loads(mm.handle_tool_call("tablestore_search", {"query": "hiking Sam"}))
    [hit] = [r for r in answer["results"] if r["text"] == SAM]
    assert hit["date"] == "2023-04-30" and hit["created_at"] == _at(3, 12), hit


@pytest.fixture
def far_zone(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The machine's local time zone 14 hours ahead of UTC (Kiritimati)."""
    import time

    monkeypatch.setenv("TZ", "Etc/GMT-14")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def test_a_replays_naive_turn_time_is_utc_for_its_stamp_as_for_its_search(
    replay: Any, far_zone: None
) -> None:
    """A naive reference time is UTC (the search reads it so); a replay whose ``turn_time``
    gives naive times stamps its turns in UTC too, not in the machine's zone, or the recall
    block dates a turn said at 05:00 on 12 March on the 11th."""
    mm, clock = replay([(SAM, datetime(2023, 3, 12, 5)), (ANA, datetime(2023, 4, 19, 5))])
    clock.now = datetime(2023, 4, 22, 8)
    block = mm.prefetch_all(QUESTION, session_id="s1")
    assert f"[2023-03-12] {SAM}" in block and f"[2023-04-19] {ANA}" in block, block
    answer = json.loads(mm.handle_tool_call("tablestore_search", {"query": QUESTION}))
    said = {r["text"]: r["created_at"] for r in answer["results"]}
    assert said == {
        SAM: datetime(2023, 3, 12, 5, tzinfo=timezone.utc).timestamp(),
        ANA: datetime(2023, 4, 19, 5, tzinfo=timezone.utc).timestamp(),
    }, answer


def test_a_live_turn_that_waited_in_the_spool_is_dated_when_it_was_said(
    hermes_home: Path, kit: Any, tmp_path: Path
) -> None:
    """A live turn (no ``turn_time``) was stamped by the store when it landed: one that
    waited in the spool (another process's write lock here; an outage, or the next start
    days later) was recalled as said that later day. It is stamped when it is synced."""
    import sqlite3
    import time

    from agent.memory_manager import MemoryManager

    kit.write_config(hermes_home, backend="local", embedder="none")
    path = tmp_path / "live.sqlite3"
    store = SqliteMemoryStore(path, busy_timeout=0.2)
    store.ensure_store(STORE)
    provider = MemcoreMemoryProvider(store_factory=lambda _config: store, retry=kit.FAST_RETRY)
    mm = MemoryManager()
    mm.add_provider(provider)
    mm.initialize_all(session_id="s1", platform="telegram", agent_context="primary", user_id="dana")
    other = sqlite3.connect(path, isolation_level=None)
    try:
        other.execute("BEGIN IMMEDIATE")  # another process in a long write
        said = time.time()
        mm.sync_all("My sister Lena moved to Oslo", "", session_id="s1")
        assert mm.flush_pending(30)
        time.sleep(3)
        other.execute("COMMIT")
        provider.runtime.flush(30)
        provider.runtime.wait_idle(30)
        [memory] = provider.runtime.service(provider.runtime.handle.ready()).profile().items
        assert memory.said_at is not None and abs(memory.said_at - said) < 1.5, (
            memory.said_at - said
        )
    finally:
        other.close()
        mm.shutdown_all()
        store.close()
