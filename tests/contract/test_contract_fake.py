"""The contract suite against the in-memory fake (and the fake with eventual consistency)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memcore.ports import MemoryStore, MessageMove, NeighbourTurns
from memcore.testing import HashingEmbedder, InMemoryMemoryStore
from memcore.testing.contract import MemoryStoreContract
from memcore.testing.contract.harness import Settle

THE_FAKE_S_PORTS = frozenset({MessageMove, NeighbourTurns})


class TestFakeContract(MemoryStoreContract):
    @pytest.fixture
    def ports(self) -> frozenset[type]:
        return THE_FAKE_S_PORTS

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        s = InMemoryMemoryStore()
        yield s
        s.close()


class TestFakeWithEmbedderContract(MemoryStoreContract):
    @pytest.fixture
    def ports(self) -> frozenset[type]:
        return THE_FAKE_S_PORTS

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        yield InMemoryMemoryStore(embedder=HashingEmbedder())


class TestEventuallyConsistentFakeContract(MemoryStoreContract):
    """Search lags writes by a few calls, as the cloud index does; ``settle`` waits it out."""

    @pytest.fixture
    def ports(self) -> frozenset[type]:
        return THE_FAKE_S_PORTS

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        yield InMemoryMemoryStore(consistency_lag=3)

    @pytest.fixture
    def settle(self) -> Settle:
        def after_the_lag(store: MemoryStore) -> None:
            for _ in range(4):
                store.list_stores()

        return after_the_lag
