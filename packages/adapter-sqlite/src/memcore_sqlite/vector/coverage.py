"""Which writing systems an embedder covers, and how much of a query lies in them.

A model that never saw a script still returns a unit vector for it: all-MiniLM-L6-v2 reads
Chinese as a handful of rare word pieces, so every Chinese text lands near every other and
``宠物`` (pets) scored 0.8 against ``用户喜欢喝绿茶`` (likes green tea). Such a cosine is
noise presented as confidence. An embedder declares the scripts it covers (``scripts``, a
set of :class:`Script`); the store scales the query's vector signal by :func:`coverage`, so
for a query in a script the model does not cover the vector signal weighs nothing and lexical
matching (which indexes CJK characters) decides, and ``min_similarity`` can drop what the
vector alone brought. An embedder that declares nothing is taken to cover everything, as
before.
"""

from __future__ import annotations

import enum
import unicodedata
from functools import lru_cache

from memcore_sqlite.emoji import is_emoji


class Script(str, enum.Enum):
    """Writing systems, named by the first word of their letters' Unicode names."""

    LATIN = "LATIN"
    HAN = "CJK"
    HIRAGANA = "HIRAGANA"
    KATAKANA = "KATAKANA"
    HANGUL = "HANGUL"
    ARABIC = "ARABIC"
    CYRILLIC = "CYRILLIC"
    GREEK = "GREEK"
    HEBREW = "HEBREW"
    THAI = "THAI"
    DEVANAGARI = "DEVANAGARI"
    #: Not a script: pictographs, which the English default reads as one unknown word piece
    #: each (every emoji-only text had the same vector, so "🍔" found "🍕🍺" at 1.0).
    EMOJI = "EMOJI"


#: Scripts written without spaces between words: each letter counts as a word.
_UNSPACED = frozenset({"CJK", "HIRAGANA", "KATAKANA", "THAI", "EMOJI"})


@lru_cache(maxsize=4096)
def _script(char: str) -> str | None:
    """The script of a letter or of a digit other than 0-9 (the first word of its Unicode
    name: "２" is FULLWIDTH, which the English default reads as an unknown word piece), EMOJI
    for an emoji, None for anything else."""
    category = unicodedata.category(char)
    if category == "Nd" and not char.isascii():
        return unicodedata.name(char, "UNKNOWN").split(" ", 1)[0]
    if not category.startswith("L"):
        return Script.EMOJI.value if is_emoji(char) else None
    name = unicodedata.name(char, "")
    return name.split(" ", 1)[0] if name else "UNKNOWN"


def words_by_script(text: str) -> dict[str, int]:
    """How many words of each script ``text`` holds: a run of letters of one script is one
    word, except in scripts written without spaces, where each letter is one (a Chinese
    character carries about what an English word does)."""
    counts: dict[str, int] = {}
    previous: str | None = None
    for char in text:
        script = _script(char)
        if script is not None and (script != previous or script in _UNSPACED):
            counts[script] = counts.get(script, 0) + 1
        previous = script
    return counts


def covered_share(scripts: frozenset[Script] | frozenset[str], text: str) -> float:
    """The share of ``text``'s words written in ``scripts``; 1.0 for text without letters or
    emoji."""
    counts = words_by_script(text)
    total = sum(counts.values())
    if not total:
        return 1.0
    names = {s.value if isinstance(s, Script) else s for s in scripts}
    return sum(n for script, n in counts.items() if script in names) / total


def coverage(embedder: object, text: str) -> float:
    """How far ``embedder`` can be trusted on ``text``, in [0, 1]: the share of its words in
    the scripts the embedder declares (``scripts``); 1.0 if it declares none."""
    scripts = getattr(embedder, "scripts", None)
    if scripts is None:
        return 1.0
    return covered_share(frozenset(scripts), text)
