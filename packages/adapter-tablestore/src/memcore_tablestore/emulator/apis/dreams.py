"""CreateMemoryDreamTask, GetMemoryDreamTask, ListMemoryDreamTasks, CancelMemoryDreamTask,
as ``memory.d.ts`` types them (the action APIs are in :mod:`.dream_actions`).

A dream is planned when it is created (see :mod:`.dream_planner`); the create answer still
says ``queued``, as the service's does, and the task reads ``completed`` right after. In
``safe_auto`` mode actions at or above their confidence threshold are applied at once (DELETE
never auto-applies); the others are skipped as ``confidence_below_threshold``.
"""

from __future__ import annotations

import uuid
from typing import Any

from memcore import values
from memcore.limits import utf8_len
from memcore.scope import Scope, ScopePattern
from memcore.values import MemoryRecord, Message
from memcore_tablestore.emulator import request_fields, scopes
from memcore_tablestore.emulator.apis import dream_actions, dream_planner
from memcore_tablestore.emulator.apis.dream_actions import apply_one, find_dream, recount, skip
from memcore_tablestore.emulator.apis.dream_planner import Proposal
from memcore_tablestore.emulator.context import Answer, Call, Handler, Service
from memcore_tablestore.emulator.ledger import Dream, Row
from memcore_tablestore.emulator.service_errors import invalid

# The vocabularies of memory.d.ts (DreamTaskStatus, DreamActionStatus, DreamActionType,
# DreamApplyMode), kept in the core's values.
DREAM_STATUSES = values.DREAM_STATUSES
RUNNING = frozenset(DREAM_STATUSES) - values.DREAM_FINAL_STATUSES
APPLY_MODES = values.DREAM_APPLY_MODES
TASK_TYPES = ("memory", "skill", "profile")
OUTPUT_MODES = ("preserve_scope", "promote_scope")
#: Service defaults (typed SDK, DreamConfidenceThresholds); DELETE has no threshold.
DEFAULT_THRESHOLDS = {"add": 0.80, "update": 0.85, "merge": 0.70}
MAX_SCOPES = 20
MAX_INSTRUCTIONS_BYTES = 4000


# -- create -------------------------------------------------------------------------------
def _thresholds(raw: Any) -> dict[str, float]:
    out = dict(DEFAULT_THRESHOLDS)
    if raw is None:
        return out
    if not isinstance(raw, dict):
        raise invalid("confidenceThresholds must be an object")
    for key in raw:
        name = key.lower() if isinstance(key, str) else ""
        if name not in out:
            raise invalid("confidenceThresholds accepts only add, update and merge")
        value = request_fields.fraction(raw, key)
        if value is None:
            raise invalid(f"confidenceThresholds.{key} must be from 0 to 1")
        out[name] = value
    return out


def _scopes_of(svc: Service, name: str, pattern: ScopePattern) -> list[Scope]:
    return svc.everything(lambda t: svc.store.list_scopes(name, pattern, limit=100, next_token=t))


def _memories_of(svc: Service, name: str, pattern: ScopePattern) -> list[MemoryRecord]:
    return svc.everything(lambda t: svc.store.list_memories(name, pattern, limit=100, next_token=t))


def _messages_of(svc: Service, name: str, scope: Scope) -> list[Message]:
    return svc.everything(lambda t: svc.store.list_messages(name, scope, limit=100, next_token=t))


def _inputs(svc: Service, name: str, patterns: list[ScopePattern], body: Any) -> dict[str, Any]:
    """The scopes, memories and messages a dream reads, within its caps and time range."""
    low, high = request_fields.time_range(body, rfc3339=False)
    expanded: list[Scope] = []
    for pattern in patterns:
        expanded.extend(s for s in _scopes_of(svc, name, pattern) if s not in expanded)
    expanded = expanded[: request_fields.whole(body, "expandedScopeLimit", 200, 0, 1000)]
    chosen = set(expanded)
    seen: dict[str, MemoryRecord] = {}
    for pattern in patterns:
        for memory in _memories_of(svc, name, pattern):
            if (
                memory.scope in chosen
                and low <= request_fields.to_millis(memory.created_at) <= high
            ):
                seen.setdefault(memory.id, memory)
    memories = list(seen.values())[: request_fields.whole(body, "maxMemories", 1000, 0, 5000)]
    max_messages = request_fields.whole(body, "maxMessages", 5000, 0, 20000)
    sessions = 0
    messages: list[Message] = []
    for scope in expanded[: request_fields.whole(body, "maxSessions", 100, 0, 100)]:
        found = [
            m
            for m in _messages_of(svc, name, scope)
            if low <= request_fields.to_millis(m.timestamp) <= high
        ][: max(0, max_messages - len(messages))]
        sessions += bool(found)
        messages.extend(found)
    stamps = [request_fields.to_millis(m.timestamp) for m in messages]
    stamps += [request_fields.to_millis(m.created_at) for m in memories]
    return {
        "expanded": expanded,
        "memories": memories,
        "sessionCount": sessions,
        "messageCount": len(messages),
        "low": low,
        "high": min(high, request_fields.to_millis(svc.clock())),
        "through": max(stamps, default=0),
    }


