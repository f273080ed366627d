"""Every Memory Store operation, written once as a plan that the sync and async stores run.

A plan is a generator: it validates the input, yields a :class:`Call` (one API request) or a
:class:`Pause`, receives the decoded response (or has the mapped error thrown into it), and
returns the core's value. It does no I/O itself, so :class:`TableStoreMemoryStore` drives it
with ``OTSClient`` and :class:`AsyncTableStoreMemoryStore` with ``AsyncOTSClient``.
"""

from __future__ import annotations

import time
from collections.abc import Generator, Mapping, Sequence
from typing import Any, TypeVar

import attrs

from memcore import limits
from memcore.errors import Conflict, InvalidInput, NotFound, ProtocolError
from memcore.ports import ProgressCallback
from memcore.scope import WILDCARD, Scope, ScopePattern
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
from memcore_tablestore import wire

T = TypeVar("T")

#: Store states during which the service's index is not ready yet.
INITIALISING = frozenset({"creating", "initializing", "initialising", "pending"})


@attrs.frozen
class Call:
    """One API request.

    ``replay_safe``: sending it a second time after an *ambiguous* failure (timeout, dropped
    connection, 500) cannot change the outcome. Refused requests (429, 503, 409) are always
    safe to resend; see :mod:`memcore_tablestore.error_map`.
    ``retry_conflict``: a 409 means "busy, try again" for this call (a new store's index).
    """

    api: str
    body: dict[str, Any]
    replay_safe: bool = True
    retry_conflict: bool = True


@attrs.frozen
class Pause:
    seconds: float


Step = Call | Pause
Plan = Generator[Step, Any, T]


def _store(name: str) -> dict[str, Any]:
    return {"memoryStoreName": limits.check_store_name(name)}


def _write_scope(scope: object) -> dict[str, str]:
    """Writes always go to one concrete scope; a wildcard here would be a tenant leak."""
    if not isinstance(scope, Scope):
        raise InvalidInput("a write needs a concrete Scope (four levels, no '*')", field="scope")
    out = wire.scope_to_wire(scope)
    if any(WILDCARD in v for v in out.values()):  # Scope forbids it; keep the guard local too
        raise InvalidInput("a write scope must not contain '*'", field="scope")
    return out


def _pattern(pattern: object) -> dict[str, str]:
    if isinstance(pattern, Scope):
        pattern = pattern.pattern()
    if not isinstance(pattern, ScopePattern):
        raise InvalidInput("expected a ScopePattern", field="scope")
    return wire.scope_to_wire(pattern)


def _paging(body: dict[str, Any], limit: int, next_token: str | None) -> dict[str, Any]:
    body["limit"] = limits.check_limit(limit)
    if next_token is not None:
        if not isinstance(next_token, str) or not next_token:
            raise InvalidInput("next_token must be a non-empty string", field="next_token")
        body["nextToken"] = next_token
    return body


def _message(message: Message) -> dict[str, Any]:
    out: dict[str, Any] = {"role": message.role, "content": message.content}
    if message.id is not None:
        out["id"] = message.id
    if message.timestamp is not None:
        out["timestamp"] = message.timestamp
    if message.metadata:
        out["metadata"] = dict(message.metadata)
    return out


