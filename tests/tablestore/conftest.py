"""Fixtures for the TableStore adapter tests: a loopback emulator and adapters pointed at it."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_tablestore.emulator import EmulatorServer
from memcore_tablestore.store import TableStoreMemoryStore
from memcore_tablestore.testing import async_store_for, running_emulator, store_for


@pytest.fixture
def backing() -> InMemoryMemoryStore:
    return InMemoryMemoryStore()


@pytest.fixture
def emulator(backing: InMemoryMemoryStore) -> Iterator[EmulatorServer]:
    with running_emulator(backing, record_requests=True) as server:
        yield server


@pytest.fixture
def ts(emulator: EmulatorServer) -> Iterator[TableStoreMemoryStore]:
    store = store_for(emulator, timeout=5.0)
    yield store
    store.close()


class LoopThread:
    """An event loop on its own thread, so sync tests can drive the async store."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, daemon=True)
        self.thread.start()

    def run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result()

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(timeout=5)
        self.loop.close()


class SyncShim:
    """The async store seen through the sync port (test-only glue; every call is awaited on
    the loop thread)."""

    def __init__(self, server: EmulatorServer, **kwargs: Any) -> None:
        self._loop = LoopThread()

        async def build() -> Any:
            return async_store_for(server, **kwargs)

        self._store = self._loop.run(build())

    def __getattr__(self, name: str) -> Any:
        method = getattr(self._store, name)

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run(method(*args, **kwargs))

        return call

    def close(self) -> None:
        self._loop.run(self._store.close())
        self._loop.close()


@pytest.fixture
def async_shim(emulator: EmulatorServer) -> Iterator[SyncShim]:
    shim = SyncShim(emulator, timeout=5.0)
    yield shim
    shim.close()
