"""Text analysis for the lexical index: words, CJK bigrams, stop-words and FTS5 query building.

FTS5's ``unicode61`` tokenizer keeps a run of CJK characters as one token, so 咖啡 is never
found inside 喜欢喝咖啡. We therefore rewrite CJK runs (and Thai runs, also written without
spaces) into overlapping bigrams (plus the run's last character) before indexing and before
querying; the FTS5 tokenizer then only splits on the spaces we put in.

Text is first brought to one form (:func:`fold`): CJK input methods type fullwidth Latin and
digits ("ｉＰｈｏｎｅ", "２０２３年"), Japanese text may hold halfwidth kana, and a pasted
text ligatures ("oﬃce") or "ß"; without it each of these finds only itself. Emoji, which are
no letters to FTS5, are spelled as words there, one each ("🍕" is ``emoji127829``).
"""

from __future__ import annotations

import functools
import re
import unicodedata
from collections.abc import Iterable

import attrs

from memcore import segments
from memcore_sqlite.emoji import EMOJI_CLASS, is_emoji

_WORD = re.compile(r"[^\W_]+", re.UNICODE)


_STOP_WORD_TEXT = """a about above after again against all am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers herself him himself his how i if in into is it
    its itself just me more most my myself no nor not now of off on once only or other our ours
    ourselves out over own same she should so some such than that the their theirs them
    themselves then there these they this those through to too under until up very was we were
    what when where which while who whom why will with would you your yours yourself
    yourselves s t don ll m re ve d"""
#: Contractions of the words above typed without their apostrophe ("whats my sisters name"):
#: "what's" is "what" and "s", both dropped, but "whats" was a term, which the index's stemmer
#: reads as "what", so stored questions ("What's the name of that movie?") outranked the
#: answer. Left out: those that are words too ("ill", "id", "well", "shed", "wed", "hell").
_CONTRACTED_TEXT = """whats wheres whos hows whens whys thats theres heres hes shes theyre youre
    youve youll youd weve theyve im ive dont doesnt didnt isnt arent wasnt werent cant
    couldnt wont wouldnt shouldnt hasnt havent hadnt"""
#: Adverbs of likelihood. In a question ("Would Maya likely enjoy a whodunit?") they ask how
#: sure the answer is, not what it is about, and the stemmer reads "likely" as "like", one of
#: the commonest words of chat: "That sounds like a lot." matched the question's name and it.
_HEDGE_TEXT = "likely probably possibly perhaps"
#: Verbs that frame a question about a preference ("Would Ada enjoy backpacking in a national
#: park?", "Would Zoe want to foster kittens?") and say nothing of its subject, while chat
#: is full of them ("Enjoy it while it lasts.", "Want to split a pizza?", "That sounds like a
#: lot."): short turns holding the question's name and one of these outranked the evidence,
#: which says "I could spend every weekend up in the mountains with a tent".
_FRAME_TEXT = "like likes liked enjoy enjoys enjoyed want wants wanted"
#: Most frequent English function words, which match most rows and cost the most to score,
#: their contractions, and the hedges and frames above. Dropped from queries only; memories
#: are indexed whole.
STOP_WORDS = frozenset(
    _STOP_WORD_TEXT.split() + _CONTRACTED_TEXT.split() + _HEDGE_TEXT.split() + _FRAME_TEXT.split()
)
#: Cap on query terms: an FTS5 query's cost grows with every term's posting list.
MAX_QUERY_TERMS = 8


@functools.cache
def _emoji() -> re.Pattern[str]:
    """The blocks emoji live in (:mod:`memcore_sqlite.emoji`, which the vector side counts by
    too); :func:`_emoji_word` keeps only their symbols."""
    return re.compile(f"[{EMOJI_CLASS}]")


def _emoji_word(found: re.Match[str]) -> str:
    char = found.group()
    return f" emoji{ord(char)} " if is_emoji(char) else char


def fold(text: str) -> str:
    """``text`` in one form (:func:`memcore.segments.fold`), each emoji a word of its own.
    ASCII text is only lower-cased: it is indexed and ranked as before."""
    if text.isascii():
        return text.lower()
    return _emoji().sub(_emoji_word, unicodedata.normalize("NFKC", segments.fold(text)))


