"""Vector codes stored in SQLite as pages of up to :data:`PAGE_ROWS` memories of one scope.

A fresh process loads a scope's codes with one range scan over a few hundred rows (100k
memories are about 800 pages, 44 MB), instead of decoding a row per memory or the float
vectors themselves. Pages are written in the same transaction as the memories and their float
vectors (which stay one row per memory in ``memory_vectors``), so every process sees codes and
vectors agree.

Within a scope a page is keyed by ``first_seq`` and holds seqs from its key up to the next
page's key, in order: new memories get the largest seq of the file, so they land on the last
page; a re-embedded memory goes back to the page its seq belongs to.
"""

from __future__ import annotations

import bisect
import sqlite3
from collections import defaultdict
from collections.abc import Sequence
from typing import Any

from memcore_sqlite.vector import plain_pages, stored
from memcore_sqlite.vector.quantize import Codes, concat

#: Memories per page: a write rewrites at most one page per scope it touches (about 56 KB
#: for 384 dimensions), a load reads n / PAGE_ROWS rows.
PAGE_ROWS = 128

Scope4 = tuple[str, str, str, str]
_LEVELS = ("app_id", "tenant_id", "agent_id", "run_id")

SCHEMA = """
CREATE TABLE vector_pages (
    id INTEGER PRIMARY KEY,
    store_id INTEGER NOT NULL,
    model TEXT NOT NULL,
    app_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    first_seq INTEGER NOT NULL,
    seqs BLOB NOT NULL,
    bits BLOB NOT NULL,
    scales BLOB NOT NULL,
    q8 BLOB NOT NULL
);
CREATE UNIQUE INDEX vector_pages_key
    ON vector_pages (store_id, model, app_id, tenant_id, agent_id, run_id, first_seq)
"""
#: What the ``bits`` column holds from schema 9 on: nothing (the sign bits ordered no search;
#: :mod:`memcore_sqlite.vector.quantize`). The column stays, as files from before have it.
NO_BITS = b""

_KEY = "store_id = ? AND model = ? AND app_id = ? AND tenant_id = ? AND agent_id = ? AND run_id = ?"


def _np() -> Any:
    import numpy

    return numpy


def _decode(row: Sequence[Any], dimension: int) -> Codes:
    np_ = _np()
    seqs, scales, q8 = row[:3]
    return Codes(
        np_.frombuffer(seqs, dtype="<i8").astype(np_.int64),
        np_.frombuffer(scales, dtype="<f4").astype(np_.float32),
        np_.frombuffer(q8, dtype=np_.int8).reshape(-1, dimension),
    )


def _blobs(codes: Codes) -> tuple[bytes, bytes, bytes, bytes]:
    return (
        codes.seqs.astype("<i8").tobytes(),
        NO_BITS,
        codes.scales.astype("<f4").tobytes(),
        codes.q8.tobytes(),
    )


def load(
    conn: sqlite3.Connection,
    store_id: int,
    model: str,
    pattern: Scope4,
    dimension: int,
) -> Codes:
    """Every code of the pattern's scopes (a range of the page index: cost follows the scope).

    The arrays are sized first (the blobs' lengths are in their record headers: no page is
    read for them, 0.5 ms at 100k rows) and each page is copied into them as it comes. Keeping
    every page's blob until one join of them all cost 85 against 30 ms at 100k rows (a fresh
    process's first search): the 38 MB of blobs held at once, then copied once more. The codes
    go to ordinary pages (:mod:`memcore_sqlite.vector.plain_pages`).
    """
    np_ = _np()
    where = "".join(f" AND {n} = ?" for n, v in zip(_LEVELS, pattern) if v != "*")
    params = (store_id, model, *[v for v in pattern if v != "*"])
    scope = f"FROM vector_pages WHERE store_id = ? AND model = ?{where}"
    (size,) = conn.execute(f"SELECT total(length(q8)) {scope}", params).fetchone()
    rows = int(size) // dimension
    # Writable arrays of their own, so in-process writes can edit them.
    seqs = np_.empty(rows, np_.int64)
    scales = np_.empty(rows, np_.float32)
    q8 = plain_pages.zeros((rows, dimension), np_.int8, filled_at_once=True)
    at = 0
    for page_seqs, page_scales, page_q8 in conn.execute(f"SELECT seqs, scales, q8 {scope}", params):
        n = len(page_q8) // dimension
        seqs[at : at + n] = np_.frombuffer(page_seqs, dtype="<i8")
        scales[at : at + n] = np_.frombuffer(page_scales, dtype="<f4")
        q8[at : at + n] = np_.frombuffer(page_q8, dtype=np_.int8).reshape(n, dimension)
        at += n
    return Codes(seqs[:at], scales[:at], q8[:at])