class Plans:
    """The operations of :class:`memcore.ports.MemoryStore`, as plans."""

    def __init__(self, *, auto_create: bool = True, ready_timeout: float = 180.0) -> None:
        self.auto_create = auto_create
        self.ready_timeout = ready_timeout

    # -- stores -------------------------------------------------------------------------
    def ensure_store(
        self,
        store: str,
        *,
        description: str = "",
        create: bool = True,
        extract_instructions: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Plan[StoreInfo]:
        body = _store(store)
        try:
            info = wire.decode_store((yield Call("GetMemoryStore", body, retry_conflict=False)))
        except NotFound:
            if not (create and self.auto_create):
                raise
            try:
                info = yield from self.create_store(
                    store, description=description, extract_instructions=extract_instructions
                )
            except Conflict:
                info = None  # created meanwhile by someone else: fine, wait for it below
        except Conflict:
            info = None
        deadline = time.monotonic() + self.ready_timeout
        delay = 0.05
        while info is None or info.status.lower() in INITIALISING:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Conflict(
                    f"memory store {store!r} is still initialising its index after "
                    f"{self.ready_timeout:.0f}s; try again later",
                    field="memory_store_name",
                )
            yield Pause(min(delay, remaining))
            delay = min(delay * 2, 2.0)
            try:
                info = wire.decode_store((yield Call("GetMemoryStore", body, retry_conflict=False)))
            except Conflict:
                info = None
        return info

    def describe_store(self, store: str) -> Plan[StoreInfo]:
        return wire.decode_store((yield Call("GetMemoryStore", _store(store))))

    def list_stores(self) -> Plan[list[StoreInfo]]:
        out: list[StoreInfo] = []
        token: str | None = None
        for _ in range(10_000):
            body = _paging({}, limits.MAX_PAGE_LIMIT, token)
            page = wire.decode_stores((yield Call("ListMemoryStores", body)))
            out.extend(page.items)
            token = page.next_token
            if token is None:
                return out
        raise ProtocolError("ListMemoryStores never stopped paging")

    def create_store(
        self, store: str, *, description: str = "", extract_instructions: str | None = None
    ) -> Plan[StoreInfo]:
        body = {**_store(store), "description": limits.check_description(description)}
        instructions = limits.check_extract_instructions(extract_instructions)
        if instructions:
            body["extractInstructions"] = instructions
        # Not replayed after an ambiguous failure: a replay would answer "already exists".
        answer = yield Call("CreateMemoryStore", body, replay_safe=False, retry_conflict=False)
        try:
            return wire.decode_store(answer)
        except ProtocolError:
            # Some answers carry no store object; the name and description are ours anyway.
            return StoreInfo(store, description, "creating")

    def update_store(
        self,
        store: str,
        *,
        description: str | None = None,
        extract_instructions: str | None = None,
    ) -> Plan[StoreInfo]:
        """PATCH: a field left as None is not sent (unchanged); "" clears it."""
        body = _store(store)
        if description is not None:
            body["description"] = limits.check_description(description)
        instructions = limits.check_extract_instructions(extract_instructions)
        if instructions is not None:
            body["extractInstructions"] = instructions
        # Setting the same description twice has the same effect as once.
        return wire.decode_store((yield Call("UpdateMemoryStore", body)))

    def delete_store(self, store: str) -> Plan[None]:
        yield Call("DeleteMemoryStore", _store(store), replay_safe=False)

    # -- memories -----------------------------------------------------------------------
    def add_text(
        self,
        store: str,
        scope: Scope,
        text: str,
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> Plan[WriteReceipt]:
        body = {
            **_store(store),
            "scope": _write_scope(scope),
            "text": limits.check_text(text),
            "metadata": limits.check_metadata(metadata),
            "sync": bool(sync),
        }
        # Replay-safe: the service deduplicates identical text within a scope, so a second
        # delivery of the same body resolves to the same memory instead of a copy.
        return wire.decode_receipt((yield Call("AddMemories", body, replay_safe=True)))

    def add_messages(
        self,
        store: str,
        scope: Scope,
        messages: Sequence[Message],
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> Plan[WriteReceipt]:
        checked = limits.check_messages(messages)
        body = {
            **_store(store),
            "scope": _write_scope(scope),
            "messages": [_message(m) for m in checked],
            "metadata": limits.check_metadata(metadata),
            "sync": bool(sync),
        }
        # Not replay-safe: messages are appended to the short-term log, so a replay after an
        # ambiguous failure could record the turn twice. Refusals (429/503/409) still retry.
        return wire.decode_receipt((yield Call("AddMemories", body, replay_safe=False)))

    def search(
        self,
        store: str,
        pattern: ScopePattern,
        query: str,
        *,
        top_k: int = 10,
        enable_rerank: bool = True,
        filters: Mapping[str, str] | None = None,
        min_similarity: float | None = None,
        context_scope: Scope | None = None,
        include_evidence: bool = False,
    ) -> Plan[list[SearchHit]]:
        body: dict[str, Any] = {
            **_store(store),
            "scope": _pattern(pattern),
            "query": limits.check_query(query),
            "topK": limits.check_top_k(top_k),
            "enableRerank": bool(enable_rerank),
        }
        flt = limits.check_metadata(filters, field="filters")
        if flt:
            body["filters"] = flt
        floor = limits.check_min_similarity(min_similarity)
        if floor is not None:
            body["minSimilarity"] = floor
        context = limits.check_context_scope(context_scope, pattern)
        if context is not None:
            body["contextScope"] = wire.scope_to_wire(context)
        if include_evidence:
            body["includeEvidence"] = True
        hits = wire.decode_hits((yield Call("SearchMemories", body)))
        wanted = ScopePattern(*body["scope"].values())
        for hit in hits:
            _must_match(wanted, hit.memory.scope, "SearchMemories")
        return hits

    def list_memories(
        self, store: str, pattern: ScopePattern, *, limit: int = 50, next_token: str | None = None
    ) -> Plan[Page[Memory]]:
        body = _paging({**_store(store), "scope": _pattern(pattern)}, limit, next_token)
        page = wire.decode_memories((yield Call("ListMemories", body)))
        wanted = ScopePattern(*body["scope"].values())
        for memory in page.items:
            _must_match(wanted, memory.scope, "ListMemories")
        return page

    def get_memory(self, store: str, scope: Scope, memory_id: str) -> Plan[Memory]:
        body = _target(store, scope, memory_id)
        return _own(wire.decode_memory((yield Call("GetMemory", body))), scope, memory_id)

    def update_memory(
        self,
        store: str,
        scope: Scope,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Plan[Memory]:
        body = _target(store, scope, memory_id)
        if text is None and metadata is None:
            return (yield from self.get_memory(store, scope, memory_id))
        if text is not None:
            body["text"] = limits.check_text(text)
        if metadata is not None:
            body["metadata"] = limits.check_metadata(metadata)  # replaces the whole map
        # Replay-safe: the update replaces values, so applying it twice leaves the same state.
        return _own(wire.decode_memory((yield Call("UpdateMemory", body))), scope, memory_id)

    def delete_memory(self, store: str, scope: Scope, memory_id: str) -> Plan[None]:
        # Not replayed after an ambiguous failure: the replay would answer 404 for a delete
        # that succeeded, and we would report a failure that did not happen.
        yield Call("DeleteMemory", _target(store, scope, memory_id), replay_safe=False)

    # -- messages, audit, scopes, tasks -------------------------------------------------
    def list_messages(
        self, store: str, scope: Scope, *, limit: int = 50, next_token: str | None = None
    ) -> Plan[Page[Message]]:
        body = _paging({**_store(store), "scope": _write_scope(scope)}, limit, next_token)
        return wire.decode_messages((yield Call("ListMemoryStoreMessages", body)))

    def list_requests(
        self,
        store: str,
        *,
        operation: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Plan[Page[RequestRecord]]:
        body = _paging(_store(store), limit, next_token)
        if operation is not None:
            if not isinstance(operation, str) or not operation.isalnum():
                raise InvalidInput(
                    "operation must be an API name such as AddMemories", field="operation"
                )
            body["operation"] = operation
        return wire.decode_requests((yield Call("ListMemoryStoreRequests", body)))

    def list_scopes(
        self,
        store: str,
        pattern: ScopePattern | None = None,
        *,
        limit: int = 50,
        next_token: str | None = None,
    ) -> Plan[Page[Scope]]:
        body = _paging(_store(store), limit, next_token)
        if pattern is not None:
            body["scope"] = _pattern(pattern)
        page = wire.decode_scopes((yield Call("ListMemoryStoreScopes", body)))
        if pattern is not None:
            for scope in page.items:
                _must_match(pattern, scope, "ListMemoryStoreScopes")
        return page

    def get_task(self, store: str, task_id: str) -> Plan[MemoryTask]:
        body = {**_store(store), "taskId": limits.check_id(task_id, field="task_id")}
        return wire.decode_task((yield Call("GetMemoryTask", body)))

    def list_tasks(
        self,
        store: str,
        *,
        status: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Plan[Page[MemoryTask]]:
        body = _paging(_store(store), limit, next_token)
        if status is not None:
            if not isinstance(status, str) or not status.isalpha():
                raise InvalidInput("status must be a task state such as completed", field="status")
            body["status"] = status
        return wire.decode_tasks((yield Call("ListMemoryTasks", body)))

    # -- dream --------------------------------------------------------------------------
    def create_dream_task(
        self,
        store: str,
        scopes: ScopePattern | Sequence[ScopePattern],
        *,
        apply_mode: str = "proposal",
        instructions: str | None = None,
    ) -> Plan[DreamTask]:
        body: dict[str, Any] = {
            **_store(store),
            "scopes": [_pattern(p) for p in limits.check_dream_scopes(scopes)],
            "applyMode": limits.check_apply_mode(apply_mode),
        }
        text = limits.check_dream_instructions(instructions)
        if text:
            body["instructions"] = text
        # Not replayed after an ambiguous failure: a replay would start a second task.
        return wire.decode_dream((yield Call("CreateMemoryDreamTask", body, replay_safe=False)))

    def get_dream_task(self, store: str, task_id: str) -> Plan[DreamTask]:
        body = {**_store(store), "taskId": limits.check_id(task_id, field="task_id")}
        return wire.decode_dream((yield Call("GetMemoryDreamTask", body)))

    def list_dream_tasks(
        self,
        store: str,
        *,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
        status: str | None = None,
    ) -> Plan[Page[DreamTask]]:
        body = _paging(_store(store), limit, next_token)
        return wire.decode_dreams((yield Call("ListMemoryDreamTasks", body)))

    def cancel_dream_task(self, store: str, task_id: str) -> Plan[DreamTask]:
        body = {**_store(store), "taskId": limits.check_id(task_id, field="task_id")}
        # Cancelling twice leaves the task cancelled, as once does.
        return wire.decode_dream((yield Call("CancelMemoryDreamTask", body)))

    def list_dream_actions(
        self, store: str, task_id: str, *, limit: int = 50, next_token: str | None = None
    ) -> Plan[Page[DreamAction]]:
        body = _paging(
            {**_store(store), "taskId": limits.check_id(task_id, field="task_id")},
            limit,
            next_token,
        )
        return wire.decode_actions((yield Call("ListMemoryDreamActions", body)))

    def apply_dream_actions(
        self, store: str, task_id: str, action_ids: Sequence[str]
    ) -> Plan[list[DreamAction]]:
        if isinstance(action_ids, str) or not isinstance(action_ids, Sequence):
            raise InvalidInput("action_ids must be a list of ids", field="action_ids")
        ids = [limits.check_id(a, field="action_ids") for a in action_ids]
        body = {
            **_store(store),
            "taskId": limits.check_id(task_id, field="task_id"),
            "actionIds": ids,
        }
        # Not replayed after an ambiguous failure: applied actions report differently twice.
        page = wire.decode_actions((yield Call("ApplyMemoryDreamActions", body, replay_safe=False)))
        return list(page.items)


def _description(value: object) -> str:
    if not isinstance(value, str):
        raise InvalidInput("description must be a string", field="description")
    if len(value) > 1024:
        raise InvalidInput("description is longer than 1,024 characters", field="description")
    return value


def _target(store: str, scope: Scope, memory_id: str) -> dict[str, Any]:
    return {**_store(store), "scope": _write_scope(scope), "memoryId": limits.check_id(memory_id)}


def _own(memory: Memory, scope: Scope, memory_id: str) -> Memory:
    """The service must answer with the memory we asked for, in the scope we asked in."""
    if memory.id != memory_id or memory.scope != scope:
        raise ProtocolError(
            "the service answered with a different memory than requested", field="memory_id"
        )
    return memory


def _must_match(pattern: ScopePattern, scope: Scope, api: str) -> None:
    if not pattern.matches(scope):
        raise ProtocolError(
            f"{api} answered with an item outside the requested scope", field="scope"
        )


#: The port's method names; both stores expose exactly these, driven from :class:`Plans`.
OPERATIONS = (
    "ensure_store",
    "describe_store",
    "list_stores",
    "create_store",
    "update_store",
    "delete_store",
    "add_text",
    "add_messages",
    "search",
    "list_memories",
    "get_memory",
    "update_memory",
    "delete_memory",
    "list_messages",
    "list_requests",
    "list_scopes",
    "get_task",
    "list_tasks",
    "create_dream_task",
    "get_dream_task",
    "list_dream_tasks",
    "cancel_dream_task",
    "list_dream_actions",
    "apply_dream_actions",
)
