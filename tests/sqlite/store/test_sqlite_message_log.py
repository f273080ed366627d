"""``MessageLog`` on the embedded store, what a backup carries the turns around a hit with:
listed under a pattern with the memory each message became, restored in one transaction,
never twice, never linked to a memory of another scope, and never into another tenant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memcore.errors import InvalidInput
from memcore.ports import MessageLog
from memcore.scope import Scope
from memcore.service import MemoryService
from memcore.values import LoggedMessage, Message
from memcore_sqlite import SqliteMemoryStore

ANA = Scope("hermes", "ana", "hermes", "s1")
ANA_2 = Scope("hermes", "ana", "hermes", "s2")
BOB = Scope("hermes", "bob", "hermes", "s1")
STORE = "memories"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    opened = SqliteMemoryStore(tmp_path / "m.db", embedder=None)
    opened.ensure_store(STORE)
    yield opened
    opened.close()


def _said(scope: Scope, *texts: str) -> list[Message]:
    return [
        Message(role="user", content=t, id=f"m{i}", timestamp=1_700_000_000.0 + i, scope=scope)
        for i, t in enumerate(texts)
    ]


def test_the_log_lists_each_message_with_the_memory_it_became(store: SqliteMemoryStore) -> None:
    assert isinstance(store, MessageLog)
    receipt = store.add_messages(STORE, ANA, _said(ANA, "one", "two"), sync=True)
    store.add_messages(STORE, BOB, _said(BOB, "bob's"), sync=True)
    page = store.list_logged_messages(STORE, ANA.tenant_pattern(), limit=1)
    rest = store.list_logged_messages(STORE, ANA.tenant_pattern(), next_token=page.next_token)
    logged = [*page.items, *rest.items]
    assert [(m.message.content, m.memory_id) for m in logged] == list(
        zip(["one", "two"], receipt.memory_ids)
    )
    assert rest.next_token is None


def test_a_restore_links_only_to_a_memory_of_the_messages_own_scope(
    store: SqliteMemoryStore,
) -> None:
    ana = MemoryService(store, store_name=STORE, scope=ANA)
    bob = MemoryService(store, store_name=STORE, scope=BOB)
    [own] = ana.remember("one").memory_ids
    [other_run] = MemoryService(store, store_name=STORE, scope=ANA_2).remember("x").memory_ids
    [bobs] = bob.remember("bob's").memory_ids
    said = _said(ANA, "one", "two", "three")
    links = [own, other_run, bobs]
    assert ana.logs.restore_messages([LoggedMessage(m, i) for m, i in zip(said, links)]) == 3
    listed = list(ana.logs.every_message())
    assert [(m.message.content, m.memory_id) for m in listed] == [
        ("one", own),
        ("two", None),
        ("three", None),
    ]
    assert list(bob.logs.every_message()) == []
    # Logged already: a second restore adds nothing.
    assert ana.logs.restore_messages([LoggedMessage(m, i) for m, i in zip(said, links)]) == 0


def test_a_restore_into_another_tenant_is_refused_whole(store: SqliteMemoryStore) -> None:
    ana = MemoryService(store, store_name=STORE, scope=ANA)
    mixed = [LoggedMessage(m) for m in [*_said(ANA, "mine"), *_said(BOB, "not mine")]]
    with pytest.raises(InvalidInput, match=r"messages\[1\]\.scope is outside"):
        ana.logs.restore_messages(mixed)
    assert list(ana.logs.every_message()) == []
    assert store.list_logged_messages(STORE, BOB.tenant_pattern()).items == ()


def test_a_message_without_an_id_or_a_time_is_not_logged_twice(
    store: SqliteMemoryStore,
) -> None:
    # A hand-written log line may leave out its id or its time: the store makes one up when it
    # logs it, so a second restore must match on what the line does give.
    ana = MemoryService(store, store_name=STORE, scope=ANA)
    said = [
        Message(role="user", content="no id", timestamp=1_700_000_000.0, scope=ANA),
        Message(role="user", content="no time", id="t1", scope=ANA),
        Message(role="assistant", content="neither", scope=ANA),
    ]
    assert ana.logs.restore_messages([LoggedMessage(m) for m in said]) == 3
    assert ana.logs.restore_messages([LoggedMessage(m) for m in said]) == 0
    assert sorted(m.message.content for m in ana.logs.every_message()) == [
        "neither",
        "no id",
        "no time",
    ]
    # Given in full, a message differing in its id or time is another message.
    other = Message(role="user", content="no id", id="x", timestamp=1_700_000_001.0, scope=ANA)
    assert ana.logs.restore_messages([LoggedMessage(other)]) == 1
