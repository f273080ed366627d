"""Value objects that cross the ports: frozen attrs classes, never raw dicts."""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Generic, TypeVar

import attrs

from memcore.scope import Scope, ScopePattern

T = TypeVar("T")

#: Write-task states as the Memory Store service names them (``MemoryTaskStatus``).
TASK_STATUSES = ("queued", "running", "completed", "failed", "needs_reconcile")
#: Every write-task state a store shows: the service's, and the embedded store's ``pending``
#: (an add whose vector waits for the next search).
KNOWN_TASK_STATUSES = (*TASK_STATUSES, "pending")
#: Dream-task states (``DreamTaskStatus``); the last four are final.
DREAM_STATUSES = (
    "queued",
    "running",
    "planning",
    "applying",
    "completed",
    "completed_with_failures",
    "failed",
    "cancelled",
)
DREAM_FINAL_STATUSES = frozenset({"completed", "completed_with_failures", "failed", "cancelled"})
#: ``proposal``: actions wait to be applied by hand; ``safe_auto``: confident ones apply at once.
DREAM_APPLY_MODES = ("proposal", "safe_auto")
#: What a dream action does; ``EMIT_*`` come from skill/profile tasks and cannot be applied.
DREAM_ACTION_TYPES = ("ADD", "UPDATE", "DELETE", "MERGE", "NOOP", "EMIT_SKILL", "EMIT_PROFILE")
#: An action's state; ApplyMemoryDreamActions also reports ``not_found`` for unknown ids.
DREAM_ACTION_STATUSES = ("proposed", "applied", "skipped", "failed")
#: Storage modes of a store (``ots`` when never chosen); immutable after creation.
STORAGE_MODES = ("ots", "file+ots", "filemem")
#: Receipt status of a write the service accepted (HTTP 2xx) but whose answer we could not
#: read: the write landed and must never be sent again.
UNCONFIRMED = "unconfirmed"


def _frozen_map(value: Mapping[str, Any] | None) -> Mapping[str, Any]:
    return dict(value or {})


@attrs.frozen
class MemoryRecord:
    """One long-term memory unit (formerly ``Memory``, which is the facade's name)."""

    id: str
    text: str
    scope: Scope
    metadata: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_map)
    created_at: float | None = None
    updated_at: float | None = None
    unit_type: str | None = None
    salience: float | None = None
    version: int | None = None
    #: When the text was last said: its newest occurrence's own time (a message's timestamp,
    #: else when it was added) or its last text edit. ``updated_at`` is when the row was last
    #: written, which a replay, a repeat or a dream pass moves to the day it ran. None where
    #: the backend does not keep it (TableStore) and for rows written before it was kept.
    said_at: float | None = None
    #: Backend fields we do not model, kept so nothing the service sends is lost.
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)

    @property
    def superseded_by(self) -> str | None:
        """The id of the memory a dream pass replaced this one with (only the embedded store
        keeps the link; elsewhere a merged memory is deleted)."""
        by = self.extras.get("superseded_by")
        return by if isinstance(by, str) and by else None

    @property
    def supersedes(self) -> tuple[str, ...]:
        """The ids of the older memories this one replaced (embedded store)."""
        ids = self.extras.get("supersedes")
        return tuple(i for i in ids if isinstance(i, str)) if isinstance(ids, (list, tuple)) else ()

    @property
    def is_current(self) -> bool:
        """Not superseded: what ``list`` shows unless asked for every version."""
        return self.superseded_by is None


@attrs.frozen
class TextItem:
    """One memory a bulk add writes as given (an import restoring an export): its scope
    exactly, and its id and times where the store can keep them (:class:`~memcore.ports.
    store.BulkAdd`)."""

    scope: Scope
    text: str
    metadata: Mapping[str, str] = attrs.field(factory=dict)
    #: Keep this id; None lets the store choose one.
    id: str | None = None
    #: Keep this creation time; None means now.
    created_at: float | None = None
    #: When the text was last said (the day recall shows it with); None: its creation time.
    said_at: float | None = None
    #: When the memory last changed; None means now.
    updated_at: float | None = None
    #: Its kind (``text``, ``message``); None: ``text``.
    unit_type: str | None = None
    #: How many times it was written; None: 1.
    version: int | None = None


