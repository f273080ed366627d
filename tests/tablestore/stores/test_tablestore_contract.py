"""The core's MemoryStore contract, through the real SDK, over the loopback emulator."""

from __future__ import annotations

import importlib.util
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.ports import MemoryStore
from memcore.testing.contract import MemoryStoreContract
from memcore_tablestore.testing import running_emulator, store_for


class TestTableStoreContract(MemoryStoreContract):
    """TableStoreMemoryStore -> OTSClient -> emulator -> in-memory fake."""

    @pytest.fixture
    def store(self, ts: Any) -> Iterator[MemoryStore]:
        yield ts


class TestAsyncTableStoreContract(MemoryStoreContract):
    """AsyncTableStoreMemoryStore -> AsyncOTSClient (aiohttp) -> emulator -> in-memory fake."""

    @pytest.fixture
    def store(self, async_shim: Any) -> Iterator[Any]:
        yield async_shim


class TestEnvelopedTableStoreContract(MemoryStoreContract):
    """The same, with every answer wrapped in a ``{code, data, message}`` envelope."""

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        with running_emulator(envelope=True) as server:
            s = store_for(server, timeout=5.0)
            yield s
            s.close()


_SQLITE = importlib.util.find_spec("memcore_sqlite") is not None


@pytest.mark.skipif(not _SQLITE, reason="memcore_sqlite is not installed in this environment")
class TestTableStoreOverSqliteContract(MemoryStoreContract):
    """TableStoreMemoryStore -> OTSClient -> emulator -> the embedded SQLite store."""

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[MemoryStore]:
        try:
            from memcore_sqlite import SqliteMemoryStore
        except ImportError as exc:  # pragma: no cover - depends on the other package's state
            pytest.skip(f"memcore_sqlite is not importable yet: {exc}")
        backing = SqliteMemoryStore(tmp_path / "emulated.db")
        with running_emulator(backing) as server:
            s = store_for(server, timeout=5.0)
            yield s
            s.close()
        backing.close()
