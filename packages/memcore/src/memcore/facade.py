"""``memcore.Memory``: the small library facade other agents import.

One ``Memory`` serves many users: open it once, then name the user (and agent, run) per call;
the identity it was opened with is the default. Every call goes through a
:class:`~memcore.service.MemoryService` for the resolved scope, so the limits, the scope
policy and the tenant checks are the same for every user, on one store and one embedder.

:class:`memcore.AsyncMemory` (in :mod:`memcore.async_facade`) is the same facade for asyncio
code; it runs these very methods off the event loop, and a test keeps the two surfaces equal.
"""

from __future__ import annotations

import builtins
import contextlib
import inspect
import os
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any, TypeVar

import attrs

from memcore import limits
from memcore.errors import InvalidInput, StoreClosed, StoreNotFound
from memcore.paging import every_item
from memcore.policies import ReadPolicy, ScopePolicy, as_scope_policy
from memcore.ports import MemoryStore
from memcore.scope import WILDCARD, Scope, ScopePattern, SessionContext, resolve_scope
from memcore.service import MemoryService
from memcore.values import (
    DreamAction,
    DreamTask,
    MemoryRecord,
    MemoryTask,
    Message,
    Page,
    SearchHit,
    WriteReceipt,
)

T = TypeVar("T")

if TYPE_CHECKING:  # Memory.open loads them: a Memory over a store given to it never parses a config
    from memcore.config import MemcoreConfig


