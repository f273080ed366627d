"""``memcore.AsyncMemory``: the library facade for agents that run in asyncio.

Every method awaits the matching :class:`memcore.Memory` method in a worker thread, so the
limits, the scope policy, the per-call identity and the backend behave exactly as in the sync
facade, and the event loop never blocks on SQLite, the embedder or the network. The methods
are derived from the sync ones (:func:`_off_loop`): one declaration, whose signature mypy and
``help()`` see on both classes, so the two cannot drift apart. Only the properties are
written here.
"""

from __future__ import annotations

import asyncio
import builtins
import contextlib
import functools
import inspect
import itertools
from collections.abc import AsyncIterator, Callable, Coroutine, Iterator
from typing import Any, Concatenate, ParamSpec, TypeVar, cast

from memcore.errors import InvalidInput
from memcore.facade import Memory
from memcore.scope import Scope
from memcore.service import MemoryService

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")


def _twin(method: Callable[..., object], run: Callable[..., object], how: str) -> None:
    """Give ``run`` the name, signature (``__wrapped__``) and docstring of the sync
    ``method``, so ``help()``, ``inspect.signature`` and the surface test see one
    declaration. ``how`` opens the docstring; ``{name}`` is the method's name."""
    functools.update_wrapper(run, method, assigned=("__name__", "__annotations__"))
    run.__qualname__ = f"AsyncMemory.{method.__name__}"
    own = inspect.cleandoc(method.__doc__ or "")
    run.__doc__ = how.format(name=method.__name__) + "\n\n" + own


