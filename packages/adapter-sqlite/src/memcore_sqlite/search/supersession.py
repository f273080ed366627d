"""Recall prefers the current truth: superseded memories give way to what superseded them.

A memory another one *updated* still answers, but right after its successor; a memory folded
into another by a MERGE gives its place to the merged memory. Links are followed to the newest.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memcore.scope import ScopePattern
from memcore.values import MemoryRecord, SearchHit
from memcore_sqlite.storage.rows import MEMORY_COLUMNS, memory_from_row, rows_in

#: How many supersession links a search follows to reach the current memory.
MAX_HOPS = 8


#: The columns a memory's links are read from, after its id (see :func:`link`).
LINK_COLUMNS = "superseded_by, superseded_how, supersedes"
Links = dict[str, tuple[str, str, str]]


def link(row: Sequence[Any]) -> tuple[str, str, str]:
    """(superseded_by or '', how or '', supersedes JSON) from the :data:`LINK_COLUMNS`."""
    return (row[0] or "", row[1] or "", row[2])


def _links(conn: sqlite3.Connection, ids: Sequence[str]) -> Links:
    """id -> :func:`link` for the ids given."""
    sql = f"SELECT id, {LINK_COLUMNS} FROM memories WHERE id IN ({{}})"
    return {r[0]: link(r[1:]) for r in rows_in(conn, sql, ids)}


def annotate(conn: sqlite3.Connection, memories: Sequence[MemoryRecord]) -> list[MemoryRecord]:
    """Memories with ``extras`` saying what they supersede and what superseded them."""
    links = _links(conn, [m.id for m in memories])
    out = []
    for m in memories:
        by, how, supersedes = links.get(m.id, ("", "", "[]"))
        extras = dict(m.extras)
        if supersedes != "[]":
            extras["supersedes"] = json.loads(supersedes)
        if by:
            extras["superseded_by"] = by
            extras["superseded_how"] = how
        out.append(attrs.evolve(m, extras=extras) if extras else m)
    return out


#: What :func:`_current` answers for a chain that ends at a memory deleted since.
GONE = "\x00gone"


def _current(
    conn: sqlite3.Connection, store_id: int, start: str, links: dict[str, tuple[str, str, str]]
) -> str | None:
    """The memory at the end of ``start``'s chain of successors (None: ``start`` is current),
    or :data:`GONE` when the chain ends at a memory that was deleted: the user forgot the
    current truth, and a version it replaced must not answer in its place."""
    at = start
    for _ in range(MAX_HOPS):
        by = links[at][0] if at in links else ""
        if not by:
            return at if at != start else None
        links.update(_links(conn, [by]))
        if by not in links:
            return GONE
        at = by
    return at


def prefer_current(
    conn: sqlite3.Connection,
    store_id: int,
    pattern: ScopePattern,
    found: Sequence[SearchHit],
    flt: Mapping[str, str],
    top_k: int,
    links: Links | None = None,
) -> list[SearchHit]:
    """Reorder ``found`` so every superseded hit comes after the memory that superseded it.

    ``links`` holds the hits' links when the caller read them with the hits' rows.
    """
    links = _links(conn, [h.memory.id for h in found]) if links is None else dict(links)
    if not any(v[0] for v in links.values()):
        return list(found)
    successor: dict[str, str] = {}
    gone: set[str] = set()
    for h in found:
        if links.get(h.memory.id, ("",))[0]:
            cur = _current(conn, store_id, h.memory.id, links)
            if cur == GONE:
                gone.add(h.memory.id)
            elif cur is not None:
                successor[h.memory.id] = cur
    memories: dict[str, MemoryRecord] = {h.memory.id: h.memory for h in found}
    missing = [c for c in set(successor.values()) if c not in memories]
    if missing:
        sql = f"SELECT {MEMORY_COLUMNS}, store_id FROM memories WHERE id IN ({{}})"
        for r in rows_in(conn, sql, missing):
            m = memory_from_row(r)
            if (
                r[-1] == store_id
                and pattern.matches(m.scope)
                and all(m.metadata.get(k) == v for k, v in flt.items())
            ):
                memories[m.id] = m
    placed: set[str] = set()
    out: list[SearchHit] = []
    for h in found:
        mid = h.memory.id
        if mid in gone:
            continue
        cur = successor.get(mid)
        if cur is not None and cur in memories:
            if cur not in placed:
                out.append(SearchHit(memories[cur], h.score, source=h.source))
                placed.add(cur)
            if links[mid][1] == "merged":
                continue  # its text lives on in the merged memory
        if mid not in placed:
            out.append(h)
            placed.add(mid)
    return out[:top_k]
