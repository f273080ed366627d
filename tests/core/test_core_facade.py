"""memcore.Memory (the library facade), backend discovery, errors, and the fake's fault plan."""

from __future__ import annotations

import asyncio

import pytest

import memcore
from memcore.errors import (
    ConfigError,
    InvalidInput,
    MemcoreError,
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


def test_async_memory_goes_through_the_same_service() -> None:
    async def scenario() -> tuple[list[str], list[str], list[str], str, list[int]]:
        mem = memcore.AsyncMemory(memcore.Memory(InMemoryMemoryStore()))
        async with mem:
            [mid] = await mem.add(text="The user likes coffee")
            hits = [h.memory.id for h in await mem.search("coffee")]
            listed = [m.id async for m in mem.iter_all(page_size=1)]
            updated = (await mem.update(mid, text="The user likes espresso")).text
            sizes = []
            with pytest.raises(InvalidInput):  # the service's limits apply
                await mem.search("")
            with pytest.raises(InvalidInput):
                await mem.add()
            await mem.delete(mid)
            with pytest.raises(NotFound):
                await mem.get(mid)
            sizes.append(len((await mem.list()).items))
        with pytest.raises(StoreClosed):
            await mem.search("coffee")
        return [mid], hits, listed, updated, sizes

    ids, hits, listed, updated, sizes = asyncio.run(scenario())
    assert hits == ids and listed == ids
    assert updated == "The user likes espresso"
    assert sizes == [0]


def test_async_memory_does_not_block_the_event_loop() -> None:
    """Two searches and a timer share the loop: the timer fires while the calls run."""
    import time

    class SlowStore(InMemoryMemoryStore):
        def search(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            time.sleep(0.2)
            return super().search(*args, **kwargs)

    async def scenario() -> list[str]:
        events: list[str] = []
        mem = memcore.AsyncMemory(memcore.Memory(SlowStore()))

        async def tick() -> None:
            await asyncio.sleep(0.05)
            events.append("tick")

        async def look() -> None:
            await mem.search("coffee")
            events.append("search")

        await asyncio.gather(look(), tick())
        return events

    assert asyncio.run(scenario()) == ["tick", "search"]


def test_async_iter_all_pages_in_a_worker_thread_like_the_sync_one() -> None:
    """The same memories in the same order as ``Memory.iter_all``, and no page is fetched
    on the event loop's thread."""
    import threading

    callers: list[threading.Thread] = []

    class WatchedStore(InMemoryMemoryStore):
        def list_memories(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            callers.append(threading.current_thread())
            return super().list_memories(*args, **kwargs)

    sync = memcore.Memory(WatchedStore())
    for i in range(5):
        sync.add(text=f"The user likes tea number {i}")
    expected = [m.id for m in sync.iter_all(page_size=2)]
    callers.clear()

    async def scenario() -> list[str]:
        mem = memcore.AsyncMemory(sync)
        return [m.id async for m in mem.iter_all(page_size=2)]

    assert asyncio.run(scenario()) == expected and len(expected) == 5
    assert len(callers) == 3 and threading.main_thread() not in callers


def test_every_error_class_is_exported_by_the_errors_module() -> None:
    import inspect

    from memcore import errors

    defined = {
        name
        for name, value in vars(errors).items()
        if inspect.isclass(value)
        and issubclass(value, errors.MemcoreError)
        and value.__module__ == errors.__name__
    }
    assert defined == set(errors.__all__)
    assert defined <= set(memcore.__all__)
