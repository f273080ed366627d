"""memcore.Memory (the library facade), backend discovery, errors, and the fake's fault plan."""

from __future__ import annotations

import pytest

import memcore
from memcore.errors import ConfigError, InvalidInput, MemcoreError, NotFound, Throttled, Unavailable
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message


def test_facade_round_trip() -> None:
    mem = memcore.Memory(InMemoryMemoryStore())
    [receipt] = mem.add(text="The user likes coffee", metadata={"topic": "drinks"})
    mid = receipt.memory_ids[0]
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


def test_unknown_backend_lists_the_installed_ones() -> None:
    with pytest.raises(ConfigError) as err:
        memcore.open_store("no-such-backend")
    assert "installed backends" in str(err.value)


def test_errors_are_typed_and_json_safe() -> None:
    err = Throttled("slow down")
    assert err.retryable and isinstance(err, MemcoreError)
    assert err.to_dict() == {
        "type": "Throttled",
        "code": "throttled",
        "message": "slow down",
        "retryable": True,
    }
    assert not InvalidInput("x", field="text").retryable


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
