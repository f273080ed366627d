"""Tenants' postings held in memory for the lexical stage, built in the background.

A cache that is exact by construction: an entry (:mod:`memcore_sqlite.lexical.postings.table`) is read from
the FTS5 index in one snapshot together with the store's generation, and a search uses it only
when its own snapshot is at that generation. This process's writes move it on to the next
generation when they touched no row of its tenant (nor of a tenant with the same scope tag:
a digest; prefixes are a tenant's own, :mod:`memcore_sqlite.storage.tenant_prefixes`), or only added
rows to it, which are appended with the tokens FTS5 indexed for
them (:meth:`PostingsCache.appended_rows`); any other change drops it. Another process's
write shows up as a new generation, and the entry goes unused until it is built again. A query takes the postings only when every
term is one token of the tenant's column (:mod:`memcore_sqlite.lexical.query_tokens`); anything else
(a filter, a scope below the tenant, a one-character CJK prefix query, a term of several
tokens) takes the FTS5 statements, which give the same results.

When: a tenant of at least :data:`MIN_ROWS` rows (smaller ones are fast on FTS5 already) is
built when a search finds it at the generation its previous search saw, as lengths are
(:mod:`memcore_sqlite.lexical.lengths`), never in a process's first search, or when the tenant
is warmed (:meth:`PostingsCache.warm_scope`); a tenant whose entries go soon after their
builds (written between every few searches) waits longer each time
(:mod:`memcore_sqlite.lexical.build_pace`). The build runs in a
daemon thread with its own read-only connection, one at a time per store; searches meanwhile
take the FTS5 path. A build that fails is logged (its error's type, nothing else) and leaves
the FTS5 path in use; a write made by this process during a build discards it.
"""

from __future__ import annotations

import functools
import logging
import sqlite3
import threading
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from memcore_sqlite.lexical import analysis, build_pace, tags
from memcore_sqlite.lexical.analysis import LexicalQuery
from memcore_sqlite.lexical.build_pace import BuildPace
from memcore_sqlite.lexical.query_tokens import QueryTokens, row_tokens
from memcore_sqlite.lexical.tenant import Tenant
from memcore_sqlite.storage import fork_guard
from memcore_sqlite.storage.rows import rows_in

if TYPE_CHECKING:
    from memcore_sqlite.lexical.postings.matches import TermRows
    from memcore_sqlite.lexical.postings.table import Postings

#: Tenants smaller than this stay on FTS5, where they are as fast. Lexical search p50, one
#: process taking turns (FTS5 / postings, ms): 1k rows 0.50 / 0.49 (CPU 3% more on
#: postings), 3k 0.59 / 0.52, 5k 0.84 / 0.66, 10k 1.04 / 0.76.
MIN_ROWS = 2_000

_log = logging.getLogger(__name__)

#: Rows a write appended to held tenants: (app, tenant) -> [(seq, tokens)], seqs ascending.
Appended = dict[tuple[str, str], list[tuple[int, list[str]]]]


def _return_freed_memory() -> None:
    """Give freed memory back to the system, before a build and after it. glibc keeps what a
    thread frees in that thread's arena: a 100k build's temporaries (the statements'
    concatenations, their parsing) stayed in the process's RSS, about 15 MB beside the 16 MB
    it holds, and its peak came on top of what the process had freed before (loading the
    vector codes). A no-op where the C library has no ``malloc_trim``."""
    trim = _malloc_trim()
    if trim is not None:
        trim(0)


@functools.cache
def _malloc_trim() -> Callable[[int], int] | None:
    """The process's own symbols (the C library among them): ``ctypes.util.find_library``
    would run ``ldconfig`` and import subprocess, tempfile and shutil on the search path."""
    import ctypes

    try:
        return getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None