class Memory:
    """Long-term memory for the users of one app, on one store.

    >>> mem = Memory.open(user_id="alice")            # embedded SQLite store   # doctest: +SKIP
    >>> mem.add(text="The user likes coffee")                                   # doctest: +SKIP
    >>> mem.add(text="The user likes tea", user_id="bob")                       # doctest: +SKIP
    >>> mem.search("What does the user drink?", user_id="bob")                  # doctest: +SKIP

    A ``Memory`` built on a store you pass in leaves that store open on :meth:`close` (several
    may share it); one from :meth:`open` owns its store and closes it. One ``Memory`` serves
    many threads at once; one that owns its store is not carried across a ``fork``.
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        scope: Scope | None = None,
        store_name: str = "hermes_mem",
        policy: ScopePolicy | ReadPolicy | None = None,
        top_k: int = 5,
        enable_rerank: bool = True,
        store_assistant: str = "auto",
        ensure_store: bool = True,
        owns_store: bool = False,
        tenant_pinned: bool = False,
    ) -> None:
        if not _looks_like_a_store(store):
            raise InvalidInput(
                f"store must be a memory store (Memory.open builds one), not {type(store).__name__}",
                field="store",
            )
        if scope is not None and not isinstance(scope, Scope):
            raise InvalidInput(
                f"scope must be a Scope (Memory.scope_for builds one), not {type(scope).__name__}",
                field="scope",
            )
        # "no" would be read as yes: a store passed in closed with this Memory, say.
        for field, flag in (
            ("ensure_store", ensure_store),
            ("owns_store", owns_store),
            ("tenant_pinned", tenant_pinned),
        ):
            limits.check_flag(flag, field=field)
        self.store = store
        self._closed = False
        self._owns_store = owns_store
        #: The process that opened the store this Memory owns (see :attr:`service`).
        self._pid = os.getpid()
        #: The config names the tenant, so a per-call ``user_id`` cannot choose another one.
        self._tenant_pinned = tenant_pinned
        #: Whether the first write creates the memory store (:meth:`open` found it missing
        #: and ``auto_create_store`` allows); reads meanwhile answer ``StoreNotFound``.
        self._create_on_write = False
        #: What a store it creates is made with (the config's description and instructions).
        self._made_with: dict[str, Any] = {}
        self._creating = threading.Lock()
        #: Adds under way: :meth:`close` waits for them, since a turn goes out as several
        #: writes and closing between two of them stored part of it.
        self._adding = 0
        self._added = threading.Condition()
        if ensure_store:
            store.ensure_store(store_name)
        self._service = MemoryService(
            store,
            store_name=store_name,
            scope=scope or resolve_scope(SessionContext()),
            policy=as_scope_policy(policy),
            top_k=top_k,
            enable_rerank=enable_rerank,
            store_assistant=store_assistant,
        )

    @classmethod
    def open(
        cls,
        backend: str | None = None,
        *,
        config: MemcoreConfig | Mapping[str, Any] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        policy: ScopePolicy | ReadPolicy | None = None,
        **options: Any,
    ) -> Memory:
        """Open a backend by name (``local`` or ``tablestore``; None: the config's ``backend``,
        else ``local``); the identity given here is every call's default. The ``Memory`` owns
        the store and closes it on :meth:`close`. It creates no memory store but a new
        embedded file's: reads of a missing one raise ``StoreNotFound``, and the first write
        creates it when ``auto_create_store`` allows.

        ``user_id`` names the tenant exactly as given (``"alice "`` is not ``"alice"``); None
        means no user, the shared ``__default__`` tenant; an empty or whitespace-only id is
        :class:`InvalidInput` (:func:`memcore.scope.tenant_segment`, the rule every host uses),
        and so is a blank ``agent_id`` or ``run_id``, and a ``user_id`` when the config names
        the tenant (``tenant_id``): that ``Memory`` serves one tenant. ``config`` is a
        :class:`MemcoreConfig` or a mapping of its keys (checked as a configuration file is:
        :class:`ConfigError` names the key).

        >>> mem = Memory.open("local", user_id="alice", policy=memcore.SessionRead())  # doctest: +SKIP
        """
        from memcore.config import LOCAL, given_config
        from memcore.discovery import open_store
        from memcore.store_names import ready_for

        cfg = given_config(config)
        limits.check_optional_name(user_id, field="user_id", default="the default tenant")
        for field, value in (("agent_id", agent_id), ("run_id", run_id)):
            limits.check_optional_name(value, field=field, default="this Memory's own")
        scope = resolve_scope(
            SessionContext(user_id=user_id, agent_identity=agent_id, session_id=run_id),
            app_id=cfg.app_id,
            tenant_id=cfg.tenant_id,
        )
        if user_id is not None and _pins_tenant(cfg):
            # The configured tenant would win, and two users' opens would share it.
            raise InvalidInput(
                "the config names the tenant (tenant_id), so user_id cannot choose another; "
                "leave tenant_id out of the config to serve many users",
                field="user_id",
            )
        as_scope_policy(policy)  # refused before a file or a connection is opened
        # A config naming its backend was opened as the embedded store all the same.
        backend = backend if backend is not None else cfg.backend or LOCAL
        store = open_store(backend, cfg, **options)
        try:
            memory = cls(
                store,
                scope=scope,
                store_name=cfg.memory_store_name,
                policy=policy,
                top_k=cfg.top_k,
                enable_rerank=cfg.enable_rerank,
                store_assistant=cfg.store_assistant,
                ensure_store=False,
                owns_store=True,
                tenant_pinned=_pins_tenant(cfg),
            )
            # A read never creates the store: a mistyped name on a file or an instance that
            # holds other stores was made empty, and every read found nothing. The first write
            # makes it (``auto_create_store``), as in the CLI and the MCP server.
            memory._made_with = {
                "description": cfg.description,
                "extract_instructions": cfg.extract_instructions,
            }
            try:
                ready_for(
                    store,
                    cfg.memory_store_name,
                    writes=False,
                    auto_create=cfg.auto_create_store,
                    first_read_creates=backend == LOCAL,
                    **memory._made_with,
                )
            except StoreNotFound:
                memory._create_on_write = cfg.auto_create_store
            return memory
        except BaseException:
            # No Memory owns it: the caller could never close it (a store that cannot be
            # ensured, a refused argument); closing it must not hide why.
            with contextlib.suppress(Exception):
                store.close()
            raise

    @property
    def service(self) -> MemoryService:
        """The service for the default identity; :class:`StoreClosed` once closed, and in a
        process forked after this Memory opened its store: the store's connections (a SQLite
        file's, a pool of HTTP ones) cannot be shared with a child, where two processes on one
        socket read each other's answers."""
        if self._closed:
            raise StoreClosed("this Memory is closed; open a new one", field="store")
        if self._forked():
            raise StoreClosed(
                f"this Memory was opened in process {self._pid}, before a fork; its store's "
                "connections cannot be shared with a forked process: open a Memory in this "
                "process",
                field="store",
            )
        return self._service

    def _forked(self) -> bool:
        """Whether this is a process forked after this Memory opened the store it owns."""
        return self._owns_store and os.getpid() != self._pid

    @property
    def scope(self) -> Scope:
        """The default scope (``app/tenant/agent/run``) calls without an identity use."""
        return self._service.scope

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self._closed

    def scope_for(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> Scope:
        """The scope a call with this identity writes to: each id given is resolved as
        :meth:`open` resolves it; the others keep the default. An empty id is refused.

        >>> mem.scope_for(user_id="bob")            # Scope('hermes', 'bob', 'hermes', ...)  # doctest: +SKIP
        """
        given = {"user_id": user_id, "agent_id": agent_id, "run_id": run_id}
        for field, value in given.items():
            limits.check_optional_name(value, field=field, default="this Memory's own")
        default = self.scope
        if user_id is None and agent_id is None and run_id is None:
            return default
        if user_id is not None and self._tenant_pinned:
            raise InvalidInput(
                "this Memory's config names the tenant (tenant_id), so user_id cannot choose "
                "another; open it without tenant_id to serve many users",
                field="user_id",
            )
        resolved = resolve_scope(
            SessionContext(user_id=user_id, agent_identity=agent_id, session_id=run_id)
        )
        return Scope(
            default.app_id,
            default.tenant_id if user_id is None else resolved.tenant_id,
            default.agent_id if agent_id is None else resolved.agent_id,
            default.run_id if run_id is None else resolved.run_id,
        )

    def _for(self, user_id: str | None, agent_id: str | None, run_id: str | None) -> MemoryService:
        """The service for one call's identity (the default one when none is given)."""
        base = self.service
        scope = self.scope_for(user_id=user_id, agent_id=agent_id, run_id=run_id)
        if scope == base.scope:
            return base
        return MemoryService(
            base.store,
            store_name=base.store_name,
            scope=scope,
            policy=base.policy,
            top_k=base.top_k,
            enable_rerank=base.enable_rerank,
            store_assistant=base.store_assistant,
        )

    def add(
        self,
        text: str | None = None,
        *,
        messages: Sequence[Message | Mapping[str, str]] | None = None,
        metadata: Mapping[str, str] | None = None,
        sync: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> builtins.list[str]:
        """Remember ``text``, or a list of chat ``messages``; the ids of the memories written,
        each once (a message repeated is one memory).
        A message's ``timestamp`` (when it was said: seconds since the epoch, or ISO 8601 text
        in a dict message) is its memory's ``created_at``.

        A backend that indexes later (TableStore without ``sync``) may return no ids yet; use
        :meth:`add_receipts` to get the task ids instead.

        >>> mem.add(text="The user likes coffee", user_id="alice")           # doctest: +SKIP
        ['5f0c2a1e...']
        """
        receipts = self.add_receipts(
            text,
            messages=messages,
            metadata=metadata,
            sync=sync,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )
        # A repeat stored once answers with the id it has: once here, whichever batch said it.
        return builtins.list(
            dict.fromkeys(memory_id for receipt in receipts for memory_id in receipt.memory_ids)
        )

    def add_receipts(
        self,
        text: str | None = None,
        *,
        messages: Sequence[Message | Mapping[str, str]] | None = None,
        metadata: Mapping[str, str] | None = None,
        sync: bool = True,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> builtins.list[WriteReceipt]:
        """Like :meth:`add`, with the backend's receipts (task id, status, memory ids).

        >>> [receipt] = mem.add_receipts(text="The user likes tea", sync=False)  # doctest: +SKIP
        >>> mem.task(receipt.task_id).status                                      # doctest: +SKIP
        """
        if (text is None) == (messages is None):
            raise InvalidInput("give exactly one of text or messages", field="text")
        if isinstance(text, (builtins.list, tuple)):  # mem0's add(messages, ...) takes a chat first
            raise InvalidInput(
                f"text must be a string, not {type(text).__name__}; "
                "give a chat as add(messages=[...])",
                field="text",
            )
        limits.check_flag(sync, field="sync")
        service = self._for(user_id, agent_id, run_id)
        if text is not None:
            return self._writing(lambda: [service.remember(text, metadata=metadata, sync=sync)])
        assert messages is not None
        if isinstance(messages, (str, bytes, Mapping)) or not isinstance(messages, Iterable):
            raise InvalidInput("messages must be a list of messages", field="messages")
        msgs = [
            m if isinstance(m, Message) else limits.message_from_json(m, index=i)
            for i, m in enumerate(messages)
        ]
        if all(isinstance(m.content, str) and limits.is_blank(m.content) for m in msgs):
            # Nothing to remember: refused, so that an empty list never reads as written.
            raise InvalidInput("messages hold no text to remember", field="messages")
        if metadata:
            meta = limits.check_metadata(metadata)
            # evolve keeps every other field of the message (its scope, speaker, remember).
            msgs = [attrs.evolve(m, metadata=limits.merge_metadata(meta, m.metadata)) for m in msgs]
        return self._writing(lambda: service.sync_turn("", "", messages=msgs, sync=sync))

    def _writing(self, write: Callable[[], T]) -> T:
        """``write()``; when it met the missing store :meth:`open` left for the first write,
        the store is created and the write sent again (refused, nothing of it landed)."""
        with self._added:
            self._adding += 1
        try:
            try:
                return write()
            except StoreNotFound:
                if not self._create_on_write:
                    raise
                with self._creating:
                    if self._create_on_write:
                        self.store.ensure_store(self.service.store_name, **self._made_with)
                        self._create_on_write = False
                return write()
        finally:
            with self._added:
                self._adding -= 1
                self._added.notify_all()

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: Mapping[str, str] | None = None,
        min_similarity: float | None = None,
        enable_rerank: bool | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        reference_time: datetime | None = None,
        neighbours: int = 0,
        neighbour_chars: int = limits.DEFAULT_NEIGHBOUR_CHARS,
    ) -> builtins.list[SearchHit]:
        """The user's memories most relevant to ``query``, best first. ``filters``: exact
        metadata matches, all required; ``min_similarity`` (0 to 1) drops hits scoring lower.
        ``reference_time``: when the question is asked (default now), for its time words;
        always checked, and ignored in ranking by a store whose ``supports_reference_time``
        is False (TableStore).
        ``neighbours`` (0 to 5): each hit that came from a conversation carries that many
        turns of its session before and after it (``hit.neighbours.before``/``after``), at
        most ``neighbour_chars`` characters; the embedded store only.

        >>> mem.search("drinks", user_id="alice", filters={"topic": "drinks"},
        ...            min_similarity=0.3)                                       # doctest: +SKIP
        """
        return self._for(user_id, agent_id, run_id).search(
            query,
            top_k=top_k,
            filters=filters,
            min_similarity=min_similarity,
            enable_rerank=enable_rerank,
            reference_time=reference_time,
            neighbours=neighbours,
            neighbour_chars=neighbour_chars,
        )

    def list(
        self,
        *,
        limit: int = 50,
        next_token: str | None = None,
        all_versions: bool = False,
        current_only: bool | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Page[MemoryRecord]:
        """A page of the user's current memories; ``all_versions=True`` also shows those a
        dream pass superseded. A page holds ``limit`` memories unless the listing ends there
        (``next_token`` None) or a run of thousands of superseded ones cut it short (then its
        ``next_token`` goes on). ``current_only`` is the older spelling
        (``current_only=False`` is ``all_versions=True``).

        >>> page = mem.list(user_id="alice", limit=20)                           # doctest: +SKIP
        >>> more = mem.list(user_id="alice", next_token=page.next_token)         # doctest: +SKIP
        """
        limits.check_flag(all_versions, field="all_versions")
        limits.check_flag(current_only, field="current_only", optional=True)
        if current_only is not None:
            if current_only and all_versions:
                raise InvalidInput(
                    "current_only and all_versions disagree; pass only all_versions",
                    field="all_versions",
                )
            all_versions = not current_only
        return self._for(user_id, agent_id, run_id).profile(
            limit=limit, next_token=next_token, current_only=not all_versions
        )

    def iter_all(
        self,
        *,
        page_size: int = 100,
        all_versions: bool = False,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Iterator[MemoryRecord]:
        """Every memory :meth:`list` would show, page after page.

        >>> texts = [m.text for m in mem.iter_all(user_id="alice")]              # doctest: +SKIP
        """
        limits.check_limit(page_size, field="page_size")  # here: the pages load lazily
        limits.check_flag(all_versions, field="all_versions")
        service = self._for(user_id, agent_id, run_id)
        return self._while_open(
            service.every_memory(page_size=page_size, current_only=not all_versions)
        )

    def _while_open(self, items: Iterator[T]) -> Iterator[T]:
        """``items`` until this Memory closes, then :class:`StoreClosed`, as any call: a store
        passed in stays open on :meth:`close`, and would go on serving pages."""
        while True:
            _ = self.service  # StoreClosed once closed
            try:
                item = next(items)
            except StopIteration:
                return
            _ = self.service  # or closed while the page was read
            yield item

    def get(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryRecord:
        """One memory of the user's tenant; another tenant's id is :class:`NotFound`, exactly
        as an id that does not exist.

        >>> mem.get("5f0c2a1e...", user_id="alice").text                         # doctest: +SKIP
        """
        return self._for(user_id, agent_id, run_id).get(memory_id)

    def history(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> builtins.list[MemoryRecord]:
        """The memory and those linked to it by supersession, oldest first, each with its
        ``version``, ``created_at`` and ``updated_at``; ``superseded_by`` and ``supersedes``
        name the links. The embedded store keeps the links and the date of each change;
        elsewhere a merged memory is deleted, so the history is the memory itself with its
        version count (TableStore's units carry ``created_at`` only).

        >>> for m in mem.history("5f0c2a1e...", user_id="alice"):               # doctest: +SKIP
        ...     print(m.version, m.updated_at, m.text, m.superseded_by)
        """
        return self._for(user_id, agent_id, run_id).history(memory_id)

    def update(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryRecord:
        """Replace a memory's text and merge ``metadata`` into its map (``{}`` clears it);
        the memory as stored after, with its version raised.

        >>> mem.update("5f0c2a1e...", text="The user likes espresso", user_id="alice")  # doctest: +SKIP
        """
        return self._for(user_id, agent_id, run_id).update(memory_id, text=text, metadata=metadata)

    def delete(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> None:
        """Delete one memory of the user's tenant (another tenant's id is :class:`NotFound`).

        >>> mem.delete("5f0c2a1e...", user_id="alice")                          # doctest: +SKIP
        """
        self._for(user_id, agent_id, run_id).forget(memory_id)

    def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> int:
        """Delete every memory of the user's tenant, or only of ``agent_id`` (and ``run_id``)
        when given; how many were deleted. Never touches another tenant, nor a memory this
        Memory's read policy hides from :meth:`list` (opened with ``SessionRead``, only the
        run's): what it deletes is what it could list.

        >>> mem.delete_all(user_id="alice")                                      # doctest: +SKIP
        12
        """
        service = self._for(user_id, agent_id, run_id)
        reach = _reach(service, agent_id, run_id)
        return 0 if reach is None else service.forget_all(pattern=reach)

    def dream(
        self,
        *,
        apply_mode: str = "safe_auto",
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> DreamTask:
        """Consolidate the user's memories: merge repeats, let newer facts supersede older
        ones. ``safe_auto`` applies the confident actions (never a deletion); ``proposal``
        only proposes. On the local store this runs here; on TableStore, in the service.

        ``agent_id``/``run_id`` narrow it to that agent (and run), as :meth:`delete_all`
        does; it never reaches a memory this Memory's read policy keeps out of :meth:`list`.

        >>> task = mem.dream(apply_mode="proposal", user_id="alice")             # doctest: +SKIP
        """
        service = self._for(user_id, agent_id, run_id)
        reach = _reach(service, agent_id, run_id)
        if reach is None:
            raise InvalidInput(
                "agent_id/run_id name memories this Memory's read policy keeps out of list()",
                field="agent_id" if agent_id is not None else "run_id",
            )
        return service.dreams.start(pattern=reach, apply_mode=apply_mode)

    def dream_task(
        self,
        task_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> DreamTask:
        """One of this user's dream tasks; another user's id is :class:`NotFound`, exactly
        as an id that does not exist.

        >>> mem.dream_task(task.id, user_id="alice").status                      # doctest: +SKIP
        """
        return self._for(user_id, agent_id, run_id).dreams.task(task_id)

    def dream_tasks(
        self,
        *,
        limit: int = 50,
        next_token: str | None = None,
        status: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Page[DreamTask]:
        """A page of this user's dream tasks (never another user's).

        >>> mem.dream_tasks(status="completed", user_id="alice").items           # doctest: +SKIP
        """
        return self._for(user_id, agent_id, run_id).dreams.tasks(
            limit=limit, next_token=next_token, status=status
        )

    def dream_actions(
        self,
        task_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> builtins.list[DreamAction]:
        """Every action a dream task proposed, with its status, confidence and reason.

        >>> [a.action for a in mem.dream_actions(task.id, user_id="alice")]      # doctest: +SKIP
        """
        service = self._for(user_id, agent_id, run_id)
        return builtins.list(
            every_item(lambda token: service.dreams.actions(task_id, limit=100, next_token=token))
        )

    def apply_dream_actions(
        self,
        task_id: str,
        action_ids: Sequence[str],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> builtins.list[DreamAction]:
        """Apply proposed actions of a dream task; one result per id (an id the task does
        not have is ``not_found``).

        >>> mem.apply_dream_actions(task.id, [action.id], user_id="alice")       # doctest: +SKIP
        """
        return self._for(user_id, agent_id, run_id).dreams.apply(task_id, action_ids)

    def undo_dream_action(
        self,
        task_id: str,
        action_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> DreamAction:
        """Take back an applied action (the local store keeps undo records).

        >>> mem.undo_dream_action(task.id, action.id, user_id="alice")           # doctest: +SKIP
        """
        return self._for(user_id, agent_id, run_id).dreams.undo(task_id, action_id)

    def cancel_dream_task(
        self,
        task_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> DreamTask:
        """Cancel a dream task that has not finished (a finished one is returned as is).

        >>> mem.cancel_dream_task(task.id, user_id="alice").status               # doctest: +SKIP
        """
        return self._for(user_id, agent_id, run_id).dreams.cancel(task_id)

    def task(
        self,
        task_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryTask:
        """The task of one of this user's writes (``add_receipts`` gives its id).

        >>> mem.task(receipt.task_id, user_id="alice").status                    # doctest: +SKIP
        """
        return self._for(user_id, agent_id, run_id).task(task_id)

    def close(self) -> None:
        """Stop this ``Memory``: later calls raise :class:`StoreClosed`. The store is closed
        only when this ``Memory`` opened it (:meth:`open`), and not in a forked child (its
        connections are the parent's). Closing twice is fine.

        >>> mem.close()                                                          # doctest: +SKIP
        """
        if not self._closed:
            self._closed = True  # no new call starts
            with self._added:  # an add under way ends whole: closing cut a turn in two
                self._added.wait_for(lambda: self._adding == 0, timeout=CLOSE_WAIT)
            if self._owns_store and not self._forked():  # a child leaves the parent's alone
                self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


#: Seconds :meth:`Memory.close` waits for adds under way (a long turn's writes) to end.
CLOSE_WAIT = 60.0

#: Operations every store has, looked up as a call would (``getattr``): ``isinstance`` with
#: the runtime-checkable port reads attributes statically on Python 3.12+, so a proxy that
#: forwards them (``__getattr__``) would be refused there.
_STORE_OPERATIONS = ("ensure_store", "add_text", "search", "get_memory", "list_memories", "close")


def _looks_like_a_store(store: object) -> bool:
    """Whether ``store`` answers the store's operations: a plain mistake (a string, None, a
    config) is refused at once, rather than as an AttributeError on the first call."""
    return all(
        callable(method) and not inspect.iscoroutinefunction(method)
        for method in (getattr(store, name, None) for name in _STORE_OPERATIONS)
    )


def _pins_tenant(cfg: MemcoreConfig) -> bool:
    """Whether ``cfg`` names the tenant, so that two users resolve to one tenant."""
    tenants = {
        resolve_scope(
            SessionContext(user_id=user), app_id=cfg.app_id, tenant_id=cfg.tenant_id
        ).tenant_id
        for user in ("user-a", "user-b")
    }
    return len(tenants) == 1


def _reach(service: MemoryService, agent_id: str | None, run_id: str | None) -> ScopePattern | None:
    """What a call over many memories (delete_all, dream) may touch: the read policy's
    pattern, narrowed to the agent (and run) given to the call; None when the two share no
    scope (patterns end in wildcards, so two either nest or share none)."""
    scope = service.scope
    narrow_agent = agent_id is not None or run_id is not None
    asked = ScopePattern(
        scope.app_id,
        scope.tenant_id,
        scope.agent_id if narrow_agent else WILDCARD,
        scope.run_id if run_id is not None else WILDCARD,
    )
    seen = service.policy.profile.read_pattern(scope)
    if asked.within(seen):
        return asked
    return seen if seen.within(asked) else None
