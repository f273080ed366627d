"""Words of a memory as the planner compares them: content words, numbers, and their weights."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping

import attrs

from memcore import segments
from memcore.dream import unspaced


def _set(text: str) -> frozenset[str]:
    return frozenset(text.split())


_WORD = re.compile(r"[^\W_]+(?:[&'][^\W_]+)*", re.UNICODE)
_NUMBER_WORDS = _set(
    "zero one two three four five six seven eight nine ten eleven twelve thirteen fourteen "
    "fifteen sixteen seventeen eighteen nineteen twenty thirty forty fifty sixty seventy "
    "eighty ninety hundred thousand million dozen half couple"
)
#: Function words and chat filler: they say nothing about the subject of a memory.
STOPWORDS = _set(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing done down during each few for from
    further had has have having he her here hers herself him himself his how i i'm i've i'd i'll if
    in into is it it's its itself just let me more most my myself no nor not of off on once only or
    other our ours ourselves out over own same she should so some such than that that's the their
    theirs them themselves then there these they this those through to too under until up very was
    we were what when where which while who whom why will with would you your yours yourself
    yourselves like really think know want get got going go way thing things something anything
    lot lots much many well oh okay ok yes yeah hi hello thanks thank please sure maybe actually
    by way speaking mean say said tell told let's can't don't didn't doesn't won't wouldn't i'd
    could've should've any help need one ones even still though although however"""
)
#: Words that announce a change of a fact (the newer memory says so).
UPDATE_CUES = _set(
    """now currently current anymore longer instead moved switched changed change new newly
    latest recent recently most updated update finally since already so far total"""
) | frozenset(unspaced.CUES)


#: People a fact may be said of (stemmed as :func:`meaning_words` stems): a repeat that adds
#: one ("the user's son ...") may be about someone else. "law" stands for "-in-law".
RELATIONS = _set(
    """son daughter child children kid baby boy girl brother sister sibling mother mom mum
    father dad parent grandmother grandma grandfather grandpa grandparent grandson
    granddaughter grandchild aunt uncle cousin nephew niece wife husband spouse partner
    boyfriend girlfriend fiance fiancee friend roommate neighbour neighbor boss manager
    colleague coworker teacher student doctor law he she they him her them his their"""
)
#: Words that turn a statement into its opposite ("not", "never", "without"; "n't" reads "not"),
#: in English and in the languages whose negation is a word of its own. Without them "Ich bin
#: nicht allergisch gegen Erdnüsse" was merged into "Ich bin allergisch ..." (0.84, applied by
#: ``safe_auto``), one fact kept for its opposite. A word listed here that is no negation
#: (German "Ei", an egg) can only keep two memories apart, never merge them.
NEGATIONS = _set(
    """not no never none nobody nothing nowhere neither nor without cannot
    nicht kein keine keinen keinem keiner keines nie niemals nichts niemand
    niet geen nooit niets niemand
    ne pas jamais rien aucun aucune personne
    nunca jamás nada nadie ningún ninguno ninguna tampoco
    não nunca jamais ninguém nenhum nenhuma
    non mai niente nulla nessuno nessuna
    ikke aldri aldrig ingen intet ingenting inte inget
    nie nigdy nic nikt ne nikdy nikdo
    не нет никогда ничего никто ни ні ніколи
    ei emme ette eivät nem nincs soha
    değil yok hiç
    δεν μην όχι ποτέ
    tidak bukan belum jangan không chưa chẳng
    لا لم لن ليس ليست
    לא אין
    नहीं मत
    안 못 않 없"""
)
#: Korean says "not" as the start of a word too: 않아요 ("do not"), 없어요 ("there is no"),
#: 못해요 ("cannot").
_NEGATING_STARTS = ("않", "없", "못")
#: Who a statement is about, by person: "he", "him" and "his" name one, "she" and "her" another.
_PERSONS = {
    word: person
    for person, forms in (
        ("i", "i me my mine myself"),
        ("we", "we us our ours ourselves"),
        ("you", "you your yours yourself yourselves"),
        ("he", "he him his himself"),
        ("she", "she her hers herself"),
        ("they", "they them their theirs themselves"),
    )
    for word in forms.split()
}
#: Words that name an owner: before a noun ("my son is 7") the number is the noun's, not the
#: owner's; right before the number ("his 3 kids", "gave her 3") it is the owner's.
_POSSESSIVES = _set("my our your his her their")
#: Words that carry no fact of their own: a repeat may add or leave them out.
FILLER = _set(
    """a an the am is are was were be been being do does did has have had having and really
    very just quite so too also oh okay ok yes yeah well actually please thanks thank hi hello
    sure maybe"""
)
_CONTRACTED = (
    ("n't", " not"),
    ("'m", " am"),
    ("'re", " are"),
    ("'ve", " have"),
    ("'ll", " will"),
    ("'s", ""),
)
_IRREGULAR = {"can't": ["can", "not"], "won't": ["will", "not"], "shan't": ["shall", "not"]}


