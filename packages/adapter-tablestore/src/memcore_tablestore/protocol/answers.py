"""One decoder per Memory Store API, written from the vendor's typed SDK (``memory.d.ts``).

Rules: exact keys and nesting of the types; a field the types declare and memcore acts on
(ids, statuses, scores, the lists) is required and its absence is a ``ProtocolError`` naming
the API and the field; every field memcore does not model is kept in ``extras``. Required
fields memcore never reads (``memoryStoreName`` echoes, ``conversation_key``) are not
enforced here; the live check (:mod:`memcore_tablestore.live_check`) reports them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from memcore.scope import Scope
from memcore.values import (
    DreamAction,
    DreamTask,
    MemoryRecord,
    MemoryTask,
    Message,
    Page,
    RequestRecord,
    SearchHit,
    StoreInfo,
    WriteReceipt,
)
from memcore_tablestore.protocol import answer_fields as f

_Body = Mapping[str, Any]


def next_token(api: str, body: _Body, path: str = "") -> str | None:
    token = body.get("nextToken")
    if token is None or token == "":
        return None
    if not isinstance(token, str):
        raise f.problem(api, path + "nextToken", "that is not a string")
    return token


def request_id(body: _Body) -> str | None:
    """The request id: SDK 6.4.8 writes the ``x-ots-requestid`` header into every 2xx body."""
    rid = body.get("requestId")
    return rid if isinstance(rid, str) and rid else None


# -- stores ----------------------------------------------------------------------------------
_STORE_KNOWN = frozenset(
    {"memoryStoreName", "description", "extractInstructions", "storageMode", "createdAt"}
    | {"updatedAt", "lastSeenAt", "requestId"}
)


def store_info(api: str, body: _Body) -> StoreInfo:
    """``MemoryStoreInfo`` (flat). ``lastSeenAt`` is always the zero date: dropped."""
    return StoreInfo(
        name=f.text(api, body, "memoryStoreName"),
        description=f.opt_text(api, body, "description") or "",
        created_at=f.when(api, body, "createdAt"),
        extras=f.extras(body, _STORE_KNOWN),
        storage_mode=f.opt_text(api, body, "storageMode") or "ots",
        extract_instructions=f.opt_text(api, body, "extractInstructions"),
        updated_at=f.when(api, body, "updatedAt"),
    )


def list_stores(body: _Body) -> Page[StoreInfo]:
    api = "ListMemoryStores"
    out = []
    for i, item in enumerate(f.items(api, body, "stores")):
        data = f.obj(api, item, f"stores[{i}]")
        out.append(
            StoreInfo(
                f.text(api, data, "memoryStoreName", f"stores[{i}]."),
                extras=f.extras(data, frozenset({"memoryStoreName"})),
                # Listing items carry only the name; the rest needs GetMemoryStore.
                storage_mode=None,
            )
        )
    return Page(tuple(out), next_token(api, body))


def deleted(api: str, body: _Body) -> bool:
    """``{deleted, ...}``. An older documentation page showed a ``{code:"SUCCESS", data:{}}``
    envelope instead; :func:`memcore_tablestore.protocol.wire.unwrap` turns it into ``{}``, accepted."""
    flag = body.get("deleted")
    if flag is None:
        if set(body) - {"requestId", "memoryStoreName", "memoryId"}:
            raise f.problem(api, "deleted", "missing")
        return True
    if not isinstance(flag, bool):
        raise f.problem(api, "deleted", "that is not true or false")
    return flag


# -- memories --------------------------------------------------------------------------------
_UNIT_KNOWN = frozenset(
    {"id", "text", "scope", "metadata", "created_at", "updated_at", "unit_type", "salience"}
    | {"version"}
)


def memory(api: str, data: object, path: str) -> MemoryRecord:
    """A ``MemoryUnit`` (snake_case, ``scope`` camelCase). The hot path of every answer."""
    unit = f.obj(api, data, path)
    mid = unit.get("id")
    if not isinstance(mid, str) or not mid:
        raise f.problem(api, path + ".id", "missing or not a string")
    body = unit.get("text")
    if body is None:
        body = ""  # optional in the types; a unit without text is still a unit
    elif not isinstance(body, str):
        raise f.problem(api, path + ".text", "that is not a string")
    meta = unit.get("metadata")
    if meta is None:
        meta = {}
    elif type(meta) is not dict or (meta and not all(type(v) is str for v in meta.values())):
        raise f.problem(api, path + ".metadata", "that is not an object of strings")
    unit_type = unit.get("unit_type")
    if unit_type is not None and not isinstance(unit_type, str):
        raise f.problem(api, path + ".unit_type", "that is not a string")
    salience = unit.get("salience")
    if salience is not None:
        salience = f.number(api, salience, path + ".salience")
    version = unit.get("version")
    if version is not None and (isinstance(version, bool) or not isinstance(version, int)):
        raise f.problem(api, path + ".version", "that is not a whole number")
    scope = f.scope(api, unit.get("scope"), path + ".scope")  # both cache what repeats
    created = f.when(api, unit, "created_at", path + ".")
    updated = None
    if "updated_at" in unit:  # not in the types; tolerated when a service sends it
        updated = f.when(api, unit, "updated_at", path + ".")
    extras = {k: v for k, v in unit.items() if k not in _UNIT_KNOWN}
    return MemoryRecord(
        mid, body, scope, meta, created, updated, unit_type, salience, version, extras=extras
    )


def one_memory(api: str, body: _Body) -> MemoryRecord:
    """GetMemory / UpdateMemory: ``{memory, memoryStoreName}`` (UpdateMemory adds ``updated``)."""
    return memory(api, f.need(api, body, "memory", ""), "memory")


def list_memories(body: _Body) -> Page[MemoryRecord]:
    api = "ListMemories"
    units = f.items(api, body, "memories")
    return Page(
        tuple(memory(api, u, f"memories[{i}]") for i, u in enumerate(units)),
        next_token(api, body),
    )


_HIT_KNOWN = frozenset({"unit", "score", "similarity", "rankingScore", "source", "evidence"})


def search(body: _Body) -> list[SearchHit]:
    """``{results: [{unit, score, similarity?, rankingScore?, rankingSignals?, source}]}``."""
    api = "SearchMemories"
    out = []
    for i, item in enumerate(f.items(api, body, "results")):
        path = f"results[{i}]"
        hit = f.obj(api, item, path)
        unit = hit.get("unit")
        if unit is None:
            raise f.problem(api, path + ".unit", "missing")
        score = hit.get("score")
        if type(score) is not float:  # the common case costs one check
            if score is None:
                raise f.problem(api, path + ".score", "missing")
            score = f.number(api, score, path + ".score")
        similarity = hit.get("similarity")
        if similarity is not None and type(similarity) is not float:
            similarity = f.number(api, similarity, path + ".similarity")
        ranking = hit.get("rankingScore")
        if ranking is not None:
            ranking = f.number(api, ranking, path + ".rankingScore")
        source = hit.get("source")
        evidence = hit.get("evidence")
        extra = {k: v for k, v in hit.items() if k not in _HIT_KNOWN}
        if evidence is not None and not (
            isinstance(evidence, list) and all(isinstance(e, dict) for e in evidence)
        ):
            # The evidence shape is not typed by the vendor: keep what came, never fail on it.
            extra["evidence"], evidence = evidence, None
        out.append(
            SearchHit(
                memory(api, unit, path + ".unit"),
                score,
                similarity,
                source if isinstance(source, str) else None,
                tuple(evidence) if evidence else (),
                ranking,
                extra,
            )
        )
    return out


def receipt(body: _Body) -> WriteReceipt:
    """``AddMemoriesResponse``: the task handle is ``requestId``; ``memoryIds`` is named by the
    documentation for sync writes but not by the types (accepted when present)."""
    api = "AddMemories"
    status = f.text(api, body, "status")
    accepted = f.opt_int(api, body, "acceptedMessages")
    rid = request_id(body)
    return WriteReceipt(
        task_id=rid,
        status=status.lower(),
        memory_ids=f.strings(api, body, "memoryIds"),
        request_id=rid,
        accepted_messages=accepted,
    )


# -- short-term messages, audit, scopes ------------------------------------------------------
_MESSAGE_KNOWN = frozenset({"messageId", "role", "speaker", "content", "timestamp", "metadata"})


def messages(body: _Body) -> Page[Message]:
    """``{session: {scope, messages, nextToken?}, nextToken?}``: the token may sit in either."""
    api = "ListMemoryStoreMessages"
    session = f.obj(api, f.need(api, body, "session", ""), "session")
    where = f.scope(api, session.get("scope"), "session.scope") if "scope" in session else None
    out = []
    for i, item in enumerate(f.items(api, session, "messages", "session.")):
        path = f"session.messages[{i}]."
        data = f.obj(api, item, path[:-1])
        out.append(
            Message(
                role=f.text(api, data, "role", path),
                content=f.text(api, data, "content", path),
                id=f.opt_text(api, data, "messageId", path),
                timestamp=f.when(api, data, "timestamp", path),
                metadata=f.string_map(api, data, "metadata", path),
                scope=where,
                speaker=f.opt_text(api, data, "speaker", path),
                extras=f.extras(data, _MESSAGE_KNOWN),
            )
        )
    token = next_token(api, session, "session.") or next_token(api, body)
    return Page(tuple(out), token)


_RECORD_KNOWN = frozenset(
    {"requestId", "operation", "scope", "targetId", "responseStatus", "latencyMs", "createdAt"}
)


def requests(body: _Body) -> Page[RequestRecord]:
    api = "ListMemoryStoreRequests"
    out = []
    for i, item in enumerate(f.items(api, body, "requests")):
        path = f"requests[{i}]."
        data = f.obj(api, item, path[:-1])
        status = f.opt_int(api, data, "responseStatus", path)
        out.append(
            RequestRecord(
                id=f.text(api, data, "requestId", path),
                operation=f.text(api, data, "operation", path),
                status="" if status is None else str(status),
                scope=(
                    f.scope_or_pattern(api, data["scope"], path + "scope")
                    if data.get("scope")
                    else None
                ),
                target_id=f.opt_text(api, data, "targetId", path),
                latency_ms=f.opt_number(api, data, "latencyMs", path),
                created_at=f.when(api, data, "createdAt", path),
                extras=f.extras(data, _RECORD_KNOWN),
                response_status=status,
            )
        )
    return Page(tuple(out), next_token(api, body))


def scopes(body: _Body) -> Page[Scope]:
    api = "ListMemoryStoreScopes"
    listed = f.items(api, body, "scopes")
    return Page(
        tuple(f.scope(api, s, f"scopes[{i}]") for i, s in enumerate(listed)),
        next_token(api, body),
    )


# -- write tasks -----------------------------------------------------------------------------
#: ``eventType`` (e.g. ``ingest``) is not modelled: it stays in ``extras``.
_TASK_KNOWN = frozenset(
    {"requestId", "scope", "status", "acceptedMessages", "derivedUnitIds"}
    | {"lastError", "createdAt", "updatedAt", "finishedAt"}
)


def task(api: str, data: object, path: str) -> MemoryTask:
    """``MemoryTask``, keyed by the write's ``requestId``."""
    item = f.obj(api, data, path)
    p = path + "."
    raw_scope = item.get("scope")
    return MemoryTask(
        id=f.text(api, item, "requestId", p),
        status=f.text(api, item, "status", p),
        operation="AddMemories",
        scope=f.scope(api, raw_scope, p + "scope") if raw_scope else None,
        created_at=f.when(api, item, "createdAt", p),
        finished_at=f.when(api, item, "finishedAt", p),
        memory_ids=f.strings(api, item, "derivedUnitIds", p),
        error=f.opt_text(api, item, "lastError", p),
        updated_at=f.when(api, item, "updatedAt", p),
        accepted_messages=f.opt_int(api, item, "acceptedMessages", p),
        extras=f.extras(item, _TASK_KNOWN),
    )


