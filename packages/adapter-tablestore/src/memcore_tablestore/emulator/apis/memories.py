"""AddMemories, SearchMemories, ListMemories, GetMemory, UpdateMemory, DeleteMemory.

The AddMemories ``requestId`` is the call's request id (also sent as ``x-ots-requestid``, which
SDK 6.4.8 copies over the body's ``requestId``), and it keys the ingest task.
"""

from __future__ import annotations

from typing import Any

from memcore import limits
from memcore.values import MemoryRecord, Message, SearchHit, WriteReceipt
from memcore_tablestore.emulator import encode, request_fields, scopes
from memcore_tablestore.emulator.context import Answer, Call, Handler, Service, port_page
from memcore_tablestore.emulator.ledger import Task
from memcore_tablestore.emulator.service_errors import ServiceError, invalid

MAX_MESSAGE_ID_CHARS = 256
#: Session-affinity weight of the emulated ranking policy (rankingSignals).
SESSION_AFFINITY_WEIGHT = 0.1
MAX_EVIDENCE = 8
MAX_EVIDENCE_CHARS = 1200


def _messages(raw: Any) -> list[Message]:
    if not isinstance(raw, list) or not raw:
        raise invalid("messages must be a non-empty list")
    if len(raw) > limits.MAX_MESSAGES_PER_WRITE:
        raise invalid(f"at most {limits.MAX_MESSAGES_PER_WRITE} messages per call")
    out: list[Message] = []
    for i, item in enumerate(raw):
        field = f"messages[{i}]"
        if not isinstance(item, dict):
            raise invalid(f"{field} must be an object")
        role, content = item.get("role"), item.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise invalid(f"{field} needs string role and content")
        mid = request_fields.string(item, "messageId")
        if mid is not None and not 0 < len(mid) <= MAX_MESSAGE_ID_CHARS:
            raise invalid(f"{field}.messageId must have 1 to {MAX_MESSAGE_ID_CHARS} characters")
        stamp = item.get("timestamp")
        if stamp is not None and not isinstance(stamp, str):
            raise invalid(f"{field}.timestamp must be an RFC3339 string")
        when = None if stamp is None else request_fields.parse_rfc3339(stamp, f"{field}.timestamp")
        meta = limits.check_metadata(item.get("metadata"), field=f"{field}.metadata")
        out.append(Message(role, content, mid, when, meta))
    checked: list[Message] = limits.check_messages(out)
    return checked


def add_memories(svc: Service, call: Call) -> Answer:
    name, body = call.store_name, call.body
    scope = scopes.write_scope(body.get("scope"))
    meta = limits.check_metadata(body.get("metadata"))
    sync = request_fields.flag(body, "sync", False)
    has_text, has_messages = body.get("text") is not None, body.get("messages") is not None
    if has_text == has_messages:
        raise invalid("pass exactly one of text and messages")
    receipt: WriteReceipt
    if has_text:
        text = limits.check_text(body.get("text"))
        receipt = svc.store.add_text(name, scope, text, metadata=meta or None, sync=sync)
        accepted = 1
    else:
        messages = _messages(body.get("messages"))
        receipt = svc.store.add_messages(name, scope, messages, metadata=meta or None, sync=sync)
        accepted = len(messages)
    ids = list(receipt.memory_ids)
    now = svc.clock()
    task_row: Answer = {
        "requestId": call.request_id,
        "eventType": "ingest",
        "memoryStoreName": name,
        "conversationKey": scopes.conversation_key(scope),
        "scope": scopes.to_wire(scope),
        "status": "completed" if receipt.status == "completed" else "queued",
        "acceptedMessages": accepted,
        "derivedUnitIds": ids,
        "createdAt": request_fields.iso(now),
        "updatedAt": request_fields.iso(now),
    }
    if task_row["status"] == "completed":
        task_row["finishedAt"] = request_fields.iso(now)
    with svc.ledger.of(name) as st:
        st.tasks[call.request_id] = Task(task_row, scope, request_fields.to_millis(now))
    call.scope, call.target = scope, (ids[0] if ids else None)
    call.summary = f"acceptedMessages={accepted}"
    answer: Answer = {
        "requestId": call.request_id,
        "status": "completed" if sync else "queued",
        "acceptedMessages": accepted,
        "scope": scopes.to_wire(scope),
        "memoryStoreName": name,
    }
    if sync:
        answer["memcellsCreated"] = 1
        answer["unitsCreated"] = len(ids)
        # Named by the vendor documentation for sync writes, not by the typed SDK.
        answer["memoryIds"] = ids
    return answer


def _evidence(hit: SearchHit) -> list[Answer]:
    """At most 8 entries, each cut to 1,200 characters (SearchMemoriesRequest notes). The
    SearchHit type declares no evidence field: the key and item shape are our assumption."""
    out: list[Answer] = []
    for item in hit.evidence[:MAX_EVIDENCE]:
        entry = {k: v for k, v in item.items() if isinstance(v, str)}
        if "content" in entry:
            entry["content"] = entry["content"][:MAX_EVIDENCE_CHARS]
        out.append(entry)
    return out


