"""``memcore.AsyncMemory``: the same surface as ``Memory``, derived from it, run off the
event loop, through the same service."""

from __future__ import annotations

import asyncio
import inspect

import pytest

import memcore
from memcore import AsyncMemory, Memory
from memcore.errors import InvalidInput, NotFound, StoreClosed
from memcore.testing import InMemoryMemoryStore


def _public(cls: type) -> dict[str, object]:
    return {n: inspect.getattr_static(cls, n) for n in dir(cls) if not n.startswith("_")}


def test_async_memory_has_exactly_the_sync_surface() -> None:
    sync, twin = _public(Memory), _public(AsyncMemory)
    assert sorted(sync) == sorted(twin)
    for name, member in sync.items():
        other = twin[name]
        assert type(member) is type(other), name
        if isinstance(member, property):
            continue
        call = getattr(Memory, name)
        acall = getattr(AsyncMemory, name)
        assert list(inspect.signature(call).parameters.values()) == list(
            inspect.signature(acall).parameters.values()
        ), name
        awaited = inspect.iscoroutinefunction(acall) or inspect.isasyncgenfunction(acall)
        assert awaited == (name != "scope_for"), name


def test_async_memory_methods_are_derived_from_the_sync_declaration() -> None:
    """One declaration: each twin wraps the very sync method and carries its docstring,
    so a change to ``Memory`` reaches ``AsyncMemory``."""
    for name, member in _public(Memory).items():
        if isinstance(member, property):
            continue
        sync_fn = getattr(member, "__func__", member)
        twin = getattr(AsyncMemory, name)
        assert inspect.unwrap(getattr(twin, "__func__", twin)) is sync_fn, name
        assert inspect.getdoc(sync_fn) in (inspect.getdoc(twin) or ""), name


def test_every_public_method_has_a_docstring_with_an_example() -> None:
    for cls in (Memory, AsyncMemory):
        for name, member in _public(cls).items():
            if isinstance(member, property):
                assert (member.__doc__ or "").strip(), f"{cls.__name__}.{name}"
                continue
            doc = inspect.getdoc(getattr(cls, name)) or ""
            assert ">>>" in doc, f"{cls.__name__}.{name} has no example"


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


@pytest.mark.parametrize("given", [InMemoryMemoryStore(), None, "alice"])
def test_async_memory_refuses_what_is_not_a_memory_at_once(given: object) -> None:
    """``AsyncMemory(store)`` (as one writes ``Memory(store)``) is refused when built, not
    as an AttributeError at the first awaited call."""
    with pytest.raises(InvalidInput) as info:
        AsyncMemory(given)  # type: ignore[arg-type]
    assert info.value.field == "memory" and "Memory" in info.value.message


def test_a_write_cancelled_midway_has_landed_or_not_when_the_cancel_is_seen() -> None:
    """The worker thread cannot be stopped: a cancelled write waits for it, so that a read
    right after the ``CancelledError`` sees what the write did (not that it lands later)."""
    import threading
    import time

    started = threading.Event()

    class SlowStore(InMemoryMemoryStore):
        def add_text(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            started.set()
            time.sleep(0.3)
            return super().add_text(*args, **kwargs)

        def delete_memory(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            started.set()
            time.sleep(0.3)
            return super().delete_memory(*args, **kwargs)

    async def cancelled(mem: AsyncMemory, call: asyncio.Future[object]) -> None:
        task = asyncio.ensure_future(call)
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        started.clear()

    async def scenario() -> None:
        mem = AsyncMemory(Memory(SlowStore()))
        await cancelled(mem, mem.add(text="The user likes coffee"))
        after_add = [m.text for m in mem.sync.iter_all()]
        assert after_add == ["The user likes coffee"]
        [memory] = mem.sync.iter_all()
        await cancelled(mem, mem.delete(memory.id))
        assert [m.text for m in mem.sync.iter_all()] == []

    asyncio.run(scenario())


def test_a_write_cancelled_twice_still_has_landed_or_not_when_the_cancel_is_seen() -> None:
    """A second cancel (an outer timeout over an inner one, a task group shutting down) used
    to stop the wait: the ``CancelledError`` came while the worker thread still wrote, and the
    write landed later, with no one told. Every cancel now waits for the call to end."""
    import threading
    import time

    started = threading.Event()

    class SlowStore(InMemoryMemoryStore):
        def add_text(self, *args, **kwargs):  # type: ignore[no-untyped-def]
            started.set()
            time.sleep(0.3)
            return super().add_text(*args, **kwargs)

    async def scenario() -> None:
        mem = AsyncMemory(Memory(SlowStore()))
        task = asyncio.ensure_future(mem.add(text="The user likes coffee"))
        while not started.is_set():
            await asyncio.sleep(0.01)
        task.cancel()
        await asyncio.sleep(0.05)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert [m.text for m in mem.sync.iter_all()] == ["The user likes coffee"]

    asyncio.run(scenario())