def _off_loop(
    method: Callable[Concatenate[Memory, P], R],
) -> Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, R]]:
    """The awaitable twin of a :class:`Memory` method: the same call, in a worker thread."""
    name = method.__name__

    async def run(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        # Looked up on the instance, as a call on the sync Memory would be.
        call = cast(Callable[P, R], getattr(self.sync, name))
        return await asyncio.to_thread(call, *args, **kwargs)

    _twin(method, run, ":meth:`Memory.{name}`, awaited: it runs in a worker thread.")
    return run


def _write_off_loop(
    method: Callable[Concatenate[Memory, P], R],
) -> Callable[Concatenate[AsyncMemory, P], Coroutine[Any, Any, R]]:
    """:func:`_off_loop` for a call that writes. A thread cannot be stopped, so a cancelled
    write still waits for its call to end, however often it is cancelled: when the
    ``CancelledError`` arrives, the write has landed or not, and a read then sees which (it
    never lands after the caller gave up)."""
    name = method.__name__

    async def run(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        call = cast(Callable[P, R], getattr(self.sync, name))
        work = asyncio.ensure_future(asyncio.to_thread(call, *args, **kwargs))
        try:
            return await asyncio.shield(work)
        except asyncio.CancelledError:
            while not work.done():
                # A later cancel (an outer timeout, a task group closing) waits too: raised
                # now, the write would land after it, with no one told.
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.wait([work])
            if not work.cancelled():
                work.exception()  # retrieved: the caller cancelled, so it is not raised
            raise

    _twin(
        method,
        run,
        ":meth:`Memory.{name}`, awaited: it runs in a worker thread; cancelled, it waits for "
        "that call to end, so the write has landed or not when the cancel is raised.",
    )
    return run


def _items_off_loop(
    method: Callable[Concatenate[Memory, P], Iterator[T]],
) -> Callable[Concatenate[AsyncMemory, P], AsyncIterator[T]]:
    """The async-iterator twin of a :class:`Memory` method that returns an iterator over
    pages: the sync iterator (with its paging guards), ``page_size`` items per worker-thread
    call, so a page is fetched in the thread and never on the event loop."""
    name = method.__name__

    async def run(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> AsyncIterator[T]:
        call = cast(Callable[P, Iterator[T]], getattr(self.sync, name))
        items = await asyncio.to_thread(call, *args, **kwargs)
        size = kwargs.get("page_size", 100)
        batch = size if isinstance(size, int) and size > 0 else 100
        while chunk := await asyncio.to_thread(_take, items, batch):
            for item in chunk:
                yield item

    _twin(method, run, ":meth:`Memory.{name}` as an async iterator: pages load in a worker thread.")
    return run


def _take(items: Iterator[T], n: int) -> builtins.list[T]:
    return builtins.list(itertools.islice(items, n))


def _same(method: Callable[Concatenate[Memory, P], R]) -> Callable[Concatenate[AsyncMemory, P], R]:
    """A :class:`Memory` method that does no I/O, so is not awaited."""
    name = method.__name__

    def run(self: AsyncMemory, /, *args: P.args, **kwargs: P.kwargs) -> R:
        call = cast(Callable[P, R], getattr(self.sync, name))
        return call(*args, **kwargs)

    _twin(method, run, ":meth:`Memory.{name}` (no I/O, so not awaited).")
    return run


def _opener(
    opener: Callable[P, Memory],
) -> Callable[Concatenate[type[AsyncMemory], P], Coroutine[Any, Any, AsyncMemory]]:
    """:meth:`Memory.open` off the event loop (opening may create a file or call out)."""

    async def run(cls: type[AsyncMemory], /, *args: P.args, **kwargs: P.kwargs) -> AsyncMemory:
        return cls(await asyncio.to_thread(opener, *args, **kwargs))

    _twin(
        opener,
        run,
        ":meth:`Memory.{name}` in a worker thread (opening may create a file or call out); "
        "the same keywords and tenant rule, an :class:`AsyncMemory` back.",
    )
    # The classmethod's own function, whose first parameter binding drops; it returns the twin.
    func = getattr(opener, "__func__", opener)
    run.__wrapped__ = func  # type: ignore[attr-defined]
    run.__signature__ = inspect.signature(func).replace(  # type: ignore[attr-defined]
        return_annotation="AsyncMemory"
    )
    return run


class AsyncMemory:
    """Long-term memory for the users of one app, awaitable.

    >>> async with await AsyncMemory.open(user_id="alice") as mem:  # doctest: +SKIP
    ...     ids = await mem.add(text="The user likes coffee")
    ...     hits = await mem.search("What does the user drink?", user_id="bob")
    """

    def __init__(self, memory: Memory) -> None:
        if not isinstance(memory, Memory):
            # Else the first awaited call fails as an AttributeError in a worker thread.
            raise InvalidInput(
                f"memory must be a Memory (AsyncMemory.open opens one; wrap a store as "
                f"AsyncMemory(Memory(store))), not {type(memory).__name__}",
                field="memory",
            )
        self.sync = memory

    open = classmethod(_opener(Memory.open))

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

    scope_for = _same(Memory.scope_for)

    add = _write_off_loop(Memory.add)
    add_receipts = _write_off_loop(Memory.add_receipts)
    search = _off_loop(Memory.search)
    list = _off_loop(Memory.list)

    iter_all = _items_off_loop(Memory.iter_all)

    get = _off_loop(Memory.get)
    history = _off_loop(Memory.history)
    update = _write_off_loop(Memory.update)
    delete = _write_off_loop(Memory.delete)
    delete_all = _write_off_loop(Memory.delete_all)
    dream = _write_off_loop(Memory.dream)
    dream_task = _off_loop(Memory.dream_task)
    dream_tasks = _off_loop(Memory.dream_tasks)
    dream_actions = _off_loop(Memory.dream_actions)
    apply_dream_actions = _write_off_loop(Memory.apply_dream_actions)
    undo_dream_action = _write_off_loop(Memory.undo_dream_action)
    cancel_dream_task = _write_off_loop(Memory.cancel_dream_task)
    task = _off_loop(Memory.task)

    close = _write_off_loop(Memory.close)

    async def __aenter__(self) -> AsyncMemory:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
