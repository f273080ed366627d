"""The request audit (ListMemoryStoreRequests): one ``MemoryStoreRequestRecord`` per call."""

from __future__ import annotations

import time

from memcore.scope import Scope, ScopePattern
from memcore_tablestore.emulator import request_fields, scopes
from memcore_tablestore.emulator.context import Answer, Call
from memcore_tablestore.emulator.ledger import Audited


def audited(call: Call, status: int, answer: Answer, started: float) -> Audited:
    """The record of ``call``, answered with ``status`` and ``answer`` after ``started``
    (``time.perf_counter()``); ``responseStatus`` is the HTTP status."""
    now = time.time()
    row: Answer = {"requestId": call.request_id, "operation": call.api}
    if call.scope is not None:
        row["scope"] = scopes.to_wire(call.scope)
    if call.target:
        row["targetId"] = call.target
    row.update(
        {
            "responseStatus": status,
            "latencyMs": round((time.perf_counter() - started) * 1000),
            "createdAt": request_fields.iso(now),
            "requestSummary": call.summary or f"api={call.api}",
            "responseSummary": f"status={answer.get('status', status)}"
            if status == 200
            else str(answer.get("code")),
        }
    )
    if call.api == "AddMemories" and status == 200:
        row["ingestStatus"] = answer.get("status", "")
    if status != 200:
        row["lastError"] = str(answer.get("message", ""))[:256]
    where = call.scope if isinstance(call.scope, (Scope, ScopePattern)) else None
    return Audited(row, where, request_fields.to_millis(now))
