"""``AsyncTableStoreMemoryStore``: the same operations over ``AsyncOTSClient`` (aiohttp).

Only the sending and the waiting differ from :class:`TableStoreMemoryStore`; the operations,
requests, parsing and retry rules come from :mod:`memcore_tablestore.stores.base` and
:mod:`memcore_tablestore.protocol.plans`.
"""

from __future__ import annotations

import asyncio
import time
from typing import Any, ClassVar, TypeVar, cast

import tenacity

from memcore.errors import MemcoreError
from memcore_tablestore.client import agent_storage
from memcore_tablestore.client.driver import classify, settle
from memcore_tablestore.client.error_map import Failure
from memcore_tablestore.client.retry import retry_arguments
from memcore_tablestore.protocol.apis import SDK_METHODS
from memcore_tablestore.protocol.plans import Call, Pause, Plan
from memcore_tablestore.stores.base import BaseStore

T = TypeVar("T")


class AsyncTableStoreMemoryStore(BaseStore):
    """Every ``MemoryStore`` method as a coroutine; use it from one event loop, then ``await
    close()``. Concurrency comes from the caller (``asyncio.gather``), bounded by the pool.

    With an :class:`ApiKey` the calls go through the vendor's synchronous
    ``tablestore-agent-storage`` client, each in a worker thread (``asyncio.to_thread``)."""

    awaits: ClassVar[bool] = True

    def _connect(self, max_connections: int | None) -> Any:
        from tablestore import AsyncOTSClient

        return self._settings.client(
            AsyncOTSClient,
            asynchronous=True,
            max_connection=100 if max_connections is None else max_connections,
        )

    # -- driving plans ------------------------------------------------------------------
    async def _run(self, plan: Plan[T]) -> T:
        self._check_open()
        answer: Any = None
        error: MemcoreError | None = None
        while True:
            try:
                step = plan.send(answer) if error is None else plan.throw(error)
            except StopIteration as stop:
                return cast(T, stop.value)
            answer, error = None, None
            if isinstance(step, Pause):
                await asyncio.sleep(step.seconds)
                continue
            try:
                answer = await self._execute(step)
            except MemcoreError as exc:
                error = exc

    async def _attempt(self, call: Call) -> dict[str, Any]:
        send = getattr(self._sdk_client(), SDK_METHODS[call.api])
        try:
            if self._settings.api_key:
                raw = await asyncio.to_thread(send, call.body)
            else:
                raw = await send(call.body)
        except Exception as exc:
            failure = classify(
                call, exc, endpoint=self._settings.endpoint, secrets=self._settings.secrets
            )
            raise failure from failure.__cause__
        return settle(call, raw)

    async def _execute(self, call: Call) -> dict[str, Any]:
        started = time.monotonic()
        try:
            return await self._attempt(call)
        except Failure as failure:
            pause, deadline = self._retry_after(call, failure, started)
        await asyncio.sleep(pause)
        budget = deadline - time.monotonic()
        try:
            async for attempt in tenacity.AsyncRetrying(**retry_arguments(call, budget)):
                with attempt:
                    return await self._attempt(call)
        except Failure as failure:
            raise failure.error from failure.__cause__
        raise AssertionError("unreachable")  # pragma: no cover

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._settings.api_key:
            agent_storage.release(self._client)
            return
        if self._client is not None:  # None: a forked child that never called
            await self._client.close()

    async def __aenter__(self) -> AsyncTableStoreMemoryStore:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
