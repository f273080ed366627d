"""The Memory Store wire format: JSON bodies to and from the core's values.

Requests use the service's camelCase keys (``memoryStoreName``, ``scope.appId``, ``topK``);
memory units come back with snake_case fields (``created_at``, ``unit_type``). Decoding is
tolerant: either spelling is accepted, a ``{code, data, message}`` envelope is unwrapped, and
fields we do not model are kept in ``extras``. Anything with the wrong shape is a
:class:`ProtocolError`, never a stray ``KeyError``. The adapter decodes with this module and
the emulator encodes with it, so the two cannot drift apart silently.
"""

from __future__ import annotations

import datetime as _dt
import functools
import math
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs
import cattrs

from memcore.errors import InvalidInput, MemcoreError, ProtocolError
from memcore.scope import LEVELS, WILDCARD, Scope, ScopePattern
from memcore.values import (
    DreamAction,
    DreamTask,
    Memory,
    MemoryTask,
    Message,
    Page,
    RequestRecord,
    SearchHit,
    StoreInfo,
    WriteReceipt,
)

T = TypeVar("T")

#: Scope levels as the service spells them.
WIRE_LEVELS = ("appId", "tenantId", "agentId", "runId")
_SNAKE_TO_WIRE = dict(zip(LEVELS, WIRE_LEVELS))
#: Envelope ``code`` values that mean success.
_OK_CODES = frozenset({"", "OK", "Ok", "ok", "Success", "success", "SUCCESS", "0", "200"})
_CAMEL = re.compile(r"(?<=[a-z0-9])([A-Z])")


@functools.lru_cache(maxsize=4096)
def snake(key: str) -> str:
    return _CAMEL.sub(r"_\1", key).lower()


# -- scopes ----------------------------------------------------------------------------------
def scope_to_wire(scope: Scope | ScopePattern) -> dict[str, str]:
    return dict(zip(WIRE_LEVELS, scope.as_tuple()))


def _levels(data: object, field: str) -> list[str | None]:
    if not isinstance(data, dict):
        raise InvalidInput(
            f"{field} must be an object with appId, tenantId, agentId, runId", field=field
        )
    out: list[str | None] = []
    for wire, name in zip(WIRE_LEVELS, LEVELS):
        value = data.get(wire, data.get(name))
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"{field}.{wire} must be a string", field=f"{field}.{wire}")
        out.append(value or None)
    return out


def scope_from_wire(data: object, *, field: str = "scope") -> Scope:
    """A concrete scope: all four levels, no wildcard (writes, messages, get/update/delete)."""
    levels = _levels(data, field)
    for wire, value in zip(WIRE_LEVELS, levels):
        if value is None:
            raise InvalidInput(f"{field}.{wire} is required here", field=f"{field}.{wire}")
        if value == WILDCARD:
            raise InvalidInput(
                f"{field}.{wire} must be concrete here, not '*'", field=f"{field}.{wire}"
            )
    return _scope(*(v or "" for v in levels))


@functools.lru_cache(maxsize=4096)
def _scope(app_id: str, tenant_id: str, agent_id: str, run_id: str) -> Scope:
    """Scopes repeat across a page; validating each segment once keeps decoding cheap."""
    return Scope(app_id, tenant_id, agent_id, run_id)


def pattern_from_wire(data: object, *, field: str = "scope") -> ScopePattern:
    """A scope pattern: ``appId`` required, missing lower levels are ``*``, ``*`` only as suffix."""
    levels = _levels(data, field)
    if levels[0] is None:
        raise InvalidInput(f"{field}.appId is required", field=f"{field}.appId")
    return ScopePattern(*(v or WILDCARD for v in levels))


# -- decoding --------------------------------------------------------------------------------
def _strict(kind: type, label: str) -> Callable[[Any, Any], Any]:
    def structure(value: Any, _: Any) -> Any:
        if isinstance(value, bool) and kind is not bool:
            raise TypeError(f"expected {label}, got a boolean")
        if kind is float:
            if not isinstance(value, (int, float)) or not math.isfinite(value):
                raise TypeError(f"expected {label}, got {type(value).__name__}")
            return float(value)
        if not isinstance(value, kind):
            raise TypeError(f"expected {label}, got {type(value).__name__}")
        return value

    return structure


