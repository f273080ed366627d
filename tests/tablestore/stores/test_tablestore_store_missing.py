"""A memory store that does not exist (deleted, or a mistyped name) is said to be missing by
every call inside it: never the answer of an empty store, nor of a missing memory id. Another
tenant's memory id in a store that exists still answers exactly like an id that does not."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from memcore.errors import MemcoreError, NotFound, StoreNotFound
from memcore.scope import Scope
from memcore.service import MemoryService
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message
from memcore_tablestore.emulator import Faults
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import running_emulator, store_for

STORE = "kept"
A1 = Scope("app", "tenant_a", "agent1", "run1")
B1 = Scope("app", "tenant_b", "agent1", "run1")
MISSING = "0123456789abcdef0123456789abcdef"


@pytest.fixture
def ts() -> Iterator[TableStoreMemoryStore]:
    with running_emulator(InMemoryMemoryStore()) as server, store_for(server, timeout=5.0) as st:
        st.ensure_store(STORE)
        yield st


CALLS: dict[str, Callable[[TableStoreMemoryStore, str, str], object]] = {
    "describe": lambda ts, store, mid: ts.describe_store(store),
    "update-store": lambda ts, store, mid: ts.update_store(store, description="x"),
    "delete-store": lambda ts, store, mid: ts.delete_store(store),
    "get": lambda ts, store, mid: ts.get_memory(store, A1, mid),
    "update": lambda ts, store, mid: ts.update_memory(store, A1, mid, text="x"),
    "delete": lambda ts, store, mid: ts.delete_memory(store, A1, mid),
    "list": lambda ts, store, mid: ts.list_memories(store, A1.tenant_pattern()),
    "search": lambda ts, store, mid: ts.search(store, A1.tenant_pattern(), "locker"),
    "add": lambda ts, store, mid: ts.add_text(store, A1, "hello", sync=True),
    "add-messages": lambda ts, store, mid: ts.add_messages(store, A1, [Message("user", "hi")]),
    "messages": lambda ts, store, mid: ts.list_messages(store, A1),
    "scopes": lambda ts, store, mid: ts.list_scopes(store, A1.tenant_pattern()),
    "requests": lambda ts, store, mid: ts.list_requests(store, pattern=A1.tenant_pattern()),
    "task": lambda ts, store, mid: ts.get_task(store, mid),
    "tasks": lambda ts, store, mid: ts.list_tasks(store, pattern=A1.tenant_pattern()),
    "dream": lambda ts, store, mid: ts.get_dream_task(store, mid),
    "dreams": lambda ts, store, mid: ts.list_dream_tasks(store, pattern=A1.tenant_pattern()),
}


@pytest.mark.parametrize("name", list(CALLS))
def test_a_deleted_store_is_said_to_be_missing(ts: TableStoreMemoryStore, name: str) -> None:
    mid = ts.add_text(STORE, A1, "my locker code is 4711", sync=True).memory_ids[0]
    ts.delete_store(STORE)
    with pytest.raises(StoreNotFound) as caught:
        CALLS[name](ts, STORE, mid)
    assert caught.value.field == "memory_store_name"
    assert caught.value.code == "store_not_found"
    assert f"memory store {STORE!r} does not exist" in str(caught.value)
    assert "memcore stores create" in str(caught.value)  # says how to get it back


@pytest.mark.parametrize("name", ["get", "list", "search", "add"])
def test_a_mistyped_store_is_said_to_be_missing(ts: TableStoreMemoryStore, name: str) -> None:
    with pytest.raises(StoreNotFound) as caught:
        CALLS[name](ts, "kept_typo", MISSING)
    # A fresh user's first read meets it too: the line says a first write creates the store.
    assert "not created yet: with auto_create_store on the first write creates it" in str(
        caught.value
    )


def _answer(call: Callable[[], object], memory_id: str) -> tuple[type[MemcoreError], str]:
    with pytest.raises(MemcoreError) as caught:
        call()
    return type(caught.value), str(caught.value).replace(memory_id, "<id>")


@pytest.mark.parametrize(
    "operation",
    [
        lambda ts, scope, mid: ts.get_memory(STORE, scope, mid),
        lambda ts, scope, mid: ts.update_memory(STORE, scope, mid, text="x"),
        lambda ts, scope, mid: ts.delete_memory(STORE, scope, mid),
    ],
    ids=["get", "update", "delete"],
)
def test_in_a_store_that_exists_another_tenant_s_id_is_a_missing_memory(
    ts: TableStoreMemoryStore, operation: Callable[[TableStoreMemoryStore, Scope, str], object]
) -> None:
    mid = ts.add_text(STORE, A1, "my locker code is 4711", sync=True).memory_ids[0]
    other = _answer(lambda: operation(ts, B1, mid), mid)
    missing = _answer(lambda: operation(ts, B1, MISSING), MISSING)
    assert other == missing
    assert other[0] is NotFound  # not StoreNotFound: the store is there


def test_a_store_that_cannot_be_asked_about_leaves_the_404_as_it_was() -> None:
    """The service names no code for a missing store, so the store is asked about; when that
    question fails too (here: GetMemoryStore is refused), the memory's 404 stands."""
    faults = Faults(
        error_rate=1.0,
        error_status=403,
        error_code="OTSNoPermissionAccess",
        apis=("GetMemoryStore",),
    )
    with running_emulator(InMemoryMemoryStore()) as server, store_for(server, timeout=5.0) as st:
        st.ensure_store(STORE)
        server.set_faults(faults)
        with pytest.raises(NotFound) as caught:
            st.get_memory(STORE, A1, MISSING)
    assert type(caught.value) is NotFound


SERVICE_CALLS: dict[str, Callable[[MemoryService, str], object]] = {
    "get": lambda service, mid: service.get(mid),
    "locate": lambda service, mid: service.locate(mid),
    "find": lambda service, mid: service.find(mid),
    "history": lambda service, mid: service.history(mid),
    "forget": lambda service, mid: service.forget(mid),
    "update": lambda service, mid: service.update(mid, text="x"),
    "task": lambda service, mid: service.task(mid),
    "search": lambda service, mid: service.search("locker"),
}


@pytest.mark.parametrize("name", list(SERVICE_CALLS))
def test_the_service_says_the_store_is_missing_not_the_memory(
    ts: TableStoreMemoryStore, name: str
) -> None:
    """The service looks ids up scope by scope and skips the scopes a memory is not in; the
    store being gone is not one of those misses."""
    service = MemoryService(ts, store_name=STORE, scope=A1)
    mid = ts.add_text(STORE, A1, "my locker code is 4711", sync=True).memory_ids[0]
    ts.delete_store(STORE)
    with pytest.raises(StoreNotFound):
        SERVICE_CALLS[name](service, mid)
