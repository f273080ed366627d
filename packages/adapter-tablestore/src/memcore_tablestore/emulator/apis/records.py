"""ListMemoryStoreMessages, ListMemoryStoreRequests, ListMemoryStoreScopes, GetMemoryTask,
ListMemoryTasks: the short-term messages, the audit, the scopes and the ingest tasks."""

from __future__ import annotations

from memcore.scope import Scope, ScopePattern
from memcore.values import (
    TASK_STATUSES,  # MemoryTaskStatus of memory.d.ts
    Message,
)
from memcore_tablestore.emulator import encode, request_fields, scopes
from memcore_tablestore.emulator.context import Answer, Call, Handler, Service, port_page
from memcore_tablestore.emulator.service_errors import invalid, not_found


def _paged(out: Answer, token: str | None) -> Answer:
    if token:
        out["nextToken"] = token
    return out


def list_messages(svc: Service, call: Call) -> Answer:
    """Oldest first (the types do not say; a transcript reads that way)."""
    name, body = call.store_name, call.body
    scope = scopes.exact_scope(body.get("scope"))
    limit = request_fields.whole(body, "limit", 200, 1, 500)
    low, high = request_fields.time_range(body, rfc3339=True)
    everything: list[Message] = svc.everything(
        lambda t: svc.store.list_messages(name, scope, limit=100, next_token=t)
    )
    chosen = [m for m in everything if low <= request_fields.to_millis(m.timestamp) <= high]
    chunk, token = request_fields.window(chosen, body, limit)
    call.scope = scope
    session: Answer = {
        "scope": scopes.to_wire(scope),
        "messages": [encode.message(m) for m in chunk],
    }
    # The typed SDK declares nextToken both in the session and at the top level: send both.
    _paged(session, token)
    return _paged({"session": session}, token)


def list_requests(svc: Service, call: Call) -> Answer:
    """Newest first; ``scope`` optional (typed SDK), hierarchical ``*``."""
    name, body = call.store_name, call.body
    svc.existing(name)
    pattern = None if body.get("scope") is None else scopes.list_pattern(body.get("scope"))
    operation = request_fields.string(body, "operation")
    limit = request_fields.whole(body, "limit", 50, 1, 100)
    low, high = request_fields.time_range(body, rfc3339=True)
    with svc.ledger.of(name) as st:
        rows = [
            a.row
            for a in reversed(st.audit)
            if (operation is None or a.row["operation"] == operation)
            and low <= a.created_ms <= high
            and (pattern is None or _inside(a.scope, pattern))
        ]
    chunk, token = request_fields.newest_first_window(rows, body, limit)
    out: Answer = {"requests": [dict(r) for r in chunk]}
    if pattern is not None:
        out["scope"] = scopes.to_wire(pattern)
    out["memoryStoreName"] = name
    return _paged(out, token)


def list_scopes(svc: Service, call: Call) -> Answer:
    name, body = call.store_name, call.body
    pattern = scopes.list_pattern(body.get("scope"))
    page = port_page(body, lambda n, t: svc.store.list_scopes(name, pattern, limit=n, next_token=t))
    out: Answer = {
        "scopes": [scopes.to_wire(s) for s in page.items],
        "scope": scopes.to_wire(pattern),
        "memoryStoreName": name,
    }
    return _paged(out, page.next_token)


def get_task(svc: Service, call: Call) -> Answer:
    name, body = call.store_name, call.body
    request_id = request_fields.required(body, "requestId")
    pattern = None if body.get("scope") is None else scopes.list_pattern(body.get("scope"))
    svc.existing(name)
    with svc.ledger.of(name) as st:
        task = st.tasks.get(request_id)
        if task is None:
            raise not_found(f"task {request_id[:64]!r} does not exist")
        if pattern is not None and not pattern.matches(task.scope):
            raise invalid("the task does not belong to the given scope")
        row = dict(task.row)
    call.target = request_id
    return {"task": row, "memoryStoreName": name}


def list_tasks(svc: Service, call: Call) -> Answer:
    """Newest first. ``scope`` is a value: empty levels are ``__default__``."""
    name, body = call.store_name, call.body
    pattern = scopes.list_pattern(body.get("scope"))
    status = request_fields.choice(body, "status", TASK_STATUSES)
    limit = request_fields.whole(body, "limit", 50, 1, 100)
    low, high = request_fields.time_range(body, rfc3339=False)
    svc.existing(name)
    with svc.ledger.of(name) as st:
        rows = [
            dict(t.row)
            for t in reversed(st.tasks.values())
            if pattern.matches(t.scope)
            and (status is None or t.row["status"] == status)
            and low <= t.created_ms <= high
        ]
    chunk, token = request_fields.newest_first_window(rows, body, limit)
    out: Answer = {"tasks": chunk, "scope": scopes.to_wire(pattern), "memoryStoreName": name}
    return _paged(out, token)


CALLS: dict[str, Handler] = {
    "ListMemoryStoreMessages": list_messages,
    "ListMemoryStoreRequests": list_requests,
    "ListMemoryStoreScopes": list_scopes,
    "GetMemoryTask": get_task,
    "ListMemoryTasks": list_tasks,
}


def _inside(scope: Scope | ScopePattern | None, pattern: ScopePattern) -> bool:
    """Whether an audited call's scope lies inside the requested ``pattern`` (a search's
    ``app/t1/*/*`` lies inside ``app/t1/*/*`` and ``app/*/*/*``, not inside ``app/t1/a1/*``)."""
    if isinstance(scope, Scope):
        return pattern.matches(scope)
    return scope is not None and scope.within(pattern)
