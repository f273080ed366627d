"""CreateMemoryDreamTask, GetMemoryDreamTask, ListMemoryDreamTasks, CancelMemoryDreamTask,
ListMemoryDreamActions, ApplyMemoryDreamActions, as ``memory.d.ts`` types them.

A dream is planned when it is created (see :mod:`.dream_planner`); the create answer still
says ``queued``, as the service's does, and the task reads ``completed`` right after. In
``safe_auto`` mode actions at or above their confidence threshold are applied at once (DELETE
never auto-applies); the others are skipped as ``confidence_below_threshold``.
"""

from __future__ import annotations

import uuid
from typing import Any

from memcore.errors import MemcoreError, NotFound
from memcore.limits import utf8_len
from memcore.scope import Scope, ScopePattern
from memcore.values import Memory, Message
from memcore_tablestore.emulator import dream_planner, fields, scopes
from memcore_tablestore.emulator.context import Answer, Call, Handler, Service
from memcore_tablestore.emulator.dream_planner import Proposal
from memcore_tablestore.emulator.ledger import Dream, Row
from memcore_tablestore.emulator.service_errors import invalid, not_found

DREAM_STATUSES = (
    "queued",
    "running",
    "planning",
    "applying",
    "completed",
    "completed_with_failures",
    "failed",
    "cancelled",
)
RUNNING = frozenset(DREAM_STATUSES[:4])
ACTION_STATUSES = ("proposed", "applied", "skipped", "failed")
ACTION_TYPES = ("ADD", "UPDATE", "DELETE", "MERGE", "NOOP", "EMIT_SKILL", "EMIT_PROFILE")
EXTRACT_TYPES = ("EMIT_SKILL", "EMIT_PROFILE")
TASK_TYPES = ("memory", "skill", "profile")
APPLY_MODES = ("proposal", "safe_auto")
OUTPUT_MODES = ("preserve_scope", "promote_scope")
ORDERS = ("created_at_asc", "created_at_desc", "confidence_desc")
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
        value = fields.fraction(raw, key)
        if value is None:
            raise invalid(f"confidenceThresholds.{key} must be from 0 to 1")
        out[name] = value
    return out


def _scopes_of(svc: Service, name: str, pattern: ScopePattern) -> list[Scope]:
    return svc.everything(lambda t: svc.store.list_scopes(name, pattern, limit=100, next_token=t))


def _memories_of(svc: Service, name: str, pattern: ScopePattern) -> list[Memory]:
    return svc.everything(lambda t: svc.store.list_memories(name, pattern, limit=100, next_token=t))


def _messages_of(svc: Service, name: str, scope: Scope) -> list[Message]:
    return svc.everything(lambda t: svc.store.list_messages(name, scope, limit=100, next_token=t))


