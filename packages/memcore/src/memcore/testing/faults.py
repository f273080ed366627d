"""Fault injection for the fake store: fail the Nth call, or calls to one operation."""

from __future__ import annotations

import threading

from memcore.errors import MemcoreError


class FaultPlan:
    """Raise chosen errors at chosen moments; thread-safe, so it works behind a server."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._calls = 0
        self._on_call: dict[int, MemcoreError] = {}
        self._on_operation: dict[str, tuple[MemcoreError, int | None]] = {}

    def fail_on_call(self, n: int, error: MemcoreError) -> None:
        """Raise ``error`` on the ``n``-th call counted from now (1 = the next call)."""
        with self._lock:
            self._on_call[self._calls + n] = error

    def fail_operation(
        self, operation: str, error: MemcoreError, *, times: int | None = None
    ) -> None:
        """Raise ``error`` on calls to ``operation`` (a port method name), ``times`` times or always."""
        with self._lock:
            self._on_operation[operation] = (error, times)

    def clear(self) -> None:
        with self._lock:
            self._on_call.clear()
            self._on_operation.clear()

    @property
    def calls(self) -> int:
        return self._calls

    def check(self, operation: str) -> None:
        with self._lock:
            self._calls += 1
            error = self._on_call.pop(self._calls, None)
            if error is None and operation in self._on_operation:
                err, times = self._on_operation[operation]
                if times is not None:
                    if times <= 1:
                        del self._on_operation[operation]
                    else:
                        self._on_operation[operation] = (err, times - 1)
                error = err
        if error is not None:
            raise error
