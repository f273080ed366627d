"""What both stores share: settings, plans, the closed flag, and the port's operations, each
declared once by its plan. The twins add only how a call is sent and how they wait.

An :class:`Operation` is typed from its plan: on :class:`TableStoreMemoryStore` ``search``
is ``(store, pattern, query, ...) -> list[SearchHit]``, on :class:`AsyncTableStoreMemoryStore`
the same parameters give a coroutine of ``list[SearchHit]``.
"""

from __future__ import annotations

import functools
import os
import threading
import time
import weakref
from collections.abc import Callable, Coroutine
from types import MethodType
from typing import Any, ClassVar, Concatenate, Generic, ParamSpec, Protocol, TypeVar, overload

from memcore.errors import StoreClosed
from memcore_tablestore.client.driver import CONNECT_TIMEOUT, Settings, make_plans
from memcore_tablestore.client.error_map import Failure
from memcore_tablestore.client.retry import first_backoff, should_retry
from memcore_tablestore.credentials import ApiKey, Credentials
from memcore_tablestore.protocol.plans import Call, Plan, Plans

P = ParamSpec("P")
T = TypeVar("T")
R = TypeVar("R")


class _Runs(Protocol):
    """A store whose operations return their value."""

    _plans: Plans

    def _run(self, plan: Plan[R]) -> R: ...


class _Awaits(Protocol):
    """A store whose operations are coroutines."""

    _plans: Plans

    def _run(self, plan: Plan[R]) -> Coroutine[Any, Any, R]: ...


class Operation(Generic[P, T]):
    """A port method made from the plan of the same name: a method on a store that runs
    plans, a coroutine method on one that awaits them (``awaits = True``)."""

    def __init__(self, plan: Callable[Concatenate[Plans, P], Plan[T]]) -> None:
        self.plan = plan

        @functools.wraps(plan)
        def runs(store: _Runs, /, *args: P.args, **kwargs: P.kwargs) -> T:
            return store._run(plan(store._plans, *args, **kwargs))

        @functools.wraps(plan)
        async def awaits(store: _Awaits, /, *args: P.args, **kwargs: P.kwargs) -> T:
            return await store._run(plan(store._plans, *args, **kwargs))

        self._runs = runs
        self._awaits = awaits

    def __set_name__(self, owner: type[Any], name: str) -> None:
        if name != self.plan.__name__:
            raise TypeError(f"{owner.__name__}.{name} is declared with plan {self.plan.__name__}")

    @overload
    def __get__(self, store: None, owner: type[Any] | None = None) -> Operation[P, T]: ...
    @overload
    def __get__(self, store: _Runs, owner: type[Any] | None = None) -> Callable[P, T]: ...
    @overload
    def __get__(
        self, store: _Awaits, owner: type[Any] | None = None
    ) -> Callable[P, Coroutine[Any, Any, T]]: ...
    def __get__(self, store: object, owner: type[Any] | None = None) -> object:
        if store is None:
            return self
        method = self._awaits if getattr(store, "awaits", False) else self._runs
        return MethodType(method, store)


#: Every store alive in this process, for :func:`_after_fork_in_child`.
_STORES: weakref.WeakSet[BaseStore] = weakref.WeakSet()
#: SDK clients inherited over a fork: never used or closed in the child, only kept alive. Their
#: sockets are the parent's too; an aiohttp session collected here would take them out of the
#: parent's event loop (its epoll set is shared with the child).
_INHERITED: list[Any] = []


def _after_fork_in_child() -> None:
    """In a forked child, every store drops the parent's client: the next call builds one of
    its own. Two processes on one pooled connection write into one socket and read each
    other's answers. Runs before any other thread of the child exists, so it takes no lock."""
    for store in list(_STORES):
        store._leave_client_to_parent()


os.register_at_fork(after_in_child=_after_fork_in_child)