def _str_tuple(value: Any, _: Any) -> tuple[str, ...]:
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return tuple(value)


def _scope_hook(value: Any, _: Any) -> Scope:
    return scope_from_wire(value)


def _pattern_hook(value: Any, _: Any) -> ScopePattern:
    return pattern_from_wire(value)


def _optional(value: Any, kind: type, label: str) -> Any:
    if value is None:
        return None
    if type(value) is kind:
        if isinstance(value, float) and not math.isfinite(value):
            raise TypeError(f"{label} must be a finite number")
        return value
    if kind is float and type(value) is int:
        return float(value)
    raise TypeError(f"{label} must be a finite {kind.__name__}, got {type(value).__name__}")


def _string_map(value: Any, label: str) -> dict[str, str]:
    if not isinstance(value, dict):
        raise TypeError(f"{label} must be an object of strings")
    for k, v in value.items():
        if not isinstance(v, str):
            raise TypeError(f"{label}.{k} must be a string")
    return dict(value)


def _memory_hook(data: Mapping[str, Any], _: Any) -> Memory:
    """Memory units are the bulk of every answer; this hook checks the same strict rules as
    the generated ones, in a fraction of the time."""
    mid, text = data.get("id"), data.get("text")
    if not isinstance(mid, str) or not isinstance(text, str):
        raise TypeError("a memory needs string id and text")
    return Memory(
        id=mid,
        text=text,
        scope=scope_from_wire(data.get("scope")),
        metadata=_string_map(data.get("metadata") or {}, "metadata"),
        created_at=_optional(data.get("created_at"), float, "created_at"),
        updated_at=_optional(data.get("updated_at"), float, "updated_at"),
        unit_type=_optional(data.get("unit_type"), str, "unit_type"),
        salience=_optional(data.get("salience"), float, "salience"),
        version=_optional(data.get("version"), int, "version"),
        extras=data.get("extras") or {},
    )


def make_converter() -> cattrs.Converter:
    """Strict primitives (no ``"1"`` -> 1 coercion) and scopes in the service's spelling."""
    # Without detailed validation the generated code is several times faster; the first
    # failure is enough for a ProtocolError.
    conv = cattrs.Converter(detailed_validation=False)
    conv.register_structure_hook(str, _strict(str, "a string"))
    conv.register_structure_hook(int, _strict(int, "a whole number"))
    conv.register_structure_hook(float, _strict(float, "a number"))
    conv.register_structure_hook(bool, _strict(bool, "true or false"))
    conv.register_structure_hook(Scope, _scope_hook)
    conv.register_structure_hook(ScopePattern, _pattern_hook)
    conv.register_structure_hook_func(lambda t: t == tuple[str, ...], _str_tuple)
    conv.register_structure_hook(Memory, _memory_hook)
    conv.register_unstructure_hook(Scope, scope_to_wire)
    conv.register_unstructure_hook(ScopePattern, scope_to_wire)
    return conv


CONVERTER = make_converter()

#: Per value type: wire keys that name a modelled field differently.
_ALIASES: dict[type, dict[str, str]] = {
    Memory: {"memory_id": "id", "memory_unit_id": "id"},
    Message: {"message_id": "id"},
    StoreInfo: {"memory_store_name": "name"},
    RequestRecord: {"request_id": "id"},
    MemoryTask: {"task_id": "id"},
    DreamTask: {"task_id": "id"},
    DreamAction: {"action_id": "id", "dream_task_id": "task_id"},
}
_FIELDS: dict[type, frozenset[str]] = {
    cls: frozenset(a.name for a in attrs.fields(cls)) - {"extras"} for cls in _ALIASES
}
_TIME_FIELDS = frozenset({"created_at", "updated_at", "finished_at", "timestamp"})
_HAS_EXTRAS = frozenset(cls for cls in _ALIASES if "extras" in {a.name for a in attrs.fields(cls)})


