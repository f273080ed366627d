"""The fake's dream: merge each memory whose text repeats an older one's, as the service's
planner does for duplicates, and apply such merges."""

from __future__ import annotations

import itertools
import uuid
from collections.abc import Sequence

import attrs

from memcore.scope import Scope, ScopePattern
from memcore.testing.fake import reading
from memcore.testing.fake.state import StoreState
from memcore.values import DreamAction, DreamTask


def propose_merges(
    st: StoreState,
    patterns: Sequence[ScopePattern],
    dream_id: str,
    now: float,
    seq: itertools.count[int],
) -> list[tuple[int, DreamAction]]:
    """One MERGE per repeat (case-folded, spaces collapsed) into the oldest memory of that
    text in its scope; ``seq`` numbers them after everything written so far."""
    seen: dict[tuple[Scope, str], str] = {}
    actions: list[tuple[int, DreamAction]] = []
    for unit in sorted(st.units.values(), key=lambda u: u.seq):
        m = unit.memory
        if not any(p.matches(m.scope) for p in patterns):
            continue
        norm = " ".join(m.text.casefold().split())
        keeper = seen.setdefault((m.scope, norm), m.id)
        if keeper != m.id:
            kept = st.units[keeper].memory
            action = DreamAction(
                uuid.uuid4().hex,
                dream_id,
                "MERGE",
                (keeper, m.id),
                kept.text,
                "proposed",
                {},
                confidence=0.9,
                reason=f"repeats memory {keeper}",
                target_memory_id=keeper,
                scope=m.scope,
                created_at=now,
            )
            actions.append((next(seq), action))
    return actions


def apply_actions(
    st: StoreState, task: DreamTask, action_ids: Sequence[str], now: float
) -> list[DreamAction]:
    """Each named action applied once (a MERGE keeps its target and folds the sources into
    it), an unknown id answered ``not_found``; the task's counts follow."""
    by_id = {a.id: (i, a) for i, (_, a) in enumerate(st.actions.get(task.id, []))}
    results: list[DreamAction] = []
    for aid in action_ids:
        if aid not in by_id:
            results.append(DreamAction(aid, task.id, "", status="not_found"))
            continue
        index, action = by_id[aid]
        if action.status == "proposed":
            for mid in action.memory_ids[1:]:
                unit = st.units.pop(mid, None)
                if unit is not None:
                    st.by_content.pop(
                        reading.content_key(unit.memory.scope, unit.memory.text), None
                    )
            action = attrs.evolve(
                action, status="applied", result_memory_id=action.target_memory_id
            )
            st.actions[task.id][index] = (st.actions[task.id][index][0], action)
        results.append(action)
    st.dreams[task.id] = (
        st.dreams[task.id][0],
        attrs.evolve(
            task, action_counts=counts([a for _, a in st.actions.get(task.id, [])]), updated_at=now
        ),
    )
    return results


def counts(actions: Sequence[DreamAction]) -> dict[str, int]:
    """A dream task's ``action_counts``: the total and how many are in each status."""
    out = {"total": len(actions), "proposed": 0, "applied": 0, "skipped": 0, "failed": 0}
    for action in actions:
        if action.status in out:
            out[action.status] += 1
    return out


def overlaps(a: ScopePattern, b: ScopePattern) -> bool:
    """Whether two patterns can match a common scope (level by level, ``*`` matches all)."""
    return all(x == y or "*" in (x, y) for x, y in zip(a.as_tuple(), b.as_tuple()))