class BaseStore:
    """The constructor, settings, plans and the operations of
    :class:`memcore.ports.MemoryStore`; a twin adds ``_connect`` (its SDK client), ``_run``
    (drive one plan) and ``close``.

    ``timeout`` bounds each socket operation and the whole retry sequence of one call;
    ``connect_timeout`` bounds opening a connection, and retrying an endpoint that cannot be
    reached at all (the error then names it). ``retry=False`` turns retries off (the first
    failure is raised). ``auto_create`` lets ``ensure_store`` create a missing store;
    ``ready_timeout`` bounds the wait for a new store's index. ``max_connections`` sizes the
    connection pool (None: the SDK's default for the sync client, 100 for the async one).

    A store crosses a ``fork``: in a forked child its first call builds a client of its own,
    with the same settings; the parent's connections stay the parent's.
    """

    #: Whether the operations are coroutines (the store's ``_run`` is).
    awaits: ClassVar[bool] = False
    #: SearchMemories has no field for the question's date: it is checked, not sent
    #: (:meth:`memcore_tablestore.protocol.plans.Plans.search`). Both twins inherit this.
    supports_reference_time = False

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
        max_connections: int | None = None,
    ) -> None:
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
        self._closed = False
        self._max_connections = max_connections
        self._client_lock = threading.Lock()
        #: None only in a forked child until its first call (:meth:`_sdk_client`).
        self._client: Any = self._connect(max_connections)
        _STORES.add(self)

    def _connect(self, max_connections: int | None) -> Any:
        """The SDK client the twin sends its calls with."""
        raise NotImplementedError

    def _sdk_client(self) -> Any:
        """This process's SDK client: the one built by the constructor, or in a forked child
        one built on its first call (one attribute test per call otherwise)."""
        client = self._client
        if client is not None:
            return client
        with self._client_lock:
            if self._client is None:
                self._check_open()
                self._client = self._connect(self._max_connections)
            return self._client

    def _leave_client_to_parent(self) -> None:
        """After a fork, in the child: forget the parent's client without closing it."""
        if self._client is not None:
            _INHERITED.append(self._client)
        self._client = None
        self._client_lock = threading.Lock()  # a parent's thread may have held it

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._settings!r})"

    def _check_open(self) -> None:
        if self._closed:
            raise StoreClosed(f"this {type(self).__name__} is closed", field="store")

    def _retry_after(self, call: Call, failure: Failure, started: float) -> tuple[float, float]:
        """After a first attempt failed: the pause before the next one and the ``monotonic``
        time the retries must end by, or the failure's error when it is not to be retried."""
        if not (self._settings.retry and should_retry(call, failure)):
            raise failure.error from failure.__cause__
        pause = first_backoff()
        limit = self._settings.budget(failure)
        if time.monotonic() - started + pause >= limit:
            raise failure.error from failure.__cause__
        return pause, started + limit

    # -- the port -----------------------------------------------------------------------
    ensure_store = Operation(Plans.ensure_store)
    describe_store = Operation(Plans.describe_store)
    list_stores = Operation(Plans.list_stores)
    create_store = Operation(Plans.create_store)
    update_store = Operation(Plans.update_store)
    delete_store = Operation(Plans.delete_store)
    add_text = Operation(Plans.add_text)
    add_messages = Operation(Plans.add_messages)
    search = Operation(Plans.search)
    list_memories = Operation(Plans.list_memories)
    get_memory = Operation(Plans.get_memory)
    update_memory = Operation(Plans.update_memory)
    delete_memory = Operation(Plans.delete_memory)
    list_messages = Operation(Plans.list_messages)
    list_requests = Operation(Plans.list_requests)
    list_scopes = Operation(Plans.list_scopes)
    get_task = Operation(Plans.get_task)
    list_tasks = Operation(Plans.list_tasks)
    create_dream_task = Operation(Plans.create_dream_task)
    get_dream_task = Operation(Plans.get_dream_task)
    list_dream_tasks = Operation(Plans.list_dream_tasks)
    cancel_dream_task = Operation(Plans.cancel_dream_task)
    list_dream_actions = Operation(Plans.list_dream_actions)
    apply_dream_actions = Operation(Plans.apply_dream_actions)
    #: Not a port method: one read-only API, answered as sent (for ``doctor --live``).
    call_read_only = Operation(Plans.call_read_only)
