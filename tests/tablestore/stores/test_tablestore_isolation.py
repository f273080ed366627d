"""Another scope's memory id answers exactly like a missing id, through every id-taking call,
even against a service that looks a memory up by its id alone: the adapter checks the scope
itself and never changes or deletes a memory it has not seen in the caller's scope."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from memcore.errors import MemcoreError, NotFound
from memcore.scope import Scope
from memcore.testing import InMemoryMemoryStore
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import running_emulator, store_for

STORE = "iso"
A1 = Scope("app", "tenant_a", "agent1", "run1")
B1 = Scope("app", "tenant_b", "agent1", "run1")
MISSING = "0123456789abcdef0123456789abcdef"


class _ByIdAlone(InMemoryMemoryStore):
    """A service that ignores the request's scope and finds a memory by its id alone."""

    def _unit_in_scope(self, st: Any, scope: Scope, memory_id: str) -> Any:
        unit = st.units.get(memory_id)
        if unit is None:
            raise NotFound(f"memory {memory_id!r} does not exist", field="memory_id")
        return unit


@pytest.fixture(params=["checks-scope", "by-id-alone"])
def ts(request: pytest.FixtureRequest) -> Iterator[TableStoreMemoryStore]:
    backing = InMemoryMemoryStore() if request.param == "checks-scope" else _ByIdAlone()
    with running_emulator(backing) as server, store_for(server, timeout=5.0) as store:
        store.ensure_store(STORE)
        yield store


def _answer(call: Callable[[], object], memory_id: str) -> tuple[type[MemcoreError], str]:
    with pytest.raises(MemcoreError) as caught:
        call()
    return type(caught.value), str(caught.value).replace(memory_id, "<id>")


@pytest.mark.parametrize(
    "operation",
    [
        lambda ts, scope, mid: ts.get_memory(STORE, scope, mid),
        lambda ts, scope, mid: ts.update_memory(STORE, scope, mid, text="hijacked"),
        lambda ts, scope, mid: ts.update_memory(STORE, scope, mid, metadata={}),
        lambda ts, scope, mid: ts.delete_memory(STORE, scope, mid),
    ],
    ids=["get", "update-text", "update-metadata", "delete"],
)
def test_another_tenant_s_id_answers_like_a_missing_one_and_changes_nothing(
    ts: TableStoreMemoryStore, operation: Callable[[TableStoreMemoryStore, Scope, str], object]
) -> None:
    mid = ts.add_text(STORE, A1, "Safe code: 4711", metadata={"k": "v"}, sync=True).memory_ids[0]
    other = _answer(lambda: operation(ts, B1, mid), mid)
    missing = _answer(lambda: operation(ts, B1, MISSING), MISSING)
    assert other == missing
    assert other[0] is NotFound
    kept = ts.get_memory(STORE, A1, mid)
    assert (kept.text, dict(kept.metadata)) == ("Safe code: 4711", {"k": "v"})


def test_messages_answered_for_another_session_are_refused(
    ts: TableStoreMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memcore.errors import ProtocolError
    from memcore.values import Message
    from memcore_tablestore.emulator.apis.handlers import TABLE

    ts.add_messages(STORE, A1, [Message("user", "my locker code is 4711")], sync=True)
    honest = TABLE["ListMemoryStoreMessages"]

    def other_session(svc: Any, call: Any) -> Any:
        """Answers with tenant A's session whatever scope was asked for."""
        call.body = {**call.body, "scope": {"appId": "app", "tenantId": "tenant_a"}}
        call.body["scope"].update(agentId="agent1", runId="run1")
        return honest(svc, call)

    monkeypatch.setitem(TABLE, "ListMemoryStoreMessages", other_session)
    with pytest.raises(ProtocolError):
        ts.list_messages(STORE, B1)
    assert [m.content for m in ts.list_messages(STORE, A1).items] == ["my locker code is 4711"]


def test_audit_records_of_another_tenant_are_not_listed(
    ts: TableStoreMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memcore_tablestore.emulator.apis.handlers import TABLE

    receipt = ts.add_text(STORE, A1, "my locker code is 4711", sync=True)
    honest = TABLE["ListMemoryStoreRequests"]

    def whole_store(svc: Any, call: Any) -> Any:
        """Answers with every tenant's records whatever scope was asked for."""
        call.body = {k: v for k, v in call.body.items() if k != "scope"}
        return honest(svc, call)

    monkeypatch.setitem(TABLE, "ListMemoryStoreRequests", whole_store)
    everything = ts.list_requests(STORE, limit=100).items
    assert any(r.target_id in receipt.memory_ids for r in everything)  # the answer holds it
    seen = ts.list_requests(STORE, limit=100, pattern=B1.tenant_pattern()).items
    assert all(r.scope is not None and "tenant_a" not in str(r.scope) for r in seen)
    assert not any(r.target_id in receipt.memory_ids for r in seen)
    mine = ts.list_requests(STORE, limit=100, pattern=A1.tenant_pattern()).items
    assert any(r.target_id in receipt.memory_ids for r in mine)


def test_a_store_the_service_says_it_did_not_delete_is_not_reported_deleted(
    ts: TableStoreMemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``DeleteMemoryStoreResponse.deleted`` is what the service did: ``false`` is not a
    success, as it is not for DeleteMemory."""
    from memcore_tablestore.emulator.apis.handlers import TABLE

    def not_deleted(svc: Any, call: Any) -> Any:
        return {"deleted": False, "memoryStoreName": call.store_name}

    monkeypatch.setitem(TABLE, "DeleteMemoryStore", not_deleted)
    with pytest.raises(NotFound) as caught:
        ts.delete_store(STORE)
    assert caught.value.field == "memory_store_name"
    assert ts.describe_store(STORE).name == STORE


def test_a_tenant_with_no_memories_reads_its_own_dream_and_another_cannot(
    ts: TableStoreMemoryStore,
) -> None:
    """The service's Get names the scopes a dream expanded to: none for a tenant with no
    memories. The tenant's own listing still shows the task as its own; another tenant's
    answer is the answer for an id that does not exist."""
    from memcore.service import MemoryService

    ts.add_text(STORE, B1, "Bob owns a red bicycle", sync=True)
    ghost = MemoryService(ts, store_name=STORE, scope=A1)
    other = MemoryService(ts, store_name=STORE, scope=B1)
    task = ghost.dreams.start(apply_mode="proposal")
    assert ts.get_dream_task(STORE, task.id).scopes == ()  # what the fix has to cope with
    assert ghost.dreams.task(task.id).id == task.id
    assert ghost.dreams.actions(task.id).items == ()
    assert ghost.dreams.cancel(task.id).id == task.id
    theirs = _answer(lambda: other.dreams.task(task.id), task.id)
    assert theirs == _answer(lambda: other.dreams.task(MISSING), MISSING)
    assert theirs[0] is NotFound
    assert _answer(lambda: other.dreams.cancel(task.id), task.id) == theirs
