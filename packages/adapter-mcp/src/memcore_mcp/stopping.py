"""How the HTTP server stops: uvicorn's, ending listen streams first and exiting 0 once drained.

On SIGTERM uvicorn stops taking connections, waits for the running calls, and then raises
the signal again, so a drained stop exited -15 (143 in a shell), which a process manager reads
as a crash; the stdio transport exits 0 after the same drain. Here a SIGTERM that was served
(every call answered) is not raised again, and the process exits 0; Ctrl-C still ends in
``KeyboardInterrupt`` (exit 130). Calls still running when the grace ran out are cut, and the
stop is then reported as :func:`cut_short` (exit 5), on both transports: a write among them
may have landed without its answer.
"""

from __future__ import annotations

import contextlib
import signal
import socket
from collections.abc import Callable, Iterator

import uvicorn

from memcore.errors import OutcomeUnknown


class DrainingServer(uvicorn.Server):
    """``uvicorn.Server`` whose stop calls ``before_stop`` first (ending the streams that never
    end by themselves, which held the stop for the whole grace) and exits 0 once drained."""

    def __init__(self, config: uvicorn.Config, before_stop: Callable[[], None]) -> None:
        super().__init__(config)
        self.before_stop = before_stop
        self.drained = False
        self.terminated = False

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self.before_stop()
        await super().shutdown(sockets)

    async def _wait_tasks_to_complete(self) -> None:
        # uvicorn cancels this wait when the grace runs out (its version is pinned).
        await super()._wait_tasks_to_complete()
        self.drained = True

    @contextlib.contextmanager
    def capture_signals(self) -> Iterator[None]:
        with super().capture_signals():
            yield
            # Not raised again: exit 0 once drained, else the error below says what was cut.
            self.terminated = signal.SIGTERM in self._captured_signals
            while signal.SIGTERM in self._captured_signals:
                self._captured_signals.remove(signal.SIGTERM)

    def serve_until_stopped(self, sock: socket.socket) -> None:
        """Serve on ``sock`` until stopped; a stop whose grace cut running calls raises."""
        self.run(sockets=[sock])
        if self.terminated and not self.drained:
            raise cut_short()


def cut_short() -> OutcomeUnknown:
    """How a stop whose grace ran out ends (HTTP or stdio): a process manager must not read
    it as a clean stop (exit 0) while a write's outcome is unknown."""
    return OutcomeUnknown(
        "the server stopped with call(s) still running past the grace, cut without an "
        "answer; a write among them may have landed (look for it before sending it again)"
    )


__all__ = ["DrainingServer", "cut_short"]