def tokens(text: str) -> list[str]:
    """Folded index tokens in order: words as they are, CJK and Thai runs as bigrams."""
    out: list[str] = []
    folded = fold(text)
    for word in (_WORD if folded.isascii() else segments.piece()).findall(folded):
        for part, unspaced in segments.split_unspaced(word):
            out.extend(segments.bigrams(part, last=True) if unspaced else (part,))
    return out


def index_text(words: Iterable[str], prefix: str = "") -> str:
    """The body we hand to FTS5: ``words`` (a text's :func:`tokens`), each after ``prefix``,
    joined by spaces. It takes the tokens so the store tokenizes once for both its columns."""
    return " ".join(prefix + t for t in words)


def _is_cjk(term: str) -> bool:
    return not term.isascii() and bool(segments.unspaced_run().fullmatch(term))


def is_prefix_term(term: str) -> bool:
    """A single CJK character: matched as a prefix of the bigrams it begins."""
    return _is_cjk(term) and len(term) == 1


def _quote(term: str, prefix: str = "") -> str:
    if is_prefix_term(term):
        return f'"{prefix}{term}"*'
    return f'"{prefix}{term}"'


def query_terms(query: str) -> tuple[str, ...]:
    """Distinct query terms without stop-words, capped, the most informative first."""
    seen = list(dict.fromkeys(tokens(query)))
    content = [t for t in seen if t not in STOP_WORDS]
    if not content:
        # A query of only stop-words still deserves an answer; keep a few of them.
        content = seen
    if len(content) > MAX_QUERY_TERMS:
        # Longer words are rarer, so they cost less and say more; keep query order otherwise.
        # Bigrams are all of one length: those of a question's frame go last.
        ranked = sorted(content, key=lambda t: (not _frames(t), len(t)), reverse=True)
        keep = set(ranked[:MAX_QUERY_TERMS])
        content = [t for t in content if t in keep][:MAX_QUERY_TERMS]
    return tuple(content)


#: Characters of a Chinese question's frame, not of its subject: pronouns, particles,
#: question words, "is", "this", "that", "very" (simplified and traditional). All bigrams
#: are two characters long, so the cap kept a long question's first eight, its frame:
#: "你知道我对什么东西过敏吗" kept 你知 ... 东西 and dropped 过敏, the one word its answer
#: shares, which then scored 0. Only the choice among too many terms uses them.
_CJK_FRAME = frozenset("我你妳您他她它们們的了吗嗎呢吧啊呀嘛么麼什甚哪谁誰是这這那很")


def _frames(term: str) -> bool:
    """A bigram that holds a frame character or a kana (Japanese particles and endings:
    "コーヒーの名前を覚えていますか" keeps コー, ヒー and 名前 before の名 and てい)."""
    return _is_cjk(term) and any(c in _CJK_FRAME or "\u3040" <= c <= "\u309f" for c in term)


@attrs.frozen
class LexicalQuery:
    """Builds FTS5 MATCH expressions for a query's terms, each restricted by ``tags``.

    ``tags`` (scope and metadata tokens) is ANDed into every expression, so the index
    intersects with the caller's scope before it scores anything.
    """

    terms: tuple[str, ...]
    tags: str | None = None
    #: A tenant prefix: match the tenant-local ``tbody`` column instead of ``body``.
    prefix: str | None = None
    #: The tag expression that selects the whole scope (counts its rows); default ``tags``.
    scope: str | None = None

    def _q(self, term: str) -> str:
        return _quote(term, self.prefix or "")

    def _restrict(self, body: str) -> str:
        column = "tbody" if self.prefix else "body"
        if self.tags:
            return f"tags : ({self.tags}) AND {column} : ({body})"
        return f"{column} : ({body})"

    def all_of(self, terms: tuple[str, ...] | None = None) -> str:
        return self._restrict(" AND ".join(self._q(t) for t in (terms or self.terms)))

    def scope_only(self) -> str | None:
        scope = self.scope or self.tags
        return f"tags : ({scope})" if scope else None

    def with_any(self, term: str, others: tuple[str, ...]) -> str:
        """``term`` together with at least one of ``others``."""
        return self._restrict(f"{self._q(term)} AND ({' OR '.join(self._q(t) for t in others)})")


def build_query(
    query: str, *, tags: str | None = None, prefix: str | None = None, scope: str | None = None
) -> LexicalQuery:
    return LexicalQuery(query_terms(query), tags, prefix, scope)
