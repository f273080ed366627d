"""What kind of statement a memory makes, where words alike hide it: a question, a
supposition, and whom the sentence is about.

Each was a fact lost to a ``safe_auto`` pass: "Do I have a dog named Max?" merged "I have a
dog named Max." away (the same words in the same order, the question's "do" a filler);
"If I take the Zalando offer I would earn $95,000" superseded "I earn $80,000"; "I now wake
up at 5:30am" superseded "David wakes up at 7am" ("I" is a stop word, so nothing told the
two people apart).
"""

from __future__ import annotations

import itertools
import re

from memcore.calendar_words import MONTHS, WEEKDAYS
from memcore.dream import lexicon
from memcore.dream.lexicon import RELATIONS

#: Words that make a statement a supposition rather than a fact.
_SUPPOSING = frozenset(
    [
        "if",
        "would",
        "might",
        "maybe",
        "perhaps",
        "suppose",
        "supposing",
        "hypothetically",
        "considering",
        "unless",
    ]
)
#: Where one clause of a sentence ends and another starts.
_CLAUSE_BREAK = re.compile(r"[;,:；，。、]|\.\s|\b(?:and|but|while|whereas)\b", re.IGNORECASE)
#: Words that make a statement an aim (a goal, a hope, a plan) rather than what is: an aim
#: and its outcome are two facts ("my goal is a 10k under 50 minutes" / "I ran it in 49").
_AIMING = frozenset(
    [
        "goal",
        "goals",
        "aim",
        "aiming",
        "target",
        "hope",
        "hoping",
        "hopes",
        "want",
        "wants",
        "wanted",
        "wish",
        "plan",
        "plans",
        "planning",
        "planned",
        "intend",
        "intending",
        "trying",
        "thinking",
        "dream",
        "resolution",
        "like",
    ]
)
#: Capitalised words that name no one and nowhere: a schedule's day or month changes in place.
_CALENDAR = frozenset(
    (*MONTHS, *WEEKDAYS, *(day + "s" for day in WEEKDAYS), "i", "i'm", "i've", "i'd", "i'll")
)
_NAME = re.compile(r"(?<![.!?:]\s)(?<!^)\b[A-Z][\w'’-]*")
#: Time words that make a sentence one day's event ("I slept 6 hours last night"): another
#: day's ("... 8 hours last night", in March) is another event, not a new value of it.
_EPISODE = re.compile(
    r"\b(?:last night|yesterday|today|tonight|this (?:morning|afternoon|evening)"
    r"|(?:last|this past) (?:week|weekend|month|year|" + "|".join(WEEKDAYS) + r")"
    r"|\d+ (?:days?|weeks?|months?) ago|the other day)\b",
    re.IGNORECASE,
)
#: Words that tell of a way back rather than the way out.
_RETURNING = frozenset(["back", "return", "returning", "homeward", "inbound"])
#: Words that say whose a relation is: "my mother", "our son".
_OWNERS = frozenset(["my", "our", "your", "his", "her", "their"])
_WORD = re.compile(r"[^\W\d_][\w'’-]*", re.UNICODE)
#: Pronouns a sentence's subject may be: the grammatical person it names.
_PRONOUNS = frozenset(["i", "we", "you", "he", "she", "they"])
#: Words before a sentence's subject that are not it: owners, articles, chat openers.
_BEFORE_SUBJECT = frozenset(
    [
        "my",
        "our",
        "your",
        "his",
        "her",
        "their",
        "the",
        "a",
        "an",
        "actually",
        "so",
        "well",
        "now",
        "also",
        "and",
        "btw",
        "oh",
        "ok",
        "okay",
        "yes",
        "no",
        "hi",
        "hey",
        "if",
        "when",
        "since",
    ]
)


def asks(text: str) -> bool:
    """``text`` is a question (it ends with a question mark, in any script's form)."""
    return text.rstrip().rstrip("\"'”’)").endswith(("?", "？", "؟"))


def supposes(text: str) -> bool:
    """``text`` says what would be, not what is ("if", "would", "might", "maybe")."""
    return any(w.lower() in _SUPPOSING for w in _WORD.findall(text))


def _unowned(word: str) -> str:
    """``word`` without an owner's ending: "Anita's" is Anita."""
    return word.removesuffix("'s").removesuffix("’s")


