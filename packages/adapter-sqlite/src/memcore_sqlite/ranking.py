"""Lexical ranking over the FTS5 index, and fusion with the vector ranking.

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
from collections.abc import Mapping

import attrs

from memcore_sqlite.analysis import LexicalQuery

#: Reciprocal-rank-fusion constant (Cormack et al. 2009).
RRF_K = 60
#: A term in more rows of the scope than this is "common": we never list all its rows.
COMMON_TERM_ROWS = 500


@attrs.frozen
class LexicalHit:
    """``score``: IDF-weighted share of the query terms the row holds. ``evidence``: it holds a
    term that is not in most rows of the scope (a match on "user" alone in memories about a
    user says nothing)."""

    score: float
    evidence: bool


def _capped_count(conn: sqlite3.Connection, expression: str | None, cap: int) -> int:
    """How many rows match, counting no further than ``cap + 1`` (nothing is scored)."""
    if expression is None:
        sql, params = "SELECT count(*) FROM (SELECT rowid FROM memory_fts LIMIT ?)", (cap + 1,)
    else:
        sql = "SELECT count(*) FROM (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)"
        params = (expression, cap + 1)  # type: ignore[assignment]
    return int(conn.execute(sql, params).fetchone()[0])


def _newest(conn: sqlite3.Connection, expression: str, limit: int) -> list[int]:
    """Matching rowids, newest first; FTS5 walks postings backwards and stops at the LIMIT."""
    return [
        int(r[0])
        for r in conn.execute(
            "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?",
            (expression, limit),
        )
    ]


def idf(rows_with_term: int, rows: int) -> float:
    """BM25's IDF, kept positive (a term in every row still weighs a little)."""
    return math.log(1.0 + (rows - rows_with_term + 0.5) / (rows_with_term + 0.5))


def lexical(
    conn: sqlite3.Connection, query: LexicalQuery, want: int, enough: int
) -> dict[int, LexicalHit]:
    """Rank rows by the query terms they hold, at a cost bounded whatever the words.

    1. Count each term's rows in the scope (capped). Terms with no row drop out.
    2. All remaining terms together (AND): postings are intersected, newest rows first.
    3. If that found fewer than ``enough``: every row of each rare term, plus which of those
       rows also hold each common term (common AND any rare: again an intersection).
    4. A query of only common terms instead takes the newest rows holding each of them.
    """
    terms = query.terms
    if not terms:
        return {}
    cap = COMMON_TERM_ROWS
    in_scope = _capped_count(conn, query.scope_only(), cap)
    if in_scope == 0:
        return {}
    # Past the cap we only know the scope is large; any estimate above the cap ranks the same.
    rows = in_scope if in_scope <= cap else 4 * cap
    counts = {t: _capped_count(conn, query.all_of((t,)), cap) for t in terms}
    present = tuple(t for t in terms if counts[t])
    if not present:
        return {}
    weights = {t: idf(min(counts[t], rows), rows) for t in terms}
    telling = {t for t in present if counts[t] <= min(cap, rows // 2)}
    matched: dict[int, set[str]] = {
        seq: set(present) for seq in _newest(conn, query.all_of(present), want)
    }
    if len(matched) < enough and len(present) > 1:
        rare = tuple(t for t in present if counts[t] <= cap)
        common = tuple(t for t in present if counts[t] > cap)
        for t in rare:
            for seq in _newest(conn, query.all_of((t,)), cap):
                matched.setdefault(seq, set()).add(t)
        if rare:
            for t in common:
                for seq in _newest(conn, query.with_any(t, rare), cap * len(rare)):
                    if seq in matched:
                        matched[seq].add(t)
        else:
            for t in common:
                for seq in _newest(conn, query.all_of((t,)), want):
                    matched.setdefault(seq, set()).add(t)
    total = sum(weights.values())
    hits = {
        seq: LexicalHit(sum(weights[t] for t in held) / total, bool(held & telling))
        for seq, held in matched.items()
    }
    if len(hits) > want:
        best = sorted(hits.items(), key=lambda kv: (-kv[1].score, -kv[0]))[:want]
        hits = dict(best)
    return hits


def fuse(lexical_hits: Mapping[int, LexicalHit], semantic: Mapping[int, float]) -> dict[int, float]:
    """One ranking alone keeps its own scores; two fuse by reciprocal-rank fusion.

    In the fusion each lexical contribution is weighted by its lexical score, and lexical hits
    without evidence are left out, so a list of weak word matches cannot reorder a good vector
    ranking (RRF's 1/(60 + rank) differs little between neighbouring ranks). The sum is
    divided by its maximum, so 1.0 means first in both rankings. Without lexical evidence the
    scores are the cosines (negative ones clipped to 0).
    """
    if not semantic:
        return {seq: hit.score for seq, hit in lexical_hits.items()}
    evidence = {s: h for s, h in lexical_hits.items() if h.evidence}
    if not evidence:
        return {seq: max(0.0, cosine) for seq, cosine in semantic.items()}
    fused: dict[int, float] = {}
    for rank, (seq, _) in enumerate(sorted(semantic.items(), key=lambda kv: -kv[1]), start=1):
        fused[seq] = 1.0 / (RRF_K + rank)
    ranked = sorted(evidence.items(), key=lambda kv: (-kv[1].score, -kv[0]))
    for rank, (seq, hit) in enumerate(ranked, start=1):
        fused[seq] = fused.get(seq, 0.0) + hit.score / (RRF_K + rank)
    top = 2.0 / (RRF_K + 1)
    return {seq: score / top for seq, score in fused.items()}
