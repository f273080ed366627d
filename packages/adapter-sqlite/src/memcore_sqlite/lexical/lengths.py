"""Memories' lengths in words, by seq, for the lexical ranking's length discount.

A search looks up the lengths of a few dozen candidates. Read from the tenant's covering
index that is a statement per search (about 0.25 ms at 100k rows, a quarter of the lexical
stage), so a tenant searched again keeps its lengths in memory: two arrays in seq order,
about 12 bytes a row, loaded in one scan of that index (about 40 ms at 100k rows).

The cache follows the store's ``generation`` like the vector cache does: this process's
writes mark the seqs they touched, which are then read from the file until the tenant is
reloaded; another process's write shows up as a new generation, and the entry is reloaded.
A tenant is loaded only when a search finds it at the generation its previous search saw:
a process that searches once (one CLI command) or behind a writer that never pauses reads
its few lengths from the file, as it did before, instead of loading every row for nothing.
"""

from __future__ import annotations

import sqlite3
import threading
from array import array
from bisect import bisect_left
from collections import OrderedDict
from collections.abc import Callable, Iterable

from memcore_sqlite.lexical.build_pace import BuildPace
from memcore_sqlite.lexical.tenant import Tenant
from memcore_sqlite.storage.rows import rows_in

#: Each row's length in words (None when unknown), for the given seqs.
Lookup = Callable[[list[int]], dict[int, int | None]]
#: A tenant's lengths are indexed by seq when its seqs span at most this many times their
#: number (4 bytes a seq in the span, against 12 a row sorted).
DENSE_SPAN = 3
#: Seqs written since an entry was loaded, past which it is dropped and loaded again.
MAX_TOUCHED = 4_096

_TENANT_ROWS = (
    "SELECT seq, words FROM memories INDEXED BY memories_tenant_words"
    " WHERE store_id = ? AND app_id = ? AND tenant_id = ?"
)


def read(conn: sqlite3.Connection, seqs: list[int], tenant: Tenant | None) -> dict[int, int | None]:
    """Each row's length in words (None when unknown), read from the file."""
    # The planner would read each memory's row by its key; the indexes hold seq and words
    # only, so their pages are few and stay cached (schema version 6). A tenant's own
    # entries are adjacent in the second (version 7): a tenant among many then reads a few
    # pages, not one per row.
    out: dict[int, int | None] = {}
    if tenant is not None:
        out = _looked_up(conn, _TENANT_ROWS + " AND seq IN ({})", tenant, seqs)
        # A row of another tenant (its tag digest collided) is looked up by seq alone.
        seqs = [seq for seq in seqs if seq not in out] if len(out) < len(seqs) else []
    if seqs:
        sql = "SELECT seq, words FROM memories INDEXED BY memories_words WHERE seq IN ({})"
        out.update(_looked_up(conn, sql, (), seqs))
    return out


def _looked_up(
    conn: sqlite3.Connection, sql: str, key: tuple[object, ...], seqs: list[int]
) -> dict[int, int | None]:
    return {int(r[0]): r[1] for r in rows_in(conn, sql, seqs, before=key)}


class _Entry:
    """One tenant's lengths at ``generation``, and the seqs this process has written since,
    whose lengths are read from the file.

    A tenant written in runs of seqs keeps its lengths in one array indexed by seq (-2 for a
    seq that is not the tenant's, -1 for an unknown length): a lookup is then an index, not
    a binary search (about 1 µs each at 100k rows, a tenth of a millisecond per search).
    A tenant whose seqs are spread among other tenants' keeps (seqs, lengths) sorted.
    """

    def __init__(self, generation: int, seqs: array[int], words: array[int]) -> None:
        self.generation = generation
        self.n = len(seqs)
        self.touched: set[int] = set()
        self._first = seqs[0] if seqs else 0
        span = seqs[-1] - self._first + 1 if seqs else 0
        self._by_offset: array[int] | None = None
        self._seqs = seqs
        self._words = words
        if span <= DENSE_SPAN * self.n:
            by_offset = array("i", [-2]) * span
            first = self._first
            for seq, w in zip(seqs, words):
                by_offset[seq - first] = w
            self._by_offset = by_offset
            self._seqs, self._words = array("q"), array("i")

    def lookup(self, seqs: list[int]) -> tuple[dict[int, int | None], list[int]]:
        """The lengths held for ``seqs``, and the seqs not held (written since, or of
        another tenant)."""
        touched = self.touched
        out: dict[int, int | None] = {}
        missing: list[int] = []
        if self._by_offset is not None:
            by_offset, first, span = self._by_offset, self._first, len(self._by_offset)
            for seq in seqs:
                i = seq - first
                w = by_offset[i] if 0 <= i < span else -2
                if w == -2 or seq in touched:
                    missing.append(seq)
                else:
                    out[seq] = w if w >= 0 else None
            return out, missing
        have, words, n = self._seqs, self._words, self.n
        for seq in seqs:
            i = bisect_left(have, seq)
            if i < n and have[i] == seq and seq not in touched:
                w = words[i]
                out[seq] = w if w >= 0 else None
            else:
                missing.append(seq)
        return out, missing


