"""memcore.Memory (the library facade), backend discovery, and the fake's fault plan."""

from __future__ import annotations

import pytest

import memcore
from memcore.errors import (
    ConfigError,
    InvalidInput,
    NotFound,
    StoreClosed,
    Throttled,
    Unavailable,
)
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message


def test_facade_round_trip() -> None:
    mem = memcore.Memory(InMemoryMemoryStore())
    [mid] = mem.add(text="The user likes coffee", metadata={"topic": "drinks"})
    assert isinstance(mid, str)
    assert [h.memory.id for h in mem.search("coffee")] == [mid]
    assert [m.id for m in mem.list().items] == [mid]
    assert mem.update(mid, text="The user likes espresso").text == "The user likes espresso"
    assert mem.get(mid).metadata == {"topic": "drinks"}
    mem.delete(mid)
    with pytest.raises(NotFound):
        mem.get(mid)


def test_facade_messages() -> None:
    mem = memcore.Memory(InMemoryMemoryStore())
    mem.add(
        messages=[{"role": "user", "content": "I have two cats"}, Message("assistant", "Nice!")]
    )
    assert mem.search("cats")
    with pytest.raises(InvalidInput):
        mem.add(messages=[{"role": "user"}])
    with pytest.raises(InvalidInput):
        mem.add()


def test_a_turn_s_metadata_and_a_message_s_own_stay_within_the_key_limit() -> None:
    """The write's keys and a message's own were merged unbounded (16 + 16 keys refused)."""
    mem = memcore.Memory(InMemoryMemoryStore())
    own = {f"m{i:02d}": "own" for i in range(10)}
    shared = {f"w{i:02d}": "write" for i in range(10)}
    mem.add(messages=[Message("user", "I have two cats", metadata=own)], metadata=shared)
    [memory] = mem.list().items
    assert dict(memory.metadata) == {**own, **{f"w{i:02d}": "write" for i in range(6)}}


def test_unknown_backend_lists_the_installed_ones() -> None:
    with pytest.raises(ConfigError) as err:
        memcore.open_store("no-such-backend")
    assert "installed backends" in str(err.value)


def test_fault_plan_on_call_and_operation() -> None:
    store = InMemoryMemoryStore()
    store.ensure_store("m")
    store.faults.fail_on_call(2, Unavailable("down"))
    store.list_stores()
    with pytest.raises(Unavailable):
        store.list_stores()
    store.list_stores()
    store.faults.fail_operation("search", Throttled("busy"), times=1)
    with pytest.raises(Throttled):
        store.search("m", memcore.ScopePattern("a"), "x")
    assert store.search("m", memcore.ScopePattern("a"), "x") == []


def test_add_receipts_keep_the_backend_detail() -> None:
    mem = memcore.Memory(InMemoryMemoryStore())
    [receipt] = mem.add_receipts(text="The user likes tea")
    assert receipt.memory_ids and receipt.status


def test_a_closed_memory_says_closed() -> None:
    mem = memcore.Memory(InMemoryMemoryStore())
    mem.close()
    mem.close()
    with pytest.raises(StoreClosed) as info:
        mem.search("anything")
    assert "closed" in str(info.value)
    assert info.value.to_dict()["code"] == "store_closed"
    assert not isinstance(info.value, InvalidInput)
