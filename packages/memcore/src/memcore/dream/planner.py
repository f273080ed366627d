"""The local dream planner: near-duplicates become MERGE, superseded facts UPDATE or DELETE.

Inputs are plain values a store has loaded (one task's memories, their event times, and the
vector similarity of likely pairs); the output is a list of actions with a confidence and a
reason. Pairs are only ever formed inside one tenant, and only from memories inside the
task's scopes, so no action can reach another tenant's memory.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence

import attrs

from memcore import speakers
from memcore.dream import clauses, lexicon
from memcore.dream.lexicon import Lexicon
from memcore.dream.scopes import in_scopes, promoted_scope
from memcore.scope import Scope, ScopePattern


@attrs.frozen
class Candidate:
    """One stored memory as the planner sees it. ``time``: when the fact was stated."""

    id: str
    scope: Scope
    text: str
    time: float
    #: Tie-breaker for equal times (insertion order).
    order: int = 0
    version: int = 1


@attrs.frozen
class Neighbour:
    """Two memories and the cosine of their vectors (the store's embedder)."""

    a: str
    b: str
    similarity: float


@attrs.frozen
class PlannerSettings:
    #: MERGE: vectors this close and words this shared mean "the same memory, said again".
    merge_similarity: float = 0.90
    merge_overlap: float = 0.45
    #: MERGE without vectors (a lexical-only store): the words alone must nearly coincide.
    lexical_merge_overlap: float = 0.80
    #: Supersession: same subject (vectors this close, or words this shared without vectors).
    subject_similarity: float = 0.45
    lexical_subject_overlap: float = 0.30
    #: ... and at least this many shared rare words (what names the subject).
    min_shared_subject_words: int = 2
    #: A word in more than this share of the task's memories does not name a subject.
    subject_word_share: float = 0.05
    #: The most a MERGE is worth when the wording it keeps leaves out words another of its
    #: memories says: below every default threshold, so only a person applies it.
    lossy_merge_confidence: float = 0.5
    #: The most a supersession is worth when the newer number is said of something else
    #: than the older one ("my sister has 2 kids" -> "my brother has 3 kids"): it may be
    #: another fact, so only a person applies it.
    other_subject_confidence: float = 0.5
    #: The most a supersession is worth when the newer memory says nothing of a clause of
    #: the older ("is 68 and lives in Bordeaux" -> "is now 69"): the older hides with it.
    lossy_update_confidence: float = 0.5
    #: Allow MERGE across agents/runs of one tenant into their promoted scope.
    promote_scope: bool = False
    #: Lexical pairing reads posting lists no longer than this (common words pair everything).
    max_posting: int = 200


#: At most this many words said by only one of two memories, each way, make the newer a copy
#: of the older with words swapped (:func:`_supersedes`).
_SWAPPED = 2


@attrs.frozen
class PlannedAction:
    """``target_id``: the memory the action writes (None for a MERGE's new memory);
    ``source_ids``: the other memories it reads (merged, superseded or superseding)."""

    action: str
    target_scope: Scope
    target_id: str | None
    source_ids: tuple[str, ...]
    text: str | None
    confidence: float
    reason: str

    def read_ids(self) -> tuple[str, ...]:
        return self.source_ids + (() if self.target_id is None else (self.target_id,))


@attrs.frozen
class _Seen:
    cand: Candidate
    tokens: frozenset[str]
    numbers: frozenset[str]
    quantities: frozenset[tuple[str, frozenset[str]]]
    cues: frozenset[str]
    norm: str
    negations: int
    #: Every word that says something (:func:`lexicon.meaning_words`), and in its order.
    meaning: frozenset[str]
    order: tuple[str, ...]
    #: Numbers, signs and times of day as written, in order (:func:`lexicon.marks`).
    marks: tuple[str, ...]


def _norm(text: str) -> str:
    return " ".join(lexicon.words(text))


def neighbours_by_cosine(
    vectors: Mapping[str, Sequence[float]], *, k: int = 10, floor: float = 0.3
) -> list[Neighbour]:
    """Each memory's ``k`` nearest others (pure Python: for small sets and tests)."""
    ids = list(vectors)
    unit: dict[str, list[float]] = {}
    for i in ids:
        v = [float(x) for x in vectors[i]]
        n = math.sqrt(sum(x * x for x in v)) or 1.0
        unit[i] = [x / n for x in v]
    out: dict[tuple[str, str], float] = {}
    for i in ids:
        sims = sorted(
            ((sum(x * y for x, y in zip(unit[i], unit[j])), j) for j in ids if j != i),
            reverse=True,
        )[:k]
        for s, j in sims:
            if s >= floor:
                out[(min(i, j), max(i, j))] = s
    return [Neighbour(a, b, s) for (a, b), s in sorted(out.items())]


def _see(c: Candidate, tokens: frozenset[str]) -> _Seen:
    return _Seen(
        c,
        tokens,
        lexicon.numbers(c.text),
        lexicon.quantities(c.text),
        lexicon.cues(c.text),
        _norm(c.text),
        lexicon.negations(c.text),
        lexicon.meaning_words(c.text),
        lexicon.meaning_order(c.text),
        lexicon.marks(c.text),
    )


def _lexical_pairs(
    tokens: Mapping[str, frozenset[str]],
    lex: Lexicon,
    floor: float,
    cap: int,
    focus: Collection[str] | None = None,
) -> set[tuple[str, str]]:
    """Pairs that share a rare word, found through an inverted index of rare words
    (with ``focus``: only the pairs that hold one of its memories)."""
    postings: dict[str, list[str]] = defaultdict(list)
    for mid, toks in tokens.items():
        for t in lex.telling(toks, floor):
            postings[t].append(mid)
    pairs: set[tuple[str, str]] = set()
    for ids in postings.values():
        if len(ids) > cap:
            continue
        if focus is not None:
            for a in ids:
                if a in focus:
                    pairs.update((min(a, b), max(a, b)) for b in ids if b != a)
            continue
        for i, a in enumerate(ids):
            for b in ids[i + 1 :]:
                pairs.add((min(a, b), max(a, b)))
    return pairs


class _Groups:
    """Union-find over memory ids (MERGE groups)."""

    def __init__(self) -> None:
        self.parent: dict[str, str] = {}

    def find(self, x: str) -> str:
        self.parent.setdefault(x, x)
        while self.parent[x] != x:
            self.parent[x] = self.parent[self.parent[x]]
            x = self.parent[x]
        return x

    def union(self, a: str, b: str) -> None:
        ra, rb = self.find(a), self.find(b)
        if ra != rb:
            self.parent[max(ra, rb)] = min(ra, rb)


def _agent(scope: Scope) -> tuple[str, str, str]:
    return (scope.app_id, scope.tenant_id, scope.agent_id)


def _newer(a: Candidate, b: Candidate) -> bool:
    return (b.time, b.order, b.id) > (a.time, a.order, a.id)


def plan(
    candidates: Iterable[Candidate],
    neighbours: Iterable[Neighbour],
    patterns: Sequence[ScopePattern],
    settings: PlannerSettings | None = None,
    *,
    focus: Collection[str] | None = None,
) -> list[PlannedAction]:
    """The actions one dream task proposes over ``candidates`` (within ``patterns`` only).

    ``focus`` (ids): judge only the pairs that hold one of these memories (a session's new
    ones), by the same rules and word weights as a pass over all of ``candidates``; the other
    candidates are then only their context. ``neighbours`` need only cover those pairs."""
    cfg = settings or PlannerSettings()
    cands: dict[str, Candidate] = {}
    tokens: dict[str, frozenset[str]] = {}
    for c in candidates:
        if in_scopes(c.scope, patterns) and c.id not in cands:
            cands[c.id] = c
            tokens[c.id] = lexicon.salient_tokens(c.text)
    if len(cands) < 2 or (focus is not None and not any(i in cands for i in focus)):
        return []
    lex = Lexicon.build(tokens.values())
    share = max(2.0, cfg.subject_word_share * len(cands))
    floor = math.log(1.0 + (len(cands) - share + 0.5) / (share + 0.5))
    sims: dict[tuple[str, str], float] = {}
    for n in neighbours:
        if n.a not in cands or n.b not in cands or n.a == n.b:
            continue
        if focus is None or n.a in focus or n.b in focus:
            sims[(min(n.a, n.b), max(n.a, n.b))] = float(n.similarity)
    pairs: list[tuple[tuple[str, str], float]] = []
    for key in sorted(set(sims) | _lexical_pairs(tokens, lex, floor, cfg.max_posting, focus)):
        a, b = tokens[key[0]], tokens[key[1]]
        overlap = lex.overlap(a, b)
        if key in sims or not _words_rule_out(a, b, overlap, lex, floor, cfg):
            pairs.append((key, overlap))
    # Numbers, cues and wording only for the memories some pair still holds.
    seen = {i: _see(cands[i], tokens[i]) for i in sorted({i for p, _ in pairs for i in p})}

    groups = _Groups()
    merge_conf: dict[tuple[str, str], float] = {}
    supersede: dict[str, list[tuple[float, str, str]]] = defaultdict(list)
    for key, overlap in pairs:
        x, y = seen[key[0]], seen[key[1]]
        if (x.cand.scope.app_id, x.cand.scope.tenant_id) != (
            y.cand.scope.app_id,
            y.cand.scope.tenant_id,
        ):
            continue  # never across tenants, whatever the similarity says
        if speakers.differ(x.cand.text, y.cand.text):
            continue  # two people's words ("Priya: ...", "Tom: ...") are two memories
        if clauses.asks(x.cand.text) != clauses.asks(y.cand.text):
            continue  # "Do I have a dog named Max?" is no restatement of the fact it asks
        sim = sims.get(key)
        conf = _duplicate(x, y, sim, overlap, cfg)
        if conf is not None:
            same = x.cand.scope == y.cand.scope
            target = x.cand.scope if same else promoted_scope([x.cand.scope, y.cand.scope])
            if same or (cfg.promote_scope and target is not None and in_scopes(target, patterns)):
                groups.union(x.cand.id, y.cand.id)
                merge_conf[key] = conf
            continue
        if _agent(x.cand.scope) != _agent(y.cand.scope) or x.cand.time == y.cand.time:
            # A fact said again in a later conversation (run) supersedes across runs; another
            # agent's memory is its own. Memories stamped alike come from one write: they
            # elaborate, not supersede.
            continue
        old, new = (x, y) if _newer(x.cand, y.cand) else (y, x)
        found = _supersedes(old, new, sim, lex, floor, cfg)
        if found is not None:
            supersede[old.cand.id].append((found[0], new.cand.id, found[1]))

    actions = _merges(seen, groups, merge_conf, patterns, cfg)
    merged = {i for a in actions for i in a.read_ids()}
    actions.extend(_supersessions(seen, supersede, merged))
    return actions


def _words_rule_out(
    a: frozenset[str],
    b: frozenset[str],
    overlap: float,
    lex: Lexicon,
    floor: float,
    cfg: PlannerSettings,
) -> bool:
    """True when a pair without a similarity can be neither a MERGE nor a supersession
    by its words alone: the tests of :func:`_duplicate` and :func:`_supersedes` that need
    no more than the words, done before the rest of each memory is worked out."""
    union = a | b
    if not union or overlap >= cfg.lexical_merge_overlap:
        return False  # the same wording, or words enough for a MERGE
    shared = a & b
    return (
        len(shared) / len(union) < cfg.lexical_subject_overlap
        or len(lex.telling(shared, floor)) < cfg.min_shared_subject_words
    )


def _duplicate(
    x: _Seen, y: _Seen, sim: float | None, overlap: float, cfg: PlannerSettings
) -> float | None:
    """The MERGE confidence when ``x`` and ``y`` say the same thing, else None."""
    if lexicon.marks_differ(x.marks, y.marks):
        return None  # "2 cats and 3 dogs" / "3 cats and 2 dogs", "$1200" / "€1200", "O+" / "O-"
    if x.norm == y.norm:
        return 1.0
    if x.numbers != y.numbers:
        return None  # "three tops" and "five tops" are two facts, however alike
    if x.negations != y.negations:
        return None  # "is vegetarian" and "is not vegetarian": alike words, opposite facts
    if x.meaning == y.meaning and x.order != y.order:
        return None  # the same words swapped: "Alice owes Bob" / "Bob owes Alice"
    if sim is None:
        if overlap < cfg.lexical_merge_overlap:
            return None
        return round(min(1.0, 0.5 + 0.5 * overlap), 4)
    if sim < cfg.merge_similarity or overlap < cfg.merge_overlap:
        return None
    return round(min(1.0, 0.45 * sim + 0.55 * max(overlap, 0.0) + 0.1), 4)


def _supersedes(
    old: _Seen,
    new: _Seen,
    sim: float | None,
    lex: Lexicon,
    floor: float,
    cfg: PlannerSettings,
) -> tuple[float, str] | None:
    """(confidence, reason) when ``new`` restates the subject of ``old`` with another value."""
    if clauses.supposes(new.cand.text) and not clauses.supposes(old.cand.text):
        return None  # "If I took the offer I would earn $95,000" changes no salary
    shared = lex.telling(old.tokens & new.tokens, floor)
    if len(shared) < cfg.min_shared_subject_words:
        return None
    if sim is None:
        # Plain Jaccard: IDF over a handful of memories says little about a subject.
        jaccard = len(old.tokens & new.tokens) / max(1, len(old.tokens | new.tokens))
        if jaccard < cfg.lexical_subject_overlap:
            return None
        subject = min(1.0, (jaccard - cfg.lexical_subject_overlap) / 0.4)
    else:
        if sim < cfg.subject_similarity:
            return None
        subject = min(1.0, (sim - cfg.subject_similarity) / 0.35)
    # The strongest sign: another number for the same thing ("30 dozen eggs" -> "20 dozen").
    # Words like "now" or "recently" are everywhere in chat, so alone they weigh little.
    recounted = lexicon.recounts(old.quantities, new.quantities)
    recount = bool(recounted)
    renumbered = bool(new.numbers - old.numbers) and bool(old.numbers)
    fresh_cues = bool(new.cues - old.cues)
    if not (renumbered or fresh_cues):
        return None
    depth = min(1.0, (len(shared) - 1) / 5)
    confidence = round(
        min(
            0.99,
            0.5
            + 0.25 * recount
            + 0.05 * (renumbered and not recount)
            + 0.05 * fresh_cues
            + 0.15 * depth
            + 0.1 * subject,
        ),
        4,
    )
    what = (
        "another number for the same thing"
        if recount
        else "a different number"
        if renumbered
        else "wording that marks a change"
    )
    words = ", ".join(sorted(shared)[:4])
    reason = f"a newer memory about the same subject ({words}) states {what}"
    if clauses.about_another(old.cand.text, new.cand.text):
        # "David wakes up at 7am" / "I now wake up at 5:30am": another person's number.
        confidence = min(confidence, cfg.other_subject_confidence)
        reason += ", but the newer is about someone else"
    elif lexicon.counts_another(recounted):
        confidence = min(confidence, cfg.other_subject_confidence)
        instead = set().union(*(c2 - c1 - lexicon.UPDATE_CUES for c1, c2 in recounted))
        said_of = sorted({w.removeprefix(lexicon.PERSON) for w in instead})
        reason += f", but said of {', '.join(said_of[:4])} instead"
    elif renumbered:
        # The same sentence with another number and a word or two swapped ("my sister, who
        # lives in Ohio, has 2 kids" -> "my brother, who lives in Ohio, now has 3"; the
        # Netflix and the Spotify price): maybe another thing's number. Two turns that
        # differ in more words than that are told apart by the rest of this rule.
        only_old = old.meaning - new.meaning - old.numbers - lexicon.STOPWORDS
        only_new = new.meaning - old.meaning - new.numbers - lexicon.STOPWORDS - lexicon.UPDATE_CUES
        if 0 < len(only_old) <= _SWAPPED and 0 < len(only_new) <= _SWAPPED:
            confidence = min(confidence, cfg.other_subject_confidence)
            reason += (
                f", but it names {', '.join(sorted(only_old)[:3])} where the newer names "
                f"{', '.join(sorted(only_new)[:3])}"
            )
    if clauses.aims(old.cand.text) != clauses.aims(new.cand.text):
        # "My goal is a 10k under 50 minutes" / "I ran a 10k in 49 minutes": two facts.
        confidence = min(confidence, cfg.lossy_update_confidence)
        reason += ", but one states an aim and the other what is"
    if clauses.tells_an_episode(old.cand.text) or clauses.tells_an_episode(new.cand.text):
        # "I slept 6 hours last night" in January, "... 8 hours last night" in March.
        confidence = min(confidence, cfg.lossy_update_confidence)
        reason += ", but it tells of one day's events"
    if clauses.returns(old.cand.text) != clauses.returns(new.cand.text):
        # "We are flying to Japan on May 8" / "We are flying back from Japan on May 22".
        confidence = min(confidence, cfg.lossy_update_confidence)
        reason += ", but one tells of a way back"
    dropped = clauses.left_out(old.cand.text, new.cand.text)
    if dropped is not None:
        confidence = min(confidence, cfg.lossy_update_confidence)
        reason += f", but it says nothing of {dropped!r}"
    elif names := clauses.names_left_out(old.cand.text, new.cand.text):
        confidence = min(confidence, cfg.lossy_update_confidence)
        reason += f", but it says nothing of {', '.join(names[:3])}"
    return confidence, reason


def _merges(
    seen: Mapping[str, _Seen],
    groups: _Groups,
    merge_conf: Mapping[tuple[str, str], float],
    patterns: Sequence[ScopePattern],
    cfg: PlannerSettings,
) -> list[PlannedAction]:
    members: dict[str, list[str]] = defaultdict(list)
    for a, b in merge_conf:
        for m in (a, b):
            root = groups.find(m)
            if m not in members[root]:
                members[root].append(m)
    out: list[PlannedAction] = []
    for root in sorted(members):
        ids = sorted(members[root], key=lambda i: (seen[i].cand.time, seen[i].cand.order, i))
        scopes = {seen[i].cand.scope for i in ids}
        target = next(iter(scopes)) if len(scopes) == 1 else promoted_scope(scopes)
        if target is None or not in_scopes(target, patterns):
            continue
        confs = [c for (a, b), c in merge_conf.items() if groups.find(a) == root]
        newest = seen[ids[-1]].cand
        confidence = round(min(confs), 4)
        reason = f"{len(ids)} memories say the same thing; the newest wording is kept"
        # The newest wording stands for all: words it leaves out may be a second fact
        # ("with my wife and kids" -> "with my wife"), which only a person can tell.
        older = set().union(*(seen[i].meaning for i in ids[:-1]))
        left_out = older - seen[ids[-1]].meaning
        if left_out:
            confidence = min(confidence, cfg.lossy_merge_confidence)
            reason += f", but it leaves out {', '.join(sorted(left_out)[:6])}"
        # A person only the newest names may make it another's fact ("the user is allergic
        # to peanuts" -> "the user's son is allergic to peanuts"): only a person can tell.
        added = (seen[ids[-1]].meaning - older) & lexicon.RELATIONS
        if added:
            confidence = min(confidence, cfg.lossy_merge_confidence)
            reason += f", but it adds {', '.join(sorted(added)[:6])}"
        out.append(
            PlannedAction("MERGE", target, None, tuple(ids), newest.text, confidence, reason)
        )
    return out


def _supersessions(
    seen: Mapping[str, _Seen],
    supersede: Mapping[str, list[tuple[float, str, str]]],
    taken: set[str],
) -> list[PlannedAction]:
    """One UPDATE per superseded memory: its successor records what it supersedes, and the
    older stays as a version of it. (A DELETE, once planned where the newer repeated every
    other word of the older, was never applied without a person: the cleanest restatements,
    "I weigh 79 kg now" then "I weigh 76 kg now", were never consolidated.)"""
    best: dict[str, tuple[float, str, str]] = {}
    for old_id, options in supersede.items():
        if old_id in taken:
            continue
        options = [o for o in options if o[1] not in taken]
        if options:
            best[old_id] = max(options, key=lambda o: (o[0], seen[o[1]].cand.time, o[1]))
    by_new: dict[str, list[str]] = defaultdict(list)
    for old_id, (_, new_id, _) in best.items():
        by_new[new_id].append(old_id)
    out: list[PlannedAction] = []
    for new_id in sorted(by_new):
        new = seen[new_id]
        # One UPDATE per superseded memory, so each carries its own confidence; they share
        # the target, which only gains a version and an entry in what it supersedes.
        for o in sorted(by_new[new_id]):
            conf, _, reason = best[o]
            out.append(
                PlannedAction(
                    "UPDATE",
                    new.cand.scope,
                    new_id,
                    (o,),
                    new.cand.text,
                    conf,
                    reason + "; it supersedes the older one",
                )
            )
    return out