def _timestamp(value: Any) -> Any:
    """Epoch seconds; milliseconds and ISO-8601 strings are converted, anything else is kept."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return value / 1000.0 if value > 1e11 else float(value)
    if isinstance(value, str):
        try:
            parsed = _dt.datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError:
            return value
        if parsed.tzinfo is None:
            parsed = parsed.replace(tzinfo=_dt.timezone.utc)
        return parsed.timestamp()
    return value


_KEYMAPS: dict[type, dict[str, str | None]] = {cls: {} for cls in _ALIASES}
_KEYMAP_LIMIT = 1024
_UNSEEN: Any = object()


def _field_for(cls: type, key: str) -> str | None:
    """The modelled field a wire key names, or None when it belongs in ``extras``."""
    keymap = _KEYMAPS[cls]
    try:
        return keymap[key]
    except KeyError:
        pass
    name = snake(key)
    name = _ALIASES[cls].get(name, name)
    found = name if name in _FIELDS[cls] else None
    if len(keymap) < _KEYMAP_LIMIT:
        keymap[key] = found
    return found


def decode(cls: type[T], data: object, *, what: str, skip: str | None = None) -> T:
    """Structure one wire object into ``cls``; unknown keys go to ``extras`` (but ``skip``,
    a key the caller has already consumed, goes nowhere)."""
    if not isinstance(data, dict):  # answers are decoded JSON: objects are dicts
        raise ProtocolError(f"{what} is not a JSON object", field=what)
    keymap = _KEYMAPS[cls]
    clean: dict[str, Any] = {}
    extras: dict[str, Any] = {}
    for key, value in data.items():
        name = keymap.get(key, _UNSEEN)
        if name is _UNSEEN:
            if not isinstance(key, str):
                raise ProtocolError(f"{what} has a non-string key", field=what)
            name = _field_for(cls, key)
        if key == skip:
            continue
        if name is None or name in clean:
            extras[key] = value
        elif value is not None:
            clean[name] = _timestamp(value) if name in _TIME_FIELDS else value  # type: ignore[index]
    if cls in _HAS_EXTRAS:
        clean["extras"] = extras
    try:
        if cls is Memory:  # the bulk of every answer: skip the converter's dispatch
            return _memory_hook(clean, cls)  # type: ignore[return-value]
        return CONVERTER.structure(clean, cls)
    except (cattrs.BaseValidationError, TypeError, ValueError, KeyError, MemcoreError) as exc:
        raise ProtocolError(
            f"{what} does not have the expected shape ({_first_cause(exc)})", field=what
        ) from None


def _first_cause(exc: BaseException) -> str:
    if isinstance(exc, cattrs.BaseValidationError) and exc.exceptions:
        return _first_cause(exc.exceptions[0])
    return f"{type(exc).__name__}: {exc}"[:200]


def unwrap(body: object) -> dict[str, Any]:
    """The response object, with a ``{code, data, message}`` envelope removed.

    The SDK stores the ``x-ots-requestid`` header as ``requestId``; it is carried over into
    the unwrapped object so it is never lost, and it never replaces a ``taskId``.
    """
    if not isinstance(body, dict):
        raise ProtocolError("the service answered with something that is not a JSON object")
    if "data" in body and "code" in body:
        code = body.get("code")
        if str(code) not in _OK_CODES:
            raise ProtocolError(
                f"the service answered with an envelope carrying code {str(code)[:64]!r}"
            )
        data = body.get("data")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ProtocolError("the envelope's data is not a JSON object")
        out = dict(data)
        if "requestId" in body:
            out.setdefault("_requestId", body["requestId"])
        return out
    return body


def _list(body: Mapping[str, Any], *keys: str) -> list[Any]:
    for key in keys:
        if key in body:
            value = body[key]
            if value is None:
                return []
            if not isinstance(value, list):
                raise ProtocolError(f"{key} is not a list", field=key)
            return value
    # A service may leave an empty list out, so an answer with nothing in it is an empty page.
    # An answer with other fields but not the list is not one we understand: reading it as
    # "nothing found" would, for example, make a landed write look unsent and send it twice.
    extra = set(body) - _REQUEST_ID_KEYS - _PAGING_KEYS
    if extra:
        raise ProtocolError(
            f"the answer has no {keys[0]} list (fields: {', '.join(sorted(extra)[:5])})",
            field=keys[0],
        )
    return []


#: Where an answer carries its page token, the first present one winning (see next_token).
_TOKEN_KEYS = ("nextToken", "next_token")
_PAGING_KEYS = frozenset({*_TOKEN_KEYS, "totalCount", "total_count"})


def _object(body: Mapping[str, Any], *keys: str) -> object:
    """The nested object under one of ``keys``, or the body itself when the answer is flat
    (without the request id the SDK adds, which is not a field of the object)."""
    for key in keys:
        if key in body:
            return body[key]
    return {k: v for k, v in body.items() if k not in _REQUEST_ID_KEYS}


_REQUEST_ID_KEYS = frozenset({"requestId", "_requestId"})


def next_token(body: Mapping[str, Any]) -> str | None:
    token = next((body[key] for key in _TOKEN_KEYS if key in body), None)
    if token is None or token == "":
        return None
    if not isinstance(token, str):
        raise ProtocolError("nextToken is not a string", field="nextToken")
    return token


def request_id(body: Mapping[str, Any]) -> str | None:
    rid = body.get("_requestId", body.get("requestId"))
    return rid if isinstance(rid, str) and rid else None


def decode_store(body: Mapping[str, Any]) -> StoreInfo:
    return decode(StoreInfo, _object(body, "memoryStore", "memory_store"), what="memoryStore")


def decode_stores(body: Mapping[str, Any]) -> Page[StoreInfo]:
    items = _list(body, "memoryStores", "memory_stores")
    return Page(tuple(decode(StoreInfo, s, what="memoryStores[]") for s in items), next_token(body))


def decode_memory(body: Mapping[str, Any]) -> Memory:
    return decode(Memory, _object(body, "memory", "memoryUnit"), what="memory")


def decode_memories(body: Mapping[str, Any]) -> Page[Memory]:
    items = _list(body, "memories", "memoryUnits")
    return Page(tuple(decode(Memory, m, what="memories[]") for m in items), next_token(body))


def decode_hits(body: Mapping[str, Any]) -> list[SearchHit]:
    hits: list[SearchHit] = []
    for item in _list(body, "memories", "hits", "results"):
        if not isinstance(item, dict):
            raise ProtocolError("a search hit is not a JSON object", field="memories[]")
        unit = item.get("memory", item)
        score = item.get("score", unit.get("score") if isinstance(unit, dict) else None)
        if (
            isinstance(score, bool)
            or not isinstance(score, (int, float))
            or not math.isfinite(score)
        ):
            raise ProtocolError("a search hit has no numeric score", field="memories[].score")
        hits.append(SearchHit(decode(Memory, unit, what="memories[]", skip="score"), float(score)))
    return hits


def decode_receipt(body: Mapping[str, Any]) -> WriteReceipt:
    """The AddMemories answer. The task id comes from ``taskId``, never from ``requestId``."""
    data = _object(body, "task")
    if not isinstance(data, Mapping):
        raise ProtocolError("AddMemories answered without a task", field="taskId")
    task_id = data.get("taskId", data.get("task_id", body.get("taskId")))
    status = data.get("status", body.get("status"))
    ids = data.get("memoryIds", data.get("memory_ids", body.get("memoryIds", [])))
    if task_id is not None and not isinstance(task_id, str):
        raise ProtocolError("taskId is not a string", field="taskId")
    if not isinstance(status, str) or not status:
        raise ProtocolError("AddMemories answered without a status", field="status")
    if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
        raise ProtocolError("memoryIds is not a list of strings", field="memoryIds")
    return WriteReceipt(task_id or None, status.lower(), tuple(ids), request_id(body))


def decode_messages(body: Mapping[str, Any]) -> Page[Message]:
    items = _list(body, "messages")
    return Page(tuple(decode(Message, m, what="messages[]") for m in items), next_token(body))


def decode_requests(body: Mapping[str, Any]) -> Page[RequestRecord]:
    items = _list(body, "requests", "records")
    return Page(tuple(decode(RequestRecord, r, what="requests[]") for r in items), next_token(body))


def decode_scopes(body: Mapping[str, Any]) -> Page[Scope]:
    out: list[Scope] = []
    for item in _list(body, "scopes"):
        try:
            out.append(scope_from_wire(item, field="scopes[]"))
        except InvalidInput as exc:
            raise ProtocolError(
                f"a listed scope is not concrete ({exc})", field="scopes[]"
            ) from None
    return Page(tuple(out), next_token(body))


def decode_task(body: Mapping[str, Any]) -> MemoryTask:
    return decode(MemoryTask, _object(body, "task"), what="task")


def decode_tasks(body: Mapping[str, Any]) -> Page[MemoryTask]:
    items = _list(body, "tasks")
    return Page(tuple(decode(MemoryTask, t, what="tasks[]") for t in items), next_token(body))


def decode_dream(body: Mapping[str, Any]) -> DreamTask:
    return decode(DreamTask, _object(body, "task", "dreamTask"), what="task")


def decode_dreams(body: Mapping[str, Any]) -> Page[DreamTask]:
    items = _list(body, "tasks", "dreamTasks")
    return Page(tuple(decode(DreamTask, t, what="tasks[]") for t in items), next_token(body))


def decode_actions(body: Mapping[str, Any]) -> Page[DreamAction]:
    items = _list(body, "actions")
    return Page(tuple(decode(DreamAction, a, what="actions[]") for a in items), next_token(body))


# -- encoding (what the service sends; used by the emulator) --------------------------------
def _unstructure(value: Any, *, drop: frozenset[str] = frozenset()) -> dict[str, Any]:
    data: dict[str, Any] = CONVERTER.unstructure(value)
    extras = data.pop("extras", None) or {}
    out = {k: v for k, v in data.items() if k not in drop and v is not None}
    for key, extra in extras.items():
        out.setdefault(key, extra)
    return out


def encode_memory(memory: Memory) -> dict[str, Any]:
    return _unstructure(memory)


def encode_hit(hit: SearchHit) -> dict[str, Any]:
    return {**encode_memory(hit.memory), "score": hit.score}


def encode_message(message: Message) -> dict[str, Any]:
    return _unstructure(message)


def encode_store(info: StoreInfo) -> dict[str, Any]:
    out: dict[str, Any] = {
        "memoryStoreName": info.name,
        "description": info.description,
        "status": info.status,
    }
    if info.created_at is not None:
        out["createdAt"] = info.created_at
    for key, value in info.extras.items():
        out.setdefault(key, value)
    return out


def encode_record(record: RequestRecord) -> dict[str, Any]:
    return _unstructure(record)


def encode_task(task: MemoryTask) -> dict[str, Any]:
    return _unstructure(task)


def encode_dream(task: DreamTask) -> dict[str, Any]:
    return _unstructure(task)


def encode_action(action: DreamAction) -> dict[str, Any]:
    return _unstructure(action)


def encode_receipt(receipt: WriteReceipt) -> dict[str, Any]:
    return {
        "taskId": receipt.task_id,
        "status": receipt.status,
        "memoryIds": list(receipt.memory_ids),
    }


def encode_page(key: str, page: Page[Any], encode_item: Callable[[Any], Any]) -> dict[str, Any]:
    out: dict[str, Any] = {key: [encode_item(item) for item in page.items]}
    if page.next_token:
        out["nextToken"] = page.next_token
    return out


__all__ = [
    "CONVERTER",
    "WIRE_LEVELS",
    "decode",
    "decode_actions",
    "decode_dream",
    "decode_dreams",
    "decode_hits",
    "decode_memories",
    "decode_memory",
    "decode_messages",
    "decode_receipt",
    "decode_requests",
    "decode_scopes",
    "decode_store",
    "decode_stores",
    "decode_task",
    "decode_tasks",
    "encode_action",
    "encode_dream",
    "encode_hit",
    "encode_memory",
    "encode_message",
    "encode_page",
    "encode_receipt",
    "encode_record",
    "encode_store",
    "encode_task",
    "next_token",
    "pattern_from_wire",
    "scope_from_wire",
    "scope_to_wire",
    "unwrap",
]
