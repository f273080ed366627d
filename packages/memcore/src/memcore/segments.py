"""How text is cut into words when a script has no spaces, and the one form text is read in.

Chinese and Japanese (and Thai) are written without spaces, so ``\\w+`` keeps a whole
sentence as one word: 喜欢喝咖啡 never met 咖啡, and two wordings of one fact shared no word.
Both the lexical index and the dream planner therefore read such a run as its overlapping
character bigrams (:func:`bigrams`), by this one rule.

Text is first brought to one form (:func:`fold`): CJK input methods type fullwidth Latin and
digits ("ｉＰｈｏｎｅ", "２０２３年"), Japanese text may hold halfwidth kana, and a pasted text
ligatures ("oﬃce") or "ß"; without it each of these matches only itself.
"""

from __future__ import annotations

import functools
import re
import unicodedata

#: Thai consonants, vowels and tone marks (not its digits or its currency sign). Thai is
#: written without spaces, and its vowels and tone marks are combining marks, where ``\\w``
#: ends a word: a sentence fell apart into pieces no query gave.
THAI = "\u0e01-\u0e3a\u0e40-\u0e4e"


@functools.cache
def unspaced_run() -> re.Pattern[str]:
    """Han, kana, Hangul and the CJK compatibility blocks, and Thai: scripts written without
    spaces. Compiled when a text is not ASCII: its ranges cost 2.7 ms at every start otherwise."""
    return re.compile(
        r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff\u31f0-\u31ff"
        + THAI
        + "]+"
    )


@functools.cache
def piece() -> re.Pattern[str]:
    """A Thai run, its marks included, or a word without Thai (in text without Thai, what
    ``[^\\W_]+`` finds)."""
    return re.compile(rf"[{THAI}]+|(?:(?![{THAI}])[^\W_])+")


def fold(text: str) -> str:
    """``text`` in one form: NFKC (fullwidth and halfwidth forms, ligatures, compatibility
    characters become the plain ones), case-folded ("ß" is "ss"; "İ" is "i", not "i" and a
    combining dot, which split "İstanbul" in two). ASCII text is only lower-cased."""
    if text.isascii():
        return text.lower()
    return unicodedata.normalize("NFKC", text).casefold().replace("i\u0307", "i")


def bigrams(run: str, *, last: bool = False) -> list[str]:
    """A run written without spaces as its overlapping character bigrams (a one-character
    run as itself). ``last``: the run's last character stands alone too, so a one-character
    query can match any position as a prefix of the bigrams."""
    if len(run) < 2:
        return [run] if run else []
    out = [run[i : i + 2] for i in range(len(run) - 1)]
    return [*out, run[-1]] if last else out


def split_unspaced(word: str) -> list[tuple[str, bool]]:
    """``word`` cut into its pieces in order, each with whether it is written without spaces
    ("3个孩子" -> ("3", False), ("个孩子", True))."""
    if word.isascii() or not unspaced_run().search(word):
        return [(word, False)]
    out: list[tuple[str, bool]] = []
    pos = 0
    for m in unspaced_run().finditer(word):
        if m.start() > pos:
            out.append((word[pos : m.start()], False))
        out.append((m.group(), True))
        pos = m.end()
    if pos < len(word):
        out.append((word[pos:], False))
    return out
