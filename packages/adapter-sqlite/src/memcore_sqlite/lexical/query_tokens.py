"""The token FTS5 looks a query term up by, from FTS5's own tokenizer.

A term in a MATCH expression is a phrase: FTS5 runs it through the table's tokenizer (here
porter-stemmed, case-folded, diacritics removed) and matches the tokens it gives. To read a
term's rows from postings in memory we need that same token, so we ask the same tokenizer: a
temp FTS5 table with the ``tokenize`` option of ``memory_fts`` (nothing is written to the
file), and ``fts5vocab`` lists the tokens of each phrase inserted there. Phrases are cached.
"""

from __future__ import annotations

import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Sequence

from memcore_sqlite.storage.schema import FTS_TOKENIZE

#: Phrases whose token is kept.
MAX_PHRASES = 65_536

_TABLE = "memcore_query_phrases"
_TOKENS = "memcore_query_tokens"


class QueryTokens:
    """Each phrase's one token (None when it tokenizes to none or to several)."""

    def __init__(self, max_phrases: int = MAX_PHRASES) -> None:
        self.max_phrases = max_phrases
        self._known: OrderedDict[str, str | None] = OrderedDict()
        self._lock = threading.Lock()

    def tokens(self, conn: sqlite3.Connection, phrases: Sequence[str]) -> list[str | None]:
        """Inside the caller's transaction: the temp table is the connection's own."""
        distinct = list(dict.fromkeys(phrases))
        with self._lock:
            got = {p: self._known[p] for p in distinct if p in self._known}
        missing = [p for p in distinct if p not in got]
        if missing:
            found = _tokenized(conn, missing)
            got.update(found)
            with self._lock:
                self._known.update(found)
                while len(self._known) > self.max_phrases:
                    self._known.popitem(last=False)
        return [got[p] for p in phrases]


def _tokenized(conn: sqlite3.Connection, phrases: list[str]) -> dict[str, str | None]:
    listed = _instances(conn, list(enumerate(phrases)))
    return {p: found[0] if len(found := listed[i]) == 1 else None for i, p in enumerate(phrases)}


def row_tokens(conn: sqlite3.Connection, texts: Sequence[tuple[int, str]]) -> dict[int, list[str]]:
    """The distinct tokens FTS5 indexes for each (rowid, text), by the same tokenizer."""
    return {rowid: list(dict.fromkeys(found)) for rowid, found in _instances(conn, texts).items()}


def _instances(conn: sqlite3.Connection, texts: Sequence[tuple[int, str]]) -> dict[int, list[str]]:
    """Each (rowid, text)'s tokens, one per instance, from the connection's temp FTS5 table
    with ``memory_fts``'s tokenizer and its vocabulary (emptied again after)."""
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_TABLE} USING fts5(x, tokenize = '{FTS_TOKENIZE}')"
    )
    conn.execute(
        f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{_TOKENS}"
        f" USING fts5vocab(temp, {_TABLE}, 'instance')"
    )
    conn.executemany(f"INSERT INTO temp.{_TABLE} (rowid, x) VALUES (?, ?)", texts)
    try:
        found: dict[int, list[str]] = {rowid: [] for rowid, _ in texts}
        for doc, term in conn.execute(f"SELECT doc, term FROM temp.{_TOKENS}"):
            found[int(doc)].append(str(term))
    finally:
        conn.execute(f"DELETE FROM temp.{_TABLE}")
    return found
