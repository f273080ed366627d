"""stdout as every command writes it: output that cannot be written is a plain error.

A closed stdout (``memcore list >&-``) or a full disk (``> /dev/full``) made an "unexpected
OSError" (exit 1), or with rich's tables no error at all (exit 0, the output lost). Here such
a write is :class:`~memcore.errors.Unavailable` (exit 5) naming what happened, and a command
started with stdout closed is refused before it does anything, so that a write is not made
whose answer nobody can read. A closed pipe (``| head``) stays the quiet ``BrokenPipeError``
it is. ``--help`` goes through here, and imports no ``memcore`` module (a start-up test holds
it), so the error type is imported only when a write has failed.
"""

from __future__ import annotations

import errno
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, TextIO

if TYPE_CHECKING:
    from memcore.errors import Unavailable


def closed() -> Unavailable:
    """The error for a run started with stdout closed (nothing was done)."""
    from memcore.errors import Unavailable

    return Unavailable(
        "cannot write the output: stdout is closed (nothing was done)",
        field="stdout",
        retryable=False,
    )


def lost(exc: OSError) -> Unavailable:
    """The error for a write to stdout that failed with ``exc``."""
    if exc.errno == errno.EBADF:
        return closed()
    from memcore.errors import Unavailable

    why = (exc.strerror or type(exc).__name__).lower()
    return Unavailable(f"cannot write the output: {why}", field="stdout", retryable=False)


def escaped(text: str, encoding: str) -> str:
    """``text`` with each character ``encoding`` cannot write as ``\\uXXXX`` (a pair of them
    above U+FFFF), JSON's escape, which JSON output reads back as the character. An ASCII
    or Latin-1 stdout (``PYTHONIOENCODING``, a legacy console) failed every listing of a
    memory in another script as an unexpected ``UnicodeEncodeError`` (exit 1), even after a
    write had landed."""
    out: list[str] = []
    for char in text:
        try:
            char.encode(encoding)
        except UnicodeEncodeError:
            code = ord(char)
            if code > 0xFFFF:
                code -= 0x10000
                out.append(f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}")
            else:
                out.append(f"\\u{code:04x}")
        else:
            out.append(char)
    return "".join(out)


#: Characters handed to stdout at once (see :meth:`GuardedStdout.write`); its buffer's size.
_PIECE = 8192


class GuardedStdout:
    """``sys.stdout`` while the CLI runs: a failed write raises :func:`lost`'s error, and
    :attr:`failed` says so (what could not be written must not fail again at exit)."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.failed = False

    @contextmanager
    def _guard(self) -> Iterator[None]:
        try:
            yield
        except BrokenPipeError:
            raise
        except OSError as exc:
            self.failed = True
            raise lost(exc) from None

    def write(self, text: str) -> int:
        with self._guard():
            # In pieces: CPython's buffered writer takes a pipe's short write of one large
            # piece (the reader gone after 64 KiB, ``| head``) as done and drops the rest, so
            # a table or JSON document was cut short with exit 0; a piece at a time, the
            # closed pipe is the BrokenPipeError a listing written line by line gets.
            if not isinstance(text, str):  # what the stream makes of it (click's bytes)
                return self.stream.write(text)
            for start in range(0, len(text), _PIECE):
                piece = text[start : start + _PIECE]
                try:
                    self.stream.write(piece)
                except UnicodeEncodeError:  # nothing of it was written: encoded whole first
                    self.stream.write(
                        escaped(piece, getattr(self.stream, "encoding", None) or "utf-8")
                    )
            return len(text)

    def writelines(self, lines: Iterable[str]) -> None:
        with self._guard():
            self.stream.writelines(lines)

    def flush(self) -> None:
        with self._guard():
            self.stream.flush()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding, buffer, ...
        return getattr(self.stream, name)
