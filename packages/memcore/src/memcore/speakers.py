"""A speaker's label at the start of a line ("Priya: I signed up for pottery", "[Priya] ..."),
told apart from what was said.

Group chats, transcripts and multi-party benchmarks write each turn as "Name: text"; Hermes
gives each message of a session shared by several people as "[Name] text". In a short turn the
name is most of the text, so a sentence embedding of "Priya: Finally." lands near every
question that names Priya, and a name-only filler outranks the turn that answers. The vector
should read what was said; the words, the name included, stay in the stored text and the
lexical index, which is where a question naming the speaker finds them. And two people saying
the same words are two memories, never one.

Two forms, each followed by whitespace and then text:

* ``Name:``: one to three words, each starting with a capital letter (any script with case):
  "Mary Ann: yes". Not a label: a URL ("http://..."), a time ("10:30"), a lower-case word
  ("note: ..."), a colon with nothing after it, or a longer lead-in ("The plan for today: ...").
  A heading like "Title: ..." also reads as a label; the vector then reads the text after it,
  which is what it is about.
* ``[Name]``: any display name holding a letter, on one line, without brackets inside
  ("[alice_92] ...", "[Zoë|1234] ..."), as chat platforms let people name themselves. A
  checkbox ("[x] buy milk") reads as one too, and its vector reads "buy milk".
"""

from __future__ import annotations

import re

#: The most words a ``Name:`` label holds, and the most characters.
MAX_WORDS = 3
MAX_CHARS = 40
#: The most characters between the brackets of a ``[Name]`` label.
MAX_BRACKET_CHARS = 64

# A word of a name: letters (any script), inner apostrophes, hyphens or dots ("O'Neil",
# "Jean-Luc", "St."), or a trailing digit run ("Q9"). Checked for a capital initial below.
_WORD = r"[^\W\d_][\w'’.-]*"
_COLON = re.compile(rf"({_WORD}(?: {_WORD}){{0,{MAX_WORDS - 1}}}):[ \t]+(?=\S)")
_BRACKET = re.compile(rf"\[([^\[\]\n]{{1,{MAX_BRACKET_CHARS}}})\]\s+(?=\S)")


def _parse(text: str) -> tuple[str, int] | None:
    """(name, where what was said begins), or None without a label."""
    found = _BRACKET.match(text)
    if found is not None:
        name = found.group(1).strip()
        if any(ch.isalpha() for ch in name):
            return name, found.end()
        return None
    found = _COLON.match(text)
    if found is None or len(found.group(1)) > MAX_CHARS:
        return None
    name = found.group(1)
    if not all(word[0].isupper() for word in name.split(" ")):
        return None
    return name, found.end()


def label(text: str) -> str | None:
    """The speaker label ``text`` starts with (without its colon or brackets), or None."""
    parsed = _parse(text)
    return None if parsed is None else parsed[0]


def spoken(text: str) -> str:
    """``text`` without its speaker label: what was said."""
    parsed = _parse(text)
    return text if parsed is None else text[parsed[1] :]


#: Lead-ins that name a part of a note, not a person ("Note: ...", "Update: ..."): two texts
#: with two of these are not two people's words, so the dream may still pair them.
_LEAD_IN_WORDS = (
    "note notes update reminder remember fact todo important title subject question answer q a"
    " task goal summary tip info fyi ps re fwd edit correction preference context background"
    " topic warning error"
)
LEAD_INS = frozenset(_LEAD_IN_WORDS.split())


def differ(a: str, b: str) -> bool:
    """True when both texts carry a speaker label and the labels name different people (a
    lead-in such as "Note:" or "Update:" names nobody)."""
    first, second = label(a), label(b)
    if first is None or second is None:
        return False
    first, second = first.casefold(), second.casefold()
    return first != second and not {first, second} & LEAD_INS
