"""``memcore.AsyncMemory.open`` on the embedded store, as the README shows it."""

from __future__ import annotations

import asyncio

import pytest

import memcore


def test_async_memory_on_the_embedded_store(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMCORE_HOME", str(tmp_path))
    config = memcore.MemcoreConfig(embedder="none")

    async def scenario() -> tuple[list[str], list[str], list[str]]:
        async with await memcore.AsyncMemory.open("local", user_id="alice", config=config) as mem:
            ids = await mem.add(text="The user likes tea")
            hits = [h.memory.id for h in await mem.search("tea")]
        async with await memcore.AsyncMemory.open("local", user_id="bob", config=config) as bob:
            foreign = [h.memory.id for h in await bob.search("tea")]
        return ids, hits, foreign

    ids, hits, foreign = asyncio.run(scenario())
    assert len(ids) == 1 and hits == ids
    assert foreign == []  # another tenant sees nothing


def test_async_memory_after_close_raises_store_closed(tmp_path, monkeypatch):
    monkeypatch.setenv("MEMCORE_HOME", str(tmp_path))

    async def scenario() -> None:
        mem = await memcore.AsyncMemory.open("local", config=memcore.MemcoreConfig(embedder="none"))
        await mem.close()
        with pytest.raises(memcore.StoreClosed):
            await mem.add(text="too late")

    asyncio.run(scenario())