def one_task(body: _Body) -> MemoryTask:
    return task("GetMemoryTask", f.need("GetMemoryTask", body, "task", ""), "task")


def tasks(body: _Body) -> Page[MemoryTask]:
    api = "ListMemoryTasks"
    listed = f.items(api, body, "tasks")
    return Page(
        tuple(task(api, t, f"tasks[{i}]") for i, t in enumerate(listed)), next_token(api, body)
    )


# -- dream -----------------------------------------------------------------------------------
_FLAT_COUNTS = {
    "actionCount": "total",
    "proposedCount": "proposed",
    "appliedCount": "applied",
    "skippedCount": "skipped",
    "failedCount": "failed",
}
_DREAM_KNOWN = frozenset(
    {"dreamId", "status", "taskType", "applyMode", "input", "inputScopes", "actions"}
    | {"instructions", "lastError", "createdAt", "updatedAt", "finishedAt", "memoryStoreName"}
    | set(_FLAT_COUNTS)
)


def dream(api: str, data: _Body, path: str = "") -> DreamTask:
    """``DreamTaskSummary`` (Get: nested ``input``/``actions``), ``DreamTask`` rows (List: flat
    ``inputScopes`` and ``*Count``), and the short Create/Cancel answers: one reader."""
    p = path + "." if path else ""
    raw_input = data.get("input")
    if raw_input is not None:
        summary = f.obj(api, raw_input, p + "input")
        listed = f.items(api, summary, "scopes", p + "input.")
        where = p + "input.scopes"
    else:
        listed = data.get("inputScopes") or []
        if not isinstance(listed, list):
            raise f.problem(api, p + "inputScopes", "that is not a list")
        where = p + "inputScopes"
    raw_actions = data.get("actions")
    extra = f.extras(data, _DREAM_KNOWN)
    if raw_actions is not None:
        stats = dict(f.obj(api, raw_actions, p + "actions"))
        if "skippedByReason" in stats:
            extra["skippedByReason"] = stats.pop("skippedByReason")
        counts = f.count_map(api, stats, p + "actions")
    else:
        flat = {k: data[k] for k in _FLAT_COUNTS if k in data}
        counts = {_FLAT_COUNTS[k]: v for k, v in f.count_map(api, flat, p[:-1] or "task").items()}
    return DreamTask(
        id=f.text(api, data, "dreamId", p),
        status=f.text(api, data, "status", p),
        scopes=tuple(f.pattern(api, s, f"{where}[{i}]") for i, s in enumerate(listed)),
        created_at=f.when(api, data, "createdAt", p),
        finished_at=f.when(api, data, "finishedAt", p),
        apply_mode=f.opt_text(api, data, "applyMode", p) or "proposal",
        task_type=f.opt_text(api, data, "taskType", p) or "memory",
        updated_at=f.when(api, data, "updatedAt", p),
        action_counts=counts,
        instructions=f.opt_text(api, data, "instructions", p),
        error=f.opt_text(api, data, "lastError", p),
        extras=extra,
    )


