"""``memcore doctor --live``: call each read-only Memory Store API on the configured store and
say, per API, whether its answer decodes as documented (with the adapter's own decoders).

``record`` saves every request and answer as JSON, with ids, scope values, texts and tokens
redacted, so a user can attach them to a bug report and we can turn them into golden files.
Nothing is written to the store: only the read-only APIs are called.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import attrs

from memcore.errors import MemcoreError
from memcore.scope import Scope, ScopePattern
from memcore_tablestore.protocol import answers
from memcore_tablestore.protocol.answer_fields import scope_to_wire


@attrs.frozen
class ApiCheck:
    api: str
    ok: bool
    detail: str
    #: The service answered (what ``--record`` saves), whatever the answer's shape.
    answered: bool = False

    def as_dict(self) -> dict[str, Any]:
        return {"api": self.api, "ok": self.ok, "detail": self.detail}


Send = Callable[[str, dict[str, Any]], dict[str, Any]]


def run(
    send: Send, store: str, scope: Scope, pattern: ScopePattern, record: Path | None = None
) -> list[ApiCheck]:
    """Every read-only API once (the by-id ones with an id the listings returned)."""
    out: list[ApiCheck] = []
    recorder = _Recorder(record) if record is not None else None
    found: dict[str, Any] = {}

    def check(api: str, body: dict[str, Any], pick: Callable[[Any], Any] | None = None) -> None:
        try:
            answer = send(api, body)
        except MemcoreError as exc:
            out.append(ApiCheck(api, False, f"{exc.code}: {exc}"[:300]))
            return
        if recorder is not None:
            recorder.save(api, body, answer)
        try:
            value = answers.DECODERS[api](answer)
        except MemcoreError as exc:
            out.append(ApiCheck(api, False, f"not the documented shape: {exc}"[:300], True))
            return
        out.append(ApiCheck(api, True, "documented shape", True))
        if pick is not None:
            picked = pick(value)
            if picked:
                found[api] = picked

    named = {"memoryStoreName": store}
    where = scope_to_wire(pattern)
    check("ListMemoryStores", {"limit": 10})
    check("GetMemoryStore", dict(named))
    check("SearchMemories", {**named, "scope": where, "query": "memcore live check", "topK": 1})
    check(
        "ListMemories",
        {**named, "scope": where, "limit": 1},
        lambda page: page.items[0] if page.items else None,
    )
    if "ListMemories" in found:
        memory = found["ListMemories"]
        check("GetMemory", {**named, "memoryId": memory.id, "scope": scope_to_wire(memory.scope)})
    else:
        out.append(ApiCheck("GetMemory", True, "skipped: no memory to read"))
    check("ListMemoryStoreMessages", {**named, "scope": scope_to_wire(scope), "limit": 1})
    check("ListMemoryStoreRequests", {**named, "scope": where, "limit": 1})
    check("ListMemoryStoreScopes", {**named, "scope": where, "limit": 1})
    check(
        "ListMemoryTasks",
        {**named, "scope": where, "limit": 1},
        lambda page: page.items[0].id if page.items else None,
    )
    if "ListMemoryTasks" in found:
        check("GetMemoryTask", {**named, "requestId": found["ListMemoryTasks"]})
    else:
        out.append(ApiCheck("GetMemoryTask", True, "skipped: no task to read"))
    check(
        "ListMemoryDreamTasks",
        {**named, "scope": where, "limit": 1},
        lambda page: page.items[0].id if page.items else None,
    )
    if "ListMemoryDreamTasks" in found:
        dream = {**named, "dreamId": found["ListMemoryDreamTasks"]}
        check("GetMemoryDreamTask", dream)
        check("ListMemoryDreamActions", {**dream, "limit": 1})
    else:
        for api in ("GetMemoryDreamTask", "ListMemoryDreamActions"):
            out.append(ApiCheck(api, True, "skipped: no dream task to read"))
    return out


# -- redaction -------------------------------------------------------------------------------
#: Keys whose string values are user content or free text: replaced, never saved.
_TEXT_KEYS = frozenset(
    {"text", "content", "search_text", "query", "description", "extractInstructions"}
    | {"instructions", "reason", "requestSummary", "responseSummary", "metadata_json"}
    | {"searchText", "name", "kind"}
    | {"metadata_flat", "lastError", "error", "title", "topic", "otsInstance", "entities"}
    | {"keywords", "skippedReasonDetail", "applyDetailJson", "conversation_key"}
    | {"conversationKey", "applier", "clientToken", "speaker", "memoryStoreName"}
)
_SCOPE_KEYS = frozenset({"appId", "tenantId", "agentId", "runId"})
_TOKEN_KEYS = frozenset({"nextToken"})
_ID = re.compile(r"(?i)^[0-9a-f]{16,}$|^[0-9a-f-]{32,36}$")


class _Recorder:
    """Writes ``<Api>.json`` per API with consistent placeholders (the same id stays the same
    placeholder across files, so references between answers survive redaction)."""

    def __init__(self, folder: Path) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        self.folder = folder
        self.names: dict[str, str] = {}

    def _name(self, kind: str, value: str) -> str:
        key = f"{kind}\x00{value}"
        if key not in self.names:
            self.names[key] = f"<{kind}-{sum(1 for k in self.names if k.startswith(kind)) + 1}>"
        return self.names[key]

    def redact(self, value: Any, key: str = "") -> Any:
        if isinstance(value, dict):
            if key in ("metadata", "time_anchor"):
                return {self._name("key", k): "<redacted>" for k in value}
            return {k: self.redact(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [self.redact(v, key) for v in value]
        if not isinstance(value, str) or value in ("", "*", "__default__"):
            return value
        if key in _TEXT_KEYS:
            return "<redacted>"
        if key in _SCOPE_KEYS:
            return self._name("scope", value)
        if key in _TOKEN_KEYS:
            return "<token>"
        if key.lower().endswith(("id", "ids", "_by")) or _ID.match(value):
            return self._name("id", value)
        return value

    def save(self, api: str, request: dict[str, Any], answer: dict[str, Any]) -> None:
        data = {"api": api, "request": self.redact(request), "response": self.redact(answer)}
        path = self.folder / f"{api}.json"
        path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