def _hit(hit: SearchHit, context: Any, evidence: bool) -> Answer:
    out: Answer = {"unit": encode.unit(hit.memory), "score": hit.score}
    if hit.similarity is not None:  # "omitted when not computed"
        out["similarity"] = hit.similarity
    if context is not None:
        same = hit.memory.scope == context
        ranking = hit.ranking_score
        if ranking is None:
            ranking = hit.score + (SESSION_AFFINITY_WEIGHT if same else 0.0)
        out["rankingScore"] = round(min(1.0, ranking), 6)
        out["rankingSignals"] = {
            "sameSession": same,
            "sessionAffinityWeight": SESSION_AFFINITY_WEIGHT,
        }
    out["source"] = hit.source or "memory"
    if evidence:
        out["evidence"] = _evidence(hit)
    return out


def search(svc: Service, call: Call) -> Answer:
    name, body = call.store_name, call.body
    pattern = scopes.search_pattern(body.get("scope"))
    query = limits.check_query(body.get("query"))
    meta = limits.check_metadata(body.get("metadata"))
    top_k = request_fields.whole(body, "topK", 10, 0, limits.MAX_TOP_K)
    floor = request_fields.fraction(body, "minSimilarity")
    evidence = request_fields.flag(body, "includeEvidence", False)
    context = None
    if body.get("contextScope") is not None:
        try:
            context = scopes.exact_scope(body.get("contextScope"), "contextScope")
        except ServiceError:
            raise invalid("contextScope must be a full scope without wildcards") from None
        if not pattern.matches(context):
            raise invalid("contextScope must lie inside scope")
    hits: list[SearchHit] = []
    if top_k:
        hits = svc.store.search(
            name,
            pattern,
            query,
            top_k=top_k,
            enable_rerank=request_fields.flag(body, "enableRerank", True),
            filters=meta or None,
            min_similarity=floor or None,
            context_scope=context,
            include_evidence=evidence,
        )
    results = [_hit(h, context, evidence) for h in hits]
    if context is not None:
        results.sort(key=lambda r: -float(r["rankingScore"]))
    call.scope = pattern
    return {"results": results, "scope": scopes.to_wire(pattern), "memoryStoreName": name}


def list_memories(svc: Service, call: Call) -> Answer:
    name, body = call.store_name, call.body
    pattern = scopes.list_pattern(body.get("scope") or {})
    page = port_page(
        body, lambda n, t: svc.store.list_memories(name, pattern, limit=n, next_token=t)
    )
    call.scope = pattern
    out: Answer = {
        "memories": [encode.unit(m) for m in page.items],
        "scope": scopes.to_wire(pattern),
        "memoryStoreName": name,
    }
    if page.next_token:
        out["nextToken"] = page.next_token
    return out


def _target(svc: Service, call: Call) -> tuple[str, Any, str, MemoryRecord]:
    name = call.store_name
    scope = scopes.exact_scope(call.body.get("scope"))
    memory_id = request_fields.required(call.body, "memoryId")
    call.scope, call.target = scope, memory_id
    return name, scope, memory_id, svc.store.get_memory(name, scope, memory_id)


def get_memory(svc: Service, call: Call) -> Answer:
    name, _, _, memory = _target(svc, call)
    return {"memory": encode.unit(memory), "memoryStoreName": name}


def update_memory(svc: Service, call: Call) -> Answer:
    """PATCH; metadata is MERGED (same key overwrites, others kept); ``{}`` clears it."""
    body = call.body
    text = None if body.get("text") is None else limits.check_text(body.get("text"))
    patch = None if body.get("metadata") is None else limits.check_metadata(body["metadata"])
    if text is None and patch is None:
        raise invalid("pass at least one of text and metadata")
    name, scope, memory_id, old = _target(svc, call)
    merged = None if patch is None else ({} if not patch else {**old.metadata, **patch})
    if merged is not None:
        merged = limits.check_metadata(merged)
    changed = (text is not None and text != old.text) or (
        merged is not None and merged != dict(old.metadata)
    )
    memory = old
    if changed:
        memory = svc.store.update_memory(name, scope, memory_id, text=text, metadata=merged)
    return {"memory": encode.unit(memory), "updated": changed, "memoryStoreName": name}


def delete_memory(svc: Service, call: Call) -> Answer:
    name = call.store_name
    scope = scopes.exact_scope(call.body.get("scope"))
    memory_id = request_fields.required(call.body, "memoryId")
    call.scope, call.target = scope, memory_id
    svc.store.delete_memory(name, scope, memory_id)
    return {"deleted": True, "memoryId": memory_id, "memoryStoreName": name}


CALLS: dict[str, Handler] = {
    "AddMemories": add_memories,
    "SearchMemories": search,
    "ListMemories": list_memories,
    "GetMemory": get_memory,
    "UpdateMemory": update_memory,
    "DeleteMemory": delete_memory,
}