def dreams(body: _Body) -> Page[DreamTask]:
    api = "ListMemoryDreamTasks"
    out = []
    for i, item in enumerate(f.items(api, body, "tasks")):
        out.append(dream(api, f.obj(api, item, f"tasks[{i}]"), f"tasks[{i}]"))
    return Page(tuple(out), next_token(api, body))


_ACTION_KNOWN = frozenset(
    {"dreamId", "actionId", "action", "status", "targetScope", "targetMemoryId", "newMemory"}
    | {"sourceMemoryIds", "reason", "confidence", "resultMemoryId", "skippedReason", "error"}
    | {"createdAt", "memoryStoreName"}
)


def action(api: str, data: object, path: str, dream_id: str | None) -> DreamAction:
    """``DreamActionRecord``: ``memory_ids`` = the target, then MERGE sources."""
    item = f.obj(api, data, path)
    p = path + "."
    target = f.opt_text(api, item, "targetMemoryId", p)
    sources = f.strings(api, item, "sourceMemoryIds", p)
    new = item.get("newMemory")
    new_text = None
    if new is not None:
        new_text = f.opt_text(api, f.obj(api, new, p + "newMemory"), "text", p + "newMemory.")
    raw_scope = item.get("targetScope")
    return DreamAction(
        id=f.text(api, item, "actionId", p),
        task_id=f.opt_text(api, item, "dreamId", p) or dream_id or "",
        action=f.text(api, item, "action", p),
        memory_ids=tuple(dict.fromkeys(([target] if target else []) + list(sources))),
        text=new_text,
        status=f.text(api, item, "status", p),
        extras=f.extras(item, _ACTION_KNOWN),
        confidence=f.opt_number(api, item, "confidence", p),
        reason=f.opt_text(api, item, "reason", p),
        skipped_reason=f.opt_text(api, item, "skippedReason", p),
        target_memory_id=target,
        result_memory_id=f.opt_text(api, item, "resultMemoryId", p),
        scope=f.scope(api, raw_scope, p + "targetScope") if raw_scope else None,
        error=f.opt_text(api, item, "error", p),
        created_at=f.when(api, item, "createdAt", p),
    )


