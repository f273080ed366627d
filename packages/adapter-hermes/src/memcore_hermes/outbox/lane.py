"""One ordered background lane per provider.

Everything that talks to the backend runs here, in submission order, so a recall queued after
a write runs after that write was attempted (read-your-writes within a session), while the
agent's thread only ever enqueues.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

logger = logging.getLogger(__name__)

_STOP = object()
#: When a delivery pass that raised is run again (seconds), doubling while passes keep
#: raising up to the cap: it must not wait for the next write, nor flood the log.
AFTER_FAILED_PASS_S = 1.0
_AFTER_FAILED_PASS_CAP_S = 60.0


class Lane:
    """A single daemon worker running tasks in FIFO order, plus a coalesced, timed drain.

    ``drain(force)`` delivers what is due and returns the delay until the next retry (None
    when nothing waits); the lane wakes itself then, without any caller.
    """

    def __init__(
        self,
        name: str,
        drain: Callable[[bool], float | None],
        *,
        before_task: Callable[[], None] | None = None,
    ) -> None:
        self._drain = drain
        #: Called before each task and delivery pass (the runtime lets a recall finish first).
        self._before_task = before_task
        self._queue: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._drain_queued = False
        self._wake_at: float | None = None
        self._stopped = False
        self._failed_passes = 0  # passes in a row that raised
        self._thread = threading.Thread(
            target=self._loop, name=f"tablestore-mem-{name}", daemon=True
        )
        self._thread.start()

    # -- producer side (agent thread) -----------------------------------------------------
    def submit(self, fn: Callable[[], Any]) -> Future[Any]:
        """Run ``fn`` after everything submitted before it."""
        future: Future[Any] = Future()
        if self._stopped:
            future.set_exception(RuntimeError("the lane is stopped"))
            return future
        self._queue.put((fn, future))
        return future

    def request_drain(self) -> None:
        """Ask for a delivery pass; a pass already waiting in the queue covers this request."""
        with self._lock:
            if self._drain_queued or self._stopped:
                return
            self._drain_queued = True
        self._queue.put(("drain", None))

    def kick(self) -> None:
        """A forced delivery pass (ignoring retry delays) without waiting for it."""
        self.submit(lambda: self._run_drain(force=True))

    def flush_soon(self) -> Future[Any]:
        """A forced delivery pass after what is queued; its future tells when it is over."""
        return self.submit(lambda: self._run_drain(force=True))

    def flush(self, timeout: float) -> bool:
        """Deliver everything now, ignoring retry delays; True when the pass finished in time."""
        future = self.flush_soon()
        try:
            future.result(timeout=max(0.0, timeout))
        except Exception:
            return False
        return True

    def idle(self, timeout: float) -> bool:
        """Wait until every task submitted so far has run (a barrier, no forced delivery)."""
        try:
            self.submit(lambda: None).result(timeout=max(0.0, timeout))
        except Exception:
            return False
        return True

    def stop(self, timeout: float) -> bool:
        """Stop after the queued tasks; True when the worker ended within ``timeout``."""
        self._stopped = True
        self._queue.put(_STOP)
        self._thread.join(max(0.0, timeout))
        return not self._thread.is_alive()

    def join(self, timeout: float) -> bool:
        """Wait for the worker to end (after :meth:`stop_soon`); True when it did in time."""
        self._thread.join(max(0.0, timeout))
        return not self._thread.is_alive()

    def stop_soon(self, then: Callable[[], None]) -> None:
        """Stop after the queued tasks, running ``then`` last on the worker; never waits and
        takes no lock (a garbage collector's finalizer calls it)."""
        self._stopped = True
        self._queue.put((then, None))
        self._queue.put(_STOP)

    @property
    def thread(self) -> threading.Thread:
        """The worker thread (the only one allowed to open a store that opens late)."""
        return self._thread

    @property
    def alive(self) -> bool:
        return self._thread.is_alive()

    # -- worker -----------------------------------------------------------------------------
    def _run_drain(self, *, force: bool) -> float | None:
        # A pass that raises (its caller, if forced, sees the error) is run again later:
        # with no wake time the writes left in the spool would wait for the next write.
        delay: float | None = min(
            _AFTER_FAILED_PASS_CAP_S, AFTER_FAILED_PASS_S * 2.0 ** min(self._failed_passes, 64)
        )
        self._failed_passes += 1
        try:
            delay = self._drain(force)
            self._failed_passes = 0
            return delay
        finally:
            with self._lock:
                self._wake_at = None if delay is None else time.monotonic() + max(0.0, delay)

    def _loop(self) -> None:
        while True:
            with self._lock:
                wake_at = self._wake_at
            timeout = None if wake_at is None else max(0.0, wake_at - time.monotonic())
            try:
                item = self._queue.get(timeout=timeout)
            except queue.Empty:
                item = ("drain", None)
                with self._lock:
                    self._wake_at = None
            if item is _STOP:
                return
            if self._before_task is not None:
                self._before_task()
            fn, future = item
            if fn == "drain":
                with self._lock:
                    self._drain_queued = False
                try:
                    self._run_drain(force=False)
                except Exception:
                    logger.exception("tablestore-mem: delivery pass failed")
                continue
            if future is not None and not future.set_running_or_notify_cancel():
                continue
            try:
                result = fn()
            except BaseException as exc:
                if future is not None:
                    future.set_exception(exc)
                else:
                    logger.exception("tablestore-mem: background task failed")
            else:
                if future is not None:
                    future.set_result(result)
