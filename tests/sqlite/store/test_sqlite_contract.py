"""The shared MemoryStore contract, run against the SQLite store in both search modes."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memcore.testing import HashingEmbedder
from memcore.testing.contract import MemoryStoreContract
from memcore.testing.contract.harness import OPTIONAL_PORTS
from memcore_sqlite import SqliteMemoryStore


class TestSqliteLexicalContract(MemoryStoreContract):
    """The embedded store implements every optional port."""

    @pytest.fixture
    def ports(self) -> frozenset[type]:
        return frozenset(OPTIONAL_PORTS)

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqliteMemoryStore]:
        s = SqliteMemoryStore(tmp_path / "contract.db")
        assert s.search_mode == "lexical"
        yield s
        s.close()


class TestSqliteHybridContract(MemoryStoreContract):
    @pytest.fixture
    def ports(self) -> frozenset[type]:
        return frozenset(OPTIONAL_PORTS)

    @pytest.fixture
    def store(self, tmp_path: Path) -> Iterator[SqliteMemoryStore]:
        s = SqliteMemoryStore(tmp_path / "contract.db", embedder=HashingEmbedder(64))
        assert s.search_mode == "hybrid"
        yield s
        s.close()
