"""The messages family: the turn log behind memories, its neighbours, dates and moves."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

import pytest

from memcore.errors import InvalidInput, Unsupported
from memcore.ports import MemoryStore, MessageMove, NeighbourTurns
from memcore.scope import Scope
from memcore.service import MemoryService
from memcore.testing.contract.fixtures import StoreFixtures
from memcore.testing.contract.harness import A1, A2, B1, OTHER_APP, STORE, Settle, add
from memcore.values import Message


class MessagesContract(StoreFixtures):
    """A message log keeps its turns in order, dates its memories, and moves with them."""

    def test_a_hit_comes_with_the_turns_of_its_own_session_or_unsupported(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        """Neighbours come only from the hit's own session of its own tenant, in the order
        they were said, though another tenant's turns (same agent and run names), another
        app's and another session's were written in between; a store that keeps no turn
        order says so instead of answering without them."""
        service = MemoryService(ready, store_name=STORE, scope=A1)
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
            ready.add_messages(STORE, scope, [Message(role, text)], sync=True)
        plain = add(ready, A1, "Tomatoes grow in pots on a sunny balcony")
        settle(ready)
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
        assert ready.neighbour_turns(STORE, B1, hit.memory.id, turns=2).chars == 0

    def test_a_conversation_added_after_a_later_one_shows_its_own_turns(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        """Neighbours followed the order written: an older conversation imported into a
        session after a newer one showed the newer one's turns as said before its hits."""
        if not isinstance(ready, NeighbourTurns):
            return
        day = 86_400.0
        december = 1_796_400_000.0
        november = december - 30 * day
        for start, texts in (
            (december, ["Today I bought a red bicycle", "The bicycle shop was busy"]),
            (
                november,
                ["I met Ana at the market", "Last month I sold my old scooter", "Ana liked it"],
            ),
        ):
            ready.add_messages(
                STORE,
                A1,
                [Message("user", t, timestamp=start + i * 60) for i, t in enumerate(texts)],
                sync=True,
            )
        settle(ready)
        service = MemoryService(ready, store_name=STORE, scope=A1)
        [hit] = [
            h
            for h in service.search("scooter sold", top_k=10, neighbours=2)
            if h.memory.text == "Last month I sold my old scooter"
        ]
        assert hit.neighbours is not None
        assert [m.content for m in hit.neighbours.before] == ["I met Ana at the market"]
        assert [m.content for m in hit.neighbours.after] == [
            "Ana liked it",
            "Today I bought a red bicycle",
        ]
        bob = MemoryService(ready, store_name=STORE, scope=B1)
        for other in bob.search("vault code tomatoes", top_k=10, neighbours=5):
            assert other.neighbours is not None
            said = [m.content for m in (*other.neighbours.before, *other.neighbours.after)]
            assert all("vault" in t or "Bob" in t for t in said), said
        assert [h.neighbours for h in service.search("sunny bed")] == [None] * len(
            service.search("sunny bed")
        )

    def test_a_session_s_messages_move_to_another_tenant_or_unsupported(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        """A session's message log follows its memories to another tenant: in the order said,
        with their ids and times, and each moved memory has its turns around it there.
        Another tenant's log (the same agent and run names) and the tenant's other sessions
        stay; a second move finds nothing left. A store that cannot move a log says so."""
        alice = MemoryService(ready, store_name=STORE, scope=A1)
        moved_to = Scope("app", "tenant_c", "agent1", "run1")
        there = MemoryService(ready, store_name=STORE, scope=moved_to)
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
            ready.add_messages(STORE, A1, [Message(role, text)], sync=True)
            ready.add_messages(STORE, B1, [Message(role, f"Bob: {text}")], sync=True)
        ready.add_messages(STORE, A2, [Message("user", "Another session")], sync=True)
        assert alice.logs.moves and alice.logs.counts() == {A1: 3, A2: 1}
        originals = [m for m in alice.every_memory() if m.scope == A1]
        for memory in originals:  # the memories first, as a migration imports them
            ready.add_text(STORE, moved_to, memory.text, sync=True)
        said = ready.list_messages(STORE, A1).items

        assert alice.logs.move([A1], to=there.logs) == 3
        landed = ready.list_messages(STORE, moved_to).items
        assert [(m.id, m.role, m.content, m.timestamp) for m in landed] == [
            (m.id, m.role, m.content, m.timestamp) for m in said
        ]
        assert {m.scope for m in landed} == {moved_to}
        assert alice.logs.counts() == {A2: 1}
        bob = ready.list_messages(STORE, B1).items
        assert [m.content for m in bob] == [f"Bob: {text}" for _, text in turns]
        for memory in originals:  # the old copies go; the turns stay with the new ones
            alice.forget(memory.id, agent_id=memory.scope.agent_id, run_id=memory.scope.run_id)
        assert len(ready.list_messages(STORE, moved_to).items) == 3
        if isinstance(ready, NeighbourTurns):
            settle(ready)
            hits = there.search("sunny bed tomatoes", top_k=10, neighbours=1)
            hit = next(h for h in hits if h.memory.text == turns[1][1])
            assert hit.neighbours is not None
            assert [m.content for m in hit.neighbours.before] == [turns[0][1]]
            assert [m.content for m in hit.neighbours.after] == [turns[2][1]]

        assert alice.logs.move([A1], to=there.logs) == 0  # stopped and run again: no repeats
        assert len(ready.list_messages(STORE, moved_to).items) == 3
        with pytest.raises(InvalidInput):  # another tenant's log is not this session's to move
            alice.logs.move([B1], to=there.logs)
        with pytest.raises(InvalidInput):
            alice.logs.move([A2], to=MemoryService(ready, store_name=STORE, scope=A2).logs)
        assert ready.list_messages(STORE, B1).items == bob
        with pytest.raises(InvalidInput):
            ready.move_messages(STORE, [(A2, moved_to), (moved_to, B1)])
        assert alice.logs.counts() == {A2: 1}

    def test_a_message_dates_its_memory_when_it_was_said(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        """A message's own time becomes its memory's ``created_at`` (a replayed or imported
        conversation shows when it was said, not the replay day). The same text said again
        later is its newest occurrence (its metadata wins); said earlier, it changes nothing,
        whatever order the replays come in."""

        def said(month: int, tag: str) -> str:
            when = datetime(2023, month, 12, 12, tzinfo=timezone.utc).timestamp()
            message = Message("user", "I adopted a cat named Miso", timestamp=when)
            receipt = ready.add_messages(STORE, A1, [message], metadata={"told": tag}, sync=True)
            assert receipt.status == "completed" and len(receipt.memory_ids) == 1
            return receipt.memory_ids[0]

        def stamp(month: int) -> float:
            return datetime(2023, month, 12, 12, tzinfo=timezone.utc).timestamp()

        mid = said(3, "march")
        settle(ready)
        first = ready.get_memory(STORE, A1, mid)
        assert first.created_at == pytest.approx(stamp(3), abs=0.001)
        assert said(4, "april") == mid
        assert said(2, "february") == mid  # said before April: an older occurrence
        settle(ready)
        now = ready.get_memory(STORE, A1, mid)
        assert now.created_at == pytest.approx(stamp(3), abs=0.001)
        assert now.metadata.get("told") == "april"
        # When it was last said, where the store keeps it (not the day of the replay).
        assert first.said_at is None or first.said_at == pytest.approx(stamp(3), abs=0.001)
        assert now.said_at is None or now.said_at == pytest.approx(stamp(4), abs=0.001)
        # Each occurrence stays in the message log with its own time.
        logged = ready.list_messages(STORE, A1, limit=50).items
        assert sorted(m.timestamp or 0.0 for m in logged) == pytest.approx(
            [stamp(2), stamp(3), stamp(4)], abs=0.001
        )
        # Without a time of its own, a message is dated when it is written.
        before = datetime.now(timezone.utc).timestamp() - 5
        live = ready.add_messages(STORE, A2, [Message("user", "A live turn")], sync=True)
        settle(ready)
        record = ready.get_memory(STORE, A2, live.memory_ids[0])
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
            ready.add_messages(STORE, A1, [message], sync=True)
        assert refused.value.field == "messages[0].timestamp"
        assert ready.list_memories(STORE, A1.pattern()).items == ()
