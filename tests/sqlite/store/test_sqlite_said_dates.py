"""The day a memory is shown with is a day it was said: a repeat replayed today, a metadata
change or a dream pass writes the row today, but only a new text moves that day. Run on the
embedded store and on the core's fake, which keep ``said_at``."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memcore import MemcoreConfig, Memory
from memcore.recall import format_recall
from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore

UTC = timezone.utc


def today() -> str:
    """The UTC day now (read when needed: a constant taken at import went stale at midnight)."""
    return datetime.now(UTC).strftime("%Y-%m-%d")


TEXT = "I adopted a cat named Miso"


def said(month: int) -> dict[str, object]:
    when = datetime(2023, month, 12, 9, 30, tzinfo=UTC).isoformat()
    return {"role": "user", "content": TEXT, "timestamp": when}


@pytest.fixture(params=["sqlite", "fake"])
def mem(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Memory]:
    if request.param == "fake":
        yield Memory(InMemoryMemoryStore(), scope=Scope("hermes", "ana", "hermes", "__default__"))
        return
    config = MemcoreConfig(embedder="none")
    with Memory.open("local", config=config, user_id="ana", path=tmp_path / "m.db") as opened:
        yield opened


def block(mem: Memory) -> str:
    return format_recall(mem.search("cat Miso"))


def test_a_replayed_repeat_shows_the_day_it_was_said_not_the_replay_day(mem: Memory) -> None:
    mem.add(messages=[said(3)])
    assert f"[2023-03-12] {TEXT}" in block(mem)
    mem.add(messages=[said(4)])  # said again a month later, replayed today
    [memory] = mem.list().items
    assert memory.version == 2 and memory.said_at is not None
    assert f"[2023-04-12] {TEXT}" in block(mem)
    mem.add(messages=[said(2)])  # an older occurrence changes nothing
    assert f"[2023-04-12] {TEXT}" in block(mem)


def test_a_metadata_change_keeps_the_day_and_a_new_text_is_said_today(mem: Memory) -> None:
    mem.add(messages=[said(3)])
    [memory] = mem.list().items
    mem.update(memory.id, metadata={"topic": "pets"})
    assert f"[2023-03-12] {TEXT}" in block(mem)
    before = today()
    mem.update(memory.id, text="I adopted a cat named Miso Soup")
    days = {before, today()}  # the day may turn while the test runs
    assert any(f"[{day}] I adopted a cat named Miso Soup" in block(mem) for day in days)


def test_a_row_written_before_the_said_time_was_kept_is_dated_as_before(tmp_path: Path) -> None:
    """Schema 10 added ``said_at``; an older row has none and shows ``created_at`` while it
    is unchanged (version 1), as before, and a repeat then gives it one."""
    path = tmp_path / "m.db"
    config = MemcoreConfig(embedder="none")
    with Memory.open("local", config=config, user_id="ana", path=path) as mem:
        mem.add(messages=[said(3)])
    conn = sqlite3.connect(path)
    conn.execute("UPDATE memories SET said_at = NULL")
    conn.commit()
    conn.close()
    with Memory.open("local", config=config, user_id="ana", path=path) as mem:
        [memory] = mem.list().items
        assert memory.said_at is None
        assert f"[2023-03-12] {TEXT}" in block(mem)
        mem.add(messages=[said(4)])
        assert f"[2023-04-12] {TEXT}" in block(mem)
        mem.add(messages=[said(2)])  # older than the message log's newest: nothing changes
        assert f"[2023-04-12] {TEXT}" in block(mem)
