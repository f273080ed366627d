"""Which rows of a scope hold which query terms: the FTS5 statements behind lexical ranking.

The scope's and every term's capped counts come from one statement. With a rare term, the
rows holding every term are found among the partial matches instead of by a second walk of
the same intersections. A query of common terms only has its matches grouped by the terms
they hold inside SQLite (which releases the GIL while it steps), in one statement instead of
one per term. Grouping a rare term's rows there too cost more than the Python loop over them
(measured at 1k, 10k and 100k rows: 0.05-0.2 ms a search).

Rows come back as groups: (bits of the terms held, in the query's term order; rowids), the
rowids either comma-separated as FTS5 wrote them or already parsed.
"""

from __future__ import annotations

import sqlite3

from memcore_sqlite.lexical.analysis import LexicalQuery

#: A group of matched rows: the bits of the terms they hold and their rowids.
Group = tuple[int, str | list[int]]

_COUNT = "SELECT count(*) FROM (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)"
_COUNT_ALL = "SELECT count(*) FROM (SELECT rowid FROM memory_fts LIMIT ?)"
_ROWS = (
    "SELECT group_concat(rowid) FROM"
    " (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)"
)
_NEWEST_ROWS = (
    "SELECT group_concat(rowid) FROM"
    " (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?)"
)
#: One row per combination of terms held, summed from one (rowid, bit) row per term a row
#: holds (a row is in each term's newest rows once, so the sum is the union of its bits).
_BY_HELD = (
    "SELECT held, group_concat(r) FROM"
    " (SELECT r, sum(b) AS held FROM ({}) GROUP BY r)"
    " GROUP BY held"
)
_NEWEST = (
    "SELECT rowid AS r, ? AS b FROM"
    " (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? ORDER BY rowid DESC LIMIT ?)"
)


def parse(joined: str) -> list[int]:
    return list(map(int, joined.split(","))) if joined else []


def first_rows(conn: sqlite3.Connection, query: LexicalQuery, limit: int) -> tuple[int, list[str]]:
    """How many rows the scope holds (counting no further than ``limit``), and up to
    ``limit`` rows of each term, comma-separated: one statement. Their number is the term's
    count, and a term with fewer has all its rows there, so they are not walked again."""
    scope = query.scope_only()
    walks = [_COUNT_ALL] if scope is None else [_COUNT]
    params: list[object] = [limit] if scope is None else [scope, limit]
    for t in query.terms:
        walks.append(_ROWS)
        params += (query.all_of((t,)), limit)
    in_scope, *found = conn.execute(
        "SELECT " + ", ".join(f"({w})" for w in walks), params
    ).fetchone()
    return int(in_scope), [str(f or "") for f in found]


def newest(conn: sqlite3.Connection, expression: str, limit: int) -> list[int]:
    """Up to ``limit`` matching rowids, newest first; FTS5 walks postings backwards and stops
    at the LIMIT. One comma-separated string: a Python row per match cost more than the walk."""
    return parse(str(conn.execute(_NEWEST_ROWS, (expression, limit)).fetchone()[0] or ""))


def _by_held(
    conn: sqlite3.Connection, query: LexicalQuery, present: tuple[str, ...], want: int
) -> list[tuple[int, str]]:
    """The newest ``want`` rows of each (common) term, grouped by the terms they hold. The
    statement's text depends only on the number of terms, so the connection's statement
    cache keeps it prepared."""
    params: list[object] = []
    for i, t in enumerate(present):
        params += (1 << i, query.all_of((t,)), want)
    sql = _BY_HELD.format(" UNION ALL ".join([_NEWEST] * len(present)))
    return [(int(held), str(rows)) for held, rows in conn.execute(sql, params)]


def _grouped_here(
    conn: sqlite3.Connection,
    query: LexicalQuery,
    present: tuple[str, ...],
    rare_rows: dict[str, str],
    size: int,
) -> list[tuple[int, list[int]]]:
    """The rows holding some of the terms, grouped by the terms they hold: every row of each
    rare term (``rare_rows``, ``size`` in all), and which of those rows also hold each common
    term (common AND any rare: an intersection). Every row holding all the terms is among
    them."""
    rare = tuple(rare_rows)
    bits = {t: 1 << i for i, t in enumerate(present)}
    held: dict[int, int] = {}
    for t, rows in rare_rows.items():
        b = bits[t]
        for seq in parse(rows):
            held[seq] = held.get(seq, 0) | b
    for t in present:
        if t not in rare_rows:
            b = bits[t]
            # Within the rare terms' rows, so never more than ``size``.
            for seq in newest(conn, query.with_any(t, rare), size):
                if seq in held:
                    held[seq] |= b
    groups: dict[int, list[int]] = {}
    for seq, h in held.items():
        groups.setdefault(h, []).append(seq)
    return [*groups.items()]


def matched(
    conn: sqlite3.Connection,
    query: LexicalQuery,
    present: tuple[str, ...],
    rare_rows: dict[str, str],
    want: int,
    enough: int,
) -> list[Group]:
    """The rows that rank, grouped by the terms they hold.

    Up to ``want`` rows holding every term, newest first; if fewer than ``enough``, the
    partial matches too (:func:`_grouped_here` with a rare term, else :func:`_by_held`).
    """
    every = (1 << len(present)) - 1
    if len(present) == 1:
        (t,) = present
        rows = (
            sorted(parse(rare_rows[t]), reverse=True)[:want]
            if t in rare_rows
            else newest(conn, query.all_of(present), want)
        )
        return [(every, rows)] if rows else []
    if rare_rows:
        # The rows holding every term are one of the groups: asked for them first, the
        # index would walk the same intersections twice.
        size = sum(rows.count(",") + 1 for rows in rare_rows.values())
        groups = _grouped_here(conn, query, present, rare_rows, size)
        for held, seqs in groups:
            if held == every and len(seqs) >= enough:
                return [(every, sorted(seqs, reverse=True)[:want])]
        return [*groups]
    holding_all = newest(conn, query.all_of(present), want)
    if len(holding_all) >= enough:
        return [(every, holding_all)]
    # A row holding every term may be among some terms' newest rows too: it is in its own
    # group only. The few of them are known, so SQLite need not be told which they are.
    taken = set(holding_all)
    partial: list[Group] = [
        (held, [seq for seq in parse(rows) if seq not in taken])
        for held, rows in _by_held(conn, query, present, want)
    ]
    return [(every, holding_all), *partial] if holding_all else partial
