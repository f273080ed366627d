"""Which rows of a tenant hold which query terms, from its postings in memory.

The same answers as :mod:`memcore_sqlite.lexical.fts_matches` gives from FTS5, step for step, on
each term's rowids as a sorted array (:mod:`memcore_sqlite.lexical.postings.table`): the same counts capped
at the same limit, the same rows per group, and the same cuts (the newest ``want`` rows
holding every term, each common term's newest ``want``). Groups come back as
(bits of the terms held, in the query's term order; rowids as Python ints).
"""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import numpy as np

from memcore_sqlite.lexical.fts_matches import Group

#: Rows of the rarest term checked at a time, newest first, for the rows holding every term.
_FIRST_CHECK = 512


@attrs.frozen
class TermRows:
    """A query's terms' rows in one tenant: ``in_scope`` as FTS5 counts the tenant's rows
    (capped), and each term's rowids ascending, in the query's term order."""

    in_scope: int
    rows: tuple[np.ndarray, ...]

    def counts(self, limit: int) -> list[int]:
        """Each term's row count, counting no further than ``limit`` (as FTS5's LIMIT)."""
        return [min(len(a), limit) for a in self.rows]


def _holds(a: np.ndarray, seqs: np.ndarray) -> np.ndarray:
    """Which of ``seqs`` the sorted ``a`` holds."""
    if not len(a):
        return np.zeros(len(seqs), dtype=bool)
    pos = np.searchsorted(a, seqs)
    pos[pos == len(a)] = 0
    return np.asarray(a[pos] == seqs)


def _distinct(parts: list[np.ndarray]) -> np.ndarray:
    """The rowids of sorted arrays, each once, ascending (a sort beats np.unique's hash)."""
    if len(parts) == 1:
        return parts[0]
    joined = np.sort(np.concatenate(parts))
    keep = np.ones(len(joined), dtype=bool)
    keep[1:] = joined[1:] != joined[:-1]
    return joined[keep]


def _newest(a: np.ndarray, want: int) -> np.ndarray:
    return a[::-1][:want]


def _grouped(seqs: np.ndarray, held: np.ndarray) -> list[Group]:
    """``seqs`` (ascending) grouped by their ``held`` bits, each group ascending: one stable
    sort, and Python lists sliced at the changes of bits."""
    if not len(seqs):
        return []
    order = np.argsort(held, kind="stable")
    bits = held[order]
    cuts = (np.flatnonzero(bits[1:] != bits[:-1]) + 1).tolist()
    starts, ends = [0, *cuts], [*cuts, len(bits)]
    values = bits[starts].tolist()
    listed = seqs[order].tolist()
    return [(h, listed[a:b]) for h, a, b in zip(values, starts, ends)]


def _holding_all(arrays: list[np.ndarray], want: int) -> np.ndarray:
    """The newest ``want`` rows holding every term, newest first: the rarest term's rows
    checked against the others, a growing slice of its newest at a time (a row past the
    slice is older than every row in it, so ``want`` found there are the newest)."""
    rarest = min(arrays, key=len)
    others = [a for a in arrays if a is not rarest]
    size = _FIRST_CHECK
    while True:
        part = _newest(rarest, size)
        ok = np.ones(len(part), dtype=bool)
        for a in others:
            ok &= _holds(a, part)
        found = part[ok]
        if len(found) >= want or len(part) == len(rarest):
            return found[:want]
        size *= 4


def matched(
    rows: Mapping[str, np.ndarray],
    present: tuple[str, ...],
    rare: tuple[str, ...],
    want: int,
    enough: int,
) -> list[Group]:
    """:func:`memcore_sqlite.lexical.fts_matches.matched` on arrays: ``rows`` holds every present
    term's rows, ``rare`` the present terms in at most the cap's rows, in query order."""
    every = (1 << len(present)) - 1
    if len(present) == 1:
        (t,) = present
        newest = _newest(rows[t], want).tolist()
        return [(every, newest)] if newest else []
    if rare:
        # Every row of each rare term; a common term's bit where it holds one of them.
        union = _distinct([rows[t] for t in rare])
        held = np.zeros(len(union), dtype=np.int64)
        for i, t in enumerate(present):
            if t in rare:  # all of its rows are in the union: where they are is found
                held[np.searchsorted(union, rows[t])] |= 1 << i
            else:
                held[_holds(rows[t], union)] |= 1 << i
        holding = held == every
        if np.count_nonzero(holding) >= enough:
            return [(every, _newest(union[holding], want).tolist())]
        return _grouped(union, held)
    holding_all = _holding_all([rows[t] for t in present], want)
    if len(holding_all) >= enough:
        return [(every, holding_all.tolist())]
    # Each term's newest ``want`` rows, grouped by which of those lists hold them, less the
    # rows holding every term (in their own group).
    tails = [_newest(rows[t], want)[::-1] for t in present]
    seqs = _distinct(tails)
    held = np.zeros(len(seqs), dtype=np.int64)
    for i, tail in enumerate(tails):
        held[np.searchsorted(seqs, tail)] |= 1 << i
    if len(holding_all):
        keep = ~np.isin(seqs, holding_all)
        seqs, held = seqs[keep], held[keep]
    partial = _grouped(seqs, held)
    return [(every, holding_all.tolist()), *partial] if len(holding_all) else partial
