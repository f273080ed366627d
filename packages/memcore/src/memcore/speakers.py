"""A speaker's label at the start of a line ("Priya: I signed up for pottery"), told apart from
what was said.

Group chats, transcripts and multi-party benchmarks write each turn as "Name: text". In a
short turn the name is most of the text, so a sentence embedding of "Priya: Finally." lands
near every question that names Priya, and a name-only filler outranks the turn that answers.
The vector should read what was said; the words, the name included, stay in the stored text
and the lexical index, which is where a question naming the speaker finds them. And two
people saying the same words are two memories, never one.

A label is one to three words, each starting with a capital letter (any script with case),
then a colon and a space, then text: "Mary Ann: yes". Not a label: a URL ("http://..."), a
time ("10:30"), a lower-case word ("note: ..."), a colon with nothing after it, or a longer
lead-in ("The plan for today: ..."). A heading like "Title: ..." also reads as a label; the
vector then reads the text after it, which is what it is about.
"""

from __future__ import annotations

import re

#: The most words a label holds, and the most characters.
MAX_WORDS = 3
MAX_CHARS = 40

# A word of a name: letters (any script), inner apostrophes, hyphens or dots ("O'Neil",
# "Jean-Luc", "St."), or a trailing digit run ("Q9"). Checked for a capital initial below.
_WORD = r"[^\W\d_][\w'’.-]*"
_LABEL = re.compile(rf"({_WORD}(?: {_WORD}){{0,{MAX_WORDS - 1}}}):[ \t]+(?=\S)")


def label(text: str) -> str | None:
    """The speaker label ``text`` starts with (without its colon), or None."""
    found = _LABEL.match(text)
    if found is None or len(found.group(1)) > MAX_CHARS:
        return None
    name = found.group(1)
    if not all(word[0].isupper() for word in name.split(" ")):
        return None
    return name


def spoken(text: str) -> str:
    """``text`` without its speaker label: what was said."""
    found = _LABEL.match(text)
    if found is None or label(text) is None:
        return text
    return text[found.end() :]


def differ(a: str, b: str) -> bool:
    """True when both texts carry a speaker label and the labels are not the same name."""
    first, second = label(a), label(b)
    return first is not None and second is not None and first.casefold() != second.casefold()