def actions(body: _Body) -> Page[DreamAction]:
    api = "ListMemoryDreamActions"
    dream_id = f.opt_text(api, body, "dreamId")  # omitted in scope mode
    listed = f.items(api, body, "actions")
    return Page(
        tuple(action(api, a, f"actions[{i}]", dream_id) for i, a in enumerate(listed)),
        next_token(api, body),
    )


def applied(body: _Body) -> list[DreamAction]:
    """``{applied, failed, notFound?, results: [{actionId, status, memoryId?, error?}]}``; the
    results do not say the action type, so ``action`` is empty."""
    api = "ApplyMemoryDreamActions"
    dream_id = f.text(api, body, "dreamId")
    for key in ("applied", "failed"):
        f.number(api, f.need(api, body, key, ""), key)
    out = []
    for i, item in enumerate(f.items(api, body, "results")):
        p = f"results[{i}]."
        data = f.obj(api, item, p[:-1])
        out.append(
            DreamAction(
                id=f.text(api, data, "actionId", p),
                task_id=dream_id,
                action="",
                status=f.text(api, data, "status", p),
                result_memory_id=f.opt_text(api, data, "memoryId", p),
                error=f.opt_text(api, data, "error", p),
                extras=f.extras(data, frozenset({"actionId", "status", "memoryId", "error"})),
            )
        )
    return out


