"""Delivery keeps order per scope only: one session's stuck write never holds up another's."""

from __future__ import annotations

from pathlib import Path

import pytest

from memcore.paging import every_item
from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message
from memcore_hermes.outbox.delivery import Deliverer, RetryPolicy, StoreHandle
from memcore_hermes.outbox.entries import MessagesWrite, make_entry
from memcore_hermes.outbox.spool import SqliteOutbox

STORE = "hermes_mem"
A = Scope("hermes", "alice", "hermes", "session-a")
B = Scope("hermes", "bob", "hermes", "session-b")


def turn(scope: Scope, text: str) -> MessagesWrite:
    return MessagesWrite(STORE, scope, (Message(role="user", content=text),))


@pytest.fixture
def setup(tmp_path: Path) -> tuple[SqliteOutbox, InMemoryMemoryStore, Deliverer]:
    spool = SqliteOutbox(tmp_path / "s.sqlite3")
    store = InMemoryMemoryStore()
    handle = StoreHandle(lambda: store, store_name=STORE, description="", auto_create=True)
    deliverer = Deliverer(spool, handle, retry=RetryPolicy(), lease_s=30.0, clock=lambda: 100.0)
    yield spool, store, deliverer
    spool.close()


def sent(store: InMemoryMemoryStore, scope: Scope) -> list[str]:
    return [m.content for m in store.list_messages(STORE, scope, limit=100).items]


def spool_turns(spool: SqliteOutbox, *writes: MessagesWrite) -> list[str]:
    entries = [make_entry(w, now=50.0)[0] for w in writes]
    spool.put_fast(entries)
    return [e.key for e in entries]


def test_a_write_another_worker_is_sending_holds_back_only_its_scope(
    setup: tuple[SqliteOutbox, InMemoryMemoryStore, Deliverer],
) -> None:
    spool, store, deliverer = setup
    keys = spool_turns(spool, turn(A, "a1"), turn(B, "b1"), turn(A, "a2"), turn(B, "b2"))
    taken = spool.claim(keys[0], now=100.0, lease_s=5.0, owner="99999:other-lane")
    assert taken.entry is not None
    delay = deliverer.drain()
    assert sent(store, B) == ["b1", "b2"]
    assert sent(store, A) == []  # a2 waits behind a1, which the other worker holds
    assert delay == pytest.approx(5.0)
    assert [e.key for e in spool.pending()] == [keys[0], keys[2]]


def test_a_write_waiting_for_its_retry_holds_back_only_its_scope(
    setup: tuple[SqliteOutbox, InMemoryMemoryStore, Deliverer],
) -> None:
    spool, store, deliverer = setup
    keys = spool_turns(spool, turn(A, "a1"), turn(A, "a2"), turn(B, "b1"))
    spool.retry_later(keys[0], next_attempt_at=130.0, error="throttled")
    assert deliverer.drain() == pytest.approx(30.0)
    assert sent(store, B) == ["b1"] and sent(store, A) == []
    assert deliverer.drain(force=True) is None  # a flush ignores the retry delay, in order
    assert sent(store, A) == ["a1", "a2"]


def test_a_replay_in_a_long_session_finds_its_landed_write(
    setup: tuple[SqliteOutbox, InMemoryMemoryStore, Deliverer],
) -> None:
    """The check before a replay reads the whole run: a long session's last turn is not resent."""
    spool, store, deliverer = setup
    store.ensure_store(STORE, create=True)
    history = [Message(role="user", content=f"old {i}") for i in range(2500)]
    for start in range(0, len(history), 20):
        store.add_messages(STORE, A, history[start : start + 20])
    [key] = spool_turns(spool, turn(A, "the last turn"))
    claim = spool.claim(
        key, now=100.0, lease_s=5.0, owner="me:lane"
    )  # an attempt whose answer was lost...
    assert claim.entry is not None
    from memcore_hermes.outbox.entries import decode

    write = decode(claim.entry)
    store.add_messages(STORE, A, write.messages)  # ...after it had landed
    spool.retry_later(key, next_attempt_at=0.0, error="read timed out")
    assert deliverer.drain() is None
    contents = [m.content for m in store.list_messages(STORE, A, limit=100, next_token=None).items]
    assert contents[0] == "old 0"
    every = [
        m.content
        for m in every_item(
            lambda token: store.list_messages(STORE, A, limit=100, next_token=token)
        )
    ]
    assert every.count("the last turn") == 1


def test_a_lane_whose_store_is_not_open_leaves_another_workers_send_alone(
    setup: tuple[SqliteOutbox, InMemoryMemoryStore, Deliverer],
) -> None:
    """A lane whose store cannot be opened yet (a gateway session started while its store
    could not be opened) noted its reason on the first waiting write and released that
    write's lease with it, while another lane was sending it: a third lane then took it and
    sent it again. The reason is noted now; the lease stays its sender's."""
    from memcore.errors import Unavailable

    spool, store, deliverer = setup
    [key] = spool_turns(spool, turn(A, "a1"))
    taken = spool.claim(key, now=100.0, lease_s=30.0, owner="99999:sending-lane")
    assert taken.entry is not None  # that lane's request is on its way

    def shut() -> InMemoryMemoryStore:
        raise Unavailable("TableStore could not be reached")

    closed = StoreHandle(shut, store_name=STORE, description="", auto_create=True)
    waiting = Deliverer(spool, closed, retry=RetryPolicy(), lease_s=30.0, clock=lambda: 100.0)
    assert waiting.drain() is not None
    [entry] = spool.pending()
    assert "TableStore could not be reached" in (entry.last_error or "")

    deliverer.drain(force=True)  # a third lane, with its store open
    assert sent(store, A) == []
    assert [e.key for e in spool.pending()] == [key]
