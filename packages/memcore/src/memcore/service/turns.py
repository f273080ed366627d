"""A completed turn, checked and split into writes within the limits (no store call)."""

from __future__ import annotations

from collections.abc import Sequence

import attrs

from memcore import limits
from memcore.errors import InvalidInput
from memcore.service.inputs import check_list, refuse_scope_keys
from memcore.turn_policy import plan_memories
from memcore.values import Message
from memcore.wording import shown


@attrs.frozen
class TurnWrite:
    """One write of a turn after splitting to the limits."""

    messages: tuple[Message, ...]


def plan_turn(
    user: str, assistant: str, messages: Sequence[Message] | None, store_assistant: str
) -> list[TurnWrite]:
    """``MemoryService.plan_turn``: the turn's messages checked, repaired and marked, then
    split; nothing is truncated."""
    if messages is not None:
        check_list(messages, field="messages")
    turn: list[Message] = list(messages or [])
    if not turn:
        if isinstance(user, str) and user.strip():
            turn.append(Message(role="user", content=user))
        if isinstance(assistant, str) and assistant.strip():
            turn.append(Message(role="assistant", content=assistant))
    for i, m in enumerate(turn):
        if not isinstance(m, Message):
            raise InvalidInput(f"messages[{i}] is not a valid message", field=f"messages[{i}]")
        if not isinstance(m.role, str) or limits.plain(m.role) not in limits.MESSAGE_ROLES:
            # Named with the roles taken, as every other refused field is ("User", "human").
            raise InvalidInput(
                f"messages[{i}].role must be one of {', '.join(sorted(limits.MESSAGE_ROLES))},"
                f" not {shown(m.role)}",
                field=f"messages[{i}].role",
            )
        if not isinstance(m.content, str):
            raise InvalidInput(
                f"messages[{i}].content must be a string", field=f"messages[{i}].content"
            )
        # Plain strings from here on: a subclass's own hash or encode cannot pass a check.
        meta = limits.check_metadata(m.metadata, field=f"messages[{i}].metadata")
        refuse_scope_keys(meta, field=f"messages[{i}].metadata")
        limits.check_message_fields(m, index=i)  # every message before the first write
        turn[i] = attrs.evolve(
            m,
            role=limits.plain(m.role),
            content=limits.repair_unicode(limits.plain(m.content)),
            metadata=meta,
        )
    planned = plan_memories(turn, store_assistant)
    return [TurnWrite(tuple(batch)) for batch in limits.split_messages(planned)]
