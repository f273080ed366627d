"""What the lines people read say: counts ("1 memory", "2 memories"; JSON keeps bare numbers)
and a refused value, quoted within a line."""

from __future__ import annotations

_VOWELS = frozenset("aeiou")

#: How much of a refused value an error quotes: its start and end, "..." between.
SHOWN_CHARS = 60


def shown(value: object) -> str:
    """``repr(value)``, cut in the middle past :data:`SHOWN_CHARS` characters, for a
    refusal's message: an error quotes what it refused, and a 100,000-character store name
    quoted whole buried the message (and filled a log or a tool's answer). An int past
    Python's printable digits, or an object whose repr fails, is named by its type, so the
    message never fails in place of the refusal."""
    import reprlib  # on a refusal only: 1.5 ms that no start-up should pay

    quoted = reprlib.Repr()
    quoted.maxstring = quoted.maxother = SHOWN_CHARS
    try:
        return quoted.repr(value)
    except Exception:
        return f"a {type(value).__name__} that cannot be shown"


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun``, singular for exactly one; else ``plural``, by default the
    regular English plural ("memory" -> "memories", "record" -> "records")."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural or _plural(noun)}"


def forgotten_so_far(done: int, asked: int) -> str:
    """What a forget stopped half way says (by an interrupt or a failure): nothing is put
    back, so how many went and that the rest are kept."""
    return f"{done} of {counted(asked, 'memory')} forgotten before it; the rest are kept"


def _plural(noun: str) -> str:
    if noun.endswith("y") and len(noun) > 1 and noun[-2] not in _VOWELS:
        return noun[:-1] + "ies"
    return noun + "s"
