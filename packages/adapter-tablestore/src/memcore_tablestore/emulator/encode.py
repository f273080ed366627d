"""Port values -> the wire shapes of ``memory.d.ts`` (``MemoryUnit``, ``SessionMessage``,
``MemoryStoreInfo``). The emulator's own encoders, independent of the client's decoders."""

from __future__ import annotations

import json
from typing import Any

from memcore.values import MemoryRecord, Message, StoreInfo
from memcore_tablestore.emulator.ledger import StoreMeta
from memcore_tablestore.emulator.request_fields import iso
from memcore_tablestore.emulator.scopes import conversation_key, to_wire

#: MemoryStoreInfo.lastSeenAt: declared by the service, always this zero value.
ZERO_TIME = "0001-01-01T00:00:00Z"


def unit(memory: MemoryRecord) -> dict[str, Any]:
    """A ``MemoryUnit``: snake_case keys, ``scope`` camelCase, times RFC3339."""
    meta = dict(memory.metadata)
    out: dict[str, Any] = {
        "id": memory.id,
        "conversation_key": conversation_key(memory.scope),
        "scope": to_wire(memory.scope),
        "unit_type": memory.unit_type or "entity_fact",
        "text": memory.text,
        "search_text": memory.text.casefold(),
        "metadata": meta,
        "metadata_json": json.dumps(meta, separators=(",", ":"), sort_keys=True),
        "metadata_flat": ",".join(f"{k}={v}" for k, v in sorted(meta.items())),
        "deleted": False,
        "created_at": iso(memory.created_at),
        "version": memory.version or 1,
    }
    if memory.salience is not None:
        out["salience"] = memory.salience
    return out


def message(item: Message) -> dict[str, Any]:
    """A ``SessionMessage``."""
    out: dict[str, Any] = {"role": item.role, "speaker": item.role, "content": item.content}
    if item.id:
        out["messageId"] = item.id
    out["timestamp"] = iso(item.timestamp)
    out["metadata"] = dict(item.metadata)
    return out


def store_info(info: StoreInfo, meta: StoreMeta, instance: str) -> dict[str, Any]:
    """``MemoryStoreInfo``; no ``status``: the service reports none."""
    out: dict[str, Any] = {"otsInstance": instance, "memoryStoreName": info.name}
    if info.description:
        out["description"] = info.description
    if info.extract_instructions:
        out["extractInstructions"] = info.extract_instructions
    out["storageMode"] = meta.storage_mode
    out["createdAt"] = iso(info.created_at)
    out["updatedAt"] = iso(info.updated_at or info.created_at)
    out["lastSeenAt"] = ZERO_TIME
    return out
