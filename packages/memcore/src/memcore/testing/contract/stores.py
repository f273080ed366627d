"""The stores family: a memory store's own lifecycle, before any memory is written."""

from __future__ import annotations

import uuid

import pytest

from memcore.errors import Conflict, InvalidInput, NotFound, StoreNotFound
from memcore.ports import MemoryStore
from memcore.testing.contract.fixtures import StoreFixtures
from memcore.testing.contract.harness import A1, OPTIONAL_PORTS, STORE
from memcore.values import STORAGE_MODES


class StoresContract(StoreFixtures):
    """A store is created once, described, updated field by field and deleted; a missing one says so."""

    def test_ensure_store_creates_and_is_idempotent(self, store: MemoryStore) -> None:
        first = store.ensure_store(STORE, description="d")
        again = store.ensure_store(STORE)
        assert first.name == again.name == STORE
        assert STORE in [s.name for s in store.list_stores()]
        assert store.describe_store(STORE).name == STORE

    def test_create_existing_store_conflicts(self, ready: MemoryStore) -> None:
        with pytest.raises(Conflict):
            ready.create_store(STORE)

    def test_store_lifecycle(self, store: MemoryStore) -> None:
        name = "c_" + uuid.uuid4().hex[:12]
        created = store.create_store(
            name, description="first", extract_instructions="Keep preferences only."
        )
        assert created.name == name
        assert created.storage_mode in (None, *STORAGE_MODES)
        assert store.update_store(name, description="second").description == "second"
        # PATCH: a field left out stays as it was.
        assert store.update_store(name, extract_instructions="").description == "second"
        store.delete_store(name)
        with pytest.raises(NotFound):
            store.describe_store(name)
        with pytest.raises(NotFound):
            store.delete_store(name)

    def test_missing_store_is_not_found(self, store: MemoryStore) -> None:
        """A missing store is said to be missing (StoreNotFound), never answered as an empty
        store or as a missing memory id."""
        missing = "missing_" + uuid.uuid4().hex[:8]
        with pytest.raises(StoreNotFound):
            store.describe_store(missing)
        with pytest.raises(StoreNotFound):
            store.add_text(missing, A1, "hello", sync=True)
        with pytest.raises(StoreNotFound):
            store.search(missing, A1.tenant_pattern(), "hello")
        with pytest.raises(StoreNotFound):
            store.list_memories(missing, A1.tenant_pattern())
        with pytest.raises(StoreNotFound):
            store.get_memory(missing, A1, "x")
        with pytest.raises(StoreNotFound):
            store.update_memory(missing, A1, "x", text="y")
        with pytest.raises(StoreNotFound):
            store.delete_memory(missing, A1, "x")
        with pytest.raises(StoreNotFound):
            store.delete_store(missing)

    def test_ensure_store_without_create(self, store: MemoryStore) -> None:
        with pytest.raises(StoreNotFound):
            store.ensure_store("absent_" + uuid.uuid4().hex[:8], create=False)

    def test_bad_store_name(self, store: MemoryStore) -> None:
        with pytest.raises(InvalidInput):
            store.create_store("bad-name!")

    def test_the_store_holds_exactly_the_optional_ports_its_suite_declares(
        self, store: MemoryStore, ports: frozenset[type]
    ) -> None:
        held = {p.__name__ for p in OPTIONAL_PORTS if isinstance(store, p)}
        declared = {p.__name__ for p in ports}
        assert held == declared, (
            f"the store implements {sorted(held)} but the suite's `ports` fixture declares "
            f"{sorted(declared)}"
        )
