"""What an export writes: a memory's JSON shape, the message log's lines, and the format they
say they are in (:data:`EXPORT_FORMAT`)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from memcore.service import MemoryService
from memcore.transfer.lines import dump_line
from memcore.values import LoggedMessage, MemoryRecord

#: The format export records are written in; an import reads every format up to it. 1 (records
#: without a ``format``): id, text, scope, metadata, created_at and said_at are restored;
#: 2: also updated_at, unit_type and version, the message log, and the versions a dream
#: replaced with their links.
EXPORT_FORMAT = 2


def memory_record(memory: MemoryRecord, score: float | None = None) -> dict[str, Any]:
    return {
        "id": memory.id,
        "text": memory.text,
        "score": score,
        "scope": memory.scope.as_dict(),
        "metadata": dict(memory.metadata),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        "unit_type": memory.unit_type,
        "salience": memory.salience,
        "version": memory.version,
        "said_at": memory.said_at,
        # Set on a version a later one replaced (a dream's merge or update): history, which an
        # import leaves out, so a restore recalls what the store recalled, not the old fact.
        "superseded_by": memory.superseded_by,
    }


def message_record(logged: LoggedMessage) -> dict[str, Any]:
    """One exported line of the message log, after the memories (``memory_id``: the memory
    the message became, as the memory records of the same file name it)."""
    message = logged.message
    assert message.scope is not None
    return {
        "format": EXPORT_FORMAT,
        "kind": "message",
        "id": message.id,
        "role": message.role,
        "content": message.content,
        "scope": message.scope.as_dict(),
        "metadata": dict(message.metadata),
        "timestamp": message.timestamp,
        "memory_id": logged.memory_id,
    }


def export_lines(service: MemoryService, counts: dict[str, int]) -> Iterator[str]:
    """The lines of an export of what ``service`` reaches: its memories, then its message log
    (where the store keeps one); ``counts`` holds how many of each were written so far."""
    counts.setdefault("memories", 0)
    counts.setdefault("messages", 0)
    for memory in service.every_memory():
        yield dump_line(export_record(memory))
        counts["memories"] += 1
    for logged in service.logs.every_message():
        yield dump_line(message_record(logged))
        counts["messages"] += 1


def export_record(memory: MemoryRecord) -> dict[str, Any]:
    """One exported line: the memory's record without a score, in :data:`EXPORT_FORMAT`, with
    its supersession links (how it was replaced, and what it replaced)."""
    record = memory_record(memory)
    record.pop("score")
    how = memory.extras.get("superseded_how") if memory.superseded_by else None
    return {
        "format": EXPORT_FORMAT,
        **record,
        "superseded_how": how if isinstance(how, str) else None,
        "supersedes": list(memory.supersedes),
    }
