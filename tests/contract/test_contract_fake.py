"""The contract suite against the in-memory fake (and the fake with eventual consistency)."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memcore.ports import MemoryStore
from memcore.testing import HashingEmbedder, InMemoryMemoryStore
from memcore.testing.contract import MemoryStoreContract
from memcore.testing.contract.harness import Settle


class TestFakeContract(MemoryStoreContract):
    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        s = InMemoryMemoryStore()
        yield s
        s.close()


class TestFakeWithEmbedderContract(MemoryStoreContract):
    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        yield InMemoryMemoryStore(embedder=HashingEmbedder())


class TestEventuallyConsistentFakeContract(MemoryStoreContract):
    """Search lags writes by a few calls, as the cloud index does; ``settle`` waits it out."""

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:
        yield InMemoryMemoryStore(consistency_lag=3)

    @pytest.fixture
    def settle(self) -> Settle:
        def after_the_lag(store: MemoryStore) -> None:
            for _ in range(4):
                store.list_stores()

        return after_the_lag
