"""JSON Lines as every export writes them: one record a line, that any line reader splits where
we do and a terminal shows as it holds (stored text may come from an untrusted chat)."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

#: What ``json.dumps(..., ensure_ascii=False)`` leaves raw and a reader or a terminal acts on,
#: written escaped (only inside JSON strings, where the escape means the same character):
#: line breaks that str.splitlines() and other readers split at (U+0085, U+2028, U+2029), DEL
#: and the C1 controls (0x9b starts an escape sequence on many terminals), and the bidi marks,
#: overrides and isolates that make a line read other than it holds.
_TERMINAL_CONTROLS = (
    *range(0x7F, 0xA0),
    0x061C,
    0x200E,
    0x200F,
    *range(0x202A, 0x202F),
    *range(0x2066, 0x206A),
    0x2028,
    0x2029,
)
_SEPARATORS = str.maketrans({chr(c): f"\\u{c:04x}" for c in _TERMINAL_CONTROLS})


def escape_json(document: str) -> str:
    """A JSON document written with ``ensure_ascii=False``, the same data with nothing a line
    reader or a terminal acts on: stored text may come from an untrusted chat."""
    return document.translate(_SEPARATORS)


def dump_line(record: Mapping[str, Any]) -> str:
    """One JSON Lines record, newline included, that every line reader splits where we do."""
    return escape_json(json.dumps(record, ensure_ascii=False, separators=(",", ":"))) + "\n"


def split_lines(text: str) -> list[str]:
    """The lines of a JSON Lines file: broken at "\\n" only, since a text may hold U+0085 or
    U+2028, which ``str.splitlines`` would take as line breaks inside a record."""
    return text.split("\n")
