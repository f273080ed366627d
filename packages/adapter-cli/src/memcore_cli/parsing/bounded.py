"""Input read with a bound: a file or pipe with no end (``/dev/zero``, ``yes |``) is refused
once more was read than any legitimate input holds, instead of being read into memory until
the kernel kills the process."""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from pathlib import Path

from memcore.errors import InvalidInput

#: The most one document (an ``add --messages-file``) or one line (of an ``import``) is read:
#: a write of the most messages, each with metadata at its limit (20 x 64 KiB, and 32,000
#: bytes of content), every byte a six-byte ``\uXXXX`` escape, is under 8 MiB, and a memory
#: of an export under 1 MiB. Past this nothing can be one.
MAX_DOCUMENT_BYTES = 16 << 20

#: The most an ``import`` reads in all: 100,000 typical memories with their message log
#: export to 98 MB (``python -m benchmarks.cli_import_memory``), so this takes ten times that.
MAX_IMPORT_BYTES = 1 << 30


#: A line break as an editor counts one: ``\r\n`` once, a lone ``\r`` (old Mac files) or
#: ``\n``. The export writes ``\n`` and escapes every other break inside its strings.
_BREAK = re.compile(rb"\r\n|\r|\n")


def bounded_lines(
    readline: Callable[[int], bytes],
    path: Path | str,
    *,
    field: str,
    instead: str,
    total: int = MAX_IMPORT_BYTES,
) -> Iterator[tuple[int, str]]:
    """The lines of ``readline`` (a binary stream's), numbered from 1 as an editor numbers
    them, decoded as UTF-8 and broken at ``\n``, ``\r\n`` and ``\r`` (where a file read as
    text breaks them), never at U+0085 or U+2028, which a text may hold; a byte order mark
    before the first is dropped. A line past :data:`MAX_DOCUMENT_BYTES`, or more than
    ``total`` bytes in all, is refused, naming ``path`` and what to give ``instead``.

    ``readline`` stops at ``\n`` only: the lines a read holds are split here, each numbered
    and bounded on its own, and the last, not ended yet, waits for the next read (a ``\r``
    ending a read too, which a ``\n`` may follow)."""
    read = 0
    line_no = 0
    pending = b""
    while True:
        raw = readline(MAX_DOCUMENT_BYTES + 1)
        read += len(raw)
        if read > total:
            raise InvalidInput(
                f"{path} is larger than an import reads ({total >> 20} MiB at most); split "
                f"it, or {instead}",
                field=field,
            )
        data, start = pending + raw, 0
        for found in _BREAK.finditer(data):
            if raw and found.end() == len(data) and found.group() == b"\r":
                break  # "\r\n" across two reads is one break
            if found.start() - start > MAX_DOCUMENT_BYTES:  # a read's leftover and the next
                raise _too_long(path, line_no + 1, field=field, instead=instead)
            line_no += 1
            yield line_no, _decoded(data[start : found.start()], line_no, path, field)
            start = found.end()
        pending = data[start:]
        if len(pending.rstrip(b"\r")) > MAX_DOCUMENT_BYTES:
            raise _too_long(path, line_no + 1, field=field, instead=instead)
        if not raw:
            if pending:
                line_no += 1
                yield line_no, _decoded(pending, line_no, path, field)
            return


def _too_long(path: Path | str, line_no: int, *, field: str, instead: str) -> InvalidInput:
    return InvalidInput(
        f"{path} line {line_no} is longer than any record "
        f"({MAX_DOCUMENT_BYTES >> 20} MiB at most); {instead}",
        field=field,
    )


def _decoded(line: bytes, line_no: int, path: Path | str, field: str) -> str:
    """``line`` as UTF-8 text, without the byte order mark a first line may start with."""
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError:
        raise InvalidInput(
            f"cannot read {path} (not UTF-8 text at line {line_no})", field=field
        ) from None
    return text.removeprefix("\ufeff") if line_no == 1 else text
