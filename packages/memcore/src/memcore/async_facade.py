"""``memcore.AsyncMemory``: the library facade for agents that run in asyncio.

Every method awaits the matching :class:`memcore.Memory` method in a worker thread, so the
limits, the scope policy and the backend behave exactly as in the sync facade, and the event
loop never blocks on SQLite, the embedder or the network.
"""

from __future__ import annotations

import asyncio
import builtins
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from typing import Any, TypeVar

from memcore.facade import Memory
from memcore.paging import pages
from memcore.scope import Scope
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
    """Long-term memory for one agent session, awaitable.

    >>> async with await AsyncMemory.open(user_id="alice") as mem:  # doctest: +SKIP
    ...     ids = await mem.add(text="The user likes coffee")
    ...     hits = await mem.search("What does the user drink?")
    """

    def __init__(self, memory: Memory) -> None:
        self.sync = memory

    @classmethod
    async def open(cls, backend: str = "local", **options: Any) -> AsyncMemory:
        """:meth:`Memory.open` (same keywords and tenant rule), off the event loop: opening
        may create a file or call out."""
        return cls(await asyncio.to_thread(Memory.open, backend, **options))

    async def _run(self, call: Callable[..., T], *args: Any, **kwargs: Any) -> T:
        return await asyncio.to_thread(call, *args, **kwargs)

    @property
    def scope(self) -> Scope:
        return self.sync.scope

    @property
    def closed(self) -> bool:
        return self.sync.closed

    async def add(
        self,
        text: str | None = None,
        *,
        messages: Sequence[Message | Mapping[str, str]] | None = None,
        metadata: Mapping[str, str] | None = None,
        sync: bool = True,
    ) -> list[str]:
        return await self._run(self.sync.add, text, messages=messages, metadata=metadata, sync=sync)

    async def add_receipts(
        self,
        text: str | None = None,
        *,
        messages: Sequence[Message | Mapping[str, str]] | None = None,
        metadata: Mapping[str, str] | None = None,
        sync: bool = True,
    ) -> list[WriteReceipt]:
        return await self._run(
            self.sync.add_receipts, text, messages=messages, metadata=metadata, sync=sync
        )

    async def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        filters: Mapping[str, str] | None = None,
        enable_rerank: bool | None = None,
    ) -> list[SearchHit]:
        return await self._run(
            self.sync.search, query, top_k=top_k, filters=filters, enable_rerank=enable_rerank
        )

    async def list(self, *, limit: int = 50, next_token: str | None = None) -> Page[MemoryUnit]:
        return await self._run(self.sync.list, limit=limit, next_token=next_token)

    async def iter_all(self, *, page_size: int = 100) -> AsyncIterator[MemoryUnit]:
        """Every memory in reach: the sync listing (with its paging guards), a page per
        worker-thread call."""
        listing = pages(lambda token: self.sync.list(limit=page_size, next_token=token))
        while (page := await self._run(next, listing, None)) is not None:
            for memory in page.items:
                yield memory

    async def get(self, memory_id: str) -> MemoryUnit:
        return await self._run(self.sync.get, memory_id)

    async def update(
        self, memory_id: str, *, text: str | None = None, metadata: Mapping[str, str] | None = None
    ) -> MemoryUnit:
        return await self._run(self.sync.update, memory_id, text=text, metadata=metadata)

    async def delete(self, memory_id: str) -> None:
        await self._run(self.sync.delete, memory_id)

    async def dream(self, *, apply_mode: str = "safe_auto") -> DreamTask:
        return await self._run(self.sync.dream, apply_mode=apply_mode)

    async def dream_task(self, task_id: str) -> DreamTask:
        return await self._run(self.sync.dream_task, task_id)

    async def dream_tasks(
        self, *, limit: int = 50, next_token: str | None = None, status: str | None = None
    ) -> Page[DreamTask]:
        return await self._run(
            self.sync.dream_tasks, limit=limit, next_token=next_token, status=status
        )

    async def dream_actions(self, task_id: str) -> builtins.list[DreamAction]:
        return await self._run(self.sync.dream_actions, task_id)

    async def apply_dream_actions(
        self, task_id: str, action_ids: Sequence[str]
    ) -> builtins.list[DreamAction]:
        return await self._run(self.sync.apply_dream_actions, task_id, action_ids)

    async def undo_dream_action(self, task_id: str, action_id: str) -> DreamAction:
        return await self._run(self.sync.undo_dream_action, task_id, action_id)

    async def cancel_dream_task(self, task_id: str) -> DreamTask:
        return await self._run(self.sync.cancel_dream_task, task_id)

    async def task(self, task_id: str) -> MemoryTask:
        return await self._run(self.sync.task, task_id)

    async def close(self) -> None:
        await self._run(self.sync.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
