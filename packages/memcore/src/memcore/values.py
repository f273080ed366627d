"""Value objects that cross the ports: frozen attrs classes, never raw dicts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Generic, TypeVar

import attrs

from memcore.scope import Scope, ScopePattern

T = TypeVar("T")

#: Task and request states as the Memory Store service names them.
TASK_STATUSES = ("pending", "running", "completed", "failed", "cancelled")


def _frozen_map(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


@attrs.frozen
class Memory:
    """One long-term memory unit."""

    id: str
    text: str
    scope: Scope
    metadata: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_map)
    created_at: float | None = None
    updated_at: float | None = None
    unit_type: str | None = None
    salience: float | None = None
    version: int | None = None
    #: Backend fields we do not model, kept so nothing the service sends is lost.
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)


@attrs.frozen
class SearchHit:
    """One search result. ``score`` is its relevance in [0, 1] (what ``min_similarity``
    filters on); ``signals`` holds the per-signal scores it was fused from, when the backend
    reports them (the embedded store: ``lexical`` and ``vector``, each in [0, 1])."""

    memory: Memory
    score: float
    signals: Mapping[str, float] = attrs.field(factory=dict, converter=_frozen_map, eq=False)


@attrs.frozen
class Message:
    """One chat message; ``role`` is ``user``, ``assistant``, ``system`` or ``tool``."""

    role: str
    content: str
    id: str | None = None
    timestamp: float | None = None
    metadata: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_map)
    scope: Scope | None = None


@attrs.frozen
class WriteReceipt:
    """What a write returns: the task (or request) id, its status and the ids it touched."""

    task_id: str | None
    status: str
    memory_ids: tuple[str, ...] = ()
    request_id: str | None = None


@attrs.frozen
class Page(Generic[T]):
    items: tuple[T, ...]
    next_token: str | None = None


@attrs.frozen
class MemoryTask:
    id: str
    status: str
    operation: str = "AddMemories"
    scope: Scope | None = None
    created_at: float | None = None
    finished_at: float | None = None
    memory_ids: tuple[str, ...] = ()
    error: str | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)


@attrs.frozen
class DreamTask:
    """A consolidation task: the service proposes actions (merge, delete, update) to apply."""

    id: str
    status: str
    scope: ScopePattern | None = None
    created_at: float | None = None
    finished_at: float | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)


@attrs.frozen
class DreamAction:
    id: str
    task_id: str
    action: str
    memory_ids: tuple[str, ...] = ()
    text: str | None = None
    status: str = "proposed"
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)


@attrs.frozen
class StoreInfo:
    name: str
    description: str = ""
    status: str = "ready"
    created_at: float | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)


@attrs.frozen
class RequestRecord:
    """One line of a store's request audit log."""

    id: str
    operation: str
    status: str
    scope: Scope | None = None
    target_id: str | None = None
    latency_ms: float | None = None
    created_at: float | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)
