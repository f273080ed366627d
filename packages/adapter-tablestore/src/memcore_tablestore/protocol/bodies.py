"""Request bodies in the service's keys, and the checks every answer gets before it is used.

Shared by every plan in :mod:`memcore_tablestore.protocol.plans`; pure functions, no I/O.
"""

from __future__ import annotations

import datetime as _dt
import logging
from collections.abc import Iterable, Sequence
from typing import Any

from memcore import limits
from memcore.errors import InvalidInput, NotFound, ProtocolError, StoreNotFound
from memcore.scope import WILDCARD, Scope, ScopePattern
from memcore.values import UNCONFIRMED, MemoryRecord, Message, WriteReceipt
from memcore_tablestore.protocol import answers
from memcore_tablestore.protocol.answer_fields import scope_to_wire

log = logging.getLogger("memcore_tablestore")


def named(name: str) -> dict[str, Any]:
    return {"memoryStoreName": limits.check_store_name(name)}


def write_scope(scope: object) -> dict[str, str]:
    """Writes always go to one concrete scope; a wildcard here would be a tenant leak."""
    if not isinstance(scope, Scope):
        raise InvalidInput("a write needs a concrete Scope (four levels, no '*')", field="scope")
    out = scope_to_wire(scope)
    if any(WILDCARD in v for v in out.values()):  # Scope forbids it; keep the guard local too
        raise InvalidInput("a write scope must not contain '*'", field="scope")
    return out


def paging(body: dict[str, Any], limit: int, next_token: str | None) -> dict[str, Any]:
    body["limit"] = limits.check_limit(limit)
    if next_token is not None:
        if not isinstance(next_token, str) or not next_token:
            raise InvalidInput("next_token must be a non-empty string", field="next_token")
        body["nextToken"] = next_token
    return body


#: The scope every level of which is a wildcard: "the whole store", for the listings whose
#: ``scope`` the types declare required (an empty scope would mean ``__default__``).
EVERYWHERE = ScopePattern(WILDCARD, WILDCARD, WILDCARD, WILDCARD)


def listing(
    store: str, pattern: object, limit: int, next_token: str | None
) -> tuple[ScopePattern, dict[str, Any]]:
    """A paged listing's body over ``pattern`` (the whole store when None)."""
    wanted = EVERYWHERE if pattern is None else as_pattern(pattern)
    body = paging({**named(store), "scope": scope_to_wire(wanted)}, limit, next_token)
    return wanted, body


def rfc3339(seconds: float) -> str:
    """Epoch seconds as the RFC3339 UTC string the service takes for message times."""
    moment = _dt.datetime.fromtimestamp(seconds, tz=_dt.timezone.utc)
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def message(message: Message) -> dict[str, Any]:
    """``MessagePayload``: ``messageId`` and an RFC3339 ``timestamp``."""
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.id is not None:
        out["messageId"] = message.id
    if message.timestamp is not None:
        out["timestamp"] = rfc3339(message.timestamp)
    if message.metadata:
        out["metadata"] = dict(message.metadata)
    return out


def receipt(answer: dict[str, Any]) -> WriteReceipt:
    """The write's receipt. The service accepted the write (a 2xx carrying its request id): an
    answer whose fields we cannot read is reported loudly as :data:`UNCONFIRMED`, never as a
    failure that would make a caller resend it."""
    try:
        return answers.receipt(answer)
    except ProtocolError as exc:
        reason = str(exc)
    rid = answers.request_id(answer)
    log.warning(
        "AddMemories was accepted (request id %s) but its answer could not be read (%s); the "
        "write landed and will not be sent again",
        rid or "unknown",
        reason,
    )
    return WriteReceipt(rid, UNCONFIRMED, (), rid, problem=reason[:400])


def status(value: object, allowed: Sequence[str]) -> str:
    if value not in allowed:
        raise InvalidInput(f"status must be one of {', '.join(allowed)}", field="status")
    return str(value)


def as_pattern(pattern: object) -> ScopePattern:
    if isinstance(pattern, Scope):
        return pattern.pattern()
    if not isinstance(pattern, ScopePattern):
        raise InvalidInput("expected a ScopePattern", field="scope")
    return pattern


def dream_id(store: str, task_id: str) -> dict[str, Any]:
    return {**named(store), "dreamId": limits.check_id(task_id, field="task_id")}


def target(store: str, scope: Scope, memory_id: str) -> dict[str, Any]:
    return {**named(store), "scope": write_scope(scope), "memoryId": limits.check_id(memory_id)}


def store_missing(store: str) -> StoreNotFound:
    """The answer for a memory store that does not exist: never an empty store's answer, so
    a deleted or mistyped store is told apart from a store with nothing in it."""
    return StoreNotFound(
        f"memory store {store!r} does not exist (not created yet: with auto_create_store on "
        "the first write creates it; or deleted, or a mistyped memory_store_name); "
        f"create it with 'memcore stores create {store}', or check the name with "
        "'memcore doctor'",
        field="memory_store_name",
    )


def missing(scope: Scope, memory_id: str) -> NotFound:
    """The one answer for a memory not in ``scope``: whether the id does not exist or is
    another scope's, and whatever the service said, so that nothing tells them apart."""
    return NotFound(f"memory {memory_id!r} was not found in scope {scope}", field="memory_id")


def own(memory: MemoryRecord, scope: Scope, memory_id: str) -> MemoryRecord:
    """The memory we asked for, in the scope we asked in; any other answer (a service that
    looked the id up alone) is :func:`missing`."""
    if memory.id != memory_id or memory.scope != scope:
        raise missing(scope, memory_id)
    return memory


def must_match(pattern: ScopePattern, scopes: Iterable[Scope], api: str) -> None:
    """Every item of an answer lies inside the requested pattern (a tenant guard). Items of
    one answer usually share one scope object, so a repeat is not checked twice."""
    last = None
    for scope in scopes:
        if scope is last:
            continue
        if not pattern.matches(scope):
            raise ProtocolError(
                f"{api} answered with an item outside the requested scope", field="scope"
            )
        last = scope
