"""Fixtures for the TableStore adapter tests: a loopback emulator and adapters pointed at it."""

from __future__ import annotations

import asyncio
import importlib.util
import sys
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_tablestore.emulator import EmulatorServer
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import async_store_for, running_emulator, store_for


def _register_provisioner_fixtures() -> None:
    """Make ``conftest_provisioner.py`` importable as ``tablestore_conftest_provisioner``.

    The tests are not a package (``--import-mode=importlib``), so the provisioner modules
    import it by that name; this conftest is loaded before any of them.
    """
    name = "tablestore_conftest_provisioner"
    if name in sys.modules:
        return
    spec = importlib.util.spec_from_file_location(
        name, Path(__file__).with_name("conftest_provisioner.py")
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)


_register_provisioner_fixtures()


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
        if not callable(method):  # a declaration such as ``supports_reference_time``
            return method

        def call(*args: Any, **kwargs: Any) -> Any:
            return self._loop.run(method(*args, **kwargs))

        return call

    def close(self) -> None:
        """Closes the store; the loop stays for calls after it (they raise StoreClosed)."""
        self._loop.run(self._store.close())

    def stop(self) -> None:
        self.close()
        self._loop.close()


@pytest.fixture
def async_shim(emulator: EmulatorServer) -> Iterator[SyncShim]:
    shim = SyncShim(emulator, timeout=5.0)
    yield shim
    shim.stop()
