"""Ctrl-C for the ``memcore`` command line: one stderr line and exit code 130, however early
it comes, and sections that an interrupt waits for instead of breaking in their middle.

Standard library only: the console script (:mod:`memcore_cli.entry`) uses it before anything
else of the CLI is imported, so an interrupt during start-up is answered like any other, not
with a traceback.
"""

from __future__ import annotations

import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from types import FrameType

#: The shell's code for a process stopped by SIGINT (128 + 2); ``ExitCode.INTERRUPTED``.
INTERRUPTED = 130

_reported = False


def start() -> None:
    """A new command line begins (the app may run several times in one process)."""
    global _reported
    _reported = False


def report(detail: str = "", *, as_json: bool | None = None) -> int:
    """Write the one ``memcore: interrupted`` line (with ``detail``: what was undone), a JSON
    error object like every other failure's with ``--json`` (``as_json`` None: read from the
    command line), and return the exit code; once per run, so a second Ctrl-C during the
    clean-up that follows adds no second line."""
    global _reported
    if not _reported:
        _reported = True
        from memcore_cli.output.stderr import ForgivingStderr  # stderr closed: code kept

        err = ForgivingStderr(sys.stderr)
        message = f"interrupted ({detail})" if detail else "interrupted"
        if wants_json(sys.argv[1:]) if as_json is None else as_json:
            import json

            from memcore_cli.output.visible import json_safe

            error = {
                "type": "Interrupted",
                "code": "interrupted",
                "message": message,
                "retryable": False,
            }
            document = {"error": {**error, "exit_code": INTERRUPTED}}
            err.write(json_safe(json.dumps(document, ensure_ascii=False)))
            err.write("\n")
        else:
            err.write(f"memcore: {message}\n")
        err.flush()
    return INTERRUPTED


def wants_json(words: list[str]) -> bool:
    """Whether the command line asks for JSON (``--json``, ``--format json``), as far as it
    can be told before the app is imported: an interrupt during start-up answers so too."""
    for i, word in enumerate(words):
        if word == "--":
            return False
        if word == "--json" or word == "--format=json":
            return True
        if word == "--format" and words[i + 1 : i + 2] == ["json"]:
            return True
    return False


class Held:
    """What :func:`held_interrupts` saw: whether Ctrl-C was pressed inside the block."""

    interrupted: bool = False


@contextlib.contextmanager
def held_interrupts() -> Iterator[Held]:
    """Hold SIGINT and SIGTERM (:func:`held_signals`) for the block: either is recorded
    (``interrupted``), not acted on, so a step that must finish whole (a batch and its
    accounting, a rollback) does; the caller decides what an interrupt means once it ends.
    Outside the main thread, where Python delivers no signal, the block runs as is."""
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


@contextlib.contextmanager
def terminated_as_interrupted() -> Iterator[None]:
    """SIGTERM (``kill``, ``timeout``) is Ctrl-C for the block: what a command does when
    interrupted (a partial ``--out`` file removed, how many memories a forget deleted
    before it said) it does when stopped so, where SIGTERM's default action ended the
    process without a word. Not in another thread, nor when started ignoring SIGTERM."""
    if threading.current_thread() is not threading.main_thread() or (
        signal.getsignal(signal.SIGTERM) is signal.SIG_IGN
    ):
        yield
        return
    previous = signal.signal(signal.SIGTERM, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous if previous is not None else signal.SIG_DFL)


def held_signals() -> tuple[signal.Signals, ...]:
    """Ctrl-C, and SIGTERM (``kill``, ``timeout``, a service manager stopping the program),
    whose default action would end the process between a stored batch and its rollback;
    a SIGTERM the process was started ignoring stays ignored."""
    if signal.getsignal(signal.SIGTERM) is signal.SIG_IGN:
        return (signal.SIGINT,)
    return (signal.SIGINT, signal.SIGTERM)
