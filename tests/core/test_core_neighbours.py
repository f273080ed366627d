"""The turns around a hit: the budget that cuts them, the checks on the request, and the
library facades that ask for them."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

import memcore
from memcore.errors import InvalidInput, Unsupported
from memcore.neighbours import ELLIPSIS, MIN_CUT_CHARS, fit
from memcore.scope import Scope
from memcore.service import MemoryService
from memcore.testing import InMemoryMemoryStore
from memcore.values import Message, TurnContext

A = Scope("app", "alice", "agent", "run1")


def turns(*texts: str) -> tuple[Message, ...]:
    return tuple(Message("user", t) for t in texts)


def contents(context: TurnContext) -> tuple[list[str], list[str]]:
    return [m.content for m in context.before], [m.content for m in context.after]


def test_the_budget_takes_the_nearest_turns_first_one_side_then_the_other() -> None:
    context = TurnContext(turns("b3" * 50, "b2" * 50, "b1" * 50), turns("a1" * 50, "a2" * 50))
    assert contents(fit(context, 10_000)) == contents(context)
    # 100 characters a turn: the one before, the one after, then the second before, cut.
    before, after = contents(fit(context, 260))
    assert after == ["a1" * 50]
    assert before[1] == "b1" * 50 and before[0].endswith(ELLIPSIS) and len(before[0]) == 60
    assert fit(context, 260).chars == 260


def test_a_cut_too_short_to_say_anything_ends_the_context_without_a_gap() -> None:
    context = TurnContext(turns("b2" * 50, "b1" * 50), turns("a1" * 50, "short"))
    before, after = contents(fit(context, 200 + MIN_CUT_CHARS - 1))
    # The second turn before does not fit and is not cut; "short" after it would fit, but
    # the context stops there, so no side skips a turn.
    assert before == ["b1" * 50] and after == ["a1" * 50]


def test_an_empty_context_stays_empty() -> None:
    assert fit(TurnContext(), 100) == TurnContext()


@pytest.mark.parametrize(
    ("kwargs", "field"),
    [
        ({"neighbours": -1}, "neighbours"),
        ({"neighbours": 6}, "neighbours"),
        ({"neighbours": True}, "neighbours"),
        ({"neighbours": "1"}, "neighbours"),
        ({"neighbours": 1, "neighbour_chars": 0}, "neighbour_chars"),
        ({"neighbours": 1, "neighbour_chars": 16_001}, "neighbour_chars"),
        ({"neighbours": 1, "neighbour_chars": 1.5}, "neighbour_chars"),
    ],
)
def test_bad_requests_are_refused_before_the_store(kwargs: dict[str, Any], field: str) -> None:
    store = _NoTurnOrder(InMemoryMemoryStore())
    service = MemoryService(store, store_name="mem", scope=A)  # type: ignore[arg-type]
    with pytest.raises(InvalidInput) as caught:
        service.search("tomatoes", **kwargs)
    assert caught.value.field == field and store.searches == 0


class _NoTurnOrder:
    """A store that searches but keeps no order of turns (as TableStore)."""

    def __init__(self, inner: InMemoryMemoryStore) -> None:
        self.inner = inner
        self.searches = 0

    def search(self, *args: Any, **kwargs: Any) -> Any:
        self.searches += 1
        return self.inner.search(*args, **kwargs)


def test_a_store_without_turn_order_says_so_before_searching() -> None:
    store = _NoTurnOrder(InMemoryMemoryStore())
    service = MemoryService(store, store_name="mem", scope=A)  # type: ignore[arg-type]
    with pytest.raises(Unsupported) as caught:
        service.search("tomatoes", neighbours=1)
    assert caught.value.field == "neighbours" and store.searches == 0


def _conversation(mem: Any) -> None:
    mem.add(
        messages=[
            Message("user", "What should I plant this spring?"),
            Message("assistant", "Tomatoes do well in a sunny bed."),
            Message("user", "Then I will plant tomatoes by the fence"),
        ]
    )


def test_memory_and_async_memory_ask_for_neighbours() -> None:
    mem = memcore.Memory(InMemoryMemoryStore())
    _conversation(mem)
    [hit] = [h for h in mem.search("fence", neighbours=1) if "fence" in h.memory.text]
    assert hit.neighbours is not None
    assert contents(hit.neighbours) == (["Tomatoes do well in a sunny bed."], [])
    assert all(h.neighbours is None for h in mem.search("fence"))  # only when asked

    async def scenario() -> TurnContext | None:
        async with memcore.AsyncMemory(mem) as amem:
            hits = await amem.search("fence", neighbours=1, neighbour_chars=10)
            return next(h for h in hits if "fence" in h.memory.text).neighbours

    context = asyncio.run(scenario())
    assert context is not None and context.chars == 0  # a 10-character budget holds no turn
