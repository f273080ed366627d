"""The dreams family: consolidation tasks, their actions and who they may touch."""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from memcore import limits
from memcore.errors import InvalidInput, NotFound, Unsupported
from memcore.ports import MemoryStore
from memcore.testing.contract.fixtures import StoreFixtures
from memcore.testing.contract.harness import A1, B1, STORE, Settle, add
from memcore.values import DREAM_ACTION_STATUSES, DREAM_ACTION_TYPES, DREAM_STATUSES


class DreamsContract(StoreFixtures):
    """A dream proposes, applies, undoes and cancels within one tenant."""

    def test_dream_lifecycle_or_unsupported(self, ready: MemoryStore) -> None:
        add(ready, A1, "Likes tea")
        add(ready, A1, "likes  TEA")
        try:
            task = ready.create_dream_task(STORE, A1.tenant_pattern())
        except Unsupported as exc:
            assert str(exc)
            with pytest.raises(Unsupported):
                ready.list_dream_tasks(STORE)
            return
        assert task.scopes == (A1.tenant_pattern(),)
        assert task.status in DREAM_STATUSES
        assert ready.get_dream_task(STORE, task.id).id == task.id
        assert task.id in [t.id for t in ready.list_dream_tasks(STORE).items]
        listed = ready.list_dream_tasks(STORE, pattern=A1.tenant_pattern()).items
        assert task.id in [t.id for t in listed]
        actions = ready.list_dream_actions(STORE, task.id).items
        assert all(a.action in DREAM_ACTION_TYPES for a in actions)
        assert all(a.status in DREAM_ACTION_STATUSES for a in actions)
        applied = ready.apply_dream_actions(
            STORE, task.id, [*(a.id for a in actions), "no-such-action"]
        )
        assert len(applied) == len(actions) + 1
        assert applied[-1].status == "not_found"
        ready.cancel_dream_task(STORE, task.id)
        several = ready.create_dream_task(STORE, [A1.tenant_pattern(), B1.tenant_pattern()])
        assert len(several.scopes) == 2
        with pytest.raises(InvalidInput):
            ready.create_dream_task(STORE, [])
        with pytest.raises(NotFound):
            ready.get_dream_task(STORE, "no-such-dream")

    def test_dream_merges_duplicates_and_never_touches_another_tenant(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        for scope in (A1, B1):
            add(ready, scope, "Likes green tea")
            add(ready, scope, "likes  green TEA")
        others = sorted((m.id, m.text) for m in ready.list_memories(STORE, B1.pattern()).items)
        try:
            task = ready.create_dream_task(STORE, A1.tenant_pattern())
        except Unsupported:
            return
        settle(ready)
        actions = ready.list_dream_actions(STORE, task.id).items
        assert [a.action for a in actions] == ["MERGE"]
        [merge] = actions
        assert merge.confidence is not None and 0.0 <= merge.confidence <= 1.0
        assert merge.scope is None or A1.tenant_pattern().matches(merge.scope)
        [result] = ready.apply_dream_actions(STORE, task.id, [merge.id])
        assert result.status == "applied"
        settle(ready)
        hits = ready.search(STORE, A1.pattern(), "green tea")
        assert len(hits) == 1
        after = sorted((m.id, m.text) for m in ready.list_memories(STORE, B1.pattern()).items)
        assert after == others

    def test_dream_apply_takes_one_to_the_limit_of_distinct_ids(
        self, settle: Settle, ready: MemoryStore
    ) -> None:
        add(ready, A1, "Likes oolong tea")
        add(ready, A1, "likes  OOLONG tea")
        try:
            task = ready.create_dream_task(STORE, A1.tenant_pattern())
        except Unsupported:
            return
        settle(ready)
        [merge] = ready.list_dream_actions(STORE, task.id).items
        for bad in ([], [f"missing-{i}" for i in range(limits.MAX_APPLY_IDS + 1)]):
            with pytest.raises(InvalidInput) as info:
                ready.apply_dream_actions(STORE, task.id, bad)
            assert info.value.field == "action_ids"
        [still] = ready.list_dream_actions(STORE, task.id).items
        assert still.status == "proposed"
        # A repeat counts once: the limit's worth of distinct ids plus a repeat is one call.
        missing = [f"missing-{i}" for i in range(limits.MAX_APPLY_IDS - 1)]
        results = ready.apply_dream_actions(STORE, task.id, [merge.id, merge.id, *missing])
        assert [r.id for r in results] == [merge.id, *missing]
        assert results[0].status == "applied"
        assert {r.status for r in results[1:]} == {"not_found"}

    def test_a_dream_task_names_the_scopes_it_reads(self, ready: MemoryStore) -> None:
        # The service checks a dream task id against the caller's tenant by these scopes.
        add(ready, A1, "Reads only tenant a")
        try:
            task = ready.create_dream_task(STORE, A1.tenant_pattern())
        except Unsupported:
            return
        other = ready.create_dream_task(STORE, B1.tenant_pattern())
        # The scopes asked for, or those they expanded to (TableStore's Get): never outside.
        got = ready.get_dream_task(STORE, task.id).scopes
        assert got and all(p.within(A1.tenant_pattern()) for p in got)
        listed = ready.list_dream_tasks(STORE, pattern=B1.tenant_pattern()).items
        assert other.id in [t.id for t in listed]
        assert task.id not in [t.id for t in listed]

    def test_a_cancel_answers_the_whole_task(self, ready: MemoryStore) -> None:
        """What a cancel answers is the task as a read of it then shows: its mode, scopes,
        instructions and dates, not defaults where the service's answer is short."""
        add(ready, A1, "Likes jasmine tea")
        try:
            task = ready.create_dream_task(
                STORE, A1.tenant_pattern(), apply_mode="safe_auto", instructions="Tea."
            )
        except Unsupported:
            return
        cancelled = ready.cancel_dream_task(STORE, task.id)
        read = ready.get_dream_task(STORE, task.id)

        def shown(t: Any) -> tuple[Any, ...]:
            return (t.id, t.status, t.scopes, t.apply_mode, t.instructions, t.created_at)

        assert shown(cancelled) == shown(read)
        assert (cancelled.apply_mode, cancelled.instructions) == ("safe_auto", "Tea.")
        assert cancelled.scopes and cancelled.created_at is not None

    def test_dream_calls_on_a_missing_task_are_not_found(self, ready: MemoryStore) -> None:
        try:
            ready.create_dream_task(STORE, A1.tenant_pattern())
        except Unsupported:
            return
        missing = "no-such-dream-" + uuid.uuid4().hex[:8]
        calls = (
            lambda: ready.get_dream_task(STORE, missing),
            lambda: ready.list_dream_actions(STORE, missing),
            lambda: ready.apply_dream_actions(STORE, missing, ["no-such-action"]),
            lambda: ready.cancel_dream_task(STORE, missing),
        )
        for call in calls:
            with pytest.raises(NotFound):
                call()
