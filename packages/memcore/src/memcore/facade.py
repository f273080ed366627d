"""``memcore.Memory``: the small library facade other agents import.

:class:`memcore.AsyncMemory` (in :mod:`memcore.async_facade`) is the same facade for asyncio
code; it runs these very methods off the event loop, so the two cannot drift apart.
"""

from __future__ import annotations

import builtins
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from memcore import limits
from memcore.config import MemcoreConfig
from memcore.discovery import open_store
from memcore.errors import InvalidInput, StoreClosed
from memcore.paging import every_item
from memcore.policies import ScopePolicy
from memcore.ports import MemoryStore
from memcore.scope import Scope, SessionContext, resolve_scope
from memcore.service import MemoryService
from memcore.values import (
    DreamAction,
    DreamTask,
    MemoryTask,
    Message,
    Page,
    SearchHit,
    WriteReceipt,
)
from memcore.values import Memory as MemoryUnit


class Memory:
    """Long-term memory for one agent session.

    >>> mem = Memory.open()                           # embedded SQLite store    # doctest: +SKIP
    >>> mem.add(text="The user likes coffee")                                    # doctest: +SKIP
    >>> mem.search("What does the user drink?")                                  # doctest: +SKIP
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        scope: Scope | None = None,
        store_name: str = "hermes_mem",
        policy: ScopePolicy | None = None,
        top_k: int = 5,
        enable_rerank: bool = True,
        ensure_store: bool = True,
    ) -> None:
        self.store = store
        self._closed = False
        if ensure_store:
            store.ensure_store(store_name)
        self._service = MemoryService(
            store,
            store_name=store_name,
            scope=scope or resolve_scope(SessionContext()),
            policy=policy,
            top_k=top_k,
            enable_rerank=enable_rerank,
        )

    @classmethod
    def open(
        cls,
        backend: str = "local",
        *,
        config: MemcoreConfig | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        **options: Any,
    ) -> Memory:
        """Open a backend by name (``local`` or ``tablestore``) and resolve the scope safely.

        ``user_id`` names the tenant exactly as given (``"alice "`` is not ``"alice"``); None
        means no user, the shared ``__default__`` tenant; an empty or whitespace-only id is
        :class:`InvalidInput` (:func:`memcore.scope.tenant_segment`, the rule every host uses).
        A configured ``tenant_id`` wins over ``user_id``.
        """
        cfg = config or MemcoreConfig()
        scope = resolve_scope(
            SessionContext(user_id=user_id, agent_identity=agent_id, session_id=run_id),
            app_id=cfg.app_id,
            tenant_id=cfg.tenant_id,
        )
        return cls(
            open_store(backend, cfg, **options),
            scope=scope,
            store_name=cfg.memory_store_name,
            top_k=cfg.top_k,
            enable_rerank=cfg.enable_rerank,
        )

    @property
    def service(self) -> MemoryService:
        """The service every call goes through; :class:`StoreClosed` once closed."""
        if self._closed:
            raise StoreClosed("this Memory is closed; open a new one", field="store")
        return self._service

    @property
    def scope(self) -> Scope:
        return self._service.scope

    @property
    def closed(self) -> bool:
        return self._closed

    def add(
        self,
        text: str | None = None,
        *,
        messages: Sequence[Message | Mapping[str, str]] | None = None,
        metadata: Mapping[str, str] | None = None,
        sync: bool = True,
    ) -> list[str]:
        """Remember ``text``, or a list of chat ``messages``; the ids of the memories written.

        A backend that indexes later (TableStore without ``sync``) may return no ids yet; use
        :meth:`add_receipts` to get the task ids instead.
        """
        receipts = self.add_receipts(text, messages=messages, metadata=metadata, sync=sync)
        return [memory_id for receipt in receipts for memory_id in receipt.memory_ids]

    def add_receipts(
        self,
        text: str | None = None,
        *,
        messages: Sequence[Message | Mapping[str, str]] | None = None,
        metadata: Mapping[str, str] | None = None,
        sync: bool = True,
    ) -> list[WriteReceipt]:
        """Like :meth:`add`, with the backend's receipts (task id, status, memory ids)."""
        if (text is None) == (messages is None):
            raise InvalidInput("give exactly one of text or messages", field="text")
        if text is not None:
            return [self.service.remember(text, metadata=metadata, sync=sync)]
        assert messages is not None
        msgs = [m if isinstance(m, Message) else _message(m, i) for i, m in enumerate(messages)]
        if metadata:
            meta = limits.check_metadata(metadata)
            msgs = [
                Message(
                    m.role, m.content, m.id, m.timestamp, limits.merge_metadata(meta, m.metadata)
                )
                for m in msgs
            ]
        return self.service.sync_turn("", "", messages=msgs, sync=sync)

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: Mapping[str, str] | None = None,
        enable_rerank: bool | None = None,
    ) -> list[SearchHit]:
        return self.service.search(query, top_k=top_k, filters=filters, enable_rerank=enable_rerank)

    def list(
        self, *, limit: int = 50, next_token: str | None = None, current_only: bool = False
    ) -> Page[MemoryUnit]:
        """A page of the user's memories; ``current_only`` leaves out those a dream pass
        marked as superseded (a page may then hold fewer than ``limit``)."""
        page = self.service.profile(limit=limit, next_token=next_token)
        return page.filter(lambda m: "superseded_by" not in m.extras) if current_only else page

    def dream(self, *, apply_mode: str = "safe_auto") -> DreamTask:
        """Consolidate the user's memories: merge repeats, let newer facts supersede older
        ones. ``safe_auto`` applies the confident actions (never a deletion); ``proposal``
        only proposes. On the local store this runs here; on TableStore, in the service."""
        return self.service.dream(apply_mode=apply_mode)

    def dream_task(self, task_id: str) -> DreamTask:
        """One of this user's dream tasks; another user's id is :class:`NotFound`, exactly
        as an id that does not exist."""
        return self.service.dream_task(task_id)

    def dream_tasks(
        self, *, limit: int = 50, next_token: str | None = None, status: str | None = None
    ) -> Page[DreamTask]:
        """A page of this user's dream tasks (never another user's)."""
        return self.service.dream_tasks(limit=limit, next_token=next_token, status=status)

    def dream_actions(self, task_id: str) -> builtins.list[DreamAction]:
        """Every action a dream task proposed, with its status, confidence and reason."""
        service = self.service
        return builtins.list(
            every_item(lambda token: service.dream_actions(task_id, limit=100, next_token=token))
        )

    def apply_dream_actions(
        self, task_id: str, action_ids: Sequence[str]
    ) -> builtins.list[DreamAction]:
        return self.service.apply_dream_actions(task_id, action_ids)

    def undo_dream_action(self, task_id: str, action_id: str) -> DreamAction:
        """Take back an applied action (the local store keeps undo records)."""
        return self.service.undo_dream_action(task_id, action_id)

    def cancel_dream_task(self, task_id: str) -> DreamTask:
        return self.service.cancel_dream_task(task_id)

    def task(self, task_id: str) -> MemoryTask:
        """The task of one of this user's writes (``add_receipts`` gives its id)."""
        return self.service.task(task_id)

    def iter_all(self, *, page_size: int = 100) -> Iterator[MemoryUnit]:
        return every_item(lambda token: self.list(limit=page_size, next_token=token))

    def get(self, memory_id: str) -> MemoryUnit:
        return self.service.get(memory_id)

    def update(
        self, memory_id: str, *, text: str | None = None, metadata: Mapping[str, str] | None = None
    ) -> MemoryUnit:
        return self.service.update(memory_id, text=text, metadata=metadata)

    def delete(self, memory_id: str) -> None:
        self.service.forget(memory_id)

    def close(self) -> None:
        """Close the store; later calls raise :class:`StoreClosed`. Closing twice is fine."""
        if not self._closed:
            self._closed = True
            self.store.close()

    def __enter__(self) -> Memory:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _message(data: Mapping[str, str], index: int) -> Message:
    if not isinstance(data, Mapping):
        raise InvalidInput(f"messages[{index}] must be an object", field=f"messages[{index}]")
    role, content = data.get("role"), data.get("content")
    if not isinstance(role, str) or not isinstance(content, str):
        raise InvalidInput(
            f"messages[{index}] needs string 'role' and 'content'", field=f"messages[{index}]"
        )
    return Message(role=role, content=content)