#: API name -> its decoder; what the live check and the golden tests run.
DECODERS: dict[str, Callable[[_Body], Any]] = {
    "CreateMemoryStore": lambda b: store_info("CreateMemoryStore", b),
    "GetMemoryStore": lambda b: store_info("GetMemoryStore", b),
    "UpdateMemoryStore": lambda b: store_info("UpdateMemoryStore", b),
    "ListMemoryStores": list_stores,
    "DeleteMemoryStore": lambda b: deleted("DeleteMemoryStore", b),
    "AddMemories": receipt,
    "SearchMemories": search,
    "ListMemories": list_memories,
    "GetMemory": lambda b: one_memory("GetMemory", b),
    "UpdateMemory": lambda b: one_memory("UpdateMemory", b),
    "DeleteMemory": lambda b: deleted("DeleteMemory", b),
    "ListMemoryStoreMessages": messages,
    "ListMemoryStoreRequests": requests,
    "ListMemoryStoreScopes": scopes,
    "GetMemoryTask": one_task,
    "ListMemoryTasks": tasks,
    "CreateMemoryDreamTask": lambda b: dream("CreateMemoryDreamTask", b),
    "GetMemoryDreamTask": lambda b: dream("GetMemoryDreamTask", b),
    "ListMemoryDreamTasks": dreams,
    "CancelMemoryDreamTask": lambda b: dream("CancelMemoryDreamTask", b),
    "ListMemoryDreamActions": actions,
    "ApplyMemoryDreamActions": applied,
}
