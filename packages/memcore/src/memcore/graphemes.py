"""Where a text may be cut without splitting what a reader sees as one character.

A cut by code point left a lone half of a flag, a family emoji without its last members
(a dangling zero-width joiner), an accent without its letter, or a Thai vowel sign without
its consonant at the start of the next piece. This is the part of Unicode's grapheme rules
(UAX #29) that such cuts meet, with the standard library only: combining marks, joiners,
variation selectors, skin tones, emoji tags, flag pairs and CR LF.
"""

from __future__ import annotations

import unicodedata

#: How far a cut moves back at most: a longer cluster (never written by hand) is cut.
MAX_BACK = 32
_ZWJ = "\u200d"


def _extends(char: str) -> bool:
    """``char`` belongs to the character before it."""
    code = ord(char)
    return (
        unicodedata.category(char) in ("Mn", "Mc", "Me")
        or char == _ZWJ
        or 0xFE00 <= code <= 0xFE0F  # variation selectors
        or 0xE0100 <= code <= 0xE01EF
        or 0x1F3FB <= code <= 0x1F3FF  # skin tones
        or 0xE0020 <= code <= 0xE007F  # emoji tags (subdivision flags)
    )


def _regional(char: str) -> bool:
    return 0x1F1E6 <= ord(char) <= 0x1F1FF


def _boundary(text: str, at: int) -> bool:
    """Whether a cut between ``text[at - 1]`` and ``text[at]`` splits nothing."""
    if at <= 0 or at >= len(text):
        return True
    before, after = text[at - 1], text[at]
    if _extends(after) or before == _ZWJ or (before == "\r" and after == "\n"):
        return False
    if _regional(before) and _regional(after):
        run = 0
        while at - 1 - run >= 0 and _regional(text[at - 1 - run]):
            run += 1
        return run % 2 == 0  # flags are pairs: cut only after a whole one
    return True


def safe_end(text: str, end: int) -> int:
    """The largest cut at or before ``end`` that splits no character as a reader sees it
    (``end`` itself when none is found within :data:`MAX_BACK`)."""
    end = max(0, min(end, len(text)))
    for at in range(end, max(0, end - MAX_BACK) - 1, -1):
        if _boundary(text, at):
            return at
    return end
