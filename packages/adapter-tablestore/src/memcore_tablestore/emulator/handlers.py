"""The Memory Store APIs, answered from whatever ``MemoryStore`` the emulator was handed.

Each handler reads the JSON body the way the service does (camelCase keys, the service's
scope rules and limits), calls the port, and encodes the answer with :mod:`..wire`. Bad
input raises :class:`InvalidInput`, which the server reports as 400 ``OTSParameterInvalid``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Callable, Mapping
from typing import Any

from memcore import limits
from memcore.errors import InvalidInput
from memcore.ports import MemoryStore
from memcore.scope import Scope, ScopePattern
from memcore.values import Message
from memcore_tablestore import wire

Body = Mapping[str, Any]
Answer = dict[str, Any]


def _str(body: Body, key: str, *, required: bool = True) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise InvalidInput(f"{key} is required", field=key)
        return None
    if not isinstance(value, str):
        raise InvalidInput(f"{key} must be a string", field=key)
    return value


def _req(body: Body, key: str) -> str:
    value = _str(body, key)
    assert value is not None
    return value


def _int(body: Body, key: str, default: int) -> int:
    value = body.get(key, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInput(f"{key} must be a whole number", field=key)
    return value


def _bool(body: Body, key: str, default: bool) -> bool:
    value = body.get(key, default)
    if not isinstance(value, bool):
        raise InvalidInput(f"{key} must be true or false", field=key)
    return value


def _name(body: Body) -> str:
    return limits.check_store_name(_req(body, "memoryStoreName"))


def _write_scope(body: Body) -> Scope:
    """Writes, messages, get, update and delete: all four levels, no wildcard."""
    return wire.scope_from_wire(body.get("scope"))


def _pattern(body: Body) -> ScopePattern:
    """Search and listings: ``*`` only as a suffix."""
    return wire.pattern_from_wire(body.get("scope"))


def _page(body: Body) -> dict[str, Any]:
    return {
        "limit": limits.check_limit(_int(body, "limit", 50)),
        "next_token": _str(body, "nextToken", required=False),
    }


def _metadata(body: Body, key: str = "metadata") -> dict[str, str]:
    return limits.check_metadata(body.get(key), field=key)


def _messages(body: Body) -> list[Message]:
    raw = body.get("messages")
    if not isinstance(raw, list):
        raise InvalidInput("messages must be a list", field="messages")
    out: list[Message] = []
    for i, item in enumerate(raw):
        field = f"messages[{i}]"
        if not isinstance(item, Mapping):
            raise InvalidInput(f"{field} must be an object", field=field)
        role, content = item.get("role"), item.get("content")
        if not isinstance(role, str) or not isinstance(content, str):
            raise InvalidInput(f"{field} needs string role and content", field=field)
        mid, ts = item.get("id"), item.get("timestamp")
        if mid is not None and not isinstance(mid, str):
            raise InvalidInput(f"{field}.id must be a string", field=f"{field}.id")
        if ts is not None and (isinstance(ts, bool) or not isinstance(ts, (int, float))):
            raise InvalidInput(f"{field}.timestamp must be a number", field=f"{field}.timestamp")
        meta = limits.check_metadata(item.get("metadata"), field=f"{field}.metadata")
        out.append(Message(role, content, mid, None if ts is None else float(ts), meta))
    return limits.check_messages(out)


def _offset_token(token: str | None) -> int:
    if token is None:
        return 0
    try:
        value = int(base64.urlsafe_b64decode(token.encode()).decode())
    except (binascii.Error, ValueError, UnicodeDecodeError):
        raise InvalidInput(
            "nextToken is not a token this service issued", field="nextToken"
        ) from None
    if value < 0:
        raise InvalidInput("nextToken is not a token this service issued", field="nextToken")
    return value


class Handlers:
    """API name -> answer, over one ``MemoryStore``. ``status_overlay`` lets the server report
    a store as initialising."""

    def __init__(self, store: MemoryStore, status_overlay: Callable[[str], str | None]) -> None:
        self.store = store
        self._overlay = status_overlay
        self.table: dict[str, Callable[[Body], Answer]] = {
            "ListMemoryStores": self.list_stores,
            "GetMemoryStore": self.get_store,
            "CreateMemoryStore": self.create_store,
            "UpdateMemoryStore": self.update_store,
            "DeleteMemoryStore": self.delete_store,
            "AddMemories": self.add_memories,
            "SearchMemories": self.search,
            "ListMemories": self.list_memories,
            "GetMemory": self.get_memory,
            "UpdateMemory": self.update_memory,
            "DeleteMemory": self.delete_memory,
            "ListMemoryStoreMessages": self.list_messages,
            "ListMemoryStoreRequests": self.list_requests,
            "ListMemoryStoreScopes": self.list_scopes,
            "GetMemoryTask": self.get_task,
            "ListMemoryTasks": self.list_tasks,
            "CreateMemoryDreamTask": self.create_dream,
            "GetMemoryDreamTask": self.get_dream,
            "ListMemoryDreamTasks": self.list_dreams,
            "CancelMemoryDreamTask": self.cancel_dream,
            "ListMemoryDreamActions": self.list_actions,
            "ApplyMemoryDreamActions": self.apply_actions,
        }

    def _store_answer(self, info: Any) -> Answer:
        data = wire.encode_store(info)
        status = self._overlay(info.name)
        if status is not None:
            data["status"] = status
        return {"memoryStore": data}

    # -- stores -------------------------------------------------------------------------
    def list_stores(self, body: Body) -> Answer:
        limit = limits.check_limit(_int(body, "limit", 50))
        start = _offset_token(_str(body, "nextToken", required=False))
        stores = sorted(self.store.list_stores(), key=lambda s: s.name)
        chunk = stores[start : start + limit]
        out: Answer = {"memoryStores": [self._store_answer(s)["memoryStore"] for s in chunk]}
        if start + limit < len(stores):
            out["nextToken"] = base64.urlsafe_b64encode(str(start + limit).encode()).decode()
        return out

    def get_store(self, body: Body) -> Answer:
        return self._store_answer(self.store.describe_store(_name(body)))

    def create_store(self, body: Body) -> Answer:
        description = _str(body, "description", required=False) or ""
        return self._store_answer(self.store.create_store(_name(body), description=description))

    def update_store(self, body: Body) -> Answer:
        return self._store_answer(
            self.store.update_store(_name(body), description=_req(body, "description"))
        )

    def delete_store(self, body: Body) -> Answer:
        self.store.delete_store(_name(body))
        return {}

    # -- memories -----------------------------------------------------------------------
    def add_memories(self, body: Body) -> Answer:
        name, scope, meta = _name(body), _write_scope(body), _metadata(body)
        sync = _bool(body, "sync", False)
        has_text, has_messages = "text" in body, "messages" in body
        if has_text == has_messages:
            raise InvalidInput("pass exactly one of text and messages", field="text")
        if has_text:
            text = limits.check_text(body.get("text"))
            receipt = self.store.add_text(name, scope, text, metadata=meta or None, sync=sync)
        else:
            receipt = self.store.add_messages(
                name, scope, _messages(body), metadata=meta or None, sync=sync
            )
        return wire.encode_receipt(receipt)

    def search(self, body: Body) -> Answer:
        name, pattern = _name(body), _pattern(body)
        query = limits.check_query(body.get("query"))
        top_k = limits.check_top_k(_int(body, "topK", 10))
        floor = limits.check_min_similarity(body.get("minSimilarity"))
        hits = self.store.search(
            name,
            pattern,
            query,
            top_k=top_k,
            enable_rerank=_bool(body, "enableRerank", True),
            filters=_metadata(body, "filters") or None,
            min_similarity=floor,
        )
        return {"memories": [wire.encode_hit(h) for h in hits]}

    def list_memories(self, body: Body) -> Answer:
        page = self.store.list_memories(_name(body), _pattern(body), **_page(body))
        return wire.encode_page("memories", page, wire.encode_memory)

    def get_memory(self, body: Body) -> Answer:
        memory = self.store.get_memory(
            _name(body), _write_scope(body), limits.check_id(body.get("memoryId"))
        )
        return {"memory": wire.encode_memory(memory)}

    def update_memory(self, body: Body) -> Answer:
        name, scope, mid = _name(body), _write_scope(body), limits.check_id(body.get("memoryId"))
        text = None if body.get("text") is None else limits.check_text(body.get("text"))
        meta = None if body.get("metadata") is None else _metadata(body)
        memory = self.store.update_memory(name, scope, mid, text=text, metadata=meta)
        return {"memory": wire.encode_memory(memory)}

    def delete_memory(self, body: Body) -> Answer:
        self.store.delete_memory(
            _name(body), _write_scope(body), limits.check_id(body.get("memoryId"))
        )
        return {}

    # -- messages, audit, scopes, tasks -------------------------------------------------
    def list_messages(self, body: Body) -> Answer:
        page = self.store.list_messages(_name(body), _write_scope(body), **_page(body))
        return wire.encode_page("messages", page, wire.encode_message)

    def list_requests(self, body: Body) -> Answer:
        operation = _str(body, "operation", required=False)
        page = self.store.list_requests(_name(body), operation=operation, **_page(body))
        return wire.encode_page("requests", page, wire.encode_record)

    def list_scopes(self, body: Body) -> Answer:
        pattern = _pattern(body) if body.get("scope") is not None else None
        page = self.store.list_scopes(_name(body), pattern, **_page(body))
        return wire.encode_page("scopes", page, wire.scope_to_wire)

    def get_task(self, body: Body) -> Answer:
        task = self.store.get_task(_name(body), limits.check_id(body.get("taskId"), field="taskId"))
        return {"task": wire.encode_task(task)}

    def list_tasks(self, body: Body) -> Answer:
        status = _str(body, "status", required=False)
        page = self.store.list_tasks(_name(body), status=status, **_page(body))
        return wire.encode_page("tasks", page, wire.encode_task)

    # -- dream --------------------------------------------------------------------------
    def create_dream(self, body: Body) -> Answer:
        return {
            "task": wire.encode_dream(self.store.create_dream_task(_name(body), _pattern(body)))
        }

    def get_dream(self, body: Body) -> Answer:
        task_id = limits.check_id(body.get("taskId"), field="taskId")
        return {"task": wire.encode_dream(self.store.get_dream_task(_name(body), task_id))}

    def list_dreams(self, body: Body) -> Answer:
        page = self.store.list_dream_tasks(_name(body), **_page(body))
        return wire.encode_page("tasks", page, wire.encode_dream)

    def cancel_dream(self, body: Body) -> Answer:
        task_id = limits.check_id(body.get("taskId"), field="taskId")
        return {"task": wire.encode_dream(self.store.cancel_dream_task(_name(body), task_id))}

    def list_actions(self, body: Body) -> Answer:
        task_id = limits.check_id(body.get("taskId"), field="taskId")
        page = self.store.list_dream_actions(_name(body), task_id, **_page(body))
        return wire.encode_page("actions", page, wire.encode_action)

    def apply_actions(self, body: Body) -> Answer:
        task_id = limits.check_id(body.get("taskId"), field="taskId")
        ids = body.get("actionIds")
        if not isinstance(ids, list) or not all(isinstance(i, str) for i in ids):
            raise InvalidInput("actionIds must be a list of strings", field="actionIds")
        applied = self.store.apply_dream_actions(_name(body), task_id, ids)
        return {"actions": [wire.encode_action(a) for a in applied]}


#: APIs that work on a store's memories, and so wait for its index.
INDEXED_APIS = frozenset(
    {
        "AddMemories",
        "SearchMemories",
        "ListMemories",
        "GetMemory",
        "UpdateMemory",
        "DeleteMemory",
        "ListMemoryStoreMessages",
        "ListMemoryStoreScopes",
        "CreateMemoryDreamTask",
    }
)