def _action_row(dream_id: str, name: str, proposal: Proposal, now: str) -> Row:
    row: Row = {
        "dreamId": dream_id,
        "actionId": uuid.uuid4().hex,
        "memoryStoreName": name,
        "action": proposal.action,
        "status": "proposed",
        "targetScope": scopes.to_wire(proposal.scope),
        "sourceScopes": [scopes.to_wire(proposal.scope)],
    }
    target = proposal.target
    if target is not None:
        merged: dict[str, str] = {}
        for source in reversed(proposal.sources):
            merged.update(source.metadata)
        row["targetMemoryId"] = target.id
        row["targetMemoryVersion"] = target.version or 1
        row["targetMemoryUpdatedAtMs"] = request_fields.to_millis(
            target.updated_at or target.created_at
        )
        row["newMemory"] = {
            "text": target.text,
            "searchText": target.text.casefold(),
            "keywords": dream_planner.keywords(target.text),
            "unitType": target.unit_type or "entity_fact",
            "metadata": merged,
        }
    if proposal.extract is not None:
        kind, title, description, instructions = proposal.extract
        row["newExtract"] = {
            "kind": kind,
            "name": title,
            "description": description,
            "instructions": instructions,
        }
    row.update(
        {
            "sourceMemoryIds": [m.id for m in proposal.sources],
            "reason": proposal.reason,
            "confidence": proposal.confidence,
            "attemptCount": 0,
            "createdAt": now,
            "updatedAt": now,
        }
    )
    return row


def create_dream(svc: Service, call: Call) -> Answer:
    name, body = call.store_name, call.body
    raw = body.get("scopes")
    if not isinstance(raw, list) or not 1 <= len(raw) <= MAX_SCOPES:
        raise invalid(f"scopes must have 1 to {MAX_SCOPES} entries")
    patterns = [scopes.list_pattern(s, f"scopes[{i}]") for i, s in enumerate(raw)]
    request_fields.time_range(body, rfc3339=False)
    task_type = request_fields.choice(body, "taskType", TASK_TYPES) or "memory"
    if body.get("applyMode") is not None and task_type != "memory":
        raise invalid("applyMode is only valid for taskType memory")
    apply_mode = request_fields.choice(body, "applyMode", APPLY_MODES, "proposal")
    output_mode = request_fields.choice(body, "scopeOutputMode", OUTPUT_MODES, "preserve_scope")
    thresholds = _thresholds(body.get("confidenceThresholds"))
    instructions = request_fields.string(body, "instructions") or ""
    if utf8_len(instructions) > MAX_INSTRUCTIONS_BYTES:
        raise invalid(f"instructions must have at most {MAX_INSTRUCTIONS_BYTES} bytes")
    client_token = request_fields.string(body, "clientToken")
    incremental = request_fields.flag(body, "incremental", False)
    caps = {
        "maxSessions": request_fields.whole(body, "maxSessions", 100, 0, 100),
        "maxMessages": request_fields.whole(body, "maxMessages", 5000, 0, 20000),
        "maxMemories": request_fields.whole(body, "maxMemories", 1000, 0, 5000),
    }
    scope_limit = request_fields.whole(body, "expandedScopeLimit", 200, 0, 1000)
    svc.existing(name)
    key = (tuple(p.as_tuple() for p in patterns), task_type)
    with svc.ledger.of(name) as st:
        earlier = st.dreams.get(st.client_tokens.get(client_token or "", ""))
        watermark = st.watermarks.get(key)
    if earlier is not None:  # the same clientToken resolves to the same dream
        call.target = earlier.row["dreamId"]
        return _created(earlier.row, earlier.row["status"])
    plan_body = dict(body)
    if incremental and body.get("minTimestamp") is None and watermark is not None:
        plan_body["minTimestamp"] = watermark + 1  # an explicit minTimestamp always wins
    read = _inputs(svc, name, patterns, plan_body)
    proposals = (
        dream_planner.merges(read["memories"])
        if task_type == "memory"
        else dream_planner.extracts(task_type, read["memories"])
    )
    dream_id, now = uuid.uuid4().hex, request_fields.iso(svc.clock())
    actions = [_action_row(dream_id, name, p, now) for p in proposals]
    expanded = [scopes.to_wire(s) for s in read["expanded"]]
    row: Row = {
        "dreamId": dream_id,
        "memoryStoreName": name,
        "status": "completed",
        "taskType": task_type,
        "applyMode": apply_mode,
        "scopeOutputMode": output_mode,
        "triggerType": "manual",
        "expandedScopeLimit": scope_limit,
        "inputScopes": [scopes.to_wire(p) for p in patterns],
        "expandedScopes": expanded,
        # promote_scope would lift targets to a broader scope; the emulator keeps them.
        "targetScopes": expanded,
        "minTimestamp": read["low"],
        "maxTimestamp": read["high"],
        "incremental": incremental,
        "processedThroughMs": read["through"],
        **caps,
        "confidenceThresholds": thresholds,
        "sessionCount": read["sessionCount"],
        "messageCount": read["messageCount"],
        "memoryCount": len(read["memories"]),
        "version": 1,
        "createdAt": now,
        "updatedAt": now,
        "finishedAt": now,
    }
    if client_token:
        row["clientToken"] = client_token
    if instructions:
        row["instructions"] = instructions
    dream = Dream(row, patterns, request_fields.to_millis(svc.clock()), actions)
    if apply_mode == "safe_auto":
        for action in actions:
            limit = thresholds.get(action["action"].lower())
            if limit is None or action["confidence"] < limit:
                reason = (
                    "delete_requires_manual_apply"
                    if action["action"] == "DELETE"
                    else "confidence_below_threshold"
                )
                skip(action, reason, now)
            else:
                apply_one(svc, name, action, "safe_auto", now)
    recount(dream, now)
    with svc.ledger.of(name) as st:
        st.dreams[dream_id] = dream
        if client_token:
            st.client_tokens[client_token] = dream_id
        st.watermarks[key] = read["through"]
    call.target = dream_id
    return _created(row, "queued")


