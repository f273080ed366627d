"""The recall block shows a memory's neighbouring turns under it, in the order said, within
the memory's own share of the block: they never cost another memory its place."""

from __future__ import annotations

import attrs

from memcore.recall import format_recall
from memcore.scope import Scope
from memcore.values import MemoryRecord, Message, SearchHit, TurnContext

T0 = 1_780_000_000.0


def hit(text: str, score: float, context: TurnContext | None = None) -> SearchHit:
    memory = MemoryRecord(id=text[:8], text=text, scope=Scope("a", "t", "g", "r1"), created_at=T0)
    return SearchHit(memory, score, neighbours=context)


HUT = TurnContext(
    before=(
        Message("user", "Which trail should we take on Saturday?"),
        Message("assistant", "Take the ridge trail above Lake Bled, it is dry this week."),
    ),
    after=(Message("assistant", "Good: the hut serves dinner until eight."),),
)


def test_neighbours_show_under_their_memory_in_the_order_said() -> None:
    block = format_recall([hit("I booked the hut near Triglav", 0.9, HUT)])
    body = block.splitlines()
    start = next(i for i, line in enumerate(body) if line.startswith("- "))
    assert body[start : start + 4] == [
        "- [2026-05-28] I booked the hut near Triglav",
        "  before, user: Which trail should we take on Saturday?",
        "  before, assistant: Take the ridge trail above Lake Bled, it is dry this week.",
        "  after, assistant: Good: the hut serves dinner until eight.",
    ]


def test_no_neighbours_asked_is_the_block_as_before() -> None:
    asked_none = format_recall([hit("I booked the hut near Triglav", 0.9, TurnContext())])
    not_asked = format_recall([hit("I booked the hut near Triglav", 0.9)])
    assert asked_none == not_asked and "before," not in not_asked


def test_neighbours_take_only_their_memorys_share_nearest_first() -> None:
    """Five long memories fill a small block: each memory is shown as without neighbours,
    and the turns that still fit are the nearest ones."""
    long_turn = "word " * 200
    context = attrs.evolve(HUT, before=(Message("user", long_turn), *HUT.before), after=HUT.after)
    hits = [hit(f"memory number {i} " + "x" * 300, 1 - i / 10, context) for i in range(5)]
    plain = [attrs.evolve(h, neighbours=None) for h in hits]
    with_turns = format_recall(hits, max_chars=3_000)
    without = format_recall(plain, max_chars=3_000)
    assert len(with_turns) <= 3_000
    memories = [line for line in with_turns.splitlines() if line.startswith("- ")]
    assert memories == [line for line in without.splitlines() if line.startswith("- ")]
    assert len(memories) == 5
    # The far, long turn is cut or left out; the nearest ones come first.
    first = with_turns.split("- ", 2)[1]
    assert "before, assistant: Take the ridge" in first


def test_a_turn_that_is_a_memory_shown_is_not_repeated_under_another() -> None:
    reply = HUT.after[0].content
    block = format_recall([hit("I booked the hut near Triglav", 0.9, HUT), hit(reply, 0.8)])
    assert block.count(reply) == 1 and "after, assistant" not in block
    assert "before, user: Which trail should we take on Saturday?" in block


def test_two_turns_of_the_same_words_are_each_shown_under_their_memory() -> None:
    """A short answer said twice ("Yes, please.") is two turns: each is shown under the memory
    it answers, or the second question would stand unanswered in the block."""
    paris = TurnContext(
        before=(Message("assistant", "Shall I book the 9:40 train to Paris?", id="m1"),),
        after=(
            Message("user", "Yes, please.", id="m2"),
            Message("assistant", "Booked, seat 42.", id="m3"),
        ),
    )
    rome = TurnContext(
        before=(Message("assistant", "Shall I cancel your Rome hotel for Friday?", id="m7"),),
        after=(
            Message("user", "Yes, please.", id="m8"),
            Message("assistant", "Cancelled, the refund takes five days.", id="m9"),
        ),
    )
    block = format_recall(
        [
            hit("Ana takes the train to Paris on Friday", 0.9, paris),
            hit("Ana's Rome hotel", 0.8, rome),
        ]
    )
    rome_part = block[block.index("Ana's Rome hotel") :]
    assert block.count("after, user: Yes, please.") == 2
    assert "after, assistant: Cancelled, the refund takes five days." in rome_part


def test_one_turn_neighbouring_two_memories_is_shown_once() -> None:
    """The same message (one id) around two memories is shown under the first only."""
    shared = Message("assistant", "Noted, I will keep both in mind.", id="m5")
    first = TurnContext(after=(shared,))
    second = TurnContext(before=(shared,))
    block = format_recall(
        [hit("Ana likes window seats", 0.9, first), hit("Ana dislikes night trains", 0.8, second)]
    )
    assert block.count(shared.content) == 1
