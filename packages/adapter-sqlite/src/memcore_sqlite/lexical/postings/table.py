"""One tenant's full-text postings in memory, exactly as FTS5 indexes them.

The lexical stage asks FTS5 for each query term's rows in the tenant (prefixed ``tbody``
terms, :mod:`memcore_sqlite.storage.tenant_prefixes`) and walks intersections newest first: about
a millisecond at 100k rows, most of it in statements and their parsing. The same lists as
sorted arrays are matched with ``searchsorted`` in a fraction of that
(:mod:`memcore_sqlite.lexical.postings.matches`).

The lists are read from the FTS5 index itself (``fts5vocab``, ``instance``), so they hold what
FTS5 would match, byte for byte: one int32 array of rowids, term after term (CSR), the offset
where each term's rows start, and a term table (the terms without the tenant prefix, as
fixed-width bytes searched with ``searchsorted``; the few longer ones in a dict). About 4
bytes a posting: 14 MB for 100k rows of conversation (3.3M postings, 109k terms).

The walk and the concatenation run inside SQLite (which releases the GIL while it steps), a
slice of terms at a time so no one string grows past a few MB; numpy parses and removes the
repeated rowids of a term held more than once in a row.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable

import numpy as np

from memcore_sqlite.lexical import tags
from memcore_sqlite.storage import tenant_prefixes as prefixes

#: Terms of up to this many bytes (after the tenant prefix) are held as fixed-width keys.
KEY_BYTES = 16
#: Rows this process may append to an entry (:meth:`Postings.append`) before it is built
#: again: each query term's appended rows are copied onto its array.
MAX_APPENDED = 4_096
#: Term instances concatenated by one statement (a few MB of text).
SLICE_INSTANCES = 262_144
#: Terms whose keys are cut out at a time.
_TABLE_BLOCK = 8_192

_TERMS_TABLE = "memcore_tbody_terms"
_INSTANCES_TABLE = "memcore_tbody_instances"
#: The tenant's terms in the index's order, with how many rows and instances hold each: the
#: three lists in one aggregate over one scan, so they stay aligned.
_TERMS = (
    "SELECT group_concat(term, char(31)), group_concat(doc), group_concat(cnt), count(*)"
    f" FROM temp.{_TERMS_TABLE} WHERE term >= ? AND term < ? AND col = 'tbody'"
)
_INSTANCES = (
    f"SELECT group_concat(doc) FROM temp.{_INSTANCES_TABLE}"
    " WHERE term >= ? AND term <= ? AND col = 'tbody'"
)
_SCOPE_COUNT = (
    "SELECT count(*) FROM (SELECT rowid FROM memory_fts WHERE memory_fts MATCH ? LIMIT ?)"
)
_TENANT_ROWS = "SELECT count(*) FROM memories WHERE store_id = ? AND app_id = ? AND tenant_id = ?"


class Postings:
    """A tenant's postings at ``generation``.

    ``tag`` is the tenant's scope tag and ``scope`` the expression the lexical query counts
    the tenant's rows by; ``in_scope`` is that count as its first statement takes it (capped
    at ``count_limit``); ``rows`` how many memories the tenant holds (the cache's bound).
    ``table`` is the term table (:func:`_term_table`)."""

    def __init__(
        self,
        generation: int,
        prefix: str,
        tag: str,
        in_scope: int,
        count_limit: int,
        rows: int,
        postings: np.ndarray,
        starts: np.ndarray,
        table: tuple[np.ndarray, np.ndarray, dict[bytes, int]],
    ) -> None:
        self.generation = generation
        self.prefix = prefix
        self.tag = tag
        self.scope = f'tags : ("{tag}")'
        self.in_scope = in_scope
        self.count_limit = count_limit
        self.rows = rows
        self._postings = postings
        self._starts = starts
        self._keys, self._ids, self._long = table
        #: Rows this process appended since the build, by token: seqs past every row read.
        self._appended: dict[str, list[int]] = {}
        self.appended = 0
        self.last_rowid = int(postings.max()) if len(postings) else 0

    @property
    def nbytes(self) -> int:
        return int(
            self._postings.nbytes + self._starts.nbytes + self._keys.nbytes + self._ids.nbytes
        )

    def term_id(self, token: str) -> int | None:
        """The index of ``token`` (a prefixed token as FTS5 indexes it), -1 when the tenant
        has no row holding it, None when it is not one of the tenant's terms at all."""
        if not token.startswith(self.prefix):
            return None
        key = token[len(self.prefix) :].encode("utf-8", "surrogatepass")
        if not _fits(key):
            return self._long.get(key, -1)
        i = int(np.searchsorted(self._keys, key))
        if i < len(self._keys) and self._keys[i] == key:
            return int(self._ids[i])
        return -1

    def token_rows(self, token: str) -> np.ndarray | None:
        """The rowids holding ``token`` (a prefixed token), ascending, appended rows
        included; None when it is not one of the tenant's terms at all."""
        term_id = self.term_id(token)
        if term_id is None:
            return None
        held = self.rows_of(term_id)
        more = self._appended.get(token)
        if not more:
            return held
        return np.concatenate([held, np.asarray(more, dtype=held.dtype)])

    def append(self, rows: list[tuple[int, list[str]]]) -> bool:
        """Take in rows this process added to the tenant: (seq, the distinct tokens FTS5
        indexed for it). False, leaving the entry as it was, when they cannot be appended
        exactly: a seq not past every row held (a row written before, such as a vector
        stored later), a token outside the tenant's prefix, or more than
        :data:`MAX_APPENDED` rows in all. Each row is one more of the tenant's full-text
        rows, all of which carry its tag: the scope count grows with them, to its cap."""
        seqs = [seq for seq, _ in rows]
        if (
            self.appended + len(rows) > MAX_APPENDED
            or seqs != sorted(set(seqs))
            or (seqs and seqs[0] <= self.last_rowid)
            or (seqs and seqs[-1] > np.iinfo(np.int32).max)
            or any(not t.startswith(self.prefix) for _, tokens in rows for t in tokens)
        ):
            return False
        for seq, tokens in rows:
            for token in tokens:
                self._appended.setdefault(token, []).append(seq)
        self.appended += len(rows)
        self.rows += len(rows)
        self.in_scope = min(self.count_limit, self.in_scope + len(rows))
        if seqs:
            self.last_rowid = seqs[-1]
        return True

    def rows_of(self, term_id: int) -> np.ndarray:
        """The rowids holding the term, ascending (a view: never written to)."""
        if term_id < 0:
            return self._postings[:0]
        return self._postings[self._starts[term_id] : self._starts[term_id + 1]]


def _fits(key: bytes) -> bool:
    # numpy's fixed-width bytes drop trailing NULs: a key holding one is kept in the dict.
    return len(key) <= KEY_BYTES and b"\0" not in key


def _term_table(
    joined: bytes, prefix: bytes
) -> tuple[np.ndarray, np.ndarray, dict[bytes, int], np.ndarray, np.ndarray]:
    """The term table from the terms joined by 0x1f, without a Python object per term: the
    keys that fit as fixed-width bytes sorted, with their term ids; the others in a dict;
    and where each term starts and ends in ``joined``. Keys are cut out a block of terms at
    a time, so no temporary grows past a few MB."""
    data = np.frombuffer(joined, dtype=np.uint8)
    seps = np.flatnonzero(data == 0x1F)
    begins = np.concatenate([[0], seps + 1]).astype(np.int64)
    ends = np.concatenate([seps, [len(data)]]).astype(np.int64)
    del seps
    cut = len(prefix)
    if np.any(ends - begins < cut):
        raise ValueError("a term without the tenant prefix")
    for i, byte in enumerate(prefix):
        if np.any(data[begins + i] != byte):
            raise ValueError("a term without the tenant prefix")
    table = np.zeros(len(begins), dtype=f"S{KEY_BYTES}")
    fixed = np.zeros(len(begins), dtype=bool)
    width = np.arange(KEY_BYTES)
    for low in range(0, len(begins), _TABLE_BLOCK):
        first = begins[low : low + _TABLE_BLOCK] + cut
        size = ends[low : low + _TABLE_BLOCK] - first
        inside = width < size[:, None]
        at = np.minimum(first[:, None] + width, len(data) - 1)
        keys = np.where(inside, data[at], np.uint8(0))
        fits = (size <= KEY_BYTES) & ~np.any(inside & (keys == 0), axis=1)
        table[low : low + len(first)] = np.ascontiguousarray(keys).view(f"S{KEY_BYTES}").ravel()
        fixed[low : low + len(first)] = fits
    ids = np.flatnonzero(fixed).astype(np.int32)
    table = table[ids]
    order = np.argsort(table, kind="stable")
    long = {joined[begins[i] + cut : ends[i]]: int(i) for i in np.flatnonzero(~fixed).tolist()}
    return table[order], ids[order], long, begins, ends


def build(
    conn: sqlite3.Connection,
    store_id: int,
    app_id: str,
    tenant_id: str,
    count_limit: int,
    stopped: Callable[[], bool] = lambda: False,
) -> Postings:
    """The tenant's postings, read inside one snapshot of ``conn`` (a transaction of its own),
    with the store's generation in that same snapshot. ``stopped`` is asked between slices
    (InterruptedError when it says so)."""
    tag = tags.tenant_tag(store_id, app_id, tenant_id)
    for table, kind in ((_TERMS_TABLE, "col"), (_INSTANCES_TABLE, "instance")):
        conn.execute(
            f"CREATE VIRTUAL TABLE IF NOT EXISTS temp.{table}"
            f" USING fts5vocab(main, memory_fts, '{kind}')"
        )
    conn.execute("BEGIN")
    try:
        row = conn.execute("SELECT generation FROM stores WHERE id = ?", (store_id,)).fetchone()
        if row is None:
            raise LookupError("the store is gone")
        generation = int(row[0])
        prefix = prefixes.lookup(conn, store_id, app_id, tenant_id)  # in the same snapshot
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        scope = f'tags : ("{tag}")'
        in_scope = int(conn.execute(_SCOPE_COUNT, (scope, count_limit)).fetchone()[0])
        rows = int(conn.execute(_TENANT_ROWS, (store_id, app_id, tenant_id)).fetchone()[0])
        names, docs_text, counts_text, n = conn.execute(_TERMS, (prefix, end)).fetchone()
        joined = str(names or "").encode("utf-8", "surrogatepass")
        keys, ids, long, begins, ends = _term_table(joined, prefix.encode())
        docs = np.fromstring(docs_text or "", dtype=np.int64, sep=",")
        counts = np.fromstring(counts_text or "", dtype=np.int64, sep=",")
        if not len(begins) == len(docs) == len(counts) == int(n) or (not n and joined):
            raise ValueError("the term list did not parse")

        def term(i: int) -> str:
            return joined[begins[i] : ends[i]].decode("utf-8", "surrogatepass")

        starts = np.zeros(int(n) + 1, dtype=np.int64)
        np.cumsum(docs, out=starts[1:])
        postings = np.empty(int(starts[-1]), dtype=np.int32)
        first = 0
        while first < n:
            if stopped():
                raise InterruptedError
            last = _slice_end(counts, first)
            _fill(conn, term(first), term(last), first, last, docs, counts, postings, starts)
            first = last + 1
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:
            conn.execute("ROLLBACK")
        raise
    terms = (keys, ids, long)
    return Postings(generation, prefix, tag, in_scope, count_limit, rows, postings, starts, terms)


def _slice_end(counts: np.ndarray, first: int) -> int:
    """The last term of the slice starting at ``first``: about SLICE_INSTANCES instances."""
    total = np.cumsum(counts[first:])
    return first + max(0, int(np.searchsorted(total, SLICE_INSTANCES)) - 1)


def _fill(
    conn: sqlite3.Connection,
    low: str,
    high: str,
    first: int,
    last: int,
    docs: np.ndarray,
    counts: np.ndarray,
    postings: np.ndarray,
    starts: np.ndarray,
) -> None:
    """Terms ``first`` to ``last`` (``low`` to ``high``): their instances' rowids, one per
    row holding the term."""
    joined = conn.execute(_INSTANCES, (low, high)).fetchone()[0]
    found = np.fromstring(joined or "", dtype=np.int64, sep=",")
    counts = counts[first : last + 1]
    if len(found) != int(counts.sum()):
        raise ValueError("the index changed under the build")
    if len(found) and (found.min() < 0 or found.max() > np.iinfo(np.int32).max):
        raise ValueError("rowids past int32")
    # Instances come term by term, rowid by rowid: a row holding a term twice is repeated.
    begins = np.cumsum(counts) - counts
    keep = np.ones(len(found), dtype=bool)
    keep[1:] = found[1:] != found[:-1]
    keep[begins] = True
    per_term = np.add.reduceat(keep, begins) if len(begins) else keep[:0]
    if not np.array_equal(per_term, docs[first : last + 1]):
        raise ValueError("the index changed under the build")
    kept = found[keep]
    # Each term's rows ascending, as the matching's searchsorted needs.
    rising = np.ones(len(kept), dtype=bool)
    rising[1:] = kept[1:] > kept[:-1]
    rising[np.cumsum(per_term) - per_term] = True
    if not rising.all():
        raise ValueError("postings out of order")
    postings[starts[first] : starts[last + 1]] = kept