@attrs.frozen
class SearchHit:
    """One search result. ``score`` is the canonical relevance in [0, 1] (the reranker's when
    rerank is on) and what ``min_similarity`` filters on; ``similarity`` is the raw cosine
    similarity, informational only. ``source`` says which index found it. ``signals`` holds
    the per-signal scores it was fused from, when the backend reports them (the embedded
    store: ``lexical`` and ``vector``, each in [0, 1])."""

    memory: MemoryRecord
    score: float
    similarity: float | None = None
    source: str | None = None
    #: Supporting short-term messages, when the search asked for evidence (shape as sent).
    evidence: tuple[Mapping[str, Any], ...] = ()
    #: Session-affinity ranking, when the search passed a ``context_scope``.
    ranking_score: float | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)
    signals: Mapping[str, float] = attrs.field(factory=dict, converter=_frozen_map, eq=False)
    #: The turns said just before and after it in its session, when the search asked for
    #: ``neighbours`` (None when it did not).
    neighbours: TurnContext | None = None


@attrs.frozen
class Message:
    """One chat message; ``role`` is ``user``, ``assistant``, ``system`` or ``tool``."""

    role: str
    content: str
    id: str | None = None
    timestamp: float | None = None
    metadata: Mapping[str, str] = attrs.field(factory=dict, converter=_frozen_map)
    scope: Scope | None = None
    speaker: str | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)
    #: False: kept in the message log only, not made a memory (``turn_policy``). A store whose
    #: service extracts memories itself (TableStore) leaves that choice to the service.
    remember: bool = True


@attrs.frozen
class LoggedMessage:
    """One row of a store's message log as a backup carries it: the message (its scope set)
    and the id of the memory it became (None: it became none, or one no longer kept)."""

    message: Message
    memory_id: str | None = None


#: How a version was replaced: folded into another (``merged``) or a newer fact replaced it
#: (``updated``; it still answers, right after its successor).
SUPERSESSION_KINDS = ("merged", "updated")


@attrs.frozen
class VersionLink:
    """A memory's supersession links as a restore gives them back (the embedded store keeps
    them): the memory that replaced it and how, and the versions it replaced."""

    scope: Scope
    memory_id: str
    superseded_by: str | None = None
    superseded_how: str | None = None
    supersedes: tuple[str, ...] = ()


@attrs.frozen
class MemoryVersion:
    """A memory as a write left it: a rollback deletes it only while it still has ``version``
    (a write that landed in it since, even a repeat that changed nothing, moved it)."""

    scope: Scope
    memory_id: str
    version: int


@attrs.frozen
class TurnContext:
    """The messages of a hit's session said right before and right after the message it
    came from, each side in the order they were said. Empty when the hit came from no
    message (``add_text``, an extracted fact) or its session holds nothing around it."""

    before: tuple[Message, ...] = ()
    after: tuple[Message, ...] = ()

    @property
    def chars(self) -> int:
        return sum(len(m.content) for m in (*self.before, *self.after))


@attrs.frozen
class WriteReceipt:
    """What a write returns: the task handle, its status and the ids it touched.

    On the Memory Store the task handle *is* the write's ``requestId``. ``status`` is
    :data:`UNCONFIRMED` when the write was accepted but its answer could not be read;
    ``problem`` then says why. Such a write landed: never send it again.
    """

    task_id: str | None
    status: str
    memory_ids: tuple[str, ...] = ()
    request_id: str | None = None
    accepted_messages: int | None = None
    problem: str | None = None


@attrs.frozen
class Page(Generic[T]):
    items: tuple[T, ...]
    next_token: str | None = None

    def filter(self, keep: Callable[[T], bool]) -> Page[T]:
        """The same page (same token) with only the items ``keep`` accepts."""
        return Page(tuple(i for i in self.items if keep(i)), self.next_token)


