"""What a ``hermes tablestore-mem`` command prints: one JSON document on stdout, progress
on stderr, and a closed or full stdout reported as an error rather than a traceback."""

from __future__ import annotations

import json
import os
import sys
from typing import Any


def say(message: str) -> None:
    """Progress on stderr, so stdout stays one JSON document."""
    sys.stderr.write(f"{message}\n")


def print_json(data: Any) -> None:
    from memcore.transfer import escape_json  # stored text may hold a terminal's controls

    document = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    write(escape_json(document) + "\n")


def write(text: str) -> None:
    """Write ``text`` to stdout; a full disk or a closed stdout is
    :class:`~memcore.errors.Unavailable` (exit 5, as for ``memcore``), not a traceback."""
    from memcore.errors import Unavailable

    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # a reader that stopped early (``| head``): quiet, as everywhere
    except (OSError, ValueError, AttributeError) as exc:  # ValueError: closed; None: ``>&-``
        why = (getattr(exc, "strerror", None) or "stdout is closed").lower()
        raise Unavailable(
            f"cannot write the output: {why}", field="stdout", retryable=False
        ) from None


def stdout_gone() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of what could not be
    written does not fail again with a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # closed, or no descriptor (a test's stream)
        pass


class ProgressBar:
    """A rich progress bar on stderr (Hermes ships rich); plain lines when not a terminal."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self._bar: Any = None

    def __enter__(self) -> Any:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import Progress

            self._bar = Progress(console=Console(stderr=True))
            self._bar.start()
            task = self._bar.add_task(self.label, total=self.total)
            return lambda done: self._bar.update(task, completed=done)
        return lambda done: sys.stderr.write(f"{self.label}: {done}/{self.total}\n")

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()
