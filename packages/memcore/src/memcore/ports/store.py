"""The Memory Store port: the whole store surface an adapter implements, and the
extensions a local store adds (dream undo, the turns around a hit).

An adapter that lacks an operation raises :class:`memcore.errors.Unsupported` rather than
pretending.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from datetime import datetime
from typing import Protocol, runtime_checkable

from memcore.scope import Scope, ScopePattern
from memcore.values import (
    DreamAction,
    DreamTask,
    LoggedMessage,
    MemoryRecord,
    MemoryTask,
    MemoryVersion,
    Message,
    Page,
    RequestRecord,
    SearchHit,
    StoreInfo,
    TextItem,
    TurnContext,
    VersionLink,
    WriteReceipt,
)


@runtime_checkable
class MemoryStore(Protocol):
    """The whole Memory Store surface. ``store`` is the memory store name on every call."""

    @property
    def supports_reference_time(self) -> bool:
        """Whether :meth:`search` counts the query's time words from ``reference_time``. A
        store without it still checks the value, and ranks as if none were given."""
        ...

    # -- stores -------------------------------------------------------------------------
    def ensure_store(
        self,
        store: str,
        *,
        description: str = "",
        create: bool = True,
        extract_instructions: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> StoreInfo:
        """Describe the store, creating it (and waiting until it is ready) when missing;
        ``progress`` hears about the wait for a new store's index."""
        ...

    def describe_store(self, store: str) -> StoreInfo: ...

    def list_stores(self) -> list[StoreInfo]: ...

    def create_store(
        self, store: str, *, description: str = "", extract_instructions: str | None = None
    ) -> StoreInfo: ...

    def update_store(
        self,
        store: str,
        *,
        description: str | None = None,
        extract_instructions: str | None = None,
    ) -> StoreInfo:
        """PATCH: ``None`` leaves a field unchanged, ``""`` clears it."""
        ...

    def delete_store(self, store: str) -> None: ...

    # -- memories -----------------------------------------------------------------------
    def add_text(
        self,
        store: str,
        scope: Scope,
        text: str,
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> WriteReceipt: ...

    def add_messages(
        self,
        store: str,
        scope: Scope,
        messages: Sequence[Message],
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> WriteReceipt: ...

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
        reference_time: datetime | None = None,
    ) -> list[SearchHit]:
        """``filters``: exact metadata equality, ANDed. ``min_similarity`` drops hits whose
        ``score`` is lower. ``context_scope``: the current conversation (concrete, inside
        ``pattern``), a ranking hint. ``include_evidence``: attach supporting messages.
        ``reference_time``: when the query is asked (None: now), what its time words
        ("last month", "5 days ago") count from; a ranking hint, used by a store that
        declares :attr:`supports_reference_time`."""
        ...

    def list_memories(
        self, store: str, pattern: ScopePattern, *, limit: int = 50, next_token: str | None = None
    ) -> Page[MemoryRecord]: ...

    def get_memory(self, store: str, scope: Scope, memory_id: str) -> MemoryRecord: ...

    def update_memory(
        self,
        store: str,
        scope: Scope,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> MemoryRecord:
        """``metadata`` is merged into the stored map (same key overwrites); ``{}`` clears it."""
        ...

    def delete_memory(self, store: str, scope: Scope, memory_id: str) -> None: ...

    # -- messages, audit, scopes, tasks -------------------------------------------------
    def list_messages(
        self, store: str, scope: Scope, *, limit: int = 50, next_token: str | None = None
    ) -> Page[Message]: ...

    def list_requests(
        self,
        store: str,
        *,
        operation: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[RequestRecord]: ...

    def list_scopes(
        self,
        store: str,
        pattern: ScopePattern | None = None,
        *,
        limit: int = 50,
        next_token: str | None = None,
    ) -> Page[Scope]: ...

    def get_task(self, store: str, task_id: str) -> MemoryTask:
        """The task of a write; ``task_id`` is the write's request id (its receipt's task_id)."""
        ...

    def list_tasks(
        self,
        store: str,
        *,
        status: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[MemoryTask]: ...

    # -- dream (consolidation) ----------------------------------------------------------
    def create_dream_task(
        self,
        store: str,
        scopes: ScopePattern | Sequence[ScopePattern],
        *,
        apply_mode: str = "proposal",
        instructions: str | None = None,
    ) -> DreamTask:
        """Consolidate the memories of 1 to 20 scope patterns (one pattern alone is fine)."""
        ...

    def get_dream_task(self, store: str, task_id: str) -> DreamTask: ...

    def list_dream_tasks(
        self,
        store: str,
        *,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
        status: str | None = None,
    ) -> Page[DreamTask]: ...

    def cancel_dream_task(self, store: str, task_id: str) -> DreamTask: ...

    def list_dream_actions(
        self, store: str, task_id: str, *, limit: int = 50, next_token: str | None = None
    ) -> Page[DreamAction]: ...

    def apply_dream_actions(
        self, store: str, task_id: str, action_ids: Sequence[str]
    ) -> list[DreamAction]:
        """One result per requested id: its status is ``applied``, ``skipped``, ``failed`` or
        ``not_found`` (an id the task does not have)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class DreamUndo(Protocol):
    """A store that keeps undo records for applied dream actions (the local store)."""

    def undo_dream_action(self, store: str, task_id: str, action_id: str) -> DreamAction: ...


@runtime_checkable
class BulkAdd(Protocol):
    """A store that adds many memories in one transaction, each in its own scope, keeping the
    ids and times it is given (the embedded store): how an import restores an export."""

    def add_many(
        self,
        store: str,
        items: Sequence[TextItem],
        *,
        ahead: Sequence[TextItem] = (),
        new_id_if_taken: bool = False,
        created: set[str] | None = None,
        versions: dict[str, int] | None = None,
    ) -> list[str]:
        """The items' ids in order (a text already in its scope answers with the id it has);
        ``ahead``, the next batch, may be embedded meanwhile; ids are unique per tenant (app
        and tenant ids), so an item's id held by another memory of its tenant gets a new one
        with ``new_id_if_taken``, else raises ``Conflict``, and what other tenants hold never
        decides. Once the
        batch is stored, the ids of the memories it created are added to ``created``: an id
        answered for a text already there (written by anyone, even a moment ago) is not; and
        ``versions`` maps each id answered to its memory's version as the batch left it."""
        ...


@runtime_checkable
class UnclaimedDelete(Protocol):
    """A store in which every write that lands in a memory moves its version, a repeat of its
    text that changes nothing too (the embedded store). An import's rollback then deletes only
    the memories no other write has claimed since the import wrote them: a ``remember`` of
    the same text answered with such a memory's id, another import that wrote the text or
    claimed it (:meth:`claim_memories`) and counted it present."""

    def delete_unclaimed(self, store: str, memories: Sequence[MemoryVersion]) -> list[str]:
        """Delete each memory that is still in its scope with the version given, all in one
        transaction (all or none); the ids of those kept because their version moved. One
        not in its scope (deleted already, or another tenant's id) is neither."""
        ...

    def claim_memories(self, store: str, memories: Sequence[tuple[Scope, str]]) -> list[str]:
        """Move the version of each memory (scope, id) still in its scope, all in one
        transaction, nothing else of it changed: how an import that counts a memory present
        without writing it lands in it, so that another import's rollback keeps it. The ids
        not in their scope (deleted meanwhile, or another tenant's id), which it did not
        claim."""
        ...


@runtime_checkable
class KeyRemoval(Protocol):
    """A store that removes metadata keys in the same write as the rest of an update (the
    embedded store). The plain update can only merge or clear the map, so removing a key
    there is a clear and then the other keys written back: two writes, which a crash can
    leave half done and which lose a key another writer set after the read."""

    def update_memory_removing(
        self,
        store: str,
        scope: Scope,
        memory_id: str,
        *,
        remove: Collection[str],
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> MemoryRecord:
        """As ``update_memory``, and the keys in ``remove`` (absent ones ignored) taken out
        of the stored map after ``metadata`` is merged in, all in one transaction."""
        ...


@runtime_checkable
class MemoryLookup(Protocol):
    """A store that finds a memory by its id alone within a pattern, in one read (the
    embedded store): a lookup across a tenant's scopes costs one query, not one per scope."""

    def find_memory(self, store: str, pattern: ScopePattern, memory_id: str) -> MemoryRecord:
        """The memory ``memory_id`` when it lives under ``pattern``; ``NotFound`` otherwise,
        the same for another tenant's id as for an id that nobody holds."""
        ...


@runtime_checkable
class SearchWarmup(Protocol):
    """A store whose first searches of a scope build caches (the embedded store): a host
    builds them ahead, in the background, so a session's first question does not wait."""

    def warm(self, store: str, pattern: ScopePattern) -> None:
        """Build what the first searches of ``pattern`` would; runs no search."""
        ...


@runtime_checkable
class NeighbourTurns(Protocol):
    """A store that keeps the order of a session's messages and which memory each became
    (the embedded store), so a hit can come with the turns around it."""

    def neighbour_turns(
        self, store: str, scope: Scope, memory_id: str, *, turns: int
    ) -> TurnContext:
        """Up to ``turns`` messages each side of the last message memory ``memory_id`` came
        from, all of its own session (exactly ``scope``, so never another tenant's). A
        memory that is not in ``scope``, or came from no message, has an empty context."""
        ...


@runtime_checkable
class MessageMove(Protocol):
    """A store whose message log can follow a session's memories to another tenant (the
    embedded store), so that a moved memory keeps the turns around it."""

    def message_counts(self, store: str, pattern: ScopePattern) -> dict[Scope, int]:
        """How many messages each scope under ``pattern`` logs; scopes with none are left out."""
        ...

    def move_messages(self, store: str, moves: Sequence[tuple[Scope, Scope]]) -> int:
        """Move every message of each source scope to its target scope, all pairs in one
        transaction (all or none), keeping the messages' order, ids and times; how many moved.
        A message that became a memory then points at the target's memory of the same text,
        else at none. Only the sources' messages change, so a source already moved has nothing
        left to move and a second call moves nothing."""
        ...


@runtime_checkable
class MessageLog(Protocol):
    """A store whose message log can be listed with the memory each message became and
    written back (the embedded store): how a backup carries the turns shown around a hit."""

    def list_logged_messages(
        self,
        store: str,
        pattern: ScopePattern,
        *,
        limit: int = 50,
        next_token: str | None = None,
    ) -> Page[LoggedMessage]:
        """A page of the messages of every scope under ``pattern``, in the order logged."""
        ...

    def restore_messages(self, store: str, messages: Sequence[LoggedMessage]) -> int:
        """Log ``messages`` after those already logged, all in one transaction (all or none),
        each in its own scope with its id, role, text, time and metadata; how many were
        added. One already logged in its scope (same id, role, text and time) is skipped, so
        a second call adds nothing. A message is linked to the memory ``memory_id`` only when
        that memory is in the message's own scope; otherwise to none."""
        ...


@runtime_checkable
class VersionHistory(Protocol):
    """A store that keeps which version replaced which (the embedded store), and takes those
    links back from a restore, so a restored store recalls and ranks as the original did."""

    def link_versions(self, store: str, links: Sequence[VersionLink]) -> None:
        """Set each memory's links, all in one transaction (all or none). Only a memory in its
        link's scope changes; a linked id that names no memory of the same tenant is dropped,
        so no link ever reaches into another tenant."""
        ...

    def add_version_links(self, store: str, links: Sequence[VersionLink]) -> None:
        """Add each link to what its memory has, in one transaction: the ids of
        ``supersedes`` it lacks join it, and ``superseded_by`` is set only where it has none.
        What a dream or an edit linked meanwhile stays; ids are checked as for
        :meth:`link_versions`."""
        ...

    def drop_version_links(self, store: str, links: Sequence[VersionLink]) -> None:
        """Take each link out of what its memory has now, in one transaction: the ids of
        ``supersedes`` leave it, and ``superseded_by`` is cleared only while it still names
        that memory. What a dream or an edit linked meanwhile stays."""
        ...


class ProgressCallback(Protocol):
    """Hears one line of progress during a long wait (a new store's index, a new instance)."""

    def __call__(self, message: str) -> None: ...
