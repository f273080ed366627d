"""The fixtures an adapter's test class provides or overrides, shared by every family."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from memcore.ports import MemoryStore
from memcore.testing.contract.harness import STORE, Settle


def _at_once(store: MemoryStore) -> None:
    """A store whose search sees every write as soon as it is answered has nothing to wait for."""


class StoreFixtures:
    """``store`` (the adapter's, required), ``ready`` (with the contract's store created),
    ``settle`` (override it when the backend indexes asynchronously) and ``ports`` (override
    it with the optional ports the store implements)."""

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:  # pragma: no cover - subclasses provide it
        raise NotImplementedError("subclass MemoryStoreContract and provide a `store` fixture")

    @pytest.fixture
    def ready(self, store: MemoryStore) -> MemoryStore:
        store.ensure_store(STORE)
        return store

    @pytest.fixture
    def settle(self) -> Settle:
        return _at_once

    @pytest.fixture
    def ports(self) -> frozenset[type]:
        """The optional ports (``harness.OPTIONAL_PORTS``) the adapter implements. A test
        "..._or_unsupported" passes either way, so the suite checks that the store holds
        exactly these: a capability lost by a rename fails instead of being skipped."""
        return frozenset()