@attrs.frozen
class MemoryTask:
    """The extraction task of one write; ``id`` is the write's request id."""

    id: str
    status: str
    operation: str = "AddMemories"
    scope: Scope | None = None
    created_at: float | None = None
    finished_at: float | None = None
    #: The long-term memories the task extracted (``derivedUnitIds``).
    memory_ids: tuple[str, ...] = ()
    error: str | None = None
    updated_at: float | None = None
    accepted_messages: int | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)


def _patterns(value: object) -> tuple[ScopePattern, ...]:
    if value is None:
        return ()
    if isinstance(value, ScopePattern):
        return (value,)
    return tuple(value)  # type: ignore[arg-type]


@attrs.frozen
class DreamTask:
    """A consolidation run over 1 to 20 scope patterns: it proposes actions to apply.

    ``action_counts`` holds the service's counters (``total``, ``proposed``, ``applied``,
    ``skipped``, ``failed``) when it reports them.
    """

    id: str
    status: str
    scopes: tuple[ScopePattern, ...] = attrs.field(default=(), converter=_patterns)
    created_at: float | None = None
    finished_at: float | None = None
    apply_mode: str = "proposal"
    task_type: str = "memory"
    updated_at: float | None = None
    action_counts: Mapping[str, int] = attrs.field(factory=dict, converter=_frozen_map)
    instructions: str | None = None
    error: str | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)

    @property
    def scope(self) -> ScopePattern | None:
        """The first input pattern (most tasks have exactly one)."""
        return self.scopes[0] if self.scopes else None

    @property
    def finished(self) -> bool:
        return self.status in DREAM_FINAL_STATUSES


@attrs.frozen
class DreamAction:
    """One proposed change of a dream task.

    ``action`` is one of :data:`DREAM_ACTION_TYPES`. ``memory_ids`` are the existing memories
    it touches: the target first, then the sources a MERGE folds in. ``text`` is the text it
    would write (ADD/UPDATE/MERGE). ``skipped_reason`` says why a ``skipped`` action was not
    applied; ``result_memory_id`` is the memory an applied action wrote.
    """

    id: str
    task_id: str
    action: str
    memory_ids: tuple[str, ...] = ()
    text: str | None = None
    status: str = "proposed"
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)
    confidence: float | None = None
    reason: str | None = None
    skipped_reason: str | None = None
    target_memory_id: str | None = None
    result_memory_id: str | None = None
    scope: Scope | None = None
    error: str | None = None
    created_at: float | None = None


@attrs.frozen
class StoreInfo:
    """A memory store. The service reports no state; ``status`` is ``ready`` unless a
    backend knows better. ``storage_mode`` is ``ots`` (structured memory) unless set."""

    name: str
    description: str = ""
    status: str = "ready"
    created_at: float | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)
    storage_mode: str | None = None
    extract_instructions: str | None = None
    updated_at: float | None = None


@attrs.frozen
class RequestRecord:
    """One line of a store's request audit log; ``status`` is the HTTP status as text."""

    id: str
    operation: str
    status: str
    #: The scope of the audited call: a pattern for a search or listing over ``*`` levels.
    scope: Scope | ScopePattern | None = None
    target_id: str | None = None
    latency_ms: float | None = None
    created_at: float | None = None
    extras: Mapping[str, Any] = attrs.field(factory=dict, converter=_frozen_map, eq=False)
    response_status: int | None = None


if not TYPE_CHECKING:  # type checkers see only the new name, and flag the old one

    def __getattr__(name: str) -> Any:
        """The record's old name still imports, with a warning: ``memcore.Memory`` is the
        facade, and two classes named ``Memory`` misled readers."""
        if name == "Memory":
            warnings.warn(
                "memcore.values.Memory is deprecated; use memcore.values.MemoryRecord "
                "(memcore.Memory is the library facade)",
                DeprecationWarning,
                stacklevel=2,
            )
            return MemoryRecord
        raise AttributeError(f"module 'memcore.values' has no attribute {name!r}")