def aims(text: str) -> bool:
    """``text`` states an aim ("my goal is", "I hope to", "I'd like to", "we're planning")
    rather than what is."""
    said = [w.lower() for w in _WORD.findall(text)]
    for i, w in enumerate(said):
        if w == "like" and (i == 0 or said[i - 1] not in ("i'd", "we'd", "would")):
            continue  # "I like jazz" is a taste, "I'd like to" an aim
        if w in _AIMING:
            return True
    return False


def tells_an_episode(text: str) -> bool:
    """``text`` tells of one day's event ("last night", "yesterday", "3 days ago")."""
    return _EPISODE.search(text) is not None


def returns(text: str) -> bool:
    """``text`` tells of a way back ("flying back from Japan", "the return flight"): the way
    out is another fact, however alike the sentences."""
    return any(w.lower() in _RETURNING for w in _WORD.findall(text))


def relation(text: str) -> str | None:
    """The relation a sentence opens with ("my mother", "our son"), or None."""
    said: list[str] = [str(w).lower() for w in _WORD.findall(text)[:3]]
    for owner, word in itertools.pairwise(said):
        if owner in _OWNERS:
            return _unowned(word)
    return None


def subject(text: str) -> tuple[str, str] | None:
    """Whom the sentence is about, from its first words: ``("person", "i")`` for a pronoun,
    ``("name", "david")`` for a capitalised name (``"name's"`` too, as ``("owner", ...)``);
    None when a common word starts it. A label before a colon ("Update:") is passed over."""
    for raw in text.split()[:8]:
        if raw.endswith(":"):
            continue
        match = _WORD.search(raw)
        if match is None:
            continue
        word = match.group()
        base = _unowned(word)
        low = base.lower()
        if low in _PRONOUNS:
            return ("person", low)
        if low in _BEFORE_SUBJECT or low in RELATIONS:
            continue
        if base[:1].isupper():
            return ("owner" if base != word else "name", low)
        return None
    return None


def about_another(old: str, new: str) -> bool:
    """The newer sentence is about someone else than the older one: a name against the
    speaker or another pronoun ("David wakes up at 7am" / "I now wake up at 5:30am"), or
    two owners ("Emma's recital" / "Jack's school play")."""
    kin = relation(old), relation(new)
    if None not in kin and kin[0] != kin[1] and all(k in RELATIONS for k in kin):
        return True  # "my brother Luis lives in Miami" / "my mother moved to Miami"
    a, b = subject(old), subject(new)
    if a is None or b is None or a == b:
        return False
    kinds = {a[0], b[0]}
    if "person" in kinds and kinds != {"person"}:
        return True  # a name against a pronoun
    return kinds == {"owner"}


def names_left_out(old: str, new: str) -> list[str]:
    """Names (places, people, firms) ``old`` says past its first word that ``new`` does not,
    where ``new`` names none of its own in their place: "Anita is getting married on June 14
    in Toronto" superseded by "Anita's wedding is now on June 21" would hide where; "goes to
    Sunny Days preschool" then "goes to Lincoln Elementary" is the place changed."""
    named = _names(old)
    dropped = named.keys() - {w.lower() for w in _said(new)}
    if not dropped or _names(new).keys() - {w.lower() for w in _said(old)}:
        return []
    return [named[w] for w in sorted(dropped)]


def _said(text: str) -> list[str]:
    return [_unowned(w) for w in _WORD.findall(text)]


def _names(text: str) -> dict[str, str]:
    """The capitalised words of ``text`` past a sentence's first word, by their folded form;
    no weekday, month or "I"."""
    found = (_unowned(m.group()) for m in _NAME.finditer(text.strip()))
    return {w.lower(): w for w in found if w.lower() not in _CALENDAR}


def left_out(old: str, new: str) -> str | None:
    """A clause of ``old`` that ``new`` says nothing of, or None: "My mother Claire is 68
    and lives in Bordeaux" superseded by "My mother Claire is now 69" would hide where she
    lives. A clause counts when it holds a word other than a number and ``new`` shares none
    of its words."""
    said = lexicon.salient_tokens(new)
    for clause in _CLAUSE_BREAK.split(old):
        words = lexicon.salient_tokens(clause)
        if words - lexicon.numbers(clause) and not words & said:
            return clause.strip(" .!?\n\t")
    return None