class LengthCache:
    """LRU of per-tenant lengths, bounded by the number of rows held in total."""

    def __init__(self, max_rows: int = 1_000_000) -> None:
        self.max_rows = max_rows
        self._entries: OrderedDict[Tenant, _Entry] = OrderedDict()
        #: Searches of each tenant without an entry at a generation: loaded at its second.
        self._pace = BuildPace()
        self._lock = threading.Lock()

    def reader(self, conn: sqlite3.Connection, tenant: Tenant | None, generation: int) -> Lookup:
        """Lengths for a search inside ``conn``'s snapshot, where the store is at
        ``generation``."""
        if tenant is None:
            return lambda seqs: read(conn, seqs, None)

        # Decided once per search: a search that reads lengths twice (a second slice) must
        # not count as the tenant's second search and load it.
        found: list[_Entry | None] = []

        def lookup(seqs: list[int]) -> dict[int, int | None]:
            if not found:
                found.append(self._entry(conn, tenant, generation))
            entry = found[0]
            if entry is None:
                return read(conn, seqs, tenant)
            out, missing = entry.lookup(seqs)
            if missing:
                out.update(read(conn, missing, tenant))
            return out

        return lookup

    def held(self, tenant: Tenant, generation: int) -> int | None:
        """How many rows the tenant's entry holds, if it is at ``generation``."""
        with self._lock:
            entry = self._entries.get(tenant)
            return entry.n if entry is not None and entry.generation == generation else None

    def warm_scope(self, conn: sqlite3.Connection, tenant: Tenant, generation: int) -> int:
        """Load the tenant's lengths now, inside ``conn``'s snapshot at ``generation``, not at
        its second search (a warm-up stands in for a session's first searches, and the load
        is one scan of an index); how many rows they hold."""
        entry = self._entry(conn, tenant, generation, now=True)
        assert entry is not None
        return entry.n

    def _entry(
        self, conn: sqlite3.Connection, tenant: Tenant, generation: int, *, now: bool = False
    ) -> _Entry | None:
        with self._lock:
            entry = self._entries.get(tenant)
            if entry is not None and entry.generation == generation:
                self._entries.move_to_end(tenant)
                return entry
            if not now and not self._pace.due(tenant, generation):
                return None
        entry = _load(conn, tenant, generation)
        with self._lock:
            self._pace.started(tenant)
            self._entries[tenant] = entry
            self._entries.move_to_end(tenant)
            total = sum(e.n for e in self._entries.values())
            while total > self.max_rows and len(self._entries) > 1:
                _, old = self._entries.popitem(last=False)
                total -= old.n
        return entry

    def apply_write(self, store_id: int, before: int, after: int, seqs: Iterable[int]) -> None:
        """This process's write of ``seqs`` (added, changed or removed), after its COMMIT;
        entries that missed another writer's write, or hold too many written seqs, go."""
        written = set(seqs)
        with self._lock:
            for key in [k for k in self._entries if k[0] == store_id]:
                entry = self._entries[key]
                entry.touched |= written
                if entry.generation != before or len(entry.touched) > MAX_TOUCHED:
                    del self._entries[key]
                else:
                    entry.generation = after

    def drop_store(self, store_id: int) -> None:
        with self._lock:
            for key in [k for k in self._entries if k[0] == store_id]:
                del self._entries[key]


def _load(conn: sqlite3.Connection, tenant: Tenant, generation: int) -> _Entry:
    """A tenant's lengths in one scan of its covering index (in seq order)."""
    seqs: array[int] = array("q")
    words: array[int] = array("i")
    for seq, w in conn.execute(_TENANT_ROWS + " ORDER BY seq", tenant):
        seqs.append(seq)
        words.append(-1 if w is None else w)
    return _Entry(generation, seqs, words)
