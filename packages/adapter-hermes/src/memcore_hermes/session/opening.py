"""Opening a session's store aside: on its own thread, waited for as long as Hermes lets a
provider hold up a turn, its progress passed on by the thread that waits, and which of its
errors a later opening may get past.

Standard library only, as the provider's module: Hermes imports every installed provider."""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_future
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcore.config import MemcoreConfig
    from memcore.errors import MemcoreError
    from memcore.ports import MemoryStore

logger = logging.getLogger(__name__)

#: How much sooner than Hermes gives up on a prefetch the recall's wait ends (seconds).
_HOST_WAIT_MARGIN_S = 0.5
#: What Hermes 0.19 gives a provider's prefetch (seconds), when it does not say.
_HERMES_PREFETCH_S = 8.0
#: How often ``initialize`` passes on the opening's progress while it waits (seconds).
_RELAY_S = 0.05


def lasting(error: MemcoreError) -> bool:
    """Whether a store's opening failed for good (see :func:`passes`): a session whose
    store could not open at once stops trying, and takes no more writes."""
    return not passes(error)


def passes(error: MemcoreError) -> bool:
    """Whether a store that could not be opened may open later (busy, another process's
    older file, a full disk, an endpoint down or throttling: a retryable error), or a local
    file found damaged, whose writes wait in the spool until it is repaired (as they do when
    a write finds the damage). Bad config, refused keys, a read-only file do not: the start
    fails."""
    from memcore.errors import ConfigError, StoreCorrupted

    if isinstance(error, ConfigError):
        return False
    return error.retryable or isinstance(error, StoreCorrupted)


def _host_prefetch_budget_s() -> float | None:
    """How long Hermes' memory manager waits for a provider's prefetch (8 s in 0.19), or None
    when unknown. Past it Hermes shows nothing, not the stand-in, and skips the next turns'
    prefetch while this one still runs: a longer ``recall_wait_ms`` must end before it."""
    try:
        from agent import memory_manager  # type: ignore[import-untyped,unused-ignore]
    except ImportError:
        return None
    value = getattr(memory_manager, "_EXTERNAL_PREFETCH_TIMEOUT_S", None)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        return None
    return float(value)


def start_wait_s() -> float:
    """How long ``initialize`` waits for the store before the session starts without it:
    what Hermes gives a provider's prefetch (8 s in 0.19), the longest it lets memory hold
    up a turn, less the margin a recall keeps (7.5 s). A store that a short lock or a slow
    disk delays still opens within it; one that waits for another process's lock or a
    first run's bootstrap (a minute or more) goes on opening in the background."""
    budget = _host_prefetch_budget_s()
    return max(0.0, (budget or _HERMES_PREFETCH_S) - _HOST_WAIT_MARGIN_S)


def recall_wait_s() -> float | None:
    """How long a recall may wait for the store: what Hermes gives a prefetch, less the
    margin that lets the recall answer before Hermes stops waiting; None when Hermes does
    not say."""
    budget = _host_prefetch_budget_s()
    return None if budget is None else max(0.0, budget - _HOST_WAIT_MARGIN_S)


Opened = tuple["MemcoreConfig", "MemoryStore"]


def open_aside(open_store: Callable[[], Opened]) -> Future[Opened]:
    """Run ``open_store`` on its own daemon thread (a stuck opening must not hold the
    process's exit); its future tells when it ends."""
    opening: Future[Opened] = Future()

    def run() -> None:
        try:
            opening.set_result(open_store())
        except BaseException as exc:
            opening.set_exception(exc)

    threading.Thread(target=run, name="tablestore-mem-open", daemon=True).start()
    return opening


def store_of(opening: Future[Opened]) -> Future[MemoryStore]:
    """The store ``opening`` yields, for the lane; an error that is no memcore error (a
    bug) becomes :class:`Unavailable`, so the lane retries rather than stopping."""
    from memcore.errors import MemcoreError, Unavailable

    store: Future[MemoryStore] = Future()

    def done(ended: Future[Opened]) -> None:
        exc = ended.exception()
        if exc is None:
            store.set_result(ended.result()[1])
        elif isinstance(exc, MemcoreError):
            store.set_exception(exc)
        else:
            logger.error("tablestore-mem: opening the memory store failed", exc_info=exc)
            store.set_exception(
                Unavailable(f"opening the memory store failed ({type(exc).__name__})")
            )

    opening.add_done_callback(done)
    return store


def wait_for(opening: Future[Any], relay: Relay, bound: float) -> bool:
    """Wait up to ``bound`` for ``opening``, passing on its progress on this (Hermes')
    thread; True when it ended. Past the wait, its progress goes to the log only: Hermes'
    start is over, and its status line must not speak of a start that no longer waits."""
    deadline = time.monotonic() + bound
    try:
        while not opening.done():
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            wait_for_future([opening], timeout=min(_RELAY_S, left))
            relay.pump()
        return True
    finally:
        relay.close()


class Relay:
    """Progress of an opening on another thread, passed on by the thread that waits for
    it (:meth:`pump`) until :meth:`close`; then only logged."""

    def __init__(self, say: Callable[[str], None]) -> None:
        self._say = say
        self._lock = threading.Lock()
        self._queue: queue.SimpleQueue[str] = queue.SimpleQueue()
        self._open = True

    def __call__(self, message: str) -> None:
        with self._lock:
            if self._open:
                self._queue.put(message)
                return
        logger.info("%s", message)

    def pump(self) -> None:
        while True:
            try:
                message = self._queue.get_nowait()
            except queue.Empty:
                return
            self._say(message)

    def close(self) -> None:
        with self._lock:
            self._open = False
        self.pump()


def progress_callback(callback: Any) -> Callable[[str], None]:
    """Hermes' status callback, guarded: progress reporting must never break startup."""

    def say(message: str) -> None:
        logger.info("%s", message)
        if callable(callback):
            try:
                callback(message)
            except Exception:
                logger.debug("tablestore-mem: status callback failed", exc_info=True)

    return say
