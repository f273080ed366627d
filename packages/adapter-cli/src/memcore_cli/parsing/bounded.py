"""Input read with a bound: a file or pipe with no end (``/dev/zero``, ``yes |``) is refused
once more was read than any legitimate input holds, instead of being read into memory until
the kernel kills the process."""

from __future__ import annotations

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


def bounded_lines(
    readline: Callable[[int], bytes],
    path: Path | str,
    *,
    field: str,
    instead: str,
    total: int = MAX_IMPORT_BYTES,
) -> Iterator[tuple[int, str]]:
    """The lines of ``readline`` (a binary stream's), numbered from 1, decoded as UTF-8 and
    broken where a file read as text breaks them (``\\n``, ``\\r\\n``, ``\\r``), never at
    U+0085 or U+2028, which a text may hold; a byte order mark before the first is dropped.
    A line past :data:`MAX_DOCUMENT_BYTES`, or more than ``total`` bytes in all, is refused,
    naming ``path`` and what to give ``instead``."""
    read = 0
    line_no = 0
    while True:
        raw = readline(MAX_DOCUMENT_BYTES + 1)
        if not raw:
            return
        read += len(raw)
        if len(raw) > MAX_DOCUMENT_BYTES:
            raise InvalidInput(
                f"{path} line {line_no + 1} is longer than any record "
                f"({MAX_DOCUMENT_BYTES >> 20} MiB at most); {instead}",
                field=field,
            )
        if read > total:
            raise InvalidInput(
                f"{path} is larger than an import reads ({total >> 20} MiB at most); split "
                f"it, or {instead}",
                field=field,
            )
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise InvalidInput(
                f"cannot read {path} (not UTF-8 text at line {line_no + 1})", field=field
            ) from None
        if line_no == 0:
            text = text.removeprefix("\ufeff")
        lines = text.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        if raw.endswith(b"\n"):
            lines.pop()  # the empty rest after the break
        for line in lines:
            line_no += 1
            yield line_no, line
