"""The Memory Store wire format: JSON bodies to and from the core's values.

Requests use the service's camelCase keys (``memoryStoreName``, ``scope.appId``, ``topK``);
memory units come back with snake_case fields (``created_at``, ``unit_type``). Decoding is
tolerant: either spelling is accepted, a ``{code, data, message}`` envelope is unwrapped, and
fields we do not model are kept in ``extras``. Anything with the wrong shape is a
:class:`ProtocolError`, never a stray ``KeyError``. The adapter's
per-API decoders live in :mod:`memcore_tablestore.answers`; the encoders below serve the
loopback emulator only.
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
    "pattern_from_wire",
    "scope_from_wire",
    "scope_to_wire",
    "unwrap",
]
