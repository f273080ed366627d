"""``memcore.AsyncMemory``: the library facade for agents that run in asyncio.

Every method awaits the matching :class:`memcore.Memory` method in a worker thread, so the
limits, the scope policy, the per-call identity and the backend behave exactly as in the sync
facade, and the event loop never blocks on SQLite, the embedder or the network. A test
compares the two classes' methods and signatures, so they cannot drift apart.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeVar

from memcore.config import MemcoreConfig
from memcore.facade import Memory
from memcore.paging import pages
from memcore.policies import ReadPolicy, ScopePolicy
from memcore.scope import Scope
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

T = TypeVar("T")


class AsyncMemory:
    """Long-term memory for the users of one app, awaitable.

    >>> async with await AsyncMemory.open(user_id="alice") as mem:  # doctest: +SKIP
    ...     ids = await mem.add(text="The user likes coffee")
    ...     hits = await mem.search("What does the user drink?", user_id="bob")
    """

    def __init__(self, memory: Memory) -> None:
        self.sync = memory

    @classmethod
    async def open(
        cls,
        backend: str = "local",
        *,
        config: MemcoreConfig | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
        policy: ScopePolicy | ReadPolicy | None = None,
        **options: Any,
    ) -> AsyncMemory:
        """:meth:`Memory.open` (same keywords and tenant rule), off the event loop: opening
        may create a file or call out.

        >>> mem = await AsyncMemory.open("local", user_id="alice")               # doctest: +SKIP
        """
        memory = await asyncio.to_thread(
            Memory.open,
            backend,
            config=config,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
            policy=policy,
            **options,
        )
        return cls(memory)

    async def _run(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(call, *args, **kwargs)

    @property
    def service(self) -> MemoryService:
        """The service for the default identity (:attr:`Memory.service`)."""
        return self.sync.service

    @property
    def scope(self) -> Scope:
        """The default scope calls without an identity use."""
        return self.sync.scope

    @property
    def closed(self) -> bool:
        """Whether :meth:`close` was called."""
        return self.sync.closed

    def scope_for(
        self, *, user_id: str | None = None, agent_id: str | None = None, run_id: str | None = None
    ) -> Scope:
        """:meth:`Memory.scope_for` (no I/O, so not awaited).

        >>> mem.scope_for(user_id="bob").tenant_id                               # doctest: +SKIP
        'bob'
        """
        return self.sync.scope_for(user_id=user_id, agent_id=agent_id, run_id=run_id)

    async def add(
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
        """Remember ``text`` or chat ``messages`` (:meth:`Memory.add`).

        >>> ids = await mem.add(text="The user likes coffee", user_id="alice")   # doctest: +SKIP
        """
        return await self._run(
            self.sync.add,
            text,
            messages=messages,
            metadata=metadata,
            sync=sync,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )

    async def add_receipts(
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
        """:meth:`Memory.add_receipts`: the backend's receipts.

        >>> [receipt] = await mem.add_receipts(text="The user likes tea")        # doctest: +SKIP
        """
        return await self._run(
            self.sync.add_receipts,
            text,
            messages=messages,
            metadata=metadata,
            sync=sync,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )

    async def search(
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
    ) -> builtins.list[SearchHit]:
        """:meth:`Memory.search`: the most relevant memories, best first.

        >>> hits = await mem.search("drinks", user_id="alice", min_similarity=0.3)  # doctest: +SKIP
        """
        return await self._run(
            self.sync.search,
            query,
            top_k=top_k,
            filters=filters,
            min_similarity=min_similarity,
            enable_rerank=enable_rerank,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )

    async def list(
        self,
        *,
        limit: int = 50,
        next_token: str | None = None,
        all_versions: bool = False,
        current_only: bool | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Page[MemoryUnit]:
        """:meth:`Memory.list`: a page of current memories (``all_versions`` for every one).

        >>> page = await mem.list(user_id="alice", limit=20)                     # doctest: +SKIP
        """
        return await self._run(
            self.sync.list,
            limit=limit,
            next_token=next_token,
            all_versions=all_versions,
            current_only=current_only,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )

    async def iter_all(
        self,
        *,
        page_size: int = 100,
        all_versions: bool = False,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> AsyncIterator[MemoryUnit]:
        """Every memory :meth:`list` would show: the sync listing (with its paging guards),
        a page per worker-thread call.

        >>> texts = [m.text async for m in mem.iter_all(user_id="alice")]        # doctest: +SKIP
        """
        memory = self.sync

        def fetch(token: str | None) -> Page[MemoryUnit]:
            return memory.list(
                limit=page_size,
                next_token=token,
                all_versions=all_versions,
                user_id=user_id,
                agent_id=agent_id,
                run_id=run_id,
            )

        listing = pages(fetch)
        while (page := await self._run(next, listing, None)) is not None:
            for item in page.items:
                yield item

    async def get(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryUnit:
        """:meth:`Memory.get`: one memory of the user's tenant.

        >>> memory = await mem.get("5f0c2a1e...", user_id="alice")               # doctest: +SKIP
        """
        return await self._run(
            self.sync.get, memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id
        )

    async def history(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> builtins.list[MemoryUnit]:
        """:meth:`Memory.history`: versions and supersessions, oldest first.

        >>> versions = await mem.history("5f0c2a1e...", user_id="alice")         # doctest: +SKIP
        """
        return await self._run(
            self.sync.history, memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id
        )

    async def update(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryUnit:
        """:meth:`Memory.update`: new text, merged metadata.

        >>> await mem.update("5f0c2a1e...", text="The user likes espresso")      # doctest: +SKIP
        """
        return await self._run(
            self.sync.update,
            memory_id,
            text=text,
            metadata=metadata,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )

    async def delete(
        self,
        memory_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> None:
        """:meth:`Memory.delete`: one memory of the user's tenant.

        >>> await mem.delete("5f0c2a1e...", user_id="alice")                     # doctest: +SKIP
        """
        return await self._run(
            self.sync.delete, memory_id, user_id=user_id, agent_id=agent_id, run_id=run_id
        )

    async def delete_all(
        self,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> int:
        """:meth:`Memory.delete_all`: every memory of the user's tenant; the count.

        >>> await mem.delete_all(user_id="alice")                                # doctest: +SKIP
        """
        return await self._run(
            self.sync.delete_all, user_id=user_id, agent_id=agent_id, run_id=run_id
        )

    async def dream(
        self,
        *,
        apply_mode: str = "safe_auto",
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> DreamTask:
        """:meth:`Memory.dream`: consolidate the user's memories.

        >>> task = await mem.dream(apply_mode="proposal", user_id="alice")       # doctest: +SKIP
        """
        return await self._run(
            self.sync.dream,
            apply_mode=apply_mode,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )

    async def dream_task(
        self,
        task_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> DreamTask:
        """:meth:`Memory.dream_task`: one of the user's dream tasks.

        >>> (await mem.dream_task(task.id, user_id="alice")).status              # doctest: +SKIP
        """
        return await self._run(
            self.sync.dream_task, task_id, user_id=user_id, agent_id=agent_id, run_id=run_id
        )

    async def dream_tasks(
        self,
        *,
        limit: int = 50,
        next_token: str | None = None,
        status: str | None = None,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> Page[DreamTask]:
        """:meth:`Memory.dream_tasks`: a page of the user's dream tasks.

        >>> page = await mem.dream_tasks(user_id="alice")                        # doctest: +SKIP
        """
        return await self._run(
            self.sync.dream_tasks,
            limit=limit,
            next_token=next_token,
            status=status,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )

    async def dream_actions(
        self,
        task_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> builtins.list[DreamAction]:
        """:meth:`Memory.dream_actions`: what a dream task proposed.

        >>> actions = await mem.dream_actions(task.id, user_id="alice")          # doctest: +SKIP
        """
        return await self._run(
            self.sync.dream_actions, task_id, user_id=user_id, agent_id=agent_id, run_id=run_id
        )

    async def apply_dream_actions(
        self,
        task_id: str,
        action_ids: Sequence[str],
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> builtins.list[DreamAction]:
        """:meth:`Memory.apply_dream_actions`: apply proposed actions.

        >>> await mem.apply_dream_actions(task.id, [action.id], user_id="alice") # doctest: +SKIP
        """
        return await self._run(
            self.sync.apply_dream_actions,
            task_id,
            action_ids,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )

    async def undo_dream_action(
        self,
        task_id: str,
        action_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> DreamAction:
        """:meth:`Memory.undo_dream_action`: take back an applied action.

        >>> await mem.undo_dream_action(task.id, action.id)                      # doctest: +SKIP
        """
        return await self._run(
            self.sync.undo_dream_action,
            task_id,
            action_id,
            user_id=user_id,
            agent_id=agent_id,
            run_id=run_id,
        )

    async def cancel_dream_task(
        self,
        task_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> DreamTask:
        """:meth:`Memory.cancel_dream_task`: cancel an unfinished dream task.

        >>> await mem.cancel_dream_task(task.id)                                 # doctest: +SKIP
        """
        return await self._run(
            self.sync.cancel_dream_task, task_id, user_id=user_id, agent_id=agent_id, run_id=run_id
        )

    async def task(
        self,
        task_id: str,
        *,
        user_id: str | None = None,
        agent_id: str | None = None,
        run_id: str | None = None,
    ) -> MemoryTask:
        """:meth:`Memory.task`: the task of one of the user's writes.

        >>> (await mem.task(receipt.task_id)).status                             # doctest: +SKIP
        """
        return await self._run(
            self.sync.task, task_id, user_id=user_id, agent_id=agent_id, run_id=run_id
        )

    async def close(self) -> None:
        """:meth:`Memory.close`: the store closes only when this object opened it.

        >>> await mem.close()                                                    # doctest: +SKIP
        """
        await self._run(self.sync.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
