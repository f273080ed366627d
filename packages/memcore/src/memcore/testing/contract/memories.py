"""The memories family: one memory's life, its pages and the service's limits on it."""

from __future__ import annotations

import pytest

from memcore import limits
from memcore.errors import InvalidInput, NotFound
from memcore.ports import MemoryStore
from memcore.testing.contract.fixtures import StoreFixtures
from memcore.testing.contract.harness import A1, A2, B1, STORE, Settle, add, all_pages
from memcore.values import MemoryRecord, Message


class MemoriesContract(StoreFixtures):
    """A memory is written once, read back, edited, deleted, paged and kept within the service's limits."""

    def test_add_get_round_trip(self, ready: MemoryStore) -> None:
        mid = add(ready, A1, "The user likes green tea", topic="drinks")
        memory = ready.get_memory(STORE, A1, mid)
        assert isinstance(memory, MemoryRecord)
        assert (memory.id, memory.text, memory.scope) == (mid, "The user likes green tea", A1)
        assert memory.metadata == {"topic": "drinks"}

    def test_same_text_same_scope_is_one_memory(self, ready: MemoryStore) -> None:
        first = add(ready, A1, "Prefers dark mode")
        second = add(ready, A1, "Prefers dark mode")
        assert first == second
        other = add(ready, A2, "Prefers dark mode")
        assert other != first
        listed = all_pages(lambda **kw: ready.list_memories(STORE, A1.tenant_pattern(), **kw), 50)
        assert sorted(m.id for m in listed) == sorted({first, other})

    def test_add_messages_stores_messages_and_memories(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        msgs = [
            Message("user", "I moved to Hangzhou last spring"),
            Message("assistant", "Noted that you live in Hangzhou now"),
        ]
        receipt = ready.add_messages(STORE, A1, msgs, sync=True)
        assert receipt.status == "completed"
        page = ready.list_messages(STORE, A1)
        assert [(m.role, m.content) for m in page.items] == [(m.role, m.content) for m in msgs]
        assert ready.list_messages(STORE, B1).items == ()
        settle(ready)
        hits = ready.search(STORE, A1.tenant_pattern(), "Hangzhou")
        assert hits and all(A1.tenant_pattern().matches(h.memory.scope) for h in hits)

    def test_update_replaces_text_and_merges_metadata(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        mid = add(ready, A1, "Favourite colour is blue", kind="pref", old="x")
        updated = ready.update_memory(
            STORE, A1, mid, text="Favourite colour is orange", metadata={"kind": "pref2"}
        )
        assert updated.text == "Favourite colour is orange"
        # The service merges metadata: the same key overwrites, other keys stay.
        assert updated.metadata == {"kind": "pref2", "old": "x"}
        got = ready.get_memory(STORE, A1, mid)
        assert (got.text, dict(got.metadata)) == (
            "Favourite colour is orange",
            {"kind": "pref2", "old": "x"},
        )
        only_meta = ready.update_memory(STORE, A1, mid, metadata={"k": "v"})
        assert only_meta.text == "Favourite colour is orange"
        assert only_meta.metadata == {"kind": "pref2", "old": "x", "k": "v"}
        cleared = ready.update_memory(STORE, A1, mid, metadata={})
        assert cleared.metadata == {}
        settle(ready)
        hits = ready.search(STORE, A1.tenant_pattern(), "orange colour")
        assert mid in [h.memory.id for h in hits]

    def test_a_repeat_keeps_metadata_within_the_limit(self, ready: MemoryStore) -> None:
        """The same text again merges metadata (limits.merge_metadata): the newer keys win and
        the older ones fill the room left in key order; never more than the limit."""
        older = {f"a{i:02d}": "old" for i in range(limits.MAX_METADATA_KEYS)}
        newer = {f"b{i:02d}": "new" for i in range(limits.MAX_METADATA_KEYS)}
        mid = add(ready, A1, "Repeated with many keys", **older)
        assert add(ready, A1, "Repeated with many keys", **newer) == mid
        assert dict(ready.get_memory(STORE, A1, mid).metadata) == newer
        third = {"a00": "again", "c": "x"}
        assert add(ready, A1, "Repeated with many keys", **third) == mid
        kept = sorted(newer)[: limits.MAX_METADATA_KEYS - len(third)]
        expected = {**third, **{k: "new" for k in kept}}
        assert dict(ready.get_memory(STORE, A1, mid).metadata) == expected
        listed = ready.list_memories(STORE, A1.tenant_pattern()).items
        assert all(len(m.metadata) <= limits.MAX_METADATA_KEYS for m in listed)

    def test_metadata_past_the_service_s_json_size_is_refused_and_never_merged_past_it(
        self, ready: MemoryStore
    ) -> None:
        """The service refuses metadata over 65,536 bytes as JSON, which 16 values of 1,024
        four-byte characters pass; a repeat's merge keeps within it, an update is refused."""
        big = {f"k{i:02d}": "\U0001f600" * limits.MAX_METADATA_VALUE_CHARS for i in range(16)}
        with pytest.raises(InvalidInput) as refused:
            ready.add_text(STORE, A1, "Too much metadata", metadata=big, sync=True)
        assert refused.value.field == "metadata"
        fifteen = dict(list(big.items())[:15])
        mid = add(ready, A1, "Nearly full metadata", **fifteen)
        more = {"z": "\U0001f600" * 500}
        assert add(ready, A1, "Nearly full metadata", **more) == mid
        kept = dict(ready.get_memory(STORE, A1, mid).metadata)
        assert kept["z"] == more["z"]
        assert limits.metadata_bytes(kept) <= limits.MAX_METADATA_JSON_BYTES
        with pytest.raises(InvalidInput):
            ready.update_memory(STORE, A1, mid, metadata={"z": "\U0001f600" * 1024})
        assert dict(ready.get_memory(STORE, A1, mid).metadata) == kept

    def test_an_update_past_the_metadata_limit_is_refused(self, ready: MemoryStore) -> None:
        full = {f"k{i:02d}": "v" for i in range(limits.MAX_METADATA_KEYS)}
        mid = add(ready, A1, "Sixteen keys already", **full)
        with pytest.raises(InvalidInput):
            ready.update_memory(STORE, A1, mid, text="Changed text", metadata={"extra": "x"})
        got = ready.get_memory(STORE, A1, mid)
        assert (got.text, dict(got.metadata)) == ("Sixteen keys already", full)
        same = ready.update_memory(STORE, A1, mid, metadata={"k00": "w"})
        assert dict(same.metadata) == {**full, "k00": "w"}

    def test_delete_really_deletes(self, settle: Settle, ready: MemoryStore) -> None:
        mid = add(ready, A1, "Secret project codename is bluebird")
        keep = add(ready, A1, "Another memory about bluebird songs")
        settle(ready)
        ready.delete_memory(STORE, A1, mid)
        with pytest.raises(NotFound):
            ready.get_memory(STORE, A1, mid)
        with pytest.raises(NotFound):
            ready.delete_memory(STORE, A1, mid)
        listed = ready.list_memories(STORE, A1.tenant_pattern()).items
        assert mid not in [m.id for m in listed]
        settle(ready)
        hits = ready.search(STORE, A1.tenant_pattern(), "bluebird codename")
        assert mid not in [h.memory.id for h in hits]
        assert keep in [h.memory.id for h in hits]

    def test_delete_then_re_add_is_a_new_memory(self, ready: MemoryStore) -> None:
        mid = add(ready, A1, "Temporary fact")
        ready.delete_memory(STORE, A1, mid)
        again = add(ready, A1, "Temporary fact")
        assert ready.get_memory(STORE, A1, again).text == "Temporary fact"

    def test_get_missing_memory(self, ready: MemoryStore) -> None:
        with pytest.raises(NotFound):
            ready.get_memory(STORE, A1, "no-such-id")
        with pytest.raises(NotFound):
            ready.update_memory(STORE, A1, "no-such-id", text="x")

    @pytest.mark.parametrize("limit", [1, 7, 100])
    def test_list_pages_return_every_item_once(self, ready: MemoryStore, limit: int) -> None:
        ids = {add(ready, A1 if i % 2 else A2, f"fact number {i}") for i in range(23)}
        add(ready, B1, "not mine")
        listed = all_pages(
            lambda **kw: ready.list_memories(STORE, A1.tenant_pattern(), **kw), limit
        )
        assert len(listed) == len(ids)
        assert {m.id for m in listed} == ids

    def test_bad_page_token(self, ready: MemoryStore) -> None:
        with pytest.raises(InvalidInput):
            ready.list_memories(STORE, A1.tenant_pattern(), next_token="not-a-token!")

    def test_limits_are_enforced(self, ready: MemoryStore) -> None:
        with pytest.raises(InvalidInput):
            ready.add_text(STORE, A1, "x" * 32_001, sync=True)
        with pytest.raises(InvalidInput):
            ready.add_text(STORE, A1, "", sync=True)
        with pytest.raises(InvalidInput):
            ready.add_text(STORE, A1, "ok", metadata={f"k{i}": "v" for i in range(17)})
        with pytest.raises(InvalidInput):
            ready.add_text(STORE, A1, "ok", metadata={"k" * 65: "v"})
        with pytest.raises(InvalidInput):
            ready.add_text(STORE, A1, "ok", metadata={"k": "v" * 1025})
        with pytest.raises(InvalidInput):
            ready.search(STORE, A1.tenant_pattern(), "q", top_k=0)
        with pytest.raises(InvalidInput):
            ready.search(STORE, A1.tenant_pattern(), "q", top_k=51)
        with pytest.raises(InvalidInput):
            ready.search(STORE, A1.tenant_pattern(), "q" * 8_193)
        with pytest.raises(InvalidInput):
            ready.add_messages(STORE, A1, [Message("user", "hi")] * 21)
        with pytest.raises(InvalidInput):
            ready.add_messages(STORE, A1, [Message("user", "x" * 16_001)] * 2)
        assert ready.list_memories(STORE, A1.tenant_pattern()).items == ()

    def test_multibyte_text_limit_counts_bytes(self, ready: MemoryStore) -> None:
        with pytest.raises(InvalidInput):
            ready.add_text(STORE, A1, "咖" * 10_667, sync=True)  # 32,001 bytes
        mid = add(ready, A1, "咖" * 10_666)  # 31,998 bytes
        assert ready.get_memory(STORE, A1, mid).text == "咖" * 10_666
