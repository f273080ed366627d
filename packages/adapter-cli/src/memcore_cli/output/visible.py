"""Control characters made visible before text reaches a terminal.

Stored text may come from an untrusted chat: an escape sequence in it would recolour, move
the cursor or retitle the window of whoever lists it, and a bidi override would make a line
read differently from what it holds. People's output (tables, plain lines, notes, errors)
shows such characters as ``\\x1b``-style escapes instead; ``--json`` keeps text exact (JSON
escapes them itself). Standard library only, so the error path stays import-light.
"""

from __future__ import annotations

#: Bidi controls and line separators that reorder or break a line without being C0/C1.
_FORMAT_CONTROLS = (
    0x061C,  # arabic letter mark
    0x200E,  # left-to-right mark
    0x200F,  # right-to-left mark
    *range(0x202A, 0x202F),  # embeddings and overrides (U+202E reverses the text after it)
    *range(0x2066, 0x206A),  # isolates
    0x2028,  # line separator
    0x2029,  # paragraph separator
)
_NAMED = {0x09: "\\t", 0x0A: "\\n", 0x0D: "\\r"}


def _escape(code: int) -> str:
    if code in _NAMED:
        return _NAMED[code]
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_CONTROLS = (*range(0x00, 0x20), *range(0x7F, 0xA0), *_FORMAT_CONTROLS)

#: For one-line fields: every control escaped, and the backslash too, so that an escape in
#: the output always stands for a control in the value (``a\\nb`` is the text ``a\nb``).
_ONE_LINE = str.maketrans({"\\": "\\\\", **{chr(c): _escape(c) for c in _CONTROLS}})
#: For text a person reads (tables, messages): line breaks and tabs are kept as layout.
_READABLE = str.maketrans({chr(c): _escape(c) for c in _CONTROLS if c not in (0x09, 0x0A)})


#: For JSON text: what ``json.dumps`` leaves raw (DEL, C1, bidi) as ``\\uXXXX``, which
#: decodes to the same string.
_JSON = str.maketrans({chr(c): f"\\u{c:04x}" for c in (*range(0x7F, 0xA0), *_FORMAT_CONTROLS)})


def json_safe(document: str) -> str:
    """A JSON document (``ensure_ascii=False``) with the controls JSON allows raw escaped:
    the same data, nothing a terminal acts on."""
    return document.translate(_JSON)


def visible(text: str) -> str:
    """``text`` with every control character but tab and newline shown as an escape."""
    return text.translate(_READABLE)


def one_line(text: str) -> str:
    """``text`` as one line: every control (tab and newline too) and backslash escaped."""
    return text.translate(_ONE_LINE)
