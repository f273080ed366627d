"""The search family: ranking, filters, scores and the reference time."""

from __future__ import annotations

from datetime import datetime, timezone

import pytest

from memcore.errors import InvalidInput
from memcore.ports import MemoryStore
from memcore.scope import Scope
from memcore.testing.contract.fixtures import StoreFixtures
from memcore.testing.contract.harness import A1, A2, B1, STORE, Settle, add
from memcore.values import Message


class SearchContract(StoreFixtures):
    """Search ranks, filters, scores and reads time words as the store declares."""

    def test_search_scores_ordering_top_k(self, settle: Settle, ready: MemoryStore) -> None:
        for i in range(8):
            add(ready, A1, f"note {i} about the garden and tomatoes")
        add(ready, A1, "tomatoes")
        settle(ready)
        hits = ready.search(STORE, A1.tenant_pattern(), "tomatoes garden", top_k=3)
        assert 1 <= len(hits) <= 3
        scores = [h.score for h in hits]
        assert all(isinstance(s, float) and 0.0 <= s <= 1.0 for s in scores)
        assert scores == sorted(scores, reverse=True)

    def test_search_takes_a_reference_time(self, settle: Settle, ready: MemoryStore) -> None:
        """Every store accepts the question's date and refuses what is not a datetime; how
        far it ranks with it is the store's (a hint, like ``context_scope``)."""
        add(ready, A1, "we repainted the fence")
        settle(ready)
        asked = datetime(2026, 4, 22, 8, tzinfo=timezone.utc)
        pattern = A1.tenant_pattern()
        hits = ready.search(STORE, pattern, "fence last month", reference_time=asked)
        assert [h.memory.text for h in hits] == ["we repainted the fence"]
        with pytest.raises(InvalidInput):
            ready.search(STORE, pattern, "fence", reference_time="2026-04-22")  # type: ignore[arg-type]

    def test_reference_time_is_used_as_the_store_declares(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        """A store that declares ``supports_reference_time`` puts, of two equal hits, the one
        said in the span the time words name first, counted from the date given; one that
        does not answers the same whatever the date."""
        assert isinstance(ready.supports_reference_time, bool)
        said = {A1: (2023, 3, 12), A2: (2023, 4, 19)}  # the same text, said a month apart
        for scope, (year, month, day) in said.items():
            when = datetime(year, month, day, 12, tzinfo=timezone.utc).timestamp()
            message = Message("user", "I went hiking with Sam", timestamp=when)
            ready.add_messages(STORE, scope, [message], sync=True)
        settle(ready)

        def asked(month: int, day: int) -> list[tuple[str, float, Scope]]:
            hits = ready.search(
                STORE,
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

    def test_search_filters_are_exact_and_anded(self, settle: Settle, ready: MemoryStore) -> None:
        both = add(ready, A1, "meeting about the budget", team="red", year="2026")
        add(ready, A1, "meeting about the budget plan", team="red", year="2025")
        add(ready, A1, "meeting about the budget review", team="blue", year="2026")
        settle(ready)
        hits = ready.search(
            STORE,
            A1.tenant_pattern(),
            "budget meeting",
            filters={"team": "red", "year": "2026"},
        )
        assert [h.memory.id for h in hits] == [both]
        none = ready.search(STORE, A1.tenant_pattern(), "budget", filters={"team": "re"})
        assert none == []

    def test_min_similarity_drops_weak_hits(self, settle: Settle, ready: MemoryStore) -> None:
        strong = add(ready, A1, "the quick brown fox")
        weak = add(ready, A1, "a fox in winter")
        settle(ready)
        hits = ready.search(STORE, A1.tenant_pattern(), "quick brown fox")
        scores = {h.memory.id: h.score for h in hits}
        assert strong in scores and weak in scores
        assert scores[strong] > scores[weak]
        floor = (scores[strong] + scores[weak]) / 2
        kept = ready.search(STORE, A1.tenant_pattern(), "quick brown fox", min_similarity=floor)
        assert strong in [h.memory.id for h in kept]
        assert weak not in [h.memory.id for h in kept]
        assert all(h.score >= floor for h in kept)

    def test_search_hits_carry_relevance_details(self, settle: Settle, ready: MemoryStore) -> None:
        here = add(ready, A1, "the team lunch is on friday")
        there = add(ready, A2, "the team lunch is on friday at noon")
        settle(ready)
        hits = ready.search(
            STORE,
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
            ready.search(STORE, A1.tenant_pattern(), "lunch", context_scope=B1)

    def test_search_finds_cjk_text(self, settle: Settle, ready: MemoryStore) -> None:
        mid = add(ready, A1, "我喜欢喝咖啡")
        settle(ready)
        hits = ready.search(STORE, A1.tenant_pattern(), "咖啡")
        assert mid in [h.memory.id for h in hits]