class PostingsCache:
    """LRU of per-tenant postings, bounded by the rows of their tenants in total.

    ``connect`` opens a read-only connection to the file for a build (None: never build,
    as for an in-memory database no second connection can see). ``count_limit`` is the cap
    the lexical stage counts the scope's rows to.
    """

    def __init__(
        self,
        connect: Callable[[], sqlite3.Connection] | None,
        count_limit: int,
        max_rows: int = 1_000_000,
    ) -> None:
        self.max_rows = max_rows
        self._connect = connect
        self._count_limit = count_limit
        self._entries: OrderedDict[Tenant, Postings] = OrderedDict()
        #: How many searches at one generation a tenant waits before a build.
        self._pace = BuildPace()
        #: The generation at which each tenant's last build failed: not tried again there.
        self._failed: dict[Tenant, int] = {}
        #: This process's writes and store deletions, so a build knows whether one came
        #: while it ran (any store's: a tenant tag may collide across stores).
        self._writes = 0
        self._tokens = QueryTokens()
        self._lock = threading.Lock()
        self._idle = threading.Condition(self._lock)
        self._thread: threading.Thread | None = None
        self._building: sqlite3.Connection | None = None
        self._closed = False

    def term_rows(
        self,
        conn: sqlite3.Connection,
        tenant: Tenant,
        generation: int,
        query: LexicalQuery,
        rows: int | None,
    ) -> TermRows | None:
        """The query's terms' rows from the tenant's postings, or None for the FTS5 path.

        ``rows``: the tenant's size if known (a build is started only for a large tenant).
        Inside the search's snapshot, which is at ``generation``."""
        entry = self._current(tenant, generation, rows)
        if (
            entry is None
            or query.tags is not None
            or query.prefix != entry.prefix
            or query.scope_only() != entry.scope
            or any(analysis.is_prefix_term(t) for t in query.terms)
        ):
            return None
        found = []
        for token in self._tokens.tokens(conn, [entry.prefix + t for t in query.terms]):
            held = None if token is None else entry.token_rows(token)
            if held is None:
                return None
            found.append(held)
        from memcore_sqlite.lexical.postings.matches import TermRows

        return TermRows(entry.in_scope, tuple(found))

    def warm_scope(self, tenant: Tenant, generation: int, rows: int | None) -> None:
        """Count a warm-up as the searches a tenant waits for at first (``FIRST_WAIT`` of
        :mod:`memcore_sqlite.lexical.build_pace`) at ``generation`` (``rows``: its size if
        known), so a large tenant's build starts now, in the background. A serving process
        warms the scope it is about to search; counted as one search, the build began at
        that session's first search and ran beside its first few (about 0.9 s of CPU at
        100k rows on two cores), which took the FTS5 path meanwhile
        (``benchmarks/search_tail.py --warm``). A tenant whose wait grew (written between
        its searches) still waits."""
        for _ in range(build_pace.FIRST_WAIT):
            if self._current(tenant, generation, rows) is not None or self._thread is not None:
                return

    def _current(self, tenant: Tenant, generation: int, rows: int | None) -> Postings | None:
        with self._lock:
            entry = self._entries.get(tenant)
            if entry is not None:
                if entry.generation == generation:
                    self._entries.move_to_end(tenant)
                    self._pace.served(tenant)
                    return entry
                # Generations only grow: an entry behind its store's is never used again.
                del self._entries[tenant]
                self._pace.gone(tenant)
            if self._connect is None or self._closed:
                return None
            if not self._pace.due(tenant, generation):
                return None
            if rows is None or rows < MIN_ROWS or self._thread is not None:
                return None
            if self._failed.get(tenant) == generation:
                return None
            self._pace.started(tenant)
            thread = threading.Thread(
                target=self._build,
                args=(tenant, generation, self._writes),
                name="memcore-postings",
                daemon=True,
            )
            self._thread = thread
        thread.start()
        return None

    def _build(self, tenant: Tenant, generation: int, writes: int) -> None:
        with fork_guard.working():  # its connection's calls, from open to close
            self._build_on_own_connection(tenant, generation, writes)

    def _build_on_own_connection(self, tenant: Tenant, generation: int, writes: int) -> None:
        from memcore_sqlite.lexical.postings import table as postings

        entry = None
        conn = None
        try:
            assert self._connect is not None
            _return_freed_memory()  # the peak is then what is live, plus the build's
            conn = self._connect()
            with self._lock:
                self._building = conn
                if self._closed:
                    raise InterruptedError
            entry = postings.build(conn, *tenant, self._count_limit, lambda: self._closed)
        except Exception as exc:  # any failure leaves the FTS5 path, which always works
            with self._lock:
                self._failed[tenant] = generation
                while len(self._failed) > 1_024:
                    del self._failed[next(iter(self._failed))]
            if not self._closed:
                _log.warning(
                    "a tenant's postings were not built (%s); its searches use the full-text index",
                    type(exc).__name__,
                )
        finally:
            with self._lock:
                self._building = None
            if conn is not None:
                conn.close()
            _return_freed_memory()
            with self._lock:
                if entry is not None and not self._closed and self._writes == writes:
                    self._entries[tenant] = entry
                    self._entries.move_to_end(tenant)
                    self._pace.built(tenant)
                    total = sum(e.rows for e in self._entries.values())
                    while total > self.max_rows and len(self._entries) > 1:
                        old_tenant, old = self._entries.popitem(last=False)
                        self._pace.gone(old_tenant, evicted=True)
                        total -= old.rows
                    if total > self.max_rows:
                        self._entries.clear()
                        self._pace.gone(tenant, evicted=True)
                self._thread = None
                self._idle.notify_all()

    def wait_idle(self, timeout: float | None = None) -> bool:
        """Wait for a build under way to finish; False if it is still running at ``timeout``."""
        with self._idle:
            return self._idle.wait_for(lambda: self._thread is None, timeout)

    def appended_rows(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        added: Iterable[tuple[tuple[str, str], int]],
        changed: Iterable[tuple[str, str]],
    ) -> Appended:
        """Inside a write's transaction: the rows it added to held tenants that it changed
        nothing else in, each with the tokens FTS5 indexed for it, for :meth:`apply_write`.
        ``added``: the (app, tenant) and seq of each row the write reports as added;
        ``changed``: the tenants whose rows it also removed or rewrote."""
        with self._lock:
            held = {(k[1], k[2]) for k in self._entries if k[0] == store_id}
        if not held:
            return {}
        wanted = held - set(changed)
        tenant_of = {seq: tenant for tenant, seq in added if tenant in wanted}
        if not tenant_of:
            return {}
        from memcore_sqlite.lexical.postings.table import MAX_APPENDED  # numpy: an entry is held

        if len(tenant_of) > MAX_APPENDED:  # more than an entry takes in: it goes, as before
            return {}
        try:
            texts = [
                (int(seq), str(text))
                for seq, text in rows_in(
                    conn, "SELECT rowid, tbody FROM memory_fts WHERE rowid IN ({})", [*tenant_of]
                )
            ]
            tokens = row_tokens(conn, texts)
        except sqlite3.Error:
            return {}  # the tenants' entries go, as for any other write
        out: Appended = {}
        for seq in sorted(tokens):
            out.setdefault(tenant_of[seq], []).append((seq, tokens[seq]))
        return out

    def apply_write(
        self,
        store_id: int,
        before: int,
        after: int,
        tenants: Iterable[tuple[str, str]],
        appended: Appended | None = None,
    ) -> None:
        """This process's write to the given (app, tenant)s, after its COMMIT. A held
        tenant whose only change is ``appended`` (:meth:`appended_rows`) takes the rows in
        and moves on to the new generation; any other written tenant's entry goes."""
        appended = appended or {}
        written = set(tenants)
        marks: dict[str, set[tuple[str, str]]] = {}
        for app_id, tenant_id in written:
            marks.setdefault(tags.tenant_tag(store_id, app_id, tenant_id), set()).add(
                (app_id, tenant_id)
            )
        with self._lock:
            self._writes += 1
            for key in list(self._entries):
                entry = self._entries[key]
                own = (key[1], key[2]) if key[0] == store_id else None
                # The entry's prefix is its tenant's alone; a tenant of any store whose tag
                # is the same (a digest collision) is in its scope count too.
                by = marks.get(entry.tag, set()) | (
                    {own} if own is not None and own in written else set()
                )
                rows = appended.get(own) if own is not None and by == {own} else None
                if rows is not None and entry.generation == before and entry.append(rows):
                    entry.generation = after
                elif by:
                    del self._entries[key]
                    self._pace.gone(key)
                elif key[0] == store_id:
                    if entry.generation != before:
                        del self._entries[key]
                        self._pace.gone(key)
                    else:
                        entry.generation = after

    def drop_store(self, store_id: int) -> None:
        """A store deleted: its rows may be in any entry's scope count (a tag collision), so
        all go."""
        with self._lock:
            self._writes += 1
            for key in self._entries:
                self._pace.gone(key, evicted=True)
            self._entries.clear()

    def close(self) -> None:
        """Stop a build under way (SQLite interrupts its statement) and wait for it."""
        with self._lock:
            self._closed = True
            thread = self._thread
            self._entries.clear()
            if self._building is not None:  # not closed before the build clears it here
                self._building.interrupt()
        if thread is not None:
            thread.join()
