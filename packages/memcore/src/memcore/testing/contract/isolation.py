"""The isolation family: what a second tenant may see or touch of the first's memories."""

from __future__ import annotations

import uuid

import pytest

from memcore.errors import NotFound
from memcore.ports import MemoryStore
from memcore.scope import Scope, ScopePattern
from memcore.service import MemoryService
from memcore.testing.contract.fixtures import StoreFixtures
from memcore.testing.contract.harness import A1, A2, B1, OTHER_APP, STORE, Settle, add
from memcore.values import TextItem


class IsolationContract(StoreFixtures):
    """A scope sees its own tenant only: another tenant's id answers as a free id."""

    @pytest.mark.parametrize("intruder", [B1, A2, OTHER_APP])
    def test_other_scope_cannot_touch_a_memory(self, ready: MemoryStore, intruder: Scope) -> None:
        mid = add(ready, A1, "Bank PIN hint: birthday of the cat")
        with pytest.raises(NotFound):
            ready.get_memory(STORE, intruder, mid)
        with pytest.raises(NotFound):
            ready.update_memory(STORE, intruder, mid, text="hijacked")
        with pytest.raises(NotFound):
            ready.delete_memory(STORE, intruder, mid)
        assert ready.get_memory(STORE, A1, mid).text == "Bank PIN hint: birthday of the cat"

    def test_search_and_list_never_cross_tenants(self, settle: Settle, ready: MemoryStore) -> None:
        add(ready, A1, "tenant a likes jazz music")
        add(ready, B1, "tenant b likes jazz music too")
        add(ready, OTHER_APP, "other app likes jazz music")
        settle(ready)
        for scope in (A1, B1, OTHER_APP):
            pattern = scope.tenant_pattern()
            hits = ready.search(STORE, pattern, "jazz music")
            assert hits and all(pattern.matches(h.memory.scope) for h in hits)
            listed = ready.list_memories(STORE, pattern).items
            assert listed and all(pattern.matches(m.scope) for m in listed)

    def test_an_id_another_tenant_holds_answers_as_a_free_id(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        """An import (``restore``) of a record whose id another tenant holds gets what a free
        id gets (kept where the store keeps ids), so it cannot tell whether anyone holds it;
        after that each tenant's get, update, delete, list and search of the id reach only
        its own memory."""
        alice = MemoryService(ready, store_name=STORE, scope=A1)
        bob = MemoryService(ready, store_name=STORE, scope=B1)
        [alices] = alice.restore([TextItem(A1, "Alice keeps a walrus named Tusk")])
        assert alices is not None
        free = uuid.uuid4().hex
        [taken] = bob.restore([TextItem(B1, "Bob keeps otters by the river", id=alices)])
        [unheld] = bob.restore([TextItem(B1, "Bob keeps a canoe", id=free)])
        assert (taken == alices) == (unheld == free) == alice.restores_exactly
        assert taken is not None and unheld is not None
        settle(ready)
        assert alice.get(alices).text == "Alice keeps a walrus named Tusk"
        assert bob.get(taken).text == "Bob keeps otters by the river"
        bob.update(taken, metadata={"by": "bob"})
        assert alice.get(alices).metadata == {}
        assert [m.id for m in alice.every_memory()] == [alices]
        assert sorted(m.id for m in bob.every_memory()) == sorted([taken, unheld])
        settle(ready)
        for service, word, mine in ((alice, "walrus", alices), (bob, "otters", taken)):
            hits = service.search(word)
            assert hits and all(h.memory.scope.tenant_id == service.scope.tenant_id for h in hits)
            assert mine in [h.memory.id for h in hits]
        bob.forget(taken)
        assert alice.get(alices).text == "Alice keeps a walrus named Tusk"
        with pytest.raises(NotFound) as gone:
            bob.get(taken)
        with pytest.raises(NotFound) as missing:
            bob.get(free[::-1])
        assert gone.value.message.replace(taken, "x") == missing.value.message.replace(
            free[::-1], "x"
        )

    def test_narrow_patterns(self, settle: Settle, ready: MemoryStore) -> None:
        a1 = add(ready, A1, "agent one remembers the lighthouse")
        a2 = add(ready, A2, "agent two remembers the lighthouse")
        settle(ready)
        agent_pattern = ScopePattern("app", "tenant_a", "agent1", "*")
        assert [h.memory.id for h in ready.search(STORE, agent_pattern, "lighthouse")] == [a1]
        exact = A2.pattern()
        assert [m.id for m in ready.list_memories(STORE, exact).items] == [a2]
        tenant = sorted(h.memory.id for h in ready.search(STORE, A1.tenant_pattern(), "lighthouse"))
        assert tenant == sorted([a1, a2])
