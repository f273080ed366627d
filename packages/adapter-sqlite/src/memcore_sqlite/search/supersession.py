"""Recall prefers the current truth: superseded memories give way to what superseded them.

A memory another one *updated* still answers, but right after its successor; a memory folded
into another by a MERGE gives its place to the merged memory. Links are followed to the newest.
"""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import attrs

from memcore.scope import ScopePattern
from memcore.values import MemoryRecord, SearchHit
from memcore_sqlite.storage.rows import MEMORY_COLUMNS, memory_from_row, rows_in

#: How many supersession links a search follows to reach the current memory.
MAX_HOPS = 8


#: The columns a memory's links are read from, after its id (see :func:`link`).
LINK_COLUMNS = "superseded_by, superseded_how, supersedes"
#: A memory as links name it: its tenant (app and tenant ids) and its id. Ids are unique per
#: tenant (schema 16), and a link never leaves its tenant (dreams and imports keep it there).
Key = tuple[str, str, str]
Links = dict[Key, tuple[str, str, str]]


def key(memory: MemoryRecord) -> Key:
    """How links name ``memory``: its tenant and its id."""
    return (memory.scope.app_id, memory.scope.tenant_id, memory.id)


def link(row: Sequence[Any]) -> tuple[str, str, str]:
    """(superseded_by or '', how or '', supersedes JSON) from the :data:`LINK_COLUMNS`."""
    return (row[0] or "", row[1] or "", row[2])


def _links(conn: sqlite3.Connection, store_id: int, keys: Collection[Key]) -> Links:
    """:func:`key` -> :func:`link` for the memories of the store given (found by id, the
    rows of other tenants that share one left out)."""
    wanted = set(keys)
    sql = (
        f"SELECT app_id, tenant_id, id, {LINK_COLUMNS} FROM memories WHERE id IN ({{}})"
        " AND store_id = ?"
    )
    out: Links = {}
    for r in rows_in(conn, sql, list({i for _, _, i in wanted}), after=(store_id,)):
        k = (str(r[0]), str(r[1]), str(r[2]))
        if k in wanted:
            out[k] = link(r[3:])
    return out


def annotate(
    conn: sqlite3.Connection, store_id: int, memories: Sequence[MemoryRecord]
) -> list[MemoryRecord]:
    """Memories with ``extras`` saying what they supersede and what superseded them."""
    links = _links(conn, store_id, [key(m) for m in memories])
    return [_with_links(m, links.get(key(m), ("", "", "[]"))) for m in memories]


def _with_links(memory: MemoryRecord, links: tuple[str, str, str]) -> MemoryRecord:
    """``memory`` with ``extras`` naming what it supersedes and what superseded it."""
    by, how, supersedes = links
    extras = dict(memory.extras)
    if supersedes != "[]":
        extras["supersedes"] = json.loads(supersedes)
    if by:
        extras["superseded_by"] = by
        extras["superseded_how"] = how
    return attrs.evolve(memory, extras=extras) if extras else memory


#: What :func:`_current` answers for a chain that ends at a memory deleted since.
GONE = "\x00gone"


def _current(conn: sqlite3.Connection, store_id: int, start: Key, links: Links) -> str | None:
    """The id of the memory at the end of ``start``'s chain of successors (None: ``start``
    is current), or :data:`GONE` when the chain ends at a memory that was deleted: the user
    forgot the current truth, and a version it replaced must not answer in its place. Every
    successor is looked for in ``start``'s tenant."""
    app_id, tenant_id, at = start
    for _ in range(MAX_HOPS):
        by = links[(app_id, tenant_id, at)][0] if (app_id, tenant_id, at) in links else ""
        if not by:
            return at if at != start[2] else None
        nxt = (app_id, tenant_id, by)
        links.update(_links(conn, store_id, [nxt]))
        if nxt not in links:
            return GONE
        at = by
    return at


def forgotten(conn: sqlite3.Connection, store_id: int, memory: Key) -> bool:
    """Whether ``memory`` was superseded and its chain of successors ends at a memory deleted
    since: the user forgot what replaced it, so it answers for nothing."""
    return _current(conn, store_id, memory, _links(conn, store_id, [memory])) == GONE


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
    links = _links(conn, store_id, [key(h.memory) for h in found]) if links is None else dict(links)
    if not any(v[0] for v in links.values()):
        return list(found)
    successor: dict[Key, Key] = {}
    gone: set[Key] = set()
    for h in found:
        k = key(h.memory)
        if links.get(k, ("",))[0]:
            cur = _current(conn, store_id, k, links)
            if cur == GONE:
                gone.add(k)
            elif cur is not None:
                successor[k] = (k[0], k[1], cur)
    memories: dict[Key, MemoryRecord] = {key(h.memory): h.memory for h in found}
    missing = [c for c in set(successor.values()) if c not in memories]
    if missing:
        sql = f"SELECT {MEMORY_COLUMNS}, store_id FROM memories WHERE id IN ({{}})"
        wanted = set(missing)
        for r in rows_in(conn, sql, list({i for _, _, i in wanted})):
            m = memory_from_row(r)
            if (
                r[-1] == store_id
                and key(m) in wanted
                and pattern.matches(m.scope)
                and all(m.metadata.get(k) == v for k, v in flt.items())
            ):
                memories[key(m)] = m
    placed: set[Key] = set()
    out: list[SearchHit] = []
    for h in found:
        mk = key(h.memory)
        if mk in gone:
            continue
        then = successor.get(mk)
        if then is not None and then in memories:
            if then not in placed:
                out.append(SearchHit(memories[then], h.score, source=h.source))
                placed.add(then)
            if links[mk][1] == "merged":
                continue  # its text lives on in the merged memory
        if mk not in placed:
            if then is not None:  # it still answers, after its successor, naming it as get does
                h = attrs.evolve(h, memory=_with_links(h.memory, links[mk]))
            out.append(h)
            placed.add(mk)
    return out[:top_k]
