"""Which characters are emoji, for both search signals: the lexical index spells each as a
word of its own, and an embedder's coverage counts them as a script. One definition, so the
two never disagree about a character.

May import: nothing of memcore_sqlite (``lexical`` and ``vector`` both import it).
"""

from __future__ import annotations

import unicodedata

#: Where emoji live: Miscellaneous Symbols and Dingbats, and the planes' symbol blocks from
#: U+1F000. Only the symbols (category So) among them are emoji.
EMOJI_BLOCKS = ((0x2600, 0x27BF), (0x1F000, 0x1FFFF))

#: :data:`EMOJI_BLOCKS` as the inside of a regular expression's character class.
EMOJI_CLASS = "".join(f"{chr(first)}-{chr(last)}" for first, last in EMOJI_BLOCKS)


def is_emoji(char: str) -> bool:
    """A symbol (So) in :data:`EMOJI_BLOCKS`."""
    code = ord(char)
    return (
        any(first <= code <= last for first, last in EMOJI_BLOCKS)
        and unicodedata.category(char) == "So"
    )
