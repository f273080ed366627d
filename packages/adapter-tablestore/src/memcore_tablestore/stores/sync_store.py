"""``TableStoreMemoryStore``: the ``MemoryStore`` port over the official ``OTSClient``."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, TypeVar, cast

import tenacity

from memcore.errors import MemcoreError
from memcore.ports import MemoryStore
from memcore_tablestore.client import agent_storage
from memcore_tablestore.client.driver import classify, settle
from memcore_tablestore.client.error_map import Failure
from memcore_tablestore.client.retry import retry_arguments
from memcore_tablestore.protocol.apis import SDK_METHODS
from memcore_tablestore.protocol.plans import Call, Pause, Plan
from memcore_tablestore.stores.base import BaseStore

T = TypeVar("T")


class TableStoreMemoryStore(BaseStore):
    """Memory Store over ``tablestore.OTSClient`` (HTTP JSON, signed, pooled connections), or
    over the vendor's ``tablestore-agent-storage`` client when ``credentials`` is an
    :class:`ApiKey` (HTTPS only, plain HTTP to loopback only). The constructor's parameters
    are :class:`~memcore_tablestore.stores.base.BaseStore`'s.
    """

    def _connect(self, max_connections: int | None) -> Any:
        from tablestore import OTSClient

        if max_connections is None:
            return self._settings.client(OTSClient)
        return self._settings.client(OTSClient, max_connection=max_connections)

    # -- driving plans ------------------------------------------------------------------
    def _run(self, plan: Plan[T]) -> T:
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
                time.sleep(step.seconds)
                continue
            try:
                answer = self._execute(step)
            except MemcoreError as exc:
                error = exc

    def _attempt(self, call: Call) -> dict[str, Any]:
        send = getattr(self._sdk_client(), SDK_METHODS[call.api])
        try:
            raw = send(call.body)
        except Exception as exc:
            failure = classify(
                call, exc, endpoint=self._settings.endpoint, secrets=self._settings.secrets
            )
            raise failure from failure.__cause__
        return settle(call, raw)

    def _execute(self, call: Call) -> dict[str, Any]:
        started = time.monotonic()
        try:
            # The common case takes one attempt and pays nothing for the retry machinery.
            return self._attempt(call)
        except Failure as failure:
            pause, deadline = self._retry_after(call, failure, started)
        time.sleep(pause)
        try:
            for attempt in tenacity.Retrying(**retry_arguments(call, deadline - time.monotonic())):
                with attempt:
                    return self._attempt(call)
        except Failure as failure:
            raise failure.error from failure.__cause__
        raise AssertionError("unreachable")  # pragma: no cover

    def close(self) -> None:
        """Release pooled connections; later calls raise."""
        if self._closed:
            return
        self._closed = True
        if self._settings.api_key:
            agent_storage.release(self._client)
            return
        pool = getattr(getattr(self._client, "connection", None), "pool", None)
        if pool is not None:
            pool.clear()

    def __enter__(self) -> TableStoreMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if TYPE_CHECKING:

    def _is_the_port(store: TableStoreMemoryStore) -> MemoryStore:
        """mypy checks here that every port method is present and typed as the port says."""
        return store
