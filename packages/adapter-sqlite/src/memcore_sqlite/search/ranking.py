"""Lexical ranking over the FTS5 index, and fusion of the lexical and vector scores.

We do not call FTS5's ``bm25()``: to get each term's IDF it walks every posting of every
phrase in the query, our scope tag included, so one query over a common word cost 10-130 ms
at 100k rows whatever the LIMIT. Instead we count each term's rows in the scope, stopping at
:data:`COMMON_TERM_ROWS`, and only ever enumerate postings that are short or cut by a LIMIT.
Cost is then bounded by the rare terms' lists, not by the size of the file.

Every score leaving here is in [0, 1], and a higher score always means a better hit, so
``min_similarity`` can filter on it and results can be sorted by it.
"""

from __future__ import annotations

import math
import sqlite3
from collections.abc import Callable, Mapping
from functools import partial
from itertools import repeat
from typing import TYPE_CHECKING

import attrs

from memcore_sqlite.lexical import fts_matches as lexical_matches
from memcore_sqlite.lexical import lengths
from memcore_sqlite.lexical.analysis import LexicalQuery
from memcore_sqlite.lexical.fts_matches import Group
from memcore_sqlite.lexical.lengths import Lookup
from memcore_sqlite.lexical.tenant import Tenant
from memcore_sqlite.vector.passages import PASSAGE_WORDS

if TYPE_CHECKING:
    from memcore_sqlite.lexical.postings.matches import TermRows

#: Length in words up to which a memory's lexical score is not discounted: one passage, what
#: the embedder reads at once.
REFERENCE_WORDS = PASSAGE_WORDS
#: Lexical candidates (times the pool) whose length is looked up for the discount.
LENGTH_LOOKUPS = 2
#: Rows holding every query term that make the partial-match stage unnecessary; a constant,
#: so the candidates never depend on top_k.
ENOUGH = 20
#: Candidates each signal contributes, whatever top_k asks, so the first k hits never depend
#: on k. Twice limits.MAX_TOP_K: a filtered-out or out-of-scope candidate still leaves enough.
POOL = 100
#: Hits a search reads first (:func:`memcore_sqlite.search.pipeline.hits`): a two-stage scope's vector
#: shortlist first holds every row that may be among this many best, and widens to the pool
#: only when the order needs more (:mod:`memcore_sqlite.search.fused_order`).
FIRST_READ = 10
#: The vector signal's share of the hybrid relevance; the lexical signal has the rest.
#: Chosen on the LongMemEval_S development split (benchmarks/longmemeval.py): with user turns
#: indexed 0.3-0.5 rank above both signals alone, with user and assistant turns 0.2-0.35;
#: 0.3 lies on both plateaus. Cross-validated over those two sets and the dialogs together,
#: the folds choose 0.4 (dialogs +4 questions held out, LongMemEval level), but a higher weight
#: makes more hybrid searches build the vector shortlist: at 0.4 a hybrid search at 100k
#: memories is no longer 2.5 times faster than an exact scan, and at 1M in one tenant its p50
#: is 24 ms against the goal of 15 (docs/benchmarks/sqlite.md).
VECTOR_WEIGHT = 0.3
#: BM25's ``b``: how fully :func:`length_discount` scales a long memory's lexical score down
#: by its length (BM25's usual 0.75; the cross-validation above chose 1 with the weight 0.4).
LENGTH_B = 0.75
#: The lexical score is the IDF-weighted share of the query's terms a row holds, raised to this
#: power: with 1 a row holding one incidental term of four ("take" in "Take the train" for
#: "When did Sofia take a trip ...") already scores about 0.25, which at the lexical weight
#: outweighs the vector signal's whole spread between an evidence turn and a filler turn;
#: above 1 such partial matches weigh less while a row holding every term still scores 1.
#: A monotone transform: the lexical ranking itself is the same whatever the power.
COVERAGE_POWER = 1.0
#: A query term's IDF in the scope is scaled by how common the word is in English
#: (:func:`memcore_sqlite.lexical.english.share`): a word ranked this or rarer keeps it whole.
#: 0: no prior, the scope's IDF alone. In a small scope a common verb held by three rows had
#: as much IDF as a rare word ("take" in "When did Sofia take a trip to look at the autumn
#: leaves?" matched unrelated short turns). Chosen by cross-validation (benchmarks/
#: longmemeval_cv.py, question types held out and random folds) over LongMemEval and both
#: dialog sets: 10,000 with the strength 2 in nearly every fold.
ENGLISH_PRIOR = 10_000
#: The power the prior's share is raised to: above 1 a common word weighs still less.
ENGLISH_STRENGTH = 2.0
#: A term in more rows of the scope than this is "common": we never list all its rows.
COMMON_TERM_ROWS = 500
#: Rows whose length is read at a time past the first ``want``.
_LENGTH_SLICE = 50