class _ScopePages:
    """The pages of one scope touched by one write, decoded on first use."""

    def __init__(self, conn: sqlite3.Connection, key: tuple[Any, ...], dimension: int) -> None:
        self.conn = conn
        self.key = key
        self.dimension = dimension
        self.firsts = [
            int(r[0])
            for r in conn.execute(
                f"SELECT first_seq FROM vector_pages WHERE {_KEY} ORDER BY first_seq", key
            )
        ]
        self.pages: dict[int, Codes] = {}
        self.dirty: set[int] = set()

    def _page_for(self, seq: int) -> int | None:
        i = bisect.bisect_right(self.firsts, seq) - 1
        return self.firsts[i] if i >= 0 else None

    def _get(self, first: int) -> Codes:
        if first not in self.pages:
            row = self.conn.execute(
                f"SELECT seqs, scales, q8 FROM vector_pages WHERE {_KEY} AND first_seq = ?",
                (*self.key, first),
            ).fetchone()
            self.pages[first] = _decode(row, self.dimension)
        return self.pages[first]

    def remove(self, seqs: Sequence[int]) -> None:
        np_ = _np()
        by_page: dict[int, list[int]] = defaultdict(list)
        for seq in seqs:
            first = self._page_for(seq)
            if first is not None:
                by_page[first].append(seq)
        for first, gone in by_page.items():
            page = self._get(first)
            keep = ~np_.isin(page.seqs, np_.asarray(gone, dtype=np_.int64))
            if not keep.all():
                self.pages[first] = page.take(keep)
                self.dirty.add(first)

    def add(self, codes: Codes) -> None:
        np_ = _np()
        by_page: dict[int, list[int]] = defaultdict(list)
        for i, seq in enumerate(codes.seqs.tolist()):
            first = self._page_for(seq)
            if first is None:  # before every page of the scope: a page of its own
                first = seq
                bisect.insort(self.firsts, first)
                self.pages[first] = codes.take(slice(0, 0))
            by_page[first].append(i)
        for first, rows in by_page.items():
            merged = concat([self._get(first), codes.take(rows)], self.dimension)
            merged = merged.take(np_.argsort(merged.seqs, kind="stable"))
            self.pages[first] = merged.take(slice(0, PAGE_ROWS))
            self.dirty.add(first)
            for start in range(PAGE_ROWS, len(merged), PAGE_ROWS):
                part = merged.take(slice(start, start + PAGE_ROWS))
                key = int(part.seqs[0])
                bisect.insort(self.firsts, key)
                self.pages[key] = part
                self.dirty.add(key)

    def flush(self) -> None:
        for first in sorted(self.dirty):
            page = self.pages[first]
            if not len(page):
                self.conn.execute(
                    f"DELETE FROM vector_pages WHERE {_KEY} AND first_seq = ?", (*self.key, first)
                )
                continue
            self.conn.execute(
                "INSERT INTO vector_pages (store_id, model, app_id, tenant_id, agent_id, run_id,"
                " first_seq, seqs, bits, scales, q8) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)"
                " ON CONFLICT (store_id, model, app_id, tenant_id, agent_id, run_id, first_seq)"
                " DO UPDATE SET seqs = excluded.seqs, bits = excluded.bits,"
                " scales = excluded.scales, q8 = excluded.q8",
                (*self.key, first, *_blobs(page)),
            )


def write(
    conn: sqlite3.Connection,
    store_id: int,
    model: str,
    dimension: int,
    removed: Sequence[tuple[Scope4, int]],
    added: Sequence[tuple[Scope4, Codes]],
) -> None:
    """Remove then add codes, inside the caller's write transaction."""
    scopes: dict[Scope4, _ScopePages] = {}

    def pages(scope: Scope4) -> _ScopePages:
        if scope not in scopes:
            scopes[scope] = _ScopePages(conn, (store_id, model, *scope), dimension)
        return scopes[scope]

    gone: dict[Scope4, list[int]] = defaultdict(list)
    for scope, seq in removed:
        gone[scope].append(seq)
    for scope, seqs in gone.items():
        pages(scope).remove(seqs)
    for scope, codes in added:
        pages(scope).add(codes)
    for scope_pages in scopes.values():
        scope_pages.flush()


def drop_store(conn: sqlite3.Connection, store_id: int) -> None:
    conn.execute("DELETE FROM vector_pages WHERE store_id = ?", (store_id,))


def build_from_vectors(conn: sqlite3.Connection, chunk: int = 4_096) -> None:
    """Write the pages of every stored vector (a file from before code pages existed, or one
    whose vectors were just rewritten as float16: schema 9)."""
    if conn.execute("SELECT 1 FROM memory_vectors LIMIT 1").fetchone() is None:
        return
    from memcore_sqlite.vector.quantize import encode

    np_ = _np()
    rows = conn.execute(
        "SELECT m.store_id, v.model, m.app_id, m.tenant_id, m.agent_id, m.run_id, v.seq, v.vector"
        " FROM memory_vectors v JOIN memories m ON m.seq = v.seq"
        " ORDER BY m.store_id, v.model, m.app_id, m.tenant_id, m.agent_id, m.run_id, v.seq"
    )
    group: tuple[Any, ...] | None = None
    seqs: list[int] = []
    blobs: list[bytes] = []

    def flush() -> None:
        if group is None or not seqs:
            return
        dimension = len(blobs[0]) // stored.ITEM_BYTES
        matrix = stored.matrix(blobs, dimension)
        codes = encode(np_.asarray(seqs, dtype=np_.int64), matrix)
        write(conn, group[0], group[1], dimension, [], [(group[2:], codes)])
        seqs.clear()
        blobs.clear()

    for *key, seq, blob in rows:
        if tuple(key) != group or len(seqs) == chunk or (blobs and len(blob) != len(blobs[0])):
            flush()
            group = tuple(key)
        seqs.append(int(seq))
        blobs.append(blob)
    flush()
