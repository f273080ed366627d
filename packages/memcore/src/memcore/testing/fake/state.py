"""What the fake holds for one memory store: its memories, message log, audit log and tasks."""

from __future__ import annotations

import attrs

from memcore.scope import Scope
from memcore.values import (
    DreamAction,
    DreamTask,
    MemoryRecord,
    MemoryTask,
    Message,
    RequestRecord,
    StoreInfo,
)


@attrs.define
class Unit:
    """One memory with what search needs beside it."""

    seq: int
    memory: MemoryRecord
    visible_after: int
    vector: list[float] | None = None
    #: When its text was last said (a message's own time, else when it was written).
    said: float = 0.0


@attrs.define
class StoreState:
    """One memory store; ``seq`` numbers order every list the way it was written."""

    info: StoreInfo
    units: dict[str, Unit] = attrs.field(factory=dict)
    by_content: dict[str, str] = attrs.field(factory=dict)
    messages: dict[Scope, list[tuple[int, Message]]] = attrs.field(factory=dict)
    #: Which memory each logged message became (by message id), for the turns around a hit.
    became: dict[str, str] = attrs.field(factory=dict)
    requests: list[tuple[int, RequestRecord]] = attrs.field(factory=list)
    tasks: dict[str, tuple[int, MemoryTask]] = attrs.field(factory=dict)
    dreams: dict[str, tuple[int, DreamTask]] = attrs.field(factory=dict)
    actions: dict[str, list[tuple[int, DreamAction]]] = attrs.field(factory=dict)
