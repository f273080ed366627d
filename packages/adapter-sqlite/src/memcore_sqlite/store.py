"""``SqliteMemoryStore``: the ``MemoryStore`` port on one SQLite file.

The operations live in modules named after what they do: :mod:`~memcore_sqlite.operations.transactions`
(connection, transactions, audit), :mod:`~memcore_sqlite.operations.catalog` (stores),
:mod:`~memcore_sqlite.operations.writes` (adds, updates, deletes), :mod:`~memcore_sqlite.search.pipeline` (the
search path) and :mod:`~memcore_sqlite.operations.reads` (messages, requests, scopes, tasks). This
module holds the memory reads, search entry points, dream stubs and maintenance.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import Any

from memcore import limits
from memcore.errors import InvalidInput, Unsupported
from memcore.paging import decode_token, page
from memcore.scope import Scope, ScopePattern
from memcore.values import Memory, Page, SearchHit
from memcore_sqlite.dream.tasks import DreamTasks
from memcore_sqlite.operations.catalog import StoreCatalog
from memcore_sqlite.operations.facts import FactWrites
from memcore_sqlite.operations.reads import RecordReads
from memcore_sqlite.operations.writes import TextItem
from memcore_sqlite.search import pipeline as search
from memcore_sqlite.search import supersession, when
from memcore_sqlite.search.pipeline import check_search
from memcore_sqlite.storage.errors import mapped
from memcore_sqlite.storage.rows import (
    MEMORY_COLUMNS,
    check_pattern,
    check_scope,
    memory_from_row,
    pattern_sql,
)
from memcore_sqlite.vector.coverage import coverage

__all__ = ["SqliteMemoryStore", "TextItem"]


class SqliteMemoryStore(StoreCatalog, FactWrites, DreamTasks, RecordReads):
    """The embedded memory store. Thread-safe; several processes may share one file.

    ``embedder`` turns on hybrid search (FTS5 BM25 fused with exact cosine); without one,
    search is lexical-only. ``synchronous`` is SQLite's setting: ``NORMAL`` survives a killed
    process, ``FULL`` also survives power loss at some cost per write.
    """

    # -- reads --------------------------------------------------------------------------
    def get_memory(self, store: str, scope: Scope, memory_id: str) -> Memory:
        started = time.perf_counter()
        check_scope(scope)
        with (
            self._audit_failure(store, "GetMemory", started, scope, memory_id),
            self._read() as conn,
        ):
            sid = self._store_id(conn, store)
            row = self._own_row(conn, sid, scope, memory_id)
            [memory] = supersession.annotate(conn, [memory_from_row(row)])
        self._audit_read(store, "GetMemory", started, scope=scope, target=memory_id)
        return memory

    def list_memories(
        self,
        store: str,
        pattern: ScopePattern,
        *,
        limit: int = 50,
        next_token: str | None = None,
        current_only: bool = False,
    ) -> Page[Memory]:
        """Memories in insertion order; ``extras`` tell what each supersedes or was superseded
        by, and ``current_only`` leaves the superseded ones out."""
        started = time.perf_counter()
        check_pattern(pattern)
        limits.check_limit(limit)
        after = decode_token(next_token)
        where, params = pattern_sql(pattern)
        with self._read() as conn:
            sid = self._store_id(conn, store)
            current = " AND superseded_by IS NULL" if current_only else ""
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE store_id = ?{where}{current}"
                " AND seq > ? ORDER BY seq LIMIT ?",
                (sid, *params, after, limit + 1),
            ).fetchall()
            listed = supersession.annotate(conn, [memory_from_row(r) for r in rows])
        self._audit_read(store, "ListMemories", started)
        return page([(int(r[0]), m) for r, m in zip(rows, listed)], limit)

    def search(
        self,
        store: str,
        pattern: ScopePattern,
        query: str,
        *,
        top_k: int = 10,
        enable_rerank: bool = True,
        filters: Mapping[str, str] | None = None,
        min_similarity: float | None = None,
        mode: str | None = None,
        context_scope: Scope | None = None,
        include_evidence: bool = False,
        reference_time: datetime | None = None,
    ) -> list[SearchHit]:
        """Lexical (FTS5) and, with an embedder, exact cosine, fused into one relevance.

        Scores are relevances in [0, 1], comparable across queries (``min_similarity`` filters
        on them). Lexical: the IDF-weighted share of the query's terms the memory holds.
        Vector: the cosine (negative clipped to 0). Hybrid: their convex combination
        (:func:`memcore_sqlite.search.ranking.fuse`); ``SearchHit.signals`` holds both. The first k
        hits are the same whatever ``top_k``. ``mode`` (``lexical``, ``vector``, ``hybrid``)
        overrides :attr:`search_mode` for one call. ``enable_rerank``, ``context_scope``
        (checked) and ``include_evidence`` have no local meaning. A memory a dream pass
        superseded comes right after the memory that superseded it. Among hits of equal
        relevance, those said in the span the query's time words name ("last month"),
        counted from ``reference_time`` (default now), come first
        (:mod:`memcore_sqlite.search.when`).
        """
        started = time.perf_counter()
        flt, floor = check_search(pattern, query, top_k, filters, min_similarity)
        limits.check_context_scope(context_scope, pattern)
        asked = limits.check_reference_time(reference_time)
        mode = self.search_mode if mode is None else mode
        if mode not in ("lexical", "vector", "hybrid"):
            raise InvalidInput("mode must be lexical, vector or hybrid", field="mode")
        if mode != "lexical" and self.embedder is None:
            raise Unsupported(f"{mode} search needs an embedder; this store is lexical-only")
        qvec = self._embed([query]) if mode != "lexical" else None
        return self._search(
            store,
            pattern,
            query,
            top_k,
            flt,
            floor,
            qvec[0] if qvec else None,
            started,
            use_lexical=mode != "vector",
            reference=asked,
        )

    def search_vector(
        self,
        store: str,
        pattern: ScopePattern,
        query: str,
        vector: Sequence[float],
        *,
        top_k: int = 10,
        filters: Mapping[str, str] | None = None,
        min_similarity: float | None = None,
        mode: str = "hybrid",
    ) -> list[SearchHit]:
        """:meth:`search` with a query vector computed by the caller (cached or batched);
        ``mode`` is ``hybrid`` or ``vector``."""
        started = time.perf_counter()
        flt, floor = check_search(pattern, query, top_k, filters, min_similarity)
        if self._vectors is None:
            raise Unsupported("this store has no embedder, so it cannot search by vector")
        if mode not in ("vector", "hybrid"):
            raise InvalidInput("mode must be vector or hybrid", field="mode")
        qvec = self._vectors.to_array([vector])[0]
        return self._search(
            store, pattern, query, top_k, flt, floor, qvec, started, use_lexical=mode == "hybrid"
        )

    def _search(
        self,
        store: str,
        pattern: ScopePattern,
        query: str,
        top_k: int,
        flt: dict[str, str],
        floor: float | None,
        qvec: Any,
        started: float,
        *,
        use_lexical: bool = True,
        reference: datetime | None = None,
    ) -> list[SearchHit]:
        """Rank, fetch and filter the hits; a search that succeeds is audited after its read.

        A semantic search first embeds the memories deferred writes left without a vector
        (:meth:`_index_pending`); whether there are any is asked in the search's own snapshot,
        and only when there are does the search index them and start over in a new one.
        """
        model = self.embedder.name if self.embedder is not None else None
        if qvec is not None:  # the vector signal weighs what the model covers of the query
            qvec = qvec * coverage(self.embedder, query)
        for check in (qvec is not None and not self.read_only, False):
            with self._read() as conn:
                sid, generation, pending = self._store_key(conn, store, pending=check)
                if not pending:
                    order = search.ranked(
                        conn,
                        sid,
                        pattern,
                        query,
                        flt,
                        qvec,
                        self._vectors,
                        model,
                        use_lexical=use_lexical,
                        generation=generation,
                        beside=self._overlap,
                        lengths=self._lengths,
                        postings=self._postings,
                    )
                    order = when.dated(conn, order, query, reference or datetime.now(timezone.utc))
                    found, links = search.hits(conn, sid, pattern, order, flt, floor, top_k)
                    found = supersession.prefer_current(
                        conn, sid, pattern, found, flt, top_k, links
                    )
                    break
            self._index_pending(store)  # then search again, in a snapshot that has them
        self._audit_read(store, "SearchMemories", started)
        return found

    # -- maintenance --------------------------------------------------------------------
    def missing_vectors(self, store: str) -> int:
        """How many memories have no vector from the current embedder (all, without one)."""
        model = self.embedder.name if self.embedder is not None else ""
        with self._read() as conn:
            sid = self._store_id(conn, store)
            row = conn.execute(
                "SELECT COUNT(*) FROM memories m LEFT JOIN memory_vectors v"
                " ON v.seq = m.seq AND v.model = ? WHERE m.store_id = ? AND v.seq IS NULL",
                (model, sid),
            ).fetchone()
        return int(row[0])

    def backfill_vectors(
        self, store: str, *, batch: int = 64, progress: Callable[[int], None] | None = None
    ) -> int:
        """Embed memories that have no vector from the current embedder; returns how many.

        ``progress`` gets the running count after each batch (for a progress bar).
        """
        if self.embedder is None:
            raise Unsupported("this store has no embedder to compute vectors with")
        done = 0
        while True:
            with self._read() as conn:
                sid = self._store_id(conn, store)
                rows = conn.execute(
                    "SELECT m.seq, m.text FROM memories m LEFT JOIN memory_vectors v"
                    " ON v.seq = m.seq AND v.model = ? WHERE m.store_id = ? AND v.seq IS NULL"
                    " ORDER BY m.seq LIMIT ?",
                    (self.embedder.name, sid, batch),
                ).fetchall()
            if not rows:
                return done
            vectors = self._embed([r[1] for r in rows]) or []
            with self._write() as conn:
                gen = self._bump(conn, sid)
                self._store_vectors(
                    conn, sid, gen, [(seq, v) for (seq, _), v in zip(rows, vectors)], replace=True
                )
            done += len(rows)
            if progress is not None:
                progress(done)

    def compact(self) -> None:
        """Merge the FTS index, checkpoint the WAL and VACUUM: leaves no deleted text behind."""
        with self._lock, mapped(self.path):
            self._check_open()
            self._conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the store's background upkeep (a tenant's postings being built for the
        lexical stage) to finish; False if it is still running at ``timeout`` seconds.
        Searches never need this: they use the full-text index meanwhile. Benchmarks do, to
        time the steady state."""
        return self._postings.wait_idle(timeout)

    def __enter__(self) -> SqliteMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