def _inputs(svc: Service, name: str, patterns: list[ScopePattern], body: Any) -> dict[str, Any]:
    """The scopes, memories and messages a dream reads, within its caps and time range."""
    low, high = fields.time_range(body, rfc3339=False)
    expanded: list[Scope] = []
    for pattern in patterns:
        expanded.extend(s for s in _scopes_of(svc, name, pattern) if s not in expanded)
    expanded = expanded[: fields.whole(body, "expandedScopeLimit", 200, 0, 1000)]
    chosen = set(expanded)
    seen: dict[str, Memory] = {}
    for pattern in patterns:
        for memory in _memories_of(svc, name, pattern):
            if memory.scope in chosen and low <= fields.to_millis(memory.created_at) <= high:
                seen.setdefault(memory.id, memory)
    memories = list(seen.values())[: fields.whole(body, "maxMemories", 1000, 0, 5000)]
    max_messages = fields.whole(body, "maxMessages", 5000, 0, 20000)
    sessions = 0
    messages: list[Message] = []
    for scope in expanded[: fields.whole(body, "maxSessions", 100, 0, 100)]:
        found = [
            m
            for m in _messages_of(svc, name, scope)
            if low <= fields.to_millis(m.timestamp) <= high
        ][: max(0, max_messages - len(messages))]
        sessions += bool(found)
        messages.extend(found)
    stamps = [fields.to_millis(m.timestamp) for m in messages]
    stamps += [fields.to_millis(m.created_at) for m in memories]
    return {
        "expanded": expanded,
        "memories": memories,
        "sessionCount": sessions,
        "messageCount": len(messages),
        "low": low,
        "high": min(high, fields.to_millis(svc.clock())),
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
        row["targetMemoryUpdatedAtMs"] = fields.to_millis(target.updated_at or target.created_at)
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
    fields.time_range(body, rfc3339=False)
    task_type = fields.choice(body, "taskType", TASK_TYPES) or "memory"
    if body.get("applyMode") is not None and task_type != "memory":
        raise invalid("applyMode is only valid for taskType memory")
    apply_mode = fields.choice(body, "applyMode", APPLY_MODES, "proposal")
    output_mode = fields.choice(body, "scopeOutputMode", OUTPUT_MODES, "preserve_scope")
    thresholds = _thresholds(body.get("confidenceThresholds"))
    instructions = fields.string(body, "instructions") or ""
    if utf8_len(instructions) > MAX_INSTRUCTIONS_BYTES:
        raise invalid(f"instructions must have at most {MAX_INSTRUCTIONS_BYTES} bytes")
    client_token = fields.string(body, "clientToken")
    incremental = fields.flag(body, "incremental", False)
    caps = {
        "maxSessions": fields.whole(body, "maxSessions", 100, 0, 100),
        "maxMessages": fields.whole(body, "maxMessages", 5000, 0, 20000),
        "maxMemories": fields.whole(body, "maxMemories", 1000, 0, 5000),
    }
    scope_limit = fields.whole(body, "expandedScopeLimit", 200, 0, 1000)
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
    dream_id, now = uuid.uuid4().hex, fields.iso(svc.clock())
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
    dream = Dream(row, patterns, fields.to_millis(svc.clock()), actions)
    if apply_mode == "safe_auto":
        for action in actions:
            limit = thresholds.get(action["action"].lower())
            if limit is None or action["confidence"] < limit:
                reason = (
                    "delete_requires_manual_apply"
                    if action["action"] == "DELETE"
                    else "confidence_below_threshold"
                )
                _skip(action, reason, now)
            else:
                _apply_one(svc, name, action, "safe_auto", now)
    _recount(dream, now)
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


# -- bookkeeping --------------------------------------------------------------------------
def _skip(action: Row, reason: str, now: str) -> None:
    action.update({"status": "skipped", "skippedReason": reason, "updatedAt": now})


def _recount(dream: Dream, now: str) -> None:
    row, actions = dream.row, dream.actions
    count = {s: sum(a["status"] == s for a in actions) for s in ACTION_STATUSES}
    reasons: dict[str, int] = {}
    for action in actions:
        if action["status"] == "skipped":
            reasons[action["skippedReason"]] = reasons.get(action["skippedReason"], 0) + 1
    row.update(
        {
            "actionCount": len(actions),
            "proposedCount": count["proposed"],
            "appliedCount": count["applied"],
            "skippedCount": count["skipped"],
            "failedCount": count["failed"],
            "updatedAt": now,
            "version": row.get("version", 0) + 1,
        }
    )
    row.pop("skippedByReason", None)
    if reasons:
        row["skippedByReason"] = reasons
    if row["status"] == "completed" and count["failed"]:
        row["status"] = "completed_with_failures"


def _dream(svc: Service, name: str, call: Call) -> Dream:
    dream_id = fields.required(call.body, "dreamId")
    svc.existing(name)
    call.target = dream_id
    with svc.ledger.of(name) as st:
        dream = st.dreams.get(dream_id)
    if dream is None:
        raise not_found(f"dream task {dream_id[:64]!r} does not exist")
    return dream


# -- apply --------------------------------------------------------------------------------
def _result(action: Row) -> Answer:
    out: Answer = {"actionId": action["actionId"], "status": action["status"]}
    if action.get("resultMemoryId"):
        out["memoryId"] = action["resultMemoryId"]
    if action.get("error"):
        out["error"] = action["error"]
    return out


def _apply_one(svc: Service, name: str, action: Row, applier: str | None, now: str) -> None:
    """Carry out one proposed action; a changed or missing target skips it as stale."""
    kind = action["action"]
    if kind == "NOOP":
        _skip(action, "noop_nothing_to_apply", now)
        return
    scope = scopes.exact_scope(action["targetScope"])
    action["attemptCount"] = action.get("attemptCount", 0) + 1
    try:
        if kind == "ADD":
            spec = action["newMemory"]
            receipt = svc.store.add_text(
                name, scope, spec["text"], metadata=spec.get("metadata"), sync=True
            )
            result = receipt.memory_ids[0] if receipt.memory_ids else ""
        else:
            target = svc.store.get_memory(name, scope, action["targetMemoryId"])
            if (target.version or 1) != action.get("targetMemoryVersion", target.version or 1):
                _skip(action, "stale_target_memory", now)
                return
            result = target.id
            if kind == "DELETE":
                svc.store.delete_memory(name, scope, target.id)
            else:
                spec = action["newMemory"]
                svc.store.update_memory(
                    name, scope, target.id, text=spec["text"], metadata=spec.get("metadata", {})
                )
            if kind == "MERGE":
                for source in action.get("sourceMemoryIds", [])[1:]:
                    try:
                        svc.store.delete_memory(name, scope, source)
                    except NotFound:
                        pass
    except NotFound:
        _skip(action, "stale_target_memory", now)
        return
    except MemcoreError as exc:
        action.update({"status": "failed", "error": exc.message, "updatedAt": now})
        return
    action.update(
        {"status": "applied", "resultMemoryId": result, "appliedAt": now, "updatedAt": now}
    )
    if applier:
        action["applier"] = applier


def apply_actions(svc: Service, call: Call) -> Answer:
    name = call.store_name
    ids = fields.string_list(call.body, "actionIds", 1, 100)
    applier = fields.string(call.body, "applier")
    dream = _dream(svc, name, call)
    by_id = {a["actionId"]: a for a in dream.actions}
    if any(by_id.get(i, {}).get("action") in EXTRACT_TYPES for i in ids):
        # The whole call is refused before anything is applied (typed SDK).
        raise invalid("EMIT_SKILL and EMIT_PROFILE actions cannot be applied")
    now = fields.iso(svc.clock())
    results: list[Answer] = []
    for action_id in ids:
        action = by_id.get(action_id)
        if action is None:
            results.append({"actionId": action_id, "status": "not_found"})
            continue
        if action["status"] == "proposed":
            if dream.row["status"] == "cancelled":
                _skip(action, "task_cancelled", now)
            else:
                _apply_one(svc, name, action, applier, now)
        results.append(_result(action))
    _recount(dream, now)
    return {
        "memoryStoreName": name,
        "dreamId": dream.row["dreamId"],
        "applied": sum(r["status"] == "applied" for r in results),
        "failed": sum(r["status"] == "failed" for r in results),
        "notFound": sum(r["status"] == "not_found" for r in results),
        "results": results,
    }


# -- reads and cancel ---------------------------------------------------------------------
def get_dream(svc: Service, call: Call) -> Answer:
    row = _dream(svc, call.store_name, call).row
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
    status = fields.choice(body, "status", DREAM_STATUSES)
    low, high = fields.time_range(body, rfc3339=False)
    limit = fields.whole(body, "limit", 50, 1, 100)
    svc.existing(name)
    with svc.ledger.of(name) as st:
        rows = [
            dict(d.row)
            for d in reversed(st.dreams.values())
            if any(p.within(pattern) for p in d.inputs)
            and (status is None or d.row["status"] == status)
            and low <= d.created_ms <= high
        ]
    chunk, token = fields.window(rows, body, limit)
    out: Answer = {"memoryStoreName": name, "scope": scopes.to_wire(pattern), "tasks": chunk}
    if token:
        out["nextToken"] = token
    return out


def cancel_dream(svc: Service, call: Call) -> Answer:
    """A running dream becomes ``cancelled``; a finished one answers its status unchanged."""
    dream = _dream(svc, call.store_name, call)
    row = dream.row
    if row["status"] in RUNNING:
        now = fields.iso(svc.clock())
        row["status"] = "cancelled"
        for action in dream.actions:
            if action["status"] == "proposed":
                _skip(action, "task_cancelled", now)
        _recount(dream, now)
    return {
        "memoryStoreName": row["memoryStoreName"],
        "dreamId": row["dreamId"],
        "status": row["status"],
        "taskType": row["taskType"],
    }


def _order(rows: list[Row], order: str) -> list[Row]:
    if order == "created_at_desc":
        return list(reversed(rows))
    if order == "confidence_desc":
        return sorted(rows, key=lambda a: -float(a.get("confidence", 0.0)))
    return rows


def list_actions(svc: Service, call: Call) -> Answer:
    """Two exclusive modes: ``dreamId`` (all filters) or ``scope`` + ``actionType`` (EMIT_*)."""
    name, body = call.store_name, call.body
    by_dream, by_scope = body.get("dreamId") is not None, body.get("scope") is not None
    if by_dream == by_scope:
        raise invalid("pass exactly one of dreamId and scope")
    status = fields.choice(body, "status", ACTION_STATUSES)
    kind = fields.choice(body, "action", ACTION_TYPES)
    target = None
    if body.get("targetScope") is not None:
        target = scopes.list_pattern(body.get("targetScope"), "targetScope")
    source = fields.string(body, "sourceMemoryId")
    low, high = fields.fraction(body, "minConfidence"), fields.fraction(body, "maxConfidence")
    if low is not None and high is not None and low > high:
        raise invalid("minConfidence must not be above maxConfidence")
    order = fields.choice(body, "orderBy", ORDERS, "created_at_asc") or "created_at_asc"
    limit = fields.whole(body, "limit", 100, 1, 100)
    if by_scope:
        extract = body.get("actionType")
        if extract not in EXTRACT_TYPES:
            raise invalid("actionType must be EMIT_SKILL or EMIT_PROFILE")
        pattern = scopes.list_pattern(body.get("scope"))
        svc.existing(name)
        with svc.ledger.of(name) as st:
            rows = [
                dict(a)
                for d in st.dreams.values()
                for a in d.actions
                if a["action"] == extract
                and pattern.matches(scopes.exact_scope(a["targetScope"]))
                and (status is None or a["status"] == status)
            ]
        chunk, token = fields.window(rows, body, limit)
        out: Answer = {"memoryStoreName": name, "actions": chunk}
    else:
        if body.get("actionType") is not None:
            raise invalid("actionType is only valid together with scope")
        dream = _dream(svc, name, call)
        rows = [
            dict(a)
            for a in dream.actions
            if (status is None or a["status"] == status)
            and (kind is None or a["action"] == kind)
            and (target is None or target.matches(scopes.exact_scope(a["targetScope"])))
            and (source is None or source in a.get("sourceMemoryIds", []))
            and (low is None or a.get("confidence", 0.0) >= low)
            and (high is None or a.get("confidence", 0.0) <= high)
        ]
        chunk, token = fields.window(_order(rows, order), body, limit)
        out = {"memoryStoreName": name, "dreamId": dream.row["dreamId"], "actions": chunk}
    if token:
        out["nextToken"] = token
    return out


CALLS: dict[str, Handler] = {
    "CreateMemoryDreamTask": create_dream,
    "GetMemoryDreamTask": get_dream,
    "ListMemoryDreamTasks": list_dreams,
    "CancelMemoryDreamTask": cancel_dream,
    "ListMemoryDreamActions": list_actions,
    "ApplyMemoryDreamActions": apply_actions,
}