@attrs.frozen
class LexicalHit:
    """``score``: IDF-weighted share of the query terms the row holds (to the power
    :data:`COVERAGE_POWER`), discounted when the row is long (:func:`length_discount`). ``evidence``: it holds a
    term that is not in most rows of the scope (a match on "user" alone in memories about a
    user says nothing)."""

    score: float
    evidence: bool


def warm_prior() -> None:
    """Read the English word list :data:`ENGLISH_PRIOR` weighs query words by, as a fresh
    process's first lexical search would (about 10 ms): a warm-up pays it instead."""
    if ENGLISH_PRIOR:
        from memcore_sqlite.lexical import english

        english.ranks()


def idf(rows_with_term: int, rows: int) -> float:
    """BM25's IDF, kept positive (a term in every row still weighs a little)."""
    return math.log(1.0 + (rows - rows_with_term + 0.5) / (rows_with_term + 0.5))


def lexical(
    conn: sqlite3.Connection,
    query: LexicalQuery,
    want: int,
    enough: int,
    tenant: Tenant | None = None,
    lookup: Lookup | None = None,
    postings: TermRows | None = None,
    discount: Callable[[int | None], float] | None = None,
    power: float | None = None,
    prior: Callable[[str], float] | None = None,
) -> dict[int, LexicalHit]:
    """Rank rows by the query terms they hold, at a cost bounded whatever the words.

    ``tenant`` (store id, app, tenant) names the one tenant the query's scope lies in, if
    any: lengths are then read from that tenant's index entries. ``postings``, the query's
    terms' rows from the tenant's postings in memory, replaces the FTS5 statements with the
    same matching on arrays (:mod:`~memcore_sqlite.lexical.postings.matches`). Scores depend on
    neither. ``discount`` replaces :func:`length_discount` and ``power``
    :data:`COVERAGE_POWER` (benchmarks score other settings of them on one store); ``prior``,
    the share of each term's IDF kept (:func:`memcore_sqlite.lexical.english.share`), replaces
    :data:`ENGLISH_PRIOR`'s.

    1. Count each term's rows in the scope (capped). Terms with no row drop out.
    2. All remaining terms together (AND): postings are intersected, newest rows first.
    3. If that found fewer than ``enough``: every row of each rare term, plus which of those
       rows also hold each common term (common AND any rare: again an intersection).
    4. A query of only common terms instead takes the newest rows holding each of them.

    The matched rows come grouped by the terms they hold
    (:mod:`~memcore_sqlite.lexical.fts_matches`). With a rare term, step 2's rows are read from
    step 3's groups, not walked again, and Python groups the rare terms' rows. A query of
    common terms only is grouped inside SQLite, and Python parses only the groups that can
    make the pool.
    """
    terms = query.terms
    if not terms:
        return {}
    cap = COMMON_TERM_ROWS
    # Up to cap + 1 rows of each term: their number is the term's count, and a rare term's
    # rows are all of them, so step 3 need not walk its postings again.
    if postings is None:
        in_scope, found = lexical_matches.first_rows(conn, query, cap + 1)
        counts = {t: f.count(",") + 1 if f else 0 for t, f in zip(terms, found)}
    else:
        in_scope, counts = postings.in_scope, dict(zip(terms, postings.counts(cap + 1)))
    if in_scope == 0:
        return {}
    # Past the cap we only know the scope is large; any estimate above the cap ranks the same.
    rows = in_scope if in_scope <= cap else 4 * cap
    present = tuple(t for t in terms if counts[t])
    if not present:
        return {}
    weights = {t: idf(min(counts[t], rows), rows) for t in terms}
    if prior is None and ENGLISH_PRIOR:
        from memcore_sqlite.lexical import english  # its table: only when a query asks

        prior = partial(english.share, rare_rank=ENGLISH_PRIOR, strength=ENGLISH_STRENGTH)
    if prior is not None:
        weights = {t: w * prior(t) for t, w in weights.items()}
    telling = {t for t in present if counts[t] <= min(cap, rows // 2)}
    # Which present terms a row holds, as bits in the query's term order: one share per
    # combination of terms, not per row.
    bit = {t: 1 << i for i, t in enumerate(present)}
    if postings is None:
        rare_rows = {t: f for t, f in zip(terms, found) if counts[t] and counts[t] <= cap}
        groups = lexical_matches.matched(conn, query, present, rare_rows, want, enough)
    else:
        from memcore_sqlite.lexical.postings import (
            matches as postings_matches,  # numpy: only with postings held
        )

        rare = tuple(t for t in present if counts[t] <= cap)
        by_term = dict(zip(terms, postings.rows))
        groups = postings_matches.matched(by_term, present, rare, want, enough)
    total = sum(weights.values())
    exponent = COVERAGE_POWER if power is None else power
    # Summed in the query's term order, not the set's: a set of strings iterates in an order
    # that changes with each process's hash seed, and the last bit of a share decided which
    # of many equal shares made the pool.
    by_share: dict[float, list[Group]] = {}
    for held, seqs in groups:
        share = (sum(weights[t] for t in present if held & bit[t]) / total) ** exponent
        by_share.setdefault(share, []).append((held, seqs))
    telling_bits = sum(bit[t] for t in telling)
    # Only the best shares can make the pool after the discount (it never raises a score).
    best, held_by = _best_shares(by_share, LENGTH_LOOKUPS * want)
    read = lookup or partial(lengths.read, conn, tenant=tenant)
    scores = _discounted(read, best, want, discount or length_discount)
    if len(best) > want:  # as many lengths as were needed to know the want best
        ranked = [(seq, score) for score, seq in _by_score(scores)[:want]]
    else:
        ranked = list(scores.items())
    return {seq: LexicalHit(score, bool(held_by[seq] & telling_bits)) for seq, score in ranked}


def _best_shares(
    by_share: Mapping[float, list[Group]], n: int
) -> tuple[list[tuple[int, float]], dict[int, int]]:
    """The ``n`` best (seq, share) by share, then newest first, and the terms each holds:
    rows come grouped by the terms they hold, so only the groups taken are parsed and only
    the last one is cut by seq (a query has a few distinct shares)."""
    out: list[tuple[int, float]] = []
    held_by: dict[int, int] = {}
    for share in sorted(by_share, reverse=True):
        group: list[int] = []
        for held, seqs in by_share[share]:
            parsed = lexical_matches.parse(seqs) if isinstance(seqs, str) else seqs
            held_by.update(dict.fromkeys(parsed, held))
            group += parsed
        # A sort in C beats heapq.nlargest's Python loop at a group's few hundred rows.
        group.sort(reverse=True)
        out.extend(zip(group[: n - len(out)], repeat(share)))
        if len(out) >= n:
            break
    return out, held_by


def _discounted(
    lookup: Lookup,
    best: list[tuple[int, float]],
    want: int,
    discount: Callable[[int | None], float],
) -> dict[int, float]:
    """Each looked-up row's share times its length discount, in ``best``'s order.

    Lengths are read in slices, best first, and reading stops once the next row, even
    undiscounted, ranks below the ``want``-th discounted score read so far (by score, then
    newest first): no later row can enter the ``want`` best, which is all the caller keeps.
    """
    scores: dict[int, float] = {}
    start = 0
    while start < len(best):
        part = best[start : start + (want if not start else _LENGTH_SLICE)]
        start += len(part)
        words = lookup([seq for seq, _ in part])
        for seq, share in part:
            scores[seq] = share * discount(words.get(seq))
        if start < len(best) and len(scores) >= want:
            edge = _by_score(scores)[want - 1]
            nxt_seq, nxt_share = best[start]
            if (nxt_share, nxt_seq) < edge:
                break
    return scores


def _by_score(scores: Mapping[int, float]) -> list[tuple[float, int]]:
    """(score, seq), best first, then newest first: tuples sorted in C, no key function."""
    return sorted(zip(scores.values(), scores.keys()), reverse=True)


def length_discount(words: int | None, k1: float = 1.2, b: float | None = None) -> float:
    """BM25's length normalisation for a term held once (k1 = 1.2, ``b`` :data:`LENGTH_B`,
    read at call time as :data:`VECTOR_WEIGHT` is), against a reference of
    :data:`REFERENCE_WORDS`, and never above 1: a memory up to that length keeps
    its share of the query terms, a longer one holds them more thinly and scores less (a
    600-word answer mentioning "museum" once says less about museums than a one-line note)."""
    if words is None or words <= REFERENCE_WORDS:
        return 1.0
    if b is None:
        b = LENGTH_B
    return (k1 + 1) / (1 + k1 * (1 - b + b * words / REFERENCE_WORDS))


@attrs.frozen
class Relevance:
    """A hit's relevance in [0, 1] and the signal scores it was combined from."""

    score: float
    signals: Mapping[str, float]


def vector_score(cosine: float) -> float:
    """The vector signal in [0, 1]: the cosine, negative ones clipped to 0.

    For all-MiniLM-L6-v2 unrelated text scores about 0.03 (median over LongMemEval_S
    haystacks), so 0 already means "nothing in common" and no further shift is needed.
    """
    return min(1.0, max(0.0, cosine))


def fuse(
    lexical_hits: Mapping[int, LexicalHit] | None, semantic: Mapping[int, float] | None
) -> dict[int, Relevance]:
    """Each candidate's relevance: a convex combination of its two signal scores.

    A signal that is not used is None. ``semantic`` holds the cosine of every candidate (the
    caller scores the lexical candidates too; one without a vector counts 0), and
    ``lexical_hits`` the lexical score of those that hold a query term; a candidate that holds
    none scores 0 there. Both signals are absolute scores in [0, 1], so the relevance means the
    same in every query and ``min_similarity`` can filter on it:

        relevance = VECTOR_WEIGHT * vector + (1 - VECTOR_WEIGHT) * lexical

    With one signal (a ``mode``, a store without an embedder, or a query none of whose terms
    is in the scope, so lexical search has nothing to say) that signal's score is the
    relevance, and the order is that signal's own.
    """
    if not lexical_hits and semantic is not None:
        lexical_hits = None
    seqs = set(lexical_hits or ()) | set(semantic or ())
    out: dict[int, Relevance] = {}
    for seq in seqs:
        signals: dict[str, float] = {}
        if lexical_hits is not None:
            hit = lexical_hits.get(seq)
            signals["lexical"] = hit.score if hit is not None else 0.0
        if semantic is not None:
            signals["vector"] = vector_score(semantic.get(seq, 0.0))
        if len(signals) == 2:
            score = VECTOR_WEIGHT * signals["vector"] + (1 - VECTOR_WEIGHT) * signals["lexical"]
        else:
            score = next(iter(signals.values()))
        out[seq] = Relevance(min(1.0, max(0.0, score)), signals)
    return out
