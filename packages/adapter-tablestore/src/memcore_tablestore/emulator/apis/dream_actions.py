"""The actions of a dream: bookkeeping, ApplyMemoryDreamActions and ListMemoryDreamActions.

Applying carries out a proposed action against the backing store; a target that changed or
vanished since planning skips the action as ``stale_target_memory``. EMIT_SKILL/EMIT_PROFILE
ids refuse the whole call before anything is applied (typed SDK).
"""

from __future__ import annotations

from memcore import values
from memcore.errors import MemcoreError, NotFound
from memcore_tablestore.emulator import request_fields, scopes
from memcore_tablestore.emulator.context import Answer, Call, Handler, Service
from memcore_tablestore.emulator.ledger import Dream, Row
from memcore_tablestore.emulator.service_errors import invalid, not_found

ACTION_STATUSES = values.DREAM_ACTION_STATUSES
ACTION_TYPES = values.DREAM_ACTION_TYPES
EXTRACT_TYPES = ("EMIT_SKILL", "EMIT_PROFILE")
ORDERS = ("created_at_asc", "created_at_desc", "confidence_desc")


# -- bookkeeping --------------------------------------------------------------------------
def skip(action: Row, reason: str, now: str) -> None:
    action.update({"status": "skipped", "skippedReason": reason, "updatedAt": now})


def recount(dream: Dream, now: str) -> None:
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


def find_dream(svc: Service, name: str, call: Call) -> Dream:
    dream_id = request_fields.required(call.body, "dreamId")
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


def apply_one(svc: Service, name: str, action: Row, applier: str | None, now: str) -> None:
    """Carry out one proposed action; a changed or missing target skips it as stale."""
    kind = action["action"]
    if kind == "NOOP":
        skip(action, "noop_nothing_to_apply", now)
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
                skip(action, "stale_target_memory", now)
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
        skip(action, "stale_target_memory", now)
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
    ids = request_fields.string_list(call.body, "actionIds", 1, 100)
    applier = request_fields.string(call.body, "applier")
    dream = find_dream(svc, name, call)
    by_id = {a["actionId"]: a for a in dream.actions}
    if any(by_id.get(i, {}).get("action") in EXTRACT_TYPES for i in ids):
        # The whole call is refused before anything is applied (typed SDK).
        raise invalid("EMIT_SKILL and EMIT_PROFILE actions cannot be applied")
    now = request_fields.iso(svc.clock())
    results: list[Answer] = []
    for action_id in ids:
        action = by_id.get(action_id)
        if action is None:
            results.append({"actionId": action_id, "status": "not_found"})
            continue
        if action["status"] == "proposed":
            if dream.row["status"] == "cancelled":
                skip(action, "task_cancelled", now)
            else:
                apply_one(svc, name, action, applier, now)
        results.append(_result(action))
    recount(dream, now)
    return {
        "memoryStoreName": name,
        "dreamId": dream.row["dreamId"],
        "applied": sum(r["status"] == "applied" for r in results),
        "failed": sum(r["status"] == "failed" for r in results),
        "notFound": sum(r["status"] == "not_found" for r in results),
        "results": results,
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
    status = request_fields.choice(body, "status", ACTION_STATUSES)
    kind = request_fields.choice(body, "action", ACTION_TYPES)
    target = None
    if body.get("targetScope") is not None:
        target = scopes.list_pattern(body.get("targetScope"), "targetScope")
    source = request_fields.string(body, "sourceMemoryId")
    low, high = (
        request_fields.fraction(body, "minConfidence"),
        request_fields.fraction(body, "maxConfidence"),
    )
    if low is not None and high is not None and low > high:
        raise invalid("minConfidence must not be above maxConfidence")
    order = request_fields.choice(body, "orderBy", ORDERS, "created_at_asc") or "created_at_asc"
    limit = request_fields.whole(body, "limit", 100, 1, 100)
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
        chunk, token = request_fields.window(rows, body, limit)
        out: Answer = {"memoryStoreName": name, "actions": chunk}
    else:
        if body.get("actionType") is not None:
            raise invalid("actionType is only valid together with scope")
        dream = find_dream(svc, name, call)
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
        chunk, token = request_fields.window(_order(rows, order), body, limit)
        out = {"memoryStoreName": name, "dreamId": dream.row["dreamId"], "actions": chunk}
    if token:
        out["nextToken"] = token
    return out


CALLS: dict[str, Handler] = {
    "ListMemoryDreamActions": list_actions,
    "ApplyMemoryDreamActions": apply_actions,
}