def words(text: str) -> list[str]:
    """Folded words (:func:`memcore.segments.fold`), apostrophes and '&' kept inside (``H&M``,
    ``I've``); a run of Chinese or Japanese as its numbers and bigrams (:mod:`.unspaced`)."""
    folded = segments.fold(text)
    if folded.isascii():
        return _WORD.findall(folded)
    out: list[str] = []
    for word in _WORD.findall(unspaced.join_pauses(folded)):
        for part, unspaced_run in segments.split_unspaced(word):
            out.extend(unspaced.words(part) if unspaced_run else (part,))
    return out


def plain_words(text: str) -> list[str]:
    """:func:`words` with contractions spelt out ("don't" -> "do not", "I'm" -> "i am")."""
    out: list[str] = []
    for w in words(text.replace("\u2019", "'")):
        if w in _IRREGULAR:
            out.extend(_IRREGULAR[w])
            continue
        for suffix, full in _CONTRACTED:
            if w.endswith(suffix) and len(w) > len(suffix):
                out.extend((w[: -len(suffix)] + full).split())
                break
        else:
            out.append(w)
    return out


def negations(text: str) -> int:
    """How many negating words ``text`` holds (and Chinese or Japanese negations, which are
    no words of their own: 不, 没有, ない): a statement and its negation differ here."""
    said = plain_words(text)
    marked = sum(w in NEGATIONS or w.startswith(_NEGATING_STARTS) for w in said)
    return marked + unspaced.negations(segments.fold(text))


def meaning_words(text: str) -> frozenset[str]:
    """Every word of ``text`` that says something (stemmed): pronouns, prepositions and
    negations too ("he"/"she", "before"/"after"); only :data:`FILLER` is left out."""
    return frozenset(_stem(w) for w in plain_words(text) if w not in FILLER)


def _stem(word: str) -> str:
    # A light plural fold so "tops" meets "top" and "eggs" meets "egg"; no linguistics beyond.
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def salient_tokens(text: str) -> frozenset[str]:
    """Content words (stemmed) and numbers: what a memory is about and what it claims."""
    return frozenset(_stem(w) for w in words(text) if w not in STOPWORDS)


def numbers(text: str) -> frozenset[str]:
    """Quantities a memory states: digits (``$420``, ``30``) and number words."""
    out = set()
    for w in words(text):
        if _is_number(w):
            out.add(w)
    return frozenset(out)


#: What :func:`words` drops but a fact may hang on, in the order written: a number whole with
#: its sign, currency and separators ("-18", "$1200", "3.5", "2024-05-03", "20%"), a sign a
#: name ends with ("C++", "C#", "O+", "A-"), and "am"/"pm" after a time.
_MARK = re.compile(
    r"(?:[$€£¥₹]\s?)?(?:(?<![\w.])[-+−])?\d+(?:[.,:/-]\d+)*%?"
    r"|(?<=[^\W_])[+#]+|(?<=[^\W_])[-−](?![\w])"
    r"|(?<=\d)\s?[ap]\.?m\b\.?",
    re.UNICODE | re.IGNORECASE,
)


def marks(text: str) -> tuple[str, ...]:
    """The numbers, signs and times of day of ``text`` as written, in order (:data:`_MARK`):
    "2 cats and 3 dogs" and "3 cats and 2 dogs", "3.5" and "5.3", "$1200" and "€1200",
    "O+" and "O-", "6 am" and "6 pm" hold the same words but state different facts."""
    return tuple(_mark(m.group()) for m in _MARK.finditer(segments.fold(text)))


def marks_differ(a: tuple[str, ...], b: tuple[str, ...]) -> bool:
    """Whether two texts' :func:`marks` state different facts. A text that writes its
    numbers in Chinese or Japanese numerals (五月三日) holds no digits: then only signs and
    times of day are compared here (:func:`numbers` compares the values)."""
    if a and b:
        return a != b
    return [m for m in a if not m[-1].isdigit()] != [m for m in b if not m[-1].isdigit()]


def _mark(found: str) -> str:
    """One mark as compared: "6 p.m." and "6pm" say the same time of day."""
    found = found.replace(" ", "")
    return found.replace(".", "").lower() if found[-1] in "mM." else found


