"""The ``MemoryStore`` contract: one pytest suite that every adapter must pass.

Subclass :class:`MemoryStoreContract` in a test module and provide a ``store`` fixture::

    class TestMyStoreContract(MemoryStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            s = MyStore(tmp_path / "m.db")
            yield s
            s.close()

Override :meth:`settle` when the backend indexes asynchronously.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from typing import Any

import attrs
import pytest

from memcore import limits
from memcore.async_facade import AsyncMemory
from memcore.errors import (
    Conflict,
    InvalidInput,
    NotFound,
    StoreClosed,
    StoreNotFound,
    Unsupported,
)
from memcore.facade import Memory as Library
from memcore.paging import pages
from memcore.ports import MemoryStore, MessageMove, NeighbourTurns, UnclaimedDelete
from memcore.scope import Scope, ScopePattern
from memcore.service import MemoryService
from memcore.values import (
    DREAM_ACTION_STATUSES,
    DREAM_ACTION_TYPES,
    DREAM_STATUSES,
    STORAGE_MODES,
    MemoryRecord,
    MemoryVersion,
    Message,
    Page,
    TextItem,
)

A1 = Scope("app", "tenant_a", "agent1", "run1")
A2 = Scope("app", "tenant_a", "agent2", "run2")
B1 = Scope("app", "tenant_b", "agent1", "run1")
OTHER_APP = Scope("other", "tenant_a", "agent1", "run1")


def _all_pages(fetch: Any, limit: int) -> list[Any]:
    items: list[Any] = []
    page: Page[Any] | None = None
    for page in pages(lambda token: fetch(limit=limit, next_token=token), max_pages=10_000):
        assert len(page.items) <= limit
        items.extend(page.items)
    if page is not None and page.next_token:
        raise AssertionError("pagination never ended")
    return items


class MemoryStoreContract:
    """Behaviour every ``MemoryStore`` adapter shares with the service."""

    store_name = "contract_mem"

    @pytest.fixture
    def store(self) -> Iterator[MemoryStore]:  # pragma: no cover - subclasses provide it
        raise NotImplementedError("subclass MemoryStoreContract and provide a `store` fixture")

    @pytest.fixture
    def ready(self, store: MemoryStore) -> MemoryStore:
        store.ensure_store(self.store_name)
        return store

    def settle(self, store: MemoryStore) -> None:
        """Wait until earlier writes are visible to search (no-op for synchronous stores)."""

    def add(self, store: MemoryStore, scope: Scope, text: str, **meta: str) -> str:
        receipt = store.add_text(self.store_name, scope, text, metadata=meta or None, sync=True)
        assert receipt.status == "completed"
        assert len(receipt.memory_ids) == 1
        return receipt.memory_ids[0]

    # -- stores -------------------------------------------------------------------------
    def test_ensure_store_creates_and_is_idempotent(self, store: MemoryStore) -> None:
        first = store.ensure_store(self.store_name, description="d")
        again = store.ensure_store(self.store_name)
        assert first.name == again.name == self.store_name
        assert self.store_name in [s.name for s in store.list_stores()]
        assert store.describe_store(self.store_name).name == self.store_name

    def test_create_existing_store_conflicts(self, ready: MemoryStore) -> None:
        with pytest.raises(Conflict):
            ready.create_store(self.store_name)

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

    # -- memories -----------------------------------------------------------------------
    def test_add_get_round_trip(self, ready: MemoryStore) -> None:
        mid = self.add(ready, A1, "The user likes green tea", topic="drinks")
        memory = ready.get_memory(self.store_name, A1, mid)
        assert isinstance(memory, MemoryRecord)
        assert (memory.id, memory.text, memory.scope) == (mid, "The user likes green tea", A1)
        assert memory.metadata == {"topic": "drinks"}

    def test_same_text_same_scope_is_one_memory(self, ready: MemoryStore) -> None:
        first = self.add(ready, A1, "Prefers dark mode")
        second = self.add(ready, A1, "Prefers dark mode")
        assert first == second
        other = self.add(ready, A2, "Prefers dark mode")
        assert other != first
        listed = _all_pages(
            lambda **kw: ready.list_memories(self.store_name, A1.tenant_pattern(), **kw), 50
        )
        assert sorted(m.id for m in listed) == sorted({first, other})

    def test_add_messages_stores_messages_and_memories(self, ready: MemoryStore) -> None:
        msgs = [
            Message("user", "I moved to Hangzhou last spring"),
            Message("assistant", "Noted that you live in Hangzhou now"),
        ]
        receipt = ready.add_messages(self.store_name, A1, msgs, sync=True)
        assert receipt.status == "completed"
        page = ready.list_messages(self.store_name, A1)
        assert [(m.role, m.content) for m in page.items] == [(m.role, m.content) for m in msgs]
        assert ready.list_messages(self.store_name, B1).items == ()
        self.settle(ready)
        hits = ready.search(self.store_name, A1.tenant_pattern(), "Hangzhou")
        assert hits and all(A1.tenant_pattern().matches(h.memory.scope) for h in hits)

    def test_update_replaces_text_and_merges_metadata(self, ready: MemoryStore) -> None:
        mid = self.add(ready, A1, "Favourite colour is blue", kind="pref", old="x")
        updated = ready.update_memory(
            self.store_name, A1, mid, text="Favourite colour is orange", metadata={"kind": "pref2"}
        )
        assert updated.text == "Favourite colour is orange"
        # The service merges metadata: the same key overwrites, other keys stay.
        assert updated.metadata == {"kind": "pref2", "old": "x"}
        got = ready.get_memory(self.store_name, A1, mid)
        assert (got.text, dict(got.metadata)) == (
            "Favourite colour is orange",
            {"kind": "pref2", "old": "x"},
        )
        only_meta = ready.update_memory(self.store_name, A1, mid, metadata={"k": "v"})
        assert only_meta.text == "Favourite colour is orange"
        assert only_meta.metadata == {"kind": "pref2", "old": "x", "k": "v"}
        cleared = ready.update_memory(self.store_name, A1, mid, metadata={})
        assert cleared.metadata == {}
        self.settle(ready)
        hits = ready.search(self.store_name, A1.tenant_pattern(), "orange colour")
        assert mid in [h.memory.id for h in hits]

    def test_a_repeat_keeps_metadata_within_the_limit(self, ready: MemoryStore) -> None:
        """The same text again merges metadata (limits.merge_metadata): the newer keys win and
        the older ones fill the room left in key order; never more than the limit."""
        older = {f"a{i:02d}": "old" for i in range(limits.MAX_METADATA_KEYS)}
        newer = {f"b{i:02d}": "new" for i in range(limits.MAX_METADATA_KEYS)}
        mid = self.add(ready, A1, "Repeated with many keys", **older)
        assert self.add(ready, A1, "Repeated with many keys", **newer) == mid
        assert dict(ready.get_memory(self.store_name, A1, mid).metadata) == newer
        third = {"a00": "again", "c": "x"}
        assert self.add(ready, A1, "Repeated with many keys", **third) == mid
        kept = sorted(newer)[: limits.MAX_METADATA_KEYS - len(third)]
        expected = {**third, **{k: "new" for k in kept}}
        assert dict(ready.get_memory(self.store_name, A1, mid).metadata) == expected
        listed = ready.list_memories(self.store_name, A1.tenant_pattern()).items
        assert all(len(m.metadata) <= limits.MAX_METADATA_KEYS for m in listed)

    def test_metadata_past_the_service_s_json_size_is_refused_and_never_merged_past_it(
        self, ready: MemoryStore
    ) -> None:
        """The service refuses metadata over 65,536 bytes as JSON, which 16 values of 1,024
        four-byte characters pass; a repeat's merge keeps within it, an update is refused."""
        big = {f"k{i:02d}": "\U0001f600" * limits.MAX_METADATA_VALUE_CHARS for i in range(16)}
        with pytest.raises(InvalidInput) as refused:
            ready.add_text(self.store_name, A1, "Too much metadata", metadata=big, sync=True)
        assert refused.value.field == "metadata"
        fifteen = dict(list(big.items())[:15])
        mid = self.add(ready, A1, "Nearly full metadata", **fifteen)
        more = {"z": "\U0001f600" * 500}
        assert self.add(ready, A1, "Nearly full metadata", **more) == mid
        kept = dict(ready.get_memory(self.store_name, A1, mid).metadata)
        assert kept["z"] == more["z"]
        assert limits.metadata_bytes(kept) <= limits.MAX_METADATA_JSON_BYTES
        with pytest.raises(InvalidInput):
            ready.update_memory(self.store_name, A1, mid, metadata={"z": "\U0001f600" * 1024})
        assert dict(ready.get_memory(self.store_name, A1, mid).metadata) == kept

    def test_an_update_past_the_metadata_limit_is_refused(self, ready: MemoryStore) -> None:
        full = {f"k{i:02d}": "v" for i in range(limits.MAX_METADATA_KEYS)}
        mid = self.add(ready, A1, "Sixteen keys already", **full)
        with pytest.raises(InvalidInput):
            ready.update_memory(
                self.store_name, A1, mid, text="Changed text", metadata={"extra": "x"}
            )
        got = ready.get_memory(self.store_name, A1, mid)
        assert (got.text, dict(got.metadata)) == ("Sixteen keys already", full)
        same = ready.update_memory(self.store_name, A1, mid, metadata={"k00": "w"})
        assert dict(same.metadata) == {**full, "k00": "w"}

    def test_delete_really_deletes(self, ready: MemoryStore) -> None:
        mid = self.add(ready, A1, "Secret project codename is bluebird")
        keep = self.add(ready, A1, "Another memory about bluebird songs")
        self.settle(ready)
        ready.delete_memory(self.store_name, A1, mid)
        with pytest.raises(NotFound):
            ready.get_memory(self.store_name, A1, mid)
        with pytest.raises(NotFound):
            ready.delete_memory(self.store_name, A1, mid)
        listed = ready.list_memories(self.store_name, A1.tenant_pattern()).items
        assert mid not in [m.id for m in listed]
        self.settle(ready)
        hits = ready.search(self.store_name, A1.tenant_pattern(), "bluebird codename")
        assert mid not in [h.memory.id for h in hits]
        assert keep in [h.memory.id for h in hits]

    def test_delete_then_re_add_is_a_new_memory(self, ready: MemoryStore) -> None:
        mid = self.add(ready, A1, "Temporary fact")
        ready.delete_memory(self.store_name, A1, mid)
        again = self.add(ready, A1, "Temporary fact")
        assert ready.get_memory(self.store_name, A1, again).text == "Temporary fact"

    def test_get_missing_memory(self, ready: MemoryStore) -> None:
        with pytest.raises(NotFound):
            ready.get_memory(self.store_name, A1, "no-such-id")
        with pytest.raises(NotFound):
            ready.update_memory(self.store_name, A1, "no-such-id", text="x")

    # -- isolation ----------------------------------------------------------------------
    @pytest.mark.parametrize("intruder", [B1, A2, OTHER_APP])
    def test_other_scope_cannot_touch_a_memory(self, ready: MemoryStore, intruder: Scope) -> None:
        mid = self.add(ready, A1, "Bank PIN hint: birthday of the cat")
        with pytest.raises(NotFound):
            ready.get_memory(self.store_name, intruder, mid)
        with pytest.raises(NotFound):
            ready.update_memory(self.store_name, intruder, mid, text="hijacked")
        with pytest.raises(NotFound):
            ready.delete_memory(self.store_name, intruder, mid)
        assert (
            ready.get_memory(self.store_name, A1, mid).text == "Bank PIN hint: birthday of the cat"
        )

    def test_search_and_list_never_cross_tenants(self, ready: MemoryStore) -> None:
        self.add(ready, A1, "tenant a likes jazz music")
        self.add(ready, B1, "tenant b likes jazz music too")
        self.add(ready, OTHER_APP, "other app likes jazz music")
        self.settle(ready)
        for scope in (A1, B1, OTHER_APP):
            pattern = scope.tenant_pattern()
            hits = ready.search(self.store_name, pattern, "jazz music")
            assert hits and all(pattern.matches(h.memory.scope) for h in hits)
            listed = ready.list_memories(self.store_name, pattern).items
            assert listed and all(pattern.matches(m.scope) for m in listed)

    def test_an_id_another_tenant_holds_answers_as_a_free_id(self, ready: MemoryStore) -> None:
        """An import (``restore``) of a record whose id another tenant holds gets what a free
        id gets (kept where the store keeps ids), so it cannot tell whether anyone holds it;
        after that each tenant's get, update, delete, list and search of the id reach only
        its own memory."""
        alice = MemoryService(ready, store_name=self.store_name, scope=A1)
        bob = MemoryService(ready, store_name=self.store_name, scope=B1)
        [alices] = alice.restore([TextItem(A1, "Alice keeps a walrus named Tusk")])
        assert alices is not None
        free = uuid.uuid4().hex
        [taken] = bob.restore([TextItem(B1, "Bob keeps otters by the river", id=alices)])
        [unheld] = bob.restore([TextItem(B1, "Bob keeps a canoe", id=free)])
        assert (taken == alices) == (unheld == free) == alice.restores_exactly
        assert taken is not None and unheld is not None
        self.settle(ready)
        assert alice.get(alices).text == "Alice keeps a walrus named Tusk"
        assert bob.get(taken).text == "Bob keeps otters by the river"
        bob.update(taken, metadata={"by": "bob"})
        assert alice.get(alices).metadata == {}
        assert [m.id for m in alice.every_memory()] == [alices]
        assert sorted(m.id for m in bob.every_memory()) == sorted([taken, unheld])
        self.settle(ready)
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

    def test_narrow_patterns(self, ready: MemoryStore) -> None:
        a1 = self.add(ready, A1, "agent one remembers the lighthouse")
        a2 = self.add(ready, A2, "agent two remembers the lighthouse")
        self.settle(ready)
        agent_pattern = ScopePattern("app", "tenant_a", "agent1", "*")
        assert [
            h.memory.id for h in ready.search(self.store_name, agent_pattern, "lighthouse")
        ] == [a1]
        exact = A2.pattern()
        assert [m.id for m in ready.list_memories(self.store_name, exact).items] == [a2]
        tenant = sorted(
            h.memory.id for h in ready.search(self.store_name, A1.tenant_pattern(), "lighthouse")
        )
        assert tenant == sorted([a1, a2])

    # -- search ------------------------------------------------------------------------
    def test_search_scores_ordering_top_k(self, ready: MemoryStore) -> None:
        for i in range(8):
            self.add(ready, A1, f"note {i} about the garden and tomatoes")
        self.add(ready, A1, "tomatoes")
        self.settle(ready)
        hits = ready.search(self.store_name, A1.tenant_pattern(), "tomatoes garden", top_k=3)
        assert 1 <= len(hits) <= 3
        scores = [h.score for h in hits]
        assert all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)

    def test_search_takes_a_reference_time(self, ready: MemoryStore) -> None:
        """Every store accepts the question's date and refuses what is not a datetime; how
        far it ranks with it is the store's (a hint, like ``context_scope``)."""
        self.add(ready, A1, "we repainted the fence")
        self.settle(ready)
        asked = datetime(2026, 4, 22, 8, tzinfo=timezone.utc)
        pattern = A1.tenant_pattern()
        hits = ready.search(self.store_name, pattern, "fence last month", reference_time=asked)
        assert [h.memory.text for h in hits] == ["we repainted the fence"]
        with pytest.raises(InvalidInput):
            ready.search(self.store_name, pattern, "fence", reference_time="2026-04-22")  # type: ignore[arg-type]

    def test_a_hit_comes_with_the_turns_of_its_own_session_or_unsupported(
        self, ready: MemoryStore
    ) -> None:
        """Neighbours come only from the hit's own session of its own tenant, in the order
        they were said, though another tenant's turns (same agent and run names), another
        app's and another session's were written in between; a store that keeps no turn
        order says so instead of answering without them."""
        service = MemoryService(ready, store_name=self.store_name, scope=A1)
        if not isinstance(ready, NeighbourTurns):
            with pytest.raises(Unsupported):
                service.search("tomatoes", neighbours=1)
            return
        for scope, role, text in [
            (A1, "user", "What should I plant this spring?"),
            (B1, "user", "Bob's vault code is 4711"),
            (OTHER_APP, "user", "A turn of another app"),
            (A1, "assistant", "Tomatoes do well in a sunny bed"),
            (A2, "user", "A turn of another session of the same tenant"),
            (B1, "assistant", "Noted the vault code"),
            (A1, "user", "Then I will plant tomatoes by the fence"),
            (B1, "user", "Bob again"),
            (A1, "assistant", "Water them every other day"),
        ]:
            ready.add_messages(self.store_name, scope, [Message(role, text)], sync=True)
        plain = self.add(ready, A1, "Tomatoes grow in pots on a sunny balcony")
        self.settle(ready)
        hits = service.search("sunny bed tomatoes", top_k=10, neighbours=2)
        hit = next(h for h in hits if h.memory.text == "Tomatoes do well in a sunny bed")
        assert hit.neighbours is not None
        assert [m.content for m in hit.neighbours.before] == ["What should I plant this spring?"]
        assert [m.content for m in hit.neighbours.after] == [
            "Then I will plant tomatoes by the fence",
            "Water them every other day",
        ]
        assert {m.scope for m in (*hit.neighbours.before, *hit.neighbours.after)} == {A1}
        from_text = next(h for h in hits if h.memory.id == plain)
        assert from_text.neighbours is not None and from_text.neighbours.chars == 0
        # Another tenant names the hit's id: it answers as an id that came from no message.
        assert ready.neighbour_turns(self.store_name, B1, hit.memory.id, turns=2).chars == 0
        bob = MemoryService(ready, store_name=self.store_name, scope=B1)
        for other in bob.search("vault code tomatoes", top_k=10, neighbours=5):
            assert other.neighbours is not None
            said = [m.content for m in (*other.neighbours.before, *other.neighbours.after)]
            assert all("vault" in t or "Bob" in t for t in said), said
        assert [h.neighbours for h in service.search("sunny bed")] == [None] * len(
            service.search("sunny bed")
        )

    def test_a_session_s_messages_move_to_another_tenant_or_unsupported(
        self, ready: MemoryStore
    ) -> None:
        """A session's message log follows its memories to another tenant: in the order said,
        with their ids and times, and each moved memory has its turns around it there.
        Another tenant's log (the same agent and run names) and the tenant's other sessions
        stay; a second move finds nothing left. A store that cannot move a log says so."""
        alice = MemoryService(ready, store_name=self.store_name, scope=A1)
        moved_to = Scope("app", "tenant_c", "agent1", "run1")
        there = MemoryService(ready, store_name=self.store_name, scope=moved_to)
        if not isinstance(ready, MessageMove):
            assert not alice.logs.moves
            with pytest.raises(Unsupported):
                alice.logs.move([A1], to=there.logs)
            with pytest.raises(Unsupported):
                alice.logs.counts()
            return
        turns = [
            ("user", "What should I plant this spring?"),
            ("assistant", "Tomatoes do well in a sunny bed"),
            ("user", "Then I will plant tomatoes by the fence"),
        ]
        for role, text in turns:
            ready.add_messages(self.store_name, A1, [Message(role, text)], sync=True)
            ready.add_messages(self.store_name, B1, [Message(role, f"Bob: {text}")], sync=True)
        ready.add_messages(self.store_name, A2, [Message("user", "Another session")], sync=True)
        assert alice.logs.moves and alice.logs.counts() == {A1: 3, A2: 1}
        originals = [m for m in alice.every_memory() if m.scope == A1]
        for memory in originals:  # the memories first, as a migration imports them
            ready.add_text(self.store_name, moved_to, memory.text, sync=True)
        said = ready.list_messages(self.store_name, A1).items

        assert alice.logs.move([A1], to=there.logs) == 3
        landed = ready.list_messages(self.store_name, moved_to).items
        assert [(m.id, m.role, m.content, m.timestamp) for m in landed] == [
            (m.id, m.role, m.content, m.timestamp) for m in said
        ]
        assert {m.scope for m in landed} == {moved_to}
        assert alice.logs.counts() == {A2: 1}
        bob = ready.list_messages(self.store_name, B1).items
        assert [m.content for m in bob] == [f"Bob: {text}" for _, text in turns]
        for memory in originals:  # the old copies go; the turns stay with the new ones
            alice.forget(memory.id, agent_id=memory.scope.agent_id, run_id=memory.scope.run_id)
        assert len(ready.list_messages(self.store_name, moved_to).items) == 3
        if isinstance(ready, NeighbourTurns):
            self.settle(ready)
            hits = there.search("sunny bed tomatoes", top_k=10, neighbours=1)
            hit = next(h for h in hits if h.memory.text == turns[1][1])
            assert hit.neighbours is not None
            assert [m.content for m in hit.neighbours.before] == [turns[0][1]]
            assert [m.content for m in hit.neighbours.after] == [turns[2][1]]

        assert alice.logs.move([A1], to=there.logs) == 0  # stopped and run again: no repeats
        assert len(ready.list_messages(self.store_name, moved_to).items) == 3
        with pytest.raises(InvalidInput):  # another tenant's log is not this session's to move
            alice.logs.move([B1], to=there.logs)
        with pytest.raises(InvalidInput):
            alice.logs.move(
                [A2], to=MemoryService(ready, store_name=self.store_name, scope=A2).logs
            )
        assert ready.list_messages(self.store_name, B1).items == bob
        with pytest.raises(InvalidInput):
            ready.move_messages(self.store_name, [(A2, moved_to), (moved_to, B1)])
        assert alice.logs.counts() == {A2: 1}

    def test_a_rollback_keeps_what_another_write_landed_in_or_unsupported(
        self, ready: MemoryStore
    ) -> None:
        """A memory an import created goes with its rollback only while no other write has
        landed in it since: an add of its text (answered with its id), and a repeat that
        changes nothing (an older time), keep it. A memory already gone is not counted, and
        another tenant's scope is refused. A store that cannot tell says so."""
        alice = MemoryService(ready, store_name=self.store_name, scope=A1)
        if not isinstance(ready, UnclaimedDelete):
            assert not alice.tells_claims
            with pytest.raises(Unsupported):
                alice.forget_unclaimed([MemoryVersion(A1, uuid.uuid4().hex, 1)])
            return
        assert alice.tells_claims
        versions: dict[str, int] = {}
        texts = ["Ana keeps bees", "Ana sold the boat", "Ana moved to Porto", "Ana reads Saramago"]
        ids = alice.restore([TextItem(A1, t) for t in texts], versions=versions)
        claimed, older, quiet, gone = (str(i) for i in ids)
        assert set(versions) == set(ids)
        assert self.add(ready, A1, texts[0]) == claimed  # another writer, told it landed
        assert alice.restore([TextItem(A1, texts[1], created_at=1.0e9)]) == [older]
        assert alice.get(older).created_at != 1.0e9  # the older repeat changed nothing ...
        alice.forget(gone)
        with pytest.raises(InvalidInput):
            alice.forget_unclaimed([MemoryVersion(B1, quiet, versions[quiet])])
        kept = alice.forget_unclaimed([MemoryVersion(A1, i, versions[i]) for i in (quiet, gone)])
        assert kept == []
        kept = alice.forget_unclaimed([MemoryVersion(A1, i, versions[i]) for i in (claimed, older)])
        assert sorted(kept) == sorted([claimed, older])  # ... but it landed: kept too
        assert sorted(m.id for m in alice.every_memory()) == sorted([claimed, older])

    def test_a_claim_keeps_a_memory_from_a_rollback_or_unsupported(
        self, ready: MemoryStore
    ) -> None:
        """An import that counts a memory present claims it: its version moves and nothing
        else, so another import's rollback keeps it. One not in its scope (deleted, or
        another tenant's) is answered, not claimed; another tenant's scope is refused. A
        store that cannot tell says so."""
        alice = MemoryService(ready, store_name=self.store_name, scope=A1)
        if not isinstance(ready, UnclaimedDelete):
            with pytest.raises(Unsupported):
                alice.claim([(A1, uuid.uuid4().hex)])
            return
        versions: dict[str, int] = {}
        texts = ("Ana keeps bees", "Ana rows")
        ids = alice.restore([TextItem(A1, t) for t in texts], versions=versions)
        claimed, quiet = (str(i) for i in ids)
        before = alice.get(claimed)
        bobs = self.add(ready, B1, "Bob keeps bees")
        bob = MemoryService(ready, store_name=self.store_name, scope=B1)
        bobs_version = bob.get(bobs).version
        alice.forget(quiet)
        assert alice.claim([(A1, claimed), (A1, quiet), (A1, bobs)]) == [quiet, bobs]
        after = alice.get(claimed)
        assert after.version == (before.version or 0) + 1
        assert attrs.evolve(after, version=before.version) == before
        for bad in ([(B1, bobs)], [(A1, claimed), "x"], [(A1, 7)]):
            with pytest.raises(InvalidInput):
                alice.claim(bad)  # type: ignore[arg-type]
        assert bob.get(bobs).version == bobs_version  # neither claim reached it
        assert alice.forget_unclaimed([MemoryVersion(A1, claimed, versions[claimed])]) == [claimed]
        assert [m.id for m in alice.every_memory()] == [claimed]

    def test_reference_time_is_used_as_the_store_declares(self, ready: MemoryStore) -> None:
        """A store that declares ``supports_reference_time`` puts, of two equal hits, the one
        said in the span the time words name first, counted from the date given; one that
        does not answers the same whatever the date."""
        assert isinstance(ready.supports_reference_time, bool)
        said = {A1: (2023, 3, 12), A2: (2023, 4, 19)}  # the same text, said a month apart
        for scope, (year, month, day) in said.items():
            when = datetime(year, month, day, 12, tzinfo=timezone.utc).timestamp()
            message = Message("user", "I went hiking with Sam", timestamp=when)
            ready.add_messages(self.store_name, scope, [message], sync=True)
        self.settle(ready)

        def asked(month: int, day: int) -> list[tuple[str, float, Scope]]:
            hits = ready.search(
                self.store_name,
                A1.tenant_pattern(),
                "Where did I go hiking last month?",
                reference_time=datetime(2023, month, day, 8, tzinfo=timezone.utc),
            )
            return [(h.memory.id, h.score, h.memory.scope) for h in hits]

        in_april, in_may = asked(4, 22), asked(5, 20)
        if ready.supports_reference_time:
            assert [scope for _, _, scope in in_april[:2]] == [A1, A2]  # March's first
            assert [scope for _, _, scope in in_may[:2]] == [A2, A1]  # April's first
        else:
            assert in_april == in_may and len(in_april) == 2

    def test_a_message_dates_its_memory_when_it_was_said(self, ready: MemoryStore) -> None:
        """A message's own time becomes its memory's ``created_at`` (a replayed or imported
        conversation shows when it was said, not the replay day). The same text said again
        later is its newest occurrence (its metadata wins); said earlier, it changes nothing,
        whatever order the replays come in."""

        def said(month: int, tag: str) -> str:
            when = datetime(2023, month, 12, 12, tzinfo=timezone.utc).timestamp()
            message = Message("user", "I adopted a cat named Miso", timestamp=when)
            receipt = ready.add_messages(
                self.store_name, A1, [message], metadata={"told": tag}, sync=True
            )
            assert receipt.status == "completed" and len(receipt.memory_ids) == 1
            return receipt.memory_ids[0]

        def stamp(month: int) -> float:
            return datetime(2023, month, 12, 12, tzinfo=timezone.utc).timestamp()

        mid = said(3, "march")
        self.settle(ready)
        first = ready.get_memory(self.store_name, A1, mid)
        assert first.created_at == pytest.approx(stamp(3), abs=0.001)
        assert said(4, "april") == mid
        assert said(2, "february") == mid  # said before April: an older occurrence
        self.settle(ready)
        now = ready.get_memory(self.store_name, A1, mid)
        assert now.created_at == pytest.approx(stamp(3), abs=0.001)
        assert now.metadata.get("told") == "april"
        # When it was last said, where the store keeps it (not the day of the replay).
        assert first.said_at is None or first.said_at == pytest.approx(stamp(3), abs=0.001)
        assert now.said_at is None or now.said_at == pytest.approx(stamp(4), abs=0.001)
        # Each occurrence stays in the message log with its own time.
        logged = ready.list_messages(self.store_name, A1, limit=50).items
        assert sorted(m.timestamp or 0.0 for m in logged) == pytest.approx(
            [stamp(2), stamp(3), stamp(4)], abs=0.001
        )
        # Without a time of its own, a message is dated when it is written.
        before = datetime.now(timezone.utc).timestamp() - 5
        live = ready.add_messages(self.store_name, A2, [Message("user", "A live turn")], sync=True)
        self.settle(ready)
        record = ready.get_memory(self.store_name, A2, live.memory_ids[0])
        assert record.created_at is not None and record.created_at >= before

    @pytest.mark.parametrize(
        "when",
        [
            datetime(999, 12, 31, tzinfo=timezone.utc).timestamp(),
            datetime(9001, 1, 1, tzinfo=timezone.utc).timestamp(),
            datetime.now(timezone.utc).timestamp() + 3600,  # an hour ahead: a zone mistake
            float("nan"),
            True,
        ],
        ids=["year-999", "year-9001", "an-hour-ahead", "nan", "bool"],
    )
    def test_a_message_time_out_of_range_is_refused(self, ready: MemoryStore, when: Any) -> None:
        message = Message("user", "said at an impossible time", timestamp=when)
        with pytest.raises(InvalidInput) as refused:
            ready.add_messages(self.store_name, A1, [message], sync=True)
        assert refused.value.field == "messages[0].timestamp"
        assert ready.list_memories(self.store_name, A1.pattern()).items == ()

    def test_search_filters_are_exact_and_anded(self, ready: MemoryStore) -> None:
        both = self.add(ready, A1, "meeting about the budget", team="red", year="2026")
        self.add(ready, A1, "meeting about the budget plan", team="red", year="2025")
        self.add(ready, A1, "meeting about the budget review", team="blue", year="2026")
        self.settle(ready)
        hits = ready.search(
            self.store_name,
            A1.tenant_pattern(),
            "budget meeting",
            filters={"team": "red", "year": "2026"},
        )
        assert [h.memory.id for h in hits] == [both]
        none = ready.search(self.store_name, A1.tenant_pattern(), "budget", filters={"team": "re"})
        assert none == []

    def test_min_similarity_drops_weak_hits(self, ready: MemoryStore) -> None:
        strong = self.add(ready, A1, "the quick brown fox")
        weak = self.add(ready, A1, "a fox in winter")
        self.settle(ready)
        hits = ready.search(self.store_name, A1.tenant_pattern(), "quick brown fox")
        scores = {h.memory.id: h.score for h in hits}
        assert strong in scores and weak in scores
        assert scores[strong] > scores[weak]
        floor = (scores[strong] + scores[weak]) / 2
        kept = ready.search(
            self.store_name, A1.tenant_pattern(), "quick brown fox", min_similarity=floor
        )
        assert strong in [h.memory.id for h in kept]
        assert weak not in [h.memory.id for h in kept]
        assert all(h.score >= floor for h in kept)

    def test_search_hits_carry_relevance_details(self, ready: MemoryStore) -> None:
        here = self.add(ready, A1, "the team lunch is on friday")
        there = self.add(ready, A2, "the team lunch is on friday at noon")
        self.settle(ready)
        hits = ready.search(
            self.store_name,
            A1.tenant_pattern(),
            "team lunch friday",
            context_scope=A2,
            include_evidence=True,
        )
        found = {h.memory.id: h for h in hits}
        assert {here, there} <= set(found)
        for hit in hits:
            assert 0.0 <= hit.score <= 1.0
            assert hit.similarity is None or 0.0 <= hit.similarity <= 1.0
            assert isinstance(hit.evidence, tuple)
        with pytest.raises(InvalidInput):
            ready.search(self.store_name, A1.tenant_pattern(), "lunch", context_scope=B1)

    def test_search_finds_cjk_text(self, ready: MemoryStore) -> None:
        mid = self.add(ready, A1, "我喜欢喝咖啡")
        self.settle(ready)
        hits = ready.search(self.store_name, A1.tenant_pattern(), "咖啡")
        assert mid in [h.memory.id for h in hits]

    # -- pagination --------------------------------------------------------------------
    @pytest.mark.parametrize("limit", [1, 7, 100])
    def test_list_pages_return_every_item_once(self, ready: MemoryStore, limit: int) -> None:
        ids = {self.add(ready, A1 if i % 2 else A2, f"fact number {i}") for i in range(23)}
        self.add(ready, B1, "not mine")
        listed = _all_pages(
            lambda **kw: ready.list_memories(self.store_name, A1.tenant_pattern(), **kw), limit
        )
        assert len(listed) == len(ids)
        assert {m.id for m in listed} == ids

    def test_bad_page_token(self, ready: MemoryStore) -> None:
        with pytest.raises(InvalidInput):
            ready.list_memories(self.store_name, A1.tenant_pattern(), next_token="not-a-token!")

    # -- limits ------------------------------------------------------------------------
    def test_limits_are_enforced(self, ready: MemoryStore) -> None:
        with pytest.raises(InvalidInput):
            ready.add_text(self.store_name, A1, "x" * 32_001, sync=True)
        with pytest.raises(InvalidInput):
            ready.add_text(self.store_name, A1, "", sync=True)
        with pytest.raises(InvalidInput):
            ready.add_text(self.store_name, A1, "ok", metadata={f"k{i}": "v" for i in range(17)})
        with pytest.raises(InvalidInput):
            ready.add_text(self.store_name, A1, "ok", metadata={"k" * 65: "v"})
        with pytest.raises(InvalidInput):
            ready.add_text(self.store_name, A1, "ok", metadata={"k": "v" * 1025})
        with pytest.raises(InvalidInput):
            ready.search(self.store_name, A1.tenant_pattern(), "q", top_k=0)
        with pytest.raises(InvalidInput):
            ready.search(self.store_name, A1.tenant_pattern(), "q", top_k=51)
        with pytest.raises(InvalidInput):
            ready.search(self.store_name, A1.tenant_pattern(), "q" * 8_193)
        with pytest.raises(InvalidInput):
            ready.add_messages(self.store_name, A1, [Message("user", "hi")] * 21)
        with pytest.raises(InvalidInput):
            ready.add_messages(self.store_name, A1, [Message("user", "x" * 16_001)] * 2)
        assert ready.list_memories(self.store_name, A1.tenant_pattern()).items == ()

    def test_multibyte_text_limit_counts_bytes(self, ready: MemoryStore) -> None:
        with pytest.raises(InvalidInput):
            ready.add_text(self.store_name, A1, "咖" * 10_667, sync=True)  # 32,001 bytes
        mid = self.add(ready, A1, "咖" * 10_666)  # 31,998 bytes
        assert ready.get_memory(self.store_name, A1, mid).text == "咖" * 10_666

    # -- audit, scopes, tasks ------------------------------------------------------------
    def test_request_log_records_and_filters(self, ready: MemoryStore) -> None:
        mid = self.add(ready, A1, "audit me")
        ready.get_memory(self.store_name, A1, mid)
        ready.delete_memory(self.store_name, A1, mid)
        adds = ready.list_requests(self.store_name, operation="AddMemories").items
        assert adds and all(r.operation == "AddMemories" for r in adds)
        deletes = ready.list_requests(self.store_name, operation="DeleteMemory").items
        assert deletes and all(r.operation == "DeleteMemory" for r in deletes)
        everything = _all_pages(lambda **kw: ready.list_requests(self.store_name, **kw), 2)
        assert {"AddMemories", "GetMemory", "DeleteMemory"} <= {r.operation for r in everything}

    def test_list_scopes(self, ready: MemoryStore) -> None:
        self.add(ready, A1, "one")
        self.add(ready, A2, "two")
        self.add(ready, B1, "three")
        scopes = set(
            _all_pages(
                lambda **kw: ready.list_scopes(self.store_name, A1.tenant_pattern(), **kw), 1
            )
        )
        assert scopes == {A1, A2}
        everything = set(ready.list_scopes(self.store_name).items)
        assert {A1, A2, B1} <= everything

    def test_tasks(self, ready: MemoryStore) -> None:
        receipt = ready.add_text(self.store_name, A1, "task tracked", sync=True)
        assert receipt.task_id
        task = ready.get_task(self.store_name, receipt.task_id)
        assert task.id == receipt.task_id
        assert task.status == "completed"
        done = ready.list_tasks(self.store_name, status="completed").items
        assert receipt.task_id in [t.id for t in done]
        assert ready.list_tasks(self.store_name, status="failed").items == ()
        with pytest.raises(NotFound):
            ready.get_task(self.store_name, "no-such-task")

    @pytest.mark.parametrize("status", ["done", "Completed", "\ud800", 5])
    def test_an_unknown_task_status_is_refused(self, ready: MemoryStore, status: Any) -> None:
        # Not an empty page: that would read as "no such tasks" for a misspelt status.
        self.add(ready, A1, "a task to list")
        with pytest.raises(InvalidInput) as refused:
            ready.list_tasks(self.store_name, status=status)
        assert refused.value.field == "status"

    def test_a_write_task_names_the_scope_it_wrote(self, ready: MemoryStore) -> None:
        # The service checks a task id against the caller's tenant by this scope.
        receipt = ready.add_text(self.store_name, A1, "task with a scope", sync=True)
        assert receipt.task_id
        assert ready.get_task(self.store_name, receipt.task_id).scope == A1
        listed = ready.list_tasks(self.store_name, pattern=B1.tenant_pattern()).items
        assert receipt.task_id not in [t.id for t in listed]

    # -- dream -------------------------------------------------------------------------
    def test_dream_lifecycle_or_unsupported(self, ready: MemoryStore) -> None:
        self.add(ready, A1, "Likes tea")
        self.add(ready, A1, "likes  TEA")
        try:
            task = ready.create_dream_task(self.store_name, A1.tenant_pattern())
        except Unsupported as exc:
            assert str(exc)
            with pytest.raises(Unsupported):
                ready.list_dream_tasks(self.store_name)
            return
        assert task.scopes == (A1.tenant_pattern(),)
        assert task.status in DREAM_STATUSES
        assert ready.get_dream_task(self.store_name, task.id).id == task.id
        assert task.id in [t.id for t in ready.list_dream_tasks(self.store_name).items]
        listed = ready.list_dream_tasks(self.store_name, pattern=A1.tenant_pattern()).items
        assert task.id in [t.id for t in listed]
        actions = ready.list_dream_actions(self.store_name, task.id).items
        assert all(a.action in DREAM_ACTION_TYPES for a in actions)
        assert all(a.status in DREAM_ACTION_STATUSES for a in actions)
        applied = ready.apply_dream_actions(
            self.store_name, task.id, [*(a.id for a in actions), "no-such-action"]
        )
        assert len(applied) == len(actions) + 1
        assert applied[-1].status == "not_found"
        ready.cancel_dream_task(self.store_name, task.id)
        several = ready.create_dream_task(
            self.store_name, [A1.tenant_pattern(), B1.tenant_pattern()]
        )
        assert len(several.scopes) == 2
        with pytest.raises(InvalidInput):
            ready.create_dream_task(self.store_name, [])
        with pytest.raises(NotFound):
            ready.get_dream_task(self.store_name, "no-such-dream")

    def test_dream_merges_duplicates_and_never_touches_another_tenant(
        self, ready: MemoryStore
    ) -> None:
        for scope in (A1, B1):
            self.add(ready, scope, "Likes green tea")
            self.add(ready, scope, "likes  green TEA")
        others = sorted(
            (m.id, m.text) for m in ready.list_memories(self.store_name, B1.pattern()).items
        )
        try:
            task = ready.create_dream_task(self.store_name, A1.tenant_pattern())
        except Unsupported:
            return
        self.settle(ready)
        actions = ready.list_dream_actions(self.store_name, task.id).items
        assert [a.action for a in actions] == ["MERGE"]
        [merge] = actions
        assert merge.confidence is not None and 0.0 <= merge.confidence <= 1.0
        assert merge.scope is None or A1.tenant_pattern().matches(merge.scope)
        [result] = ready.apply_dream_actions(self.store_name, task.id, [merge.id])
        assert result.status == "applied"
        self.settle(ready)
        hits = ready.search(self.store_name, A1.pattern(), "green tea")
        assert len(hits) == 1
        after = sorted(
            (m.id, m.text) for m in ready.list_memories(self.store_name, B1.pattern()).items
        )
        assert after == others

    def test_dream_apply_takes_one_to_the_limit_of_distinct_ids(self, ready: MemoryStore) -> None:
        self.add(ready, A1, "Likes oolong tea")
        self.add(ready, A1, "likes  OOLONG tea")
        try:
            task = ready.create_dream_task(self.store_name, A1.tenant_pattern())
        except Unsupported:
            return
        self.settle(ready)
        [merge] = ready.list_dream_actions(self.store_name, task.id).items
        for bad in ([], [f"missing-{i}" for i in range(limits.MAX_APPLY_IDS + 1)]):
            with pytest.raises(InvalidInput) as info:
                ready.apply_dream_actions(self.store_name, task.id, bad)
            assert info.value.field == "action_ids"
        [still] = ready.list_dream_actions(self.store_name, task.id).items
        assert still.status == "proposed"
        # A repeat counts once: the limit's worth of distinct ids plus a repeat is one call.
        missing = [f"missing-{i}" for i in range(limits.MAX_APPLY_IDS - 1)]
        results = ready.apply_dream_actions(
            self.store_name, task.id, [merge.id, merge.id, *missing]
        )
        assert [r.id for r in results] == [merge.id, *missing]
        assert results[0].status == "applied"
        assert {r.status for r in results[1:]} == {"not_found"}

    def test_a_dream_task_names_the_scopes_it_reads(self, ready: MemoryStore) -> None:
        # The service checks a dream task id against the caller's tenant by these scopes.
        self.add(ready, A1, "Reads only tenant a")
        try:
            task = ready.create_dream_task(self.store_name, A1.tenant_pattern())
        except Unsupported:
            return
        other = ready.create_dream_task(self.store_name, B1.tenant_pattern())
        # The scopes asked for, or those they expanded to (TableStore's Get): never outside.
        got = ready.get_dream_task(self.store_name, task.id).scopes
        assert got and all(p.within(A1.tenant_pattern()) for p in got)
        listed = ready.list_dream_tasks(self.store_name, pattern=B1.tenant_pattern()).items
        assert other.id in [t.id for t in listed]
        assert task.id not in [t.id for t in listed]

    def test_a_cancel_answers_the_whole_task(self, ready: MemoryStore) -> None:
        """What a cancel answers is the task as a read of it then shows: its mode, scopes,
        instructions and dates, not defaults where the service's answer is short."""
        self.add(ready, A1, "Likes jasmine tea")
        try:
            task = ready.create_dream_task(
                self.store_name, A1.tenant_pattern(), apply_mode="safe_auto", instructions="Tea."
            )
        except Unsupported:
            return
        cancelled = ready.cancel_dream_task(self.store_name, task.id)
        read = ready.get_dream_task(self.store_name, task.id)

        def shown(t: Any) -> tuple[Any, ...]:
            return (t.id, t.status, t.scopes, t.apply_mode, t.instructions, t.created_at)

        assert shown(cancelled) == shown(read)
        assert (cancelled.apply_mode, cancelled.instructions) == ("safe_auto", "Tea.")
        assert cancelled.scopes and cancelled.created_at is not None

    def test_dream_calls_on_a_missing_task_are_not_found(self, ready: MemoryStore) -> None:
        try:
            ready.create_dream_task(self.store_name, A1.tenant_pattern())
        except Unsupported:
            return
        missing = "no-such-dream-" + uuid.uuid4().hex[:8]
        calls = (
            lambda: ready.get_dream_task(self.store_name, missing),
            lambda: ready.list_dream_actions(self.store_name, missing),
            lambda: ready.apply_dream_actions(self.store_name, missing, ["no-such-action"]),
            lambda: ready.cancel_dream_task(self.store_name, missing),
        )
        for call in calls:
            with pytest.raises(NotFound):
                call()

    # -- the library facade: one Memory for many users -----------------------------------
    def library(self, store: MemoryStore) -> Library:
        """A ``Memory`` on this store (it does not own it), default identity in tenant_a."""
        return Library(store, scope=A1, store_name=self.store_name)

    def test_one_memory_serves_many_users_apart(self, ready: MemoryStore) -> None:
        mem = self.library(ready)
        [alice] = mem.add(text="Alice keeps bees on the roof", user_id="alice")
        [bob] = mem.add(text="Bob keeps bees in the garden", user_id="bob")
        self.settle(ready)
        assert [h.memory.id for h in mem.search("bees", user_id="alice")] == [alice]
        assert [h.memory.id for h in mem.search("bees", user_id="bob")] == [bob]
        assert [m.id for m in mem.list(user_id="alice").items] == [alice]
        assert mem.get(alice, user_id="alice").scope.tenant_id == "alice"
        # Bob asking for Alice's id gets exactly what a missing id gets.
        calls: dict[str, Callable[[str], object]] = {
            "get": lambda i: mem.get(i, user_id="bob"),
            "history": lambda i: mem.history(i, user_id="bob"),
            "update": lambda i: mem.update(i, text="Bob was here", user_id="bob"),
            "delete": lambda i: mem.delete(i, user_id="bob"),
        }
        for name, call in calls.items():
            with pytest.raises(NotFound) as hers:
                call(alice)
            with pytest.raises(NotFound) as missing:
                call("no-such-memory")
            assert str(hers.value).replace(alice, "X") == str(missing.value).replace(
                "no-such-memory", "X"
            ), name
        assert mem.get(alice, user_id="alice").text == "Alice keeps bees on the roof"

    def test_an_id_is_found_in_any_scope_of_the_tenant(self, ready: MemoryStore) -> None:
        """An id alone reaches a memory of another agent or run of the same tenant (get,
        history, update, delete), never one of another tenant."""
        mem = self.library(ready)
        for run in ("r1", "r2", "r3"):
            mem.add(text=f"Frank's note of run {run}", user_id="frank", agent_id="bot", run_id=run)
        [mid] = mem.add(text="Frank rows on Sundays", user_id="frank", agent_id="bot", run_id="r9")
        mem.add(text="Gina rows too", user_id="gina", agent_id="bot", run_id="r9")
        self.settle(ready)
        assert mem.get(mid, user_id="frank").text == "Frank rows on Sundays"
        assert [m.id for m in mem.history(mid, user_id="frank")] == [mid]
        mem.update(mid, text="Frank rows on Saturdays", user_id="frank")
        assert mem.get(mid, user_id="frank", agent_id="bot", run_id="r9").text == (
            "Frank rows on Saturdays"
        )
        with pytest.raises(NotFound):
            mem.get(mid, user_id="gina")
        mem.delete(mid, user_id="frank")
        self.settle(ready)
        with pytest.raises(NotFound):
            mem.get(mid, user_id="frank")

    def test_a_closed_store_says_it_is_closed(self, ready: MemoryStore) -> None:
        """After ``close`` every call raises ``StoreClosed`` (closing again is harmless), so
        a caller can tell a closed store from a failing one."""
        mem = self.library(ready)
        [mid] = mem.add(text="Hana paints on Fridays", user_id="hana")
        ready.close()
        ready.close()
        for call in (
            lambda: ready.list_stores(),
            lambda: mem.get(mid, user_id="hana"),
            lambda: mem.search("paints", user_id="hana"),
            lambda: mem.add(text="Hana paints on Mondays too", user_id="hana"),
        ):
            with pytest.raises(StoreClosed):
                call()

    def test_a_tenant_s_tasks_come_in_full_pages(self, ready: MemoryStore) -> None:
        """Other tenants' writes between this tenant's neither shorten its pages of tasks
        nor leave one empty before the end."""
        mem = self.library(ready)
        mem.add(text="Ivy note 0", user_id="ivy", sync=False)
        for i in range(6):
            mem.add(text=f"Jon note {i}", user_id="jon", sync=False)
        for i in range(1, 4):
            mem.add(text=f"Ivy note {i}", user_id="ivy", sync=False)
        service = mem._for("ivy", None, None)
        sizes: list[int] = []
        token = None
        while True:
            page = service.tasks(limit=3, next_token=token)
            sizes.append(len(page.items))
            token = page.next_token
            if token is None:
                break
        assert sum(sizes) == 4
        assert sizes[0] == 3 and 0 not in sizes[:-1]

    def test_delete_all_empties_one_tenant_only(self, ready: MemoryStore) -> None:
        mem = self.library(ready)
        kept = mem.add(text="Alice drinks oolong", user_id="alice")
        for i in range(3):
            mem.add(text=f"Bob note number {i}", user_id="bob")
        mem.add(text="Bob as another agent", user_id="bob", agent_id="helper")
        self.settle(ready)
        assert mem.delete_all(user_id="bob", agent_id="helper") == 1
        assert mem.delete_all(user_id="bob") == 3
        self.settle(ready)
        assert mem.list(user_id="bob").items == ()
        assert [m.id for m in mem.list(user_id="alice").items] == kept
        assert mem.delete_all(user_id="bob") == 0

    def test_history_has_versions_with_dates(self, ready: MemoryStore) -> None:
        mem = self.library(ready)
        [mid] = mem.add(text="Carol lives in Lyon", user_id="carol")
        mem.update(mid, text="Carol lives in Porto", user_id="carol")
        [entry] = mem.history(mid, user_id="carol")
        assert (entry.id, entry.text) == (mid, "Carol lives in Porto")
        # Whether an update raises ``version`` is the backend's (the Memory Store's docs do
        # not say); the embedded store's own test checks it does there.
        # The Memory Store's unit has no updated_at (wire notes); where a backend sends it,
        # it is the date of the change.
        assert entry.created_at is not None
        assert entry.updated_at is None or entry.updated_at >= entry.created_at
        assert entry.is_current

    def test_history_and_list_after_a_dream_merge(self, ready: MemoryStore) -> None:
        """Backends that keep the merged memory (the embedded store) show it in ``history``
        and ``list(all_versions=True)``, never in ``list()``; others delete it."""
        mem = self.library(ready)
        mem.add(text="Dave likes green tea", user_id="dave")
        mem.add(text="dave likes  GREEN tea", user_id="dave")
        try:
            task = mem.dream(apply_mode="proposal", user_id="dave")
        except Unsupported:
            return
        self.settle(ready)
        [merge] = mem.dream_actions(task.id, user_id="dave")
        mem.apply_dream_actions(task.id, [merge.id], user_id="dave")
        self.settle(ready)
        current = mem.list(user_id="dave").items
        assert [m.is_current for m in current] == [True]
        history = mem.history(current[0].id, user_id="dave")
        assert current[0].id in [m.id for m in history]
        older = [m for m in history if m.id != current[0].id]
        assert all(m.superseded_by == current[0].id for m in older)
        everything = {m.id for m in mem.list(user_id="dave", all_versions=True).items}
        assert {m.id for m in history} <= everything
        assert len(everything) == len(history)

    def test_closing_a_memory_on_a_shared_store_leaves_the_store_open(
        self, ready: MemoryStore
    ) -> None:
        first, second = self.library(ready), self.library(ready)
        first.add(text="Erin plays the cello", user_id="erin")
        first.close()
        [mid] = second.add(text="Erin plays the oboe too", user_id="erin")
        assert second.get(mid, user_id="erin").text == "Erin plays the oboe too"

    def test_async_memory_serves_many_users_apart(self, ready: MemoryStore) -> None:
        async def scenario() -> tuple[list[str], list[str], int, list[str]]:
            mem = AsyncMemory(self.library(ready))
            alice = await mem.add(text="Alice sails on weekends", user_id="alice")
            await mem.add(text="Bob sails on weekdays", user_id="bob")
            self.settle(ready)
            with pytest.raises(NotFound):
                await mem.get(alice[0], user_id="bob")
            hits = [h.memory.id for h in await mem.search("sails", user_id="alice")]
            gone = await mem.delete_all(user_id="bob")
            self.settle(ready)
            left = [m.id async for m in mem.iter_all(user_id="alice")]
            return alice, hits, gone, left

        alice, hits, gone, left = asyncio.run(scenario())
        assert hits == alice and left == alice and gone == 1
