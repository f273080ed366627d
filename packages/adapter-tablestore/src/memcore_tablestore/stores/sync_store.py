"""``TableStoreMemoryStore``: the ``MemoryStore`` port over the official ``OTSClient``."""

from __future__ import annotations

import functools
import time
from typing import Any

import tenacity

from memcore.errors import InvalidInput, MemcoreError
from memcore_tablestore.client import agent_storage
from memcore_tablestore.client.driver import (
    CONNECT_TIMEOUT,
    SDK_METHODS,
    Settings,
    classify,
    make_plans,
    settle,
)
from memcore_tablestore.client.error_map import Failure
from memcore_tablestore.client.retry import first_backoff, retry_arguments, should_retry
from memcore_tablestore.credentials import ApiKey, Credentials
from memcore_tablestore.protocol.plans import Call, Pause, Plan, Plans


def _operation(name: str) -> Any:
    plan_fn = getattr(Plans, name)

    @functools.wraps(plan_fn)
    def method(self: TableStoreMemoryStore, *args: Any, **kwargs: Any) -> Any:
        return self._run(plan_fn(self._plans, *args, **kwargs))

    return method


class TableStoreMemoryStore:
    """Memory Store over ``tablestore.OTSClient`` (HTTP JSON, signed, pooled connections), or
    over the vendor's ``tablestore-agent-storage`` client when ``credentials`` is an
    :class:`ApiKey` (HTTPS only, plain HTTP to loopback only).

    ``timeout`` bounds each socket operation and the whole retry sequence of one call;
    ``connect_timeout`` bounds opening a connection, and retrying an endpoint that cannot be
    reached at all (the error then names it).
    ``retry=False`` turns retries off (the first failure is raised).
    """

    def __init__(
        self,
        endpoint: str,
        instance_name: str,
        credentials: Credentials | ApiKey,
        *,
        timeout: float = 30.0,
        connect_timeout: float = CONNECT_TIMEOUT,
        region: str | None = None,
        retry: bool = True,
        auto_create: bool = True,
        ready_timeout: float = 180.0,
    ) -> None:
        from tablestore import OTSClient

        self._settings = Settings(
            endpoint,
            instance_name,
            credentials,
            timeout=timeout,
            region=region,
            retry=retry,
            connect_timeout=connect_timeout,
        )
        self._plans = make_plans(auto_create=auto_create, ready_timeout=ready_timeout)
        self._client = self._settings.client(OTSClient)
        self._closed = False

    def __repr__(self) -> str:
        return f"TableStoreMemoryStore({self._settings!r})"

    # -- driving plans ------------------------------------------------------------------
    def _run(self, plan: Plan[Any]) -> Any:
        if self._closed:
            raise MemcoreError("this TableStoreMemoryStore is closed")
        answer: Any = None
        error: MemcoreError | None = None
        while True:
            try:
                step = plan.send(answer) if error is None else plan.throw(error)
            except StopIteration as stop:
                return stop.value
            answer, error = None, None
            if isinstance(step, Pause):
                time.sleep(step.seconds)
                continue
            try:
                answer = self._execute(step)
            except MemcoreError as exc:
                error = exc

    def _attempt(self, call: Call) -> dict[str, Any]:
        send = getattr(self._client, SDK_METHODS[call.api])
        try:
            raw = send(call.body)
        except Exception as exc:
            raise classify(call, exc, endpoint=self._settings.endpoint) from exc
        return settle(call, raw)

    def _execute(self, call: Call) -> dict[str, Any]:
        started = time.monotonic()
        try:
            # The common case takes one attempt and pays nothing for the retry machinery.
            return self._attempt(call)
        except Failure as failure:
            if not (self._settings.retry and should_retry(call, failure)):
                raise failure.error from failure.__cause__
            pause = first_backoff()
            limit = self._settings.budget(failure)
            if time.monotonic() - started + pause >= limit:
                raise failure.error from failure.__cause__
        time.sleep(pause)
        budget = limit - (time.monotonic() - started)
        try:
            for attempt in tenacity.Retrying(**retry_arguments(call, budget)):
                with attempt:
                    return self._attempt(call)
        except Failure as failure:
            raise failure.error from failure.__cause__
        raise AssertionError("unreachable")  # pragma: no cover

    def call_read_only(self, api: str, body: dict[str, Any]) -> dict[str, Any]:
        """One read-only API call, answered as the SDK returns it (for the live check)."""
        from memcore_tablestore.live_check import READ_ONLY

        if api not in READ_ONLY:
            raise InvalidInput(f"{api} is not a read-only Memory Store API", field="api")
        if self._closed:
            raise MemcoreError("this store is closed")
        return self._execute(Call(api, dict(body)))

    # -- the port -----------------------------------------------------------------------
    ensure_store = _operation("ensure_store")
    describe_store = _operation("describe_store")
    list_stores = _operation("list_stores")
    create_store = _operation("create_store")
    update_store = _operation("update_store")
    delete_store = _operation("delete_store")
    add_text = _operation("add_text")
    add_messages = _operation("add_messages")
    search = _operation("search")
    list_memories = _operation("list_memories")
    get_memory = _operation("get_memory")
    update_memory = _operation("update_memory")
    delete_memory = _operation("delete_memory")
    list_messages = _operation("list_messages")
    list_requests = _operation("list_requests")
    list_scopes = _operation("list_scopes")
    get_task = _operation("get_task")
    list_tasks = _operation("list_tasks")
    create_dream_task = _operation("create_dream_task")
    get_dream_task = _operation("get_dream_task")
    list_dream_tasks = _operation("list_dream_tasks")
    cancel_dream_task = _operation("cancel_dream_task")
    list_dream_actions = _operation("list_dream_actions")
    apply_dream_actions = _operation("apply_dream_actions")

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
