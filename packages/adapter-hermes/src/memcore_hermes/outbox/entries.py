"""The writes that wait in the spool, and their JSON form.

Each write carries its own store name and scope (captured when the agent made it), so a
session switch or a restart never moves a queued write to another scope. Messages get ids
derived from the entry's idempotency key, so a replay can be recognised at the backend.
"""

from __future__ import annotations

import itertools
import json
import os
import time
import uuid
from collections.abc import Mapping
from typing import Any

import attrs

from memcore.errors import InvalidInput
from memcore.outbox import OutboxEntry
from memcore.scope import Scope
from memcore.values import Message

KIND_MESSAGES = "messages"
KIND_TEXT = "text"
KIND_MIRROR = "mirror"


@attrs.frozen
class MessagesWrite:
    """One write of a completed turn (a turn over the limits becomes several)."""

    store: str
    scope: Scope
    messages: tuple[Message, ...]
    metadata: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class TextWrite:
    """An explicit ``remember``."""

    store: str
    scope: Scope
    text: str
    metadata: Mapping[str, str] = attrs.field(factory=dict)


@attrs.frozen
class MirrorWrite:
    """A built-in MEMORY.md / USER.md change to mirror."""

    store: str
    scope: Scope
    action: str
    target: str
    content: str
    metadata: Mapping[str, str] = attrs.field(factory=dict)
    old_text: str | None = None


Write = MessagesWrite | TextWrite | MirrorWrite


_KEY_PREFIX = uuid.uuid4().hex[:24]
_KEY_COUNTER = itertools.count()


def _new_process_prefix() -> None:
    global _KEY_PREFIX, _KEY_COUNTER
    _KEY_PREFIX = uuid.uuid4().hex[:24]
    _KEY_COUNTER = itertools.count()


os.register_at_fork(after_in_child=_new_process_prefix)


def new_key() -> str:
    """An idempotency key: unique per entry, stable across every replay of that entry.

    96 random bits per process plus a counter: no system call and no hashing of the body on
    the agent's thread (both release the GIL, and getting it back under load costs ms).
    """
    return f"{_KEY_PREFIX}{next(_KEY_COUNTER):016x}"


def message_id(key: str, index: int) -> str:
    return f"{key}-{index}"


def _scope_dict(scope: Scope) -> dict[str, str]:
    return scope.as_dict()


def encode(write: Write) -> tuple[str, str]:
    """``(kind, payload JSON)`` for a write."""
    data: dict[str, Any] = {
        "store": write.store,
        "scope": _scope_dict(write.scope),
        "metadata": dict(write.metadata),
    }
    if isinstance(write, MessagesWrite):
        kind = KIND_MESSAGES
        data["messages"] = [
            {"role": m.role, "content": m.content, "id": m.id, "timestamp": m.timestamp}
            | ({} if m.remember else {"remember": False})
            for m in write.messages
        ]
    elif isinstance(write, TextWrite):
        kind = KIND_TEXT
        data["text"] = write.text
    else:
        kind = KIND_MIRROR
        data.update(
            action=write.action, target=write.target, content=write.content, old_text=write.old_text
        )
    return kind, json.dumps(data, ensure_ascii=False, sort_keys=True)


def make_entry(
    write: Write, *, now: float | None = None, key: str | None = None
) -> tuple[OutboxEntry, Write]:
    """A spool entry for ``write``; message writes get ids derived from the key."""
    key = key or new_key()
    if isinstance(write, MessagesWrite):
        write = attrs.evolve(
            write,
            messages=tuple(
                attrs.evolve(m, id=message_id(key, i)) for i, m in enumerate(write.messages)
            ),
        )
    kind, body = encode(write)
    stamp = time.time() if now is None else now
    return OutboxEntry(
        key=key, kind=kind, payload=body, created_at=stamp, next_attempt_at=stamp
    ), write


def decode(entry: OutboxEntry) -> Write:
    """The write an entry holds; :class:`InvalidInput` when the payload is not one."""
    try:
        data = json.loads(entry.payload)
        store = data["store"]
        scope = Scope.from_mapping(data["scope"])
        metadata = {str(k): str(v) for k, v in (data.get("metadata") or {}).items()}
        if entry.kind == KIND_MESSAGES:
            messages = tuple(
                Message(
                    role=m["role"],
                    content=m["content"],
                    id=m.get("id"),
                    timestamp=m.get("timestamp"),
                    remember=m.get("remember", True) is not False,
                )
                for m in data["messages"]
            )
            return MessagesWrite(store, scope, messages, metadata)
        if entry.kind == KIND_TEXT:
            return TextWrite(store, scope, data["text"], metadata)
        if entry.kind == KIND_MIRROR:
            return MirrorWrite(
                store,
                scope,
                data["action"],
                data["target"],
                data["content"],
                metadata,
                data.get("old_text"),
            )
    except InvalidInput:
        raise
    except (ValueError, KeyError, TypeError, AttributeError):
        raise InvalidInput("the spooled entry is not a valid write", field="payload") from None
    raise InvalidInput(f"unknown spooled entry kind {entry.kind!r}", field="kind")
