"""``MemoryService.restore``, what an import writes with: ids and times as given on the
embedded store (a ``BulkAdd``), assigned ones on the fake; never into another tenant, and an
id another tenant holds is kept as a free id is (ids are unique per tenant)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.service import MemoryService
from memcore.testing import InMemoryMemoryStore
from memcore.values import TextItem
from memcore_sqlite import SqliteMemoryStore

ANA = Scope("hermes", "ana", "hermes", "s1")
BOB = Scope("hermes", "bob", "hermes", "s1")
STORE = "memories"


@pytest.fixture(params=["sqlite", "fake"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[object]:
    if request.param == "fake":
        yield InMemoryMemoryStore()
        return
    opened = SqliteMemoryStore(tmp_path / "m.db", embedder=None)
    yield opened
    opened.close()


def service(store: object, scope: Scope) -> MemoryService:
    svc = MemoryService(store, store_name=STORE, scope=scope)  # type: ignore[arg-type]
    svc.store.ensure_store(STORE)
    return svc


def test_restore_keeps_ids_and_times_where_the_store_can(store: object) -> None:
    ana = service(store, ANA)
    item = TextItem(ANA, "I adopted a cat named Miso", {"t": "pets"}, "7" * 32, 1.5e9, 1.6e9)
    [new_id] = ana.restore([item])
    memory = ana.get(new_id)
    assert memory.text == item.text and memory.scope == ANA
    if ana.restores_exactly:
        assert (new_id, memory.created_at, memory.said_at) == ("7" * 32, 1.5e9, 1.6e9)
    assert ana.restore([item]) == [new_id]  # the same text again: nothing new


def test_restore_refuses_another_tenants_scope_and_writes_nothing(store: object) -> None:
    ana = service(store, ANA)
    items = [TextItem(ANA, "mine"), TextItem(BOB, "not mine")]
    with pytest.raises(InvalidInput) as raised:
        ana.restore(items)
    assert raised.value.field == "items[1].scope"
    assert ana.profile().items == () and service(store, BOB).profile().items == ()


def test_an_id_of_another_tenant_answers_as_a_free_id(store: object) -> None:
    bob = service(store, BOB)
    [bobs] = bob.restore([TextItem(BOB, "Bob's secret", id="b" * 32)])
    ana = service(store, ANA)
    [taken] = ana.restore([TextItem(ANA, "Ana's note", id=bobs)])
    [free] = ana.restore([TextItem(ANA, "Ana's other note", id="c" * 32)])
    if ana.restores_exactly:  # ids are unique per tenant: Bob's is kept as a free one is
        assert (taken, free) == (bobs, "c" * 32)
    assert ana.get(taken).text == "Ana's note" and bob.get(bobs).text == "Bob's secret"


def test_a_recall_block_is_not_restored(store: object) -> None:
    ana = service(store, ANA)
    with pytest.raises(InvalidInput) as raised:
        ana.restore(
            [TextItem(ANA, "ok"), TextItem(ANA, "<recalled-memory>\nx\n</recalled-memory>")]
        )
    assert raised.value.field == "items[1].text"
    assert ana.profile().items == ()


def test_restore_reports_only_the_memories_it_created(store: object) -> None:
    """A text another writer stored first answers with that memory's id: an import must not
    count it as added (nor delete it when it rolls back)."""
    ana = service(store, ANA)
    if not ana.restores_exactly:
        pytest.skip("the store cannot tell")
    first: set[str] = set()
    [mine] = ana.restore([TextItem(ANA, "stored first")], created=first)
    assert first == {mine}
    again: set[str] = set()
    ids = ana.restore([TextItem(ANA, "stored first"), TextItem(ANA, "new one")], created=again)
    assert ids[0] == mine and again == {ids[1]}
