"""The asyncio twin over AsyncOTSClient: aiohttp failures map like urllib3 ones, and
concurrent writes all arrive."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from memcore.errors import MemcoreError, NotFound, PermissionDenied, ProtocolError, Unavailable
from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message
from memcore_tablestore.credentials import Credentials
from memcore_tablestore.emulator import EmulatorServer, Faults
from memcore_tablestore.stores.async_store import AsyncTableStoreMemoryStore
from memcore_tablestore.testing import async_store_for

A1 = Scope("app", "t1", "a1", "r1")
STORE = "async_mem"


def run(
    server: EmulatorServer,
    body: Callable[[AsyncTableStoreMemoryStore], Awaitable[Any]],
    **kwargs: Any,
) -> Any:
    async def main() -> Any:
        async with async_store_for(server, **kwargs) as store:
            return await body(store)

    return asyncio.run(main())


def test_concurrent_writes_all_arrive(
    emulator: EmulatorServer, backing: InMemoryMemoryStore
) -> None:
    async def body(store: AsyncTableStoreMemoryStore) -> None:
        await store.ensure_store(STORE)
        receipts = await asyncio.gather(
            *(store.add_text(STORE, A1, f"fact {i}", sync=True) for i in range(60))
        )
        assert len({r.memory_ids[0] for r in receipts}) == 60

    run(emulator, body)
    assert backing.count(STORE) == 60


def test_dropped_connection_read_is_retried(emulator: EmulatorServer) -> None:
    async def body(store: AsyncTableStoreMemoryStore) -> str:
        await store.ensure_store(STORE)
        mid = (await store.add_text(STORE, A1, "kept", sync=True)).memory_ids[0]
        emulator.set_faults(Faults(drop_burst=1, apis=("GetMemory",)))
        return (await store.get_memory(STORE, A1, mid)).text

    assert run(emulator, body) == "kept"


def test_dropped_connection_message_write_is_not_replayed(
    emulator: EmulatorServer, backing: InMemoryMemoryStore
) -> None:
    async def body(store: AsyncTableStoreMemoryStore) -> None:
        await store.ensure_store(STORE)
        emulator.set_faults(Faults(drop_burst=1, apis=("AddMemories",)))
        with pytest.raises(Unavailable):
            await store.add_messages(STORE, A1, [Message("user", "cut off")])

    run(emulator, body)
    assert backing.count(STORE) == 0


def test_timeout_is_unavailable(emulator: EmulatorServer) -> None:
    emulator.set_faults(Faults(latency_ms=1500))

    async def body(store: AsyncTableStoreMemoryStore) -> None:
        with pytest.raises(Unavailable):
            await store.list_stores()

    started = time.monotonic()
    run(emulator, body, timeout=0.4)
    assert time.monotonic() - started < 1.4


def test_bad_secret_and_missing_store(emulator: EmulatorServer) -> None:
    async def wrong(store: AsyncTableStoreMemoryStore) -> None:
        with pytest.raises(PermissionDenied):
            await store.list_stores()

    run(emulator, wrong, credentials=Credentials("emu-ak", "wrong-secret"))

    async def missing(store: AsyncTableStoreMemoryStore) -> None:
        with pytest.raises(NotFound):
            await store.describe_store("nothing_here")

    run(emulator, missing)


def test_burst_of_503_is_recovered(emulator: EmulatorServer) -> None:
    async def body(store: AsyncTableStoreMemoryStore) -> int:
        await store.ensure_store(STORE)
        emulator.set_faults(Faults(error_burst=3))
        await store.add_messages(STORE, A1, [Message("user", "after the storm")], sync=True)
        return len((await store.list_messages(STORE, A1)).items)

    assert run(emulator, body) == 1


def test_chaos_is_typed(emulator: EmulatorServer) -> None:
    async def body(store: AsyncTableStoreMemoryStore) -> dict[str, int]:
        await store.ensure_store(STORE)
        emulator.set_faults(Faults(chaos=True, seed=3))
        seen: dict[str, int] = {}
        for _ in range(25):
            try:
                await store.search(STORE, A1.tenant_pattern(), "anything")
                seen["ok"] = seen.get("ok", 0) + 1
            except MemcoreError as exc:
                seen[type(exc).__name__] = seen.get(type(exc).__name__, 0) + 1
        return seen

    seen = run(emulator, body, retry=False)
    assert seen.get(ProtocolError.__name__, 0) >= 20


def test_connection_refused_is_unavailable() -> None:
    with EmulatorServer(InMemoryMemoryStore()) as server:
        url = server.url

    async def main() -> None:
        store = AsyncTableStoreMemoryStore(
            url, "emulator", Credentials("emu-ak", "emu-sk"), timeout=0.5
        )
        with pytest.raises(Unavailable):
            await store.list_stores()
        await store.close()

    asyncio.run(main())


def test_unreadable_2xx_write_is_unknown_sent_once_and_live_check_reads(
    emulator: EmulatorServer,
) -> None:
    """The twin shares the plans: a 2xx AddMemories answer that is not the protocol is not
    'landed' but OutcomeUnknown, and the write is sent once (the caller looks before resending)."""
    from memcore.errors import OutcomeUnknown

    async def body(store: AsyncTableStoreMemoryStore) -> tuple[str, int, dict[str, Any]]:
        await store.ensure_store(STORE)
        sent: list[object] = []
        send = store._client.add_memories

        async def counting(request: dict[str, Any]) -> Any:
            sent.append(request)
            return await send(request)

        store._client.add_memories = counting
        emulator.set_faults(Faults(chaos=True, apis=("AddMemories",), seed=4))
        try:
            await store.add_messages(STORE, A1, [Message("user", "hi")])
            outcome = "landed"
        except OutcomeUnknown:
            outcome = "unknown"
        emulator.set_faults(Faults())
        info = await store.call_read_only("GetMemoryStore", {"memoryStoreName": STORE})
        return outcome, len(sent), info

    status, sent, info = run(emulator, body)
    assert (status, sent) == ("unknown", 1)
    assert info["memoryStoreName"] == STORE