def _created(row: Row, status: str) -> Answer:
    return {
        "memoryStoreName": row["memoryStoreName"],
        "dreamId": row["dreamId"],
        "status": status,
        "createdAt": row["createdAt"],
    }


# -- reads and cancel ---------------------------------------------------------------------
def get_dream(svc: Service, call: Call) -> Answer:
    row = find_dream(svc, call.store_name, call).row
    actions: Answer = {
        "total": row["actionCount"],
        "proposed": row["proposedCount"],
        "applied": row["appliedCount"],
        "skipped": row["skippedCount"],
        "failed": row["failedCount"],
    }
    if row.get("skippedByReason"):
        actions["skippedByReason"] = dict(row["skippedByReason"])
    out: Answer = {
        "memoryStoreName": row["memoryStoreName"],
        "dreamId": row["dreamId"],
        "status": row["status"],
        "taskType": row["taskType"],
        "applyMode": row["applyMode"],
        "scopeOutputMode": row["scopeOutputMode"],
        "input": {
            "scopes": list(row["expandedScopes"]),
            "minTimestamp": row["minTimestamp"],
            "maxTimestamp": row["maxTimestamp"],
            "incremental": row["incremental"],
            "sessionCount": row["sessionCount"],
            "messageCount": row["messageCount"],
            "memoryCount": row["memoryCount"],
        },
        "processedThroughMs": row["processedThroughMs"],
        "actions": actions,
    }
    for key in ("instructions", "lastError"):
        if row.get(key):
            out[key] = row[key]
    out.update(
        {
            "createdAt": row["createdAt"],
            "updatedAt": row["updatedAt"],
            "finishedAt": row.get("finishedAt"),
        }
    )
    return out


def list_dreams(svc: Service, call: Call) -> Answer:
    """Newest first; a dream is listed when one of its input scopes lies inside ``scope``."""
    name, body = call.store_name, call.body
    pattern = scopes.list_pattern(body.get("scope"))
    status = request_fields.choice(body, "status", DREAM_STATUSES)
    low, high = request_fields.time_range(body, rfc3339=False)
    limit = request_fields.whole(body, "limit", 50, 1, 100)
    svc.existing(name)
    with svc.ledger.of(name) as st:
        rows = [
            dict(d.row)
            for d in reversed(st.dreams.values())
            if any(p.within(pattern) for p in d.inputs)
            and (status is None or d.row["status"] == status)
            and low <= d.created_ms <= high
        ]
    chunk, token = request_fields.newest_first_window(rows, body, limit)
    out: Answer = {"memoryStoreName": name, "scope": scopes.to_wire(pattern), "tasks": chunk}
    if token:
        out["nextToken"] = token
    return out


def cancel_dream(svc: Service, call: Call) -> Answer:
    """A running dream becomes ``cancelled``; a finished one answers its status unchanged."""
    dream = find_dream(svc, call.store_name, call)
    row = dream.row
    if row["status"] in RUNNING:
        now = request_fields.iso(svc.clock())
        row["status"] = "cancelled"
        for action in dream.actions:
            if action["status"] == "proposed":
                skip(action, "task_cancelled", now)
        recount(dream, now)
    return {
        "memoryStoreName": row["memoryStoreName"],
        "dreamId": row["dreamId"],
        "status": row["status"],
        "taskType": row["taskType"],
    }


CALLS: dict[str, Handler] = {
    "CreateMemoryDreamTask": create_dream,
    "GetMemoryDreamTask": get_dream,
    "ListMemoryDreamTasks": list_dreams,
    "CancelMemoryDreamTask": cancel_dream,
    **dream_actions.CALLS,
}
