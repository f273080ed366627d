"""stderr as every command writes it: a remark or an error line that cannot be written is
let go, and the exit code stays the command's.

Run with stderr closed (``2>&-``, as some cron jobs and services are) or onto a full disk, a
remark ("exported 2 memories", the first-run note) failed a command that had worked (exit 1,
a first ``add`` storing nothing), and an error's own line turned its exit code into 1: the
exit code is all such a caller gets. Like ``stdout``, this imports no ``memcore`` module.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from typing import Any, TextIO


class ForgivingStderr:
    """``sys.stderr`` while the CLI runs: writes that fail are dropped (nobody can read
    them); with no stderr at all (Python's ``None`` for a closed one), they go to the null
    device, so that ``isatty`` and rich's console still find a stream."""

    def __init__(self, stream: TextIO | None) -> None:
        if stream is None:  # kept open for the run, as the stderr it stands for would be
            stream = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115
        self.stream: TextIO = stream

    def write(self, text: str) -> int:
        try:
            return self.stream.write(text)
        except (OSError, ValueError):  # ValueError: the stream was closed under us
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, ...
        return getattr(self.stream, name)
