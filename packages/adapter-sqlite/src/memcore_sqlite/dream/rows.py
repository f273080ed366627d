"""How dream tasks and actions are stored: columns, and the values rows become."""

from __future__ import annotations

import hashlib
import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

from memcore.dream import PlannedAction, action_in_scopes
from memcore.scope import Scope, ScopePattern
from memcore.values import DreamAction, DreamTask
from memcore_sqlite.storage.rows import columns


class TaskRow(NamedTuple):
    """A ``dream_tasks`` row as :data:`TASK` selects it."""

    seq: int
    id: str
    status: str
    apply_mode: str
    scope_output_mode: str
    scopes: str
    thresholds: str
    instructions: str | None
    memory_count: int | None
    error: str | None
    created_at: float
    updated_at: float
    finished_at: float | None
    owner: str | None


class ActionRow(NamedTuple):
    """A ``dream_actions`` row as :data:`ACTION` selects it."""

    seq: int
    id: str
    dream_seq: int
    action: str
    status: str
    target_scope: str
    target_id: str | None
    source_ids: str
    versions: str
    text: str | None
    confidence: float | None
    reason: str | None
    skipped_reason: str | None
    result_id: str | None
    undo: str | None
    error: str | None
    applied_at: float | None
    undone_at: float | None
    created_at: float
    updated_at: float


TASK = columns(TaskRow)
ACTION = columns(ActionRow)


def patterns_of(raw: str) -> tuple[ScopePattern, ...]:
    return tuple(ScopePattern(**p) for p in json.loads(raw))


def counts(conn: sqlite3.Connection, task_seq: int) -> dict[str, Any]:
    out: dict[str, Any] = {"total": 0, "proposed": 0, "applied": 0, "skipped": 0, "failed": 0}
    reasons: dict[str, int] = {}
    for status, reason, n in conn.execute(
        "SELECT status, skipped_reason, count(*) FROM dream_actions WHERE dream_seq = ?"
        " GROUP BY status, skipped_reason",
        (task_seq,),
    ):
        out["total"] += n
        out[status] = out.get(status, 0) + n
        if status == "skipped" and reason:
            reasons[reason] = reasons.get(reason, 0) + n
    if reasons:
        out["skippedByReason"] = reasons
    return out


def dream_value(conn: sqlite3.Connection, row: Sequence[Any]) -> DreamTask:
    r = TaskRow._make(row)
    return DreamTask(
        r.id,
        r.status,
        patterns_of(r.scopes),
        r.created_at,
        r.finished_at,
        apply_mode=r.apply_mode,
        updated_at=r.updated_at,
        action_counts=counts(conn, int(r.seq)),
        instructions=r.instructions,
        error=r.error,
        extras={
            "scopeOutputMode": r.scope_output_mode,
            "confidenceThresholds": json.loads(r.thresholds),
            "memoryCount": r.memory_count,
        },
    )


def action_value(task_id: str, row: Sequence[Any]) -> DreamAction:
    a = ActionRow._make(row)._asdict()
    sources = json.loads(a["source_ids"])
    target = a["target_id"]
    return DreamAction(
        a["id"],
        task_id,
        a["action"],
        tuple(([target] if target else []) + [s for s in sources if s != target]),
        a["text"],
        a["status"],
        {"sourceMemoryIds": sources, "undone": a["undone_at"] is not None},
        confidence=a["confidence"],
        reason=a["reason"],
        skipped_reason=a["skipped_reason"],
        target_memory_id=target,
        result_memory_id=a["result_id"],
        scope=Scope.from_mapping(json.loads(a["target_scope"])),
        error=a["error"],
        created_at=a["created_at"],
    )


def inside(
    action: PlannedAction, by_id: Mapping[str, Any], patterns: Sequence[ScopePattern]
) -> bool:
    reads = action.read_ids()
    if any(i not in by_id for i in reads):
        return False
    return action_in_scopes(action.target_scope, [by_id[i].scope for i in reads], patterns)


def checked(action: PlannedAction) -> tuple[str, ...]:
    """The memories whose version must be unchanged when the action applies: an UPDATE's
    target may gain versions from its other UPDATEs of the same plan meanwhile."""
    return action.source_ids if action.action == "UPDATE" else action.read_ids()


def text_key(memory_id: str) -> str:
    """Where an action's ``versions`` keep the digest of its UPDATE target's text."""
    return f"text:{memory_id}"


def text_digest(text: str) -> str:
    return hashlib.sha256(text.strip().encode("utf-8", "surrogatepass")).hexdigest()[:32]


def planned_state(action: PlannedAction, by_id: Mapping[str, Any]) -> dict[str, Any]:
    """What must be as planned when the action applies: the versions of :func:`checked`, and
    an UPDATE target's text (the newer fact it keeps; its other UPDATEs leave that as it is,
    an edit does not)."""
    state: dict[str, Any] = {i: by_id[i].version for i in checked(action) if i in by_id}
    target = action.target_id
    if action.action == "UPDATE" and target is not None and target in by_id:
        state[text_key(target)] = text_digest(by_id[target].text)
    return state


def overlap(a: ScopePattern, b: ScopePattern) -> bool:
    return all(x == y or "*" in (x, y) for x, y in zip(a.as_tuple(), b.as_tuple()))