def meaning_order(text: str) -> tuple[str, ...]:
    """The :func:`meaning_words` of ``text`` in the order it says them, each once: "Alice owes
    Bob" and "Bob owes Alice", "from Paris to London" and "from London to Paris"."""
    seen: dict[str, None] = {}
    for w in plain_words(text):
        if w not in FILLER:
            seen.setdefault(_stem(w), None)
    return tuple(seen)


def _is_number(word: str) -> bool:
    return any(c.isdigit() for c in word) or word in _NUMBER_WORDS


#: How :func:`quantities` marks the person a number is said of ("he has 2 kids" -> "@he").
PERSON = "@"


def quantities(text: str, window: int = 3) -> frozenset[tuple[str, frozenset[str]]]:
    """Each number with the content words around it: what it counts ("30" -> dozen, eggs),
    and whose it is (:data:`PERSON` and the grammatical person of a pronoun near it)."""
    ws = words(text)
    out = set()
    for i, w in enumerate(ws):
        if not _is_number(w):
            continue
        span = _span(ws, i, window)
        around = [ws[j] for j in span]
        near = [_stem(x) for x in around if x not in STOPWORDS and not _is_number(x)]
        near += [PERSON + _PERSONS[ws[j]] for j in span if _names_whose(ws, j)]
        out.add((w, frozenset(near)))
    return frozenset(out)


def _span(ws: list[str], i: int, window: int) -> list[int]:
    """The positions within ``window`` words of ``ws[i]``; a bigram of Chinese or Japanese
    is half a word (two characters of such text say about what one word does)."""
    out: list[int] = []
    for step in (-1, 1):
        j, used = i + step, 0.0
        while 0 <= j < len(ws):
            used += 0.5 if unspaced.is_bigram(ws[j]) else 1.0
            if used > window:
                break
            out.append(j)
            j += step
    return out


def _names_whose(ws: list[str], j: int) -> bool:
    """Whether ``ws[j]`` is a pronoun naming whose a number near it is: not an owner before
    another noun ("my son", "our team")."""
    if ws[j] not in _PERSONS:
        return False
    return ws[j] not in _POSSESSIVES or j + 1 == len(ws) or _is_number(ws[j + 1])


def recounts(
    old: frozenset[tuple[str, frozenset[str]]], new: frozenset[tuple[str, frozenset[str]]]
) -> list[tuple[frozenset[str], frozenset[str]]]:
    """Where the newer text gives another number for something the older one counted (the
    words around the two numbers share one): ``(older words, newer words)`` of each."""
    old_numbers = {n for n, _ in old}
    return [
        (c1, c2)
        for n1, c1 in old
        for n2, c2 in new
        if n2 != n1 and n2 not in old_numbers and any(t[0] != PERSON for t in c1 & c2)
    ]


def counts_another(pairs: list[tuple[frozenset[str], frozenset[str]]]) -> bool:
    """Every recount is said of something else than the older number ("my sister has 2
    kids" -> "my brother has 3 kids", "he has 2" -> "she has 3"): maybe another's count."""
    return bool(pairs) and all(_said_of_another(c1, c2) for c1, c2 in pairs)


def _said_of_another(old: frozenset[str], new: frozenset[str]) -> bool:
    who_old = {t for t in old if t[0] == PERSON}
    who_new = {t for t in new if t[0] == PERSON}
    if who_old and who_new and not who_old & who_new:
        return True
    old, new = old - who_old, new - who_new
    return bool(old - new) and bool(new - old - UPDATE_CUES)


def cues(text: str) -> frozenset[str]:
    return frozenset(w for w in words(text) if w in UPDATE_CUES)


@attrs.frozen
class Lexicon:
    """Inverse document frequencies over the memories of one task."""

    idf: Mapping[str, float]
    default: float

    @classmethod
    def build(cls, documents: Iterable[frozenset[str]]) -> Lexicon:
        counts: Counter[str] = Counter()
        n = 0
        for tokens in documents:
            n += 1
            counts.update(tokens)
        idf = {t: math.log(1.0 + (n - c + 0.5) / (c + 0.5)) for t, c in counts.items()}
        return cls(idf, math.log(1.0 + (n + 0.5) / 0.5))

    def weight(self, token: str) -> float:
        return self.idf.get(token, self.default)

    def overlap(self, a: frozenset[str], b: frozenset[str]) -> float:
        """IDF-weighted Jaccard overlap in [0, 1]: 1 when both hold the same words."""
        union = a | b
        if not union:
            return 0.0
        total = sum(self.weight(t) for t in union)
        return sum(self.weight(t) for t in a & b) / total if total else 0.0

    def telling(self, tokens: frozenset[str], floor: float) -> frozenset[str]:
        """The tokens rarer than ``floor`` (IDF): the ones that name a subject."""
        return frozenset(t for t in tokens if self.weight(t) >= floor)
