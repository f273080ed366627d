"""Counts in the lines people read: "1 memory", "2 memories" (JSON keeps bare numbers)."""

from __future__ import annotations

_VOWELS = frozenset("aeiou")


def counted(count: int, noun: str, plural: str | None = None) -> str:
    """``count`` with ``noun``, singular for exactly one; else ``plural``, by default the
    regular English plural ("memory" -> "memories", "record" -> "records")."""
    if count == 1:
        return f"{count} {noun}"
    return f"{count} {plural or _plural(noun)}"


def _plural(noun: str) -> str:
    if noun.endswith("y") and len(noun) > 1 and noun[-2] not in _VOWELS:
        return noun[:-1] + "ies"
    return noun + "s"
