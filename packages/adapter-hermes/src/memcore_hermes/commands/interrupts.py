"""Ctrl-C for ``hermes tablestore-mem``: sections an interrupt waits for instead of breaking
in their middle (an import's batch and the record of what it added; its rollback).

The ``memcore`` CLI has the same helper (``memcore_cli.output.interrupts``); the plugin may not
import another host, and signals are no business of the core, so this is the plugin's own.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType


class Held:
    """What :func:`held_interrupts` saw: whether Ctrl-C was pressed inside the block."""

    interrupted: bool = False


@contextlib.contextmanager
def held_interrupts() -> Iterator[Held]:
    """Hold SIGINT and SIGTERM (:func:`held_signals`) for the block: either is recorded
    (``interrupted``), not acted on, so a step that must finish whole does; the caller
    decides what an interrupt means once it ends. Outside the main thread, where Python
    delivers no signal, the block runs as is."""
    held = Held()
    if threading.current_thread() is not threading.main_thread():
        yield held
        return

    def hold(signum: int, frame: FrameType | None) -> None:
        held.interrupted = True

    previous = {sig: signal.getsignal(sig) for sig in held_signals()}
    for sig in previous:
        signal.signal(sig, hold)
    try:
        yield held
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


def held_signals() -> tuple[signal.Signals, ...]:
    """Ctrl-C, and SIGTERM (``kill``, ``timeout``, a service manager stopping the program),
    whose default action would end the process between a stored batch and its rollback;
    a SIGTERM the process was started ignoring stays ignored."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        return (signal.SIGINT,)
    return (signal.SIGINT, signal.SIGTERM)
