"""memcore.Memory (the library facade), backend discovery, and the fake's fault plan."""

from __future__ import annotations

import asyncio

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


def test_an_iteration_stops_when_its_memory_closes() -> None:
    """``iter_all`` over a store the caller passed in went on reading pages after ``close``
    (the store stays open for its other users), and yielded the rows of a page it held."""
    mem = memcore.Memory(InMemoryMemoryStore())
    for i in range(5):
        mem.add(text=f"Fact number {i} about cats")
    items = mem.iter_all(page_size=2)
    first = next(items)
    mem.close()
    with pytest.raises(StoreClosed):
        next(items)
    assert first.text.startswith("Fact number")
    assert mem.store.list_memories("hermes_mem", memcore.ScopePattern("hermes"), limit=10).items


def test_an_async_iteration_stops_when_its_memory_closes() -> None:
    """The async twin reads through the sync iterator, so it stops there too."""

    async def run() -> list[str]:
        mem = memcore.AsyncMemory(memcore.Memory(InMemoryMemoryStore()))
        for i in range(5):
            await mem.add(text=f"Fact number {i} about cats")
        seen = []
        async for memory in mem.iter_all(page_size=1):
            seen.append(memory.text)
            await mem.close()
        return seen

    with pytest.raises(StoreClosed):
        asyncio.run(run())


def test_the_dream_actions_example_runs() -> None:
    """``help(Memory.dream_actions)`` showed ``a.type``, which a DreamAction does not have
    (its kind is ``a.action``): the example raised AttributeError."""
    doc = memcore.Memory.dream_actions.__doc__ or ""
    [example] = [line.split(">>>", 1)[1] for line in doc.splitlines() if ">>>" in line]
    code = example.split("#", 1)[0].strip()
    mem = memcore.Memory(InMemoryMemoryStore())
    for text in ("Alice keeps 3 cats", "alice  keeps 3 CATS"):
        mem.add(text=text, user_id="alice")
    task = mem.dream(apply_mode="proposal", user_id="alice")
    kinds = eval(code, {}, {"mem": mem, "task": task})
    assert kinds and all(isinstance(kind, str) for kind in kinds)


class _SlowWrites(InMemoryMemoryStore):
    """A store whose message writes take a moment, so a long turn is under way for a while."""

    def __init__(self) -> None:
        super().__init__()
        import threading

        self.began = threading.Event()

    def add_messages(self, *args: object, **kw: object) -> object:
        import time

        self.began.set()
        time.sleep(0.05)
        return super().add_messages(*args, **kw)  # type: ignore[arg-type]


def test_close_waits_for_a_turn_under_way_so_it_lands_whole() -> None:
    """A turn goes out as several writes; ``close()`` between two of them stored part of it
    (60 of 600 messages) and the add raised StoreClosed."""
    import threading

    store = _SlowWrites()
    mem = memcore.Memory(store, owns_store=True)
    turn = [{"role": "user", "content": f"fact number {i} about the garden"} for i in range(100)]
    done: list[object] = []
    adding = threading.Thread(target=lambda: done.append(mem.add(messages=turn)))
    adding.start()
    assert store.began.wait(10)
    mem.close()
    adding.join(30)
    assert done and len(done[0]) == 100  # type: ignore[arg-type]
    assert store.count("hermes_mem") == 100
    with pytest.raises(StoreClosed):
        mem.add(text="after close")


def test_an_asyncio_store_is_refused_at_once() -> None:
    """``Memory(AsyncTableStoreMemoryStore(...))`` was taken: its calls answered coroutine
    objects (a search "found" one) or raised AttributeError."""

    class AsyncStore(InMemoryMemoryStore):
        async def search(self, *args: object, **kw: object) -> object:  # type: ignore[override]
            return []

    with pytest.raises(InvalidInput, match="store must be a memory store"):
        memcore.Memory(AsyncStore())


@pytest.mark.parametrize("token", [{"page": 2}, ["a"], {"a"}])
def test_a_page_token_of_another_kind_is_invalid_input(token: object) -> None:
    mem = memcore.Memory(InMemoryMemoryStore())
    mem.add(text="one memory")
    with pytest.raises(InvalidInput, match="next_token"):
        mem.list(next_token=token)  # type: ignore[arg-type]
