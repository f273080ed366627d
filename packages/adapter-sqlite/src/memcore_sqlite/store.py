"""``SqliteMemoryStore``: the ``MemoryStore`` port on one SQLite file.

The store is assembled from collaborators, each named after what it does:
:class:`~memcore_sqlite.operations.transactions.Transactions` (the connection, its write
transactions, audit, tasks and the caches writes keep current), :mod:`~memcore_sqlite.operations.catalog`
(stores), :mod:`~memcore_sqlite.operations.writes` (adds, updates, deletes),
:mod:`~memcore_sqlite.operations.facts` (chat turns through a fact extractor),
:mod:`~memcore_sqlite.operations.reads` (messages, requests, scopes, tasks),
:mod:`~memcore_sqlite.operations.message_moves` (the message log to another tenant) and
:mod:`~memcore_sqlite.dream.tasks`. Strategies (the embedder, the fact extractor, the dream
reviewer, the embedding of a bulk write's next batch) are constructor arguments. This module
holds the memory reads, the search entry points and maintenance.

Each collaborator but the transactions is built on the first call of one of its operations
(:class:`_Operation`, on the class): opening a store and searching it imports none of
their modules, which a fresh install (no bytecode yet) would compile at every start.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
import weakref
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any, TypeVar

from memcore import limits, speakers
from memcore.errors import InvalidInput, NotFound, Unavailable, Unsupported
from memcore.paging import page
from memcore.scope import Scope, ScopePattern
from memcore.values import DreamAction, MemoryRecord, Page, SearchHit, TurnContext
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.search import pipeline as search
from memcore_sqlite.search import ranking, supersession, when
from memcore_sqlite.search.pipeline import check_search
from memcore_sqlite.storage import fork_guard
from memcore_sqlite.storage.errors import mapped
from memcore_sqlite.storage.file_modes import MOVE_ADVICE
from memcore_sqlite.storage.rows import (
    MEMORY_COLUMNS,
    check_pattern,
    check_scope,
    memory_from_row,
    memory_row,
    pattern_sql,
    rows_in,
)
from memcore_sqlite.storage.schema import STALE_HEAD
from memcore_sqlite.vector.coverage import coverage
from memcore_sqlite.vector.embed_ahead import EmbedAhead
from memcore_sqlite.vector.shortlist import Later

if TYPE_CHECKING:
    from memcore.ports import DreamReviewer, Embedder, FactExtractor
    from memcore.values import TextItem
    from memcore_sqlite.dream.tasks import DreamTasks
    from memcore_sqlite.operations.catalog import StoreCatalog
    from memcore_sqlite.operations.facts import FactWrites
    from memcore_sqlite.operations.message_log import MessageLogs
    from memcore_sqlite.operations.message_moves import MessageMoves
    from memcore_sqlite.operations.reads import RecordReads
    from memcore_sqlite.operations.rollbacks import ImportRollbacks
    from memcore_sqlite.operations.version_links import VersionLinks
    from memcore_sqlite.operations.writes import MemoryWrites

__all__ = ["SqliteMemoryStore", "TextItem"]

_log = logging.getLogger(__name__)

#: The store's operations, by the collaborator that answers them (built on first use).
_LATER: dict[str, tuple[str, ...]] = {
    "catalog": (
        "ensure_store",
        "create_store",
        "describe_store",
        "list_stores",
        "update_store",
        "delete_store",
    ),
    "reads": (
        "list_messages",
        "list_requests",
        "list_scopes",
        "get_task",
        "list_tasks",
    ),
    "writes": ("add_text", "add_many", "update_memory", "update_memory_removing", "delete_memory"),
    "facts": ("add_messages",),
    "messages": ("message_counts", "move_messages"),
    "log": ("list_logged_messages", "restore_messages"),
    "links": ("link_versions", "add_version_links", "drop_version_links"),
    "rollbacks": ("delete_unclaimed", "claim_memories"),
    "dream": (
        "create_dream_task",
        "create_session_dream_task",
        "get_dream_task",
        "list_dream_tasks",
        "cancel_dream_task",
        "list_dream_actions",
        "apply_dream_actions",
    ),
}
_PART_OF = {name: part for part, names in _LATER.items() for name in names}
_T = TypeVar("_T")


def __getattr__(name: str) -> Any:
    if name == "TextItem":  # a bulk write's record (the core's value, kept here by its old name)
        from memcore.values import TextItem

        return TextItem
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


#: A store's memories without a vector of the model (parameters: the model, the store id).
_MISSING = (
    "FROM memories m LEFT JOIN memory_vectors v ON v.seq = m.seq AND v.model = ?"
    " WHERE m.store_id = ? AND v.seq IS NULL"
)
#: A store's rows of ``stale_vectors`` still stale: the memory lives and its vector of the
#: model still starts with the bytes listed (parameters: their count, the model, the store id).
_STALE = (
    "FROM stale_vectors s JOIN memory_vectors v ON v.seq = s.seq AND substr(v.vector, 1, ?)"
    " = s.head AND v.model = ? JOIN memories m ON m.seq = s.seq WHERE m.store_id = ?"
)


def _close_dropped(tx: Transactions) -> None:
    """Close a collected store's file on a thread of its own: the collector may run this on
    a thread of the store's (which ``close`` joins), or inside one of its transactions (whose
    lock ``close`` would enter again and close the connection under it)."""

    def close() -> None:
        try:
            tx.close()
        except Exception:  # the folder may be gone already; nothing is left to release
            _log.debug("closing a dropped store of %s failed", tx.path, exc_info=True)

    threading.Thread(target=close, name="memcore-sqlite-close", daemon=True).start()


class _Operation:
    """A port operation on the store's class, answered by the collaborator that owns it, built
    on the first call of one of its operations; the bound operation then sits on the instance
    (a non-data descriptor gives way to it). On the class, not behind ``__getattr__``, so that
    ``isinstance`` against the runtime-checkable ports, which from Python 3.12 looks only at
    static attributes, still finds every operation, and so do ``dir`` and ``help``."""

    def __init__(self, name: str, part: str) -> None:
        self.name = name
        self.part = part

    def __get__(self, store: SqliteMemoryStore | None, owner: type | None = None) -> Any:
        if store is None:
            return self
        operation = getattr(store._part(self.part), self.name)
        store.__dict__[self.name] = operation
        return operation


class SqliteMemoryStore:
    """The embedded memory store. Thread-safe; several processes may share one file, each
    with a store of its own: in a process forked after it opened, every call raises
    :class:`~memcore.errors.StoreClosed` (SQLite's connection cannot cross a fork).

    ``embedder`` turns on hybrid search (FTS5 BM25 fused with exact cosine); without one,
    search is lexical-only. ``synchronous`` is SQLite's setting: ``NORMAL`` survives a killed
    process, ``FULL`` also survives power loss at some cost per write. ``extractor`` turns a
    chat turn into the facts stored as memories (without one, each message is a memory);
    ``dream_reviewer`` checks a dream task's plan; ``embedding_ahead`` embeds a bulk write's
    next batch while the current one is written (by default on a thread of its own).
    ``location_advice`` ends the error of a folder the file cannot be created in: how to put
    it elsewhere (``MEMCORE_HOME`` unless the host placed it by another setting).
    """

    #: Consolidation runs here, not in a service (hosts use it to decide on a local pass).
    LOCAL_DREAM = True
    #: Time words in a query count from ``reference_time`` (:mod:`memcore_sqlite.search.when`).
    supports_reference_time = True

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        embedder: Embedder | None = None,
        busy_timeout: float = 30.0,
        synchronous: str = "NORMAL",
        vector_cache_rows: int = 1_000_000,
        defer_vectors: bool = False,
        extractor: FactExtractor | None = None,
        dream_reviewer: DreamReviewer | None = None,
        embedding_ahead: EmbedAhead | None = None,
        location_advice: str = MOVE_ADVICE,
    ) -> None:
        tx = Transactions(
            path,
            embedder=embedder,
            busy_timeout=busy_timeout,
            synchronous=synchronous,
            vector_cache_rows=vector_cache_rows,
            defer_vectors=defer_vectors,
            embedding_ahead=embedding_ahead,
            location_advice=location_advice,
        )
        self._tx = tx
        self.path = tx.path
        self.embedder = embedder
        self.defer_vectors = tx.defer_vectors
        self.read_only = tx.read_only
        self.check_integrity = tx.check_integrity
        self.close = tx.close
        # Dropped without close (a Memory opened per request and never closed), the store is
        # closed when collected: its thread for reads' records holds the connection, so the
        # file's descriptors, that thread and the caches (23 MB with the default embedder)
        # otherwise stayed for the life of the process, once per store dropped.
        weakref.finalize(self, _close_dropped, tx).atexit = False
        self._extractor = extractor
        self._dream_reviewer = dream_reviewer
        self._parts: dict[str, Any] = {}
        self._parts_lock = threading.RLock()
        if TYPE_CHECKING:  # bound on first use by _Operation (_LATER); their types, here
            catalog, reads, writes = self._catalog(), self._reads(), self._writes
            facts, dream, messages = self._facts(), self._dream(), self._messages()
            self.ensure_store = catalog.ensure_store
            self.create_store = catalog.create_store
            self.describe_store = catalog.describe_store
            self.list_stores = catalog.list_stores
            self.update_store = catalog.update_store
            self.delete_store = catalog.delete_store
            self.list_messages = reads.list_messages
            self.list_requests = reads.list_requests
            self.list_scopes = reads.list_scopes
            self.get_task = reads.get_task
            self.list_tasks = reads.list_tasks
            self.add_text = writes.add_text
            self.add_many = writes.add_many
            self.add_messages = facts.add_messages
            self.message_counts = messages.message_counts
            self.move_messages = messages.move_messages
            log = self._log()
            self.list_logged_messages = log.list_logged_messages
            self.restore_messages = log.restore_messages
            self.link_versions = self._links().link_versions
            self.add_version_links = self._links().add_version_links
            self.drop_version_links = self._links().drop_version_links
            self.delete_unclaimed = self._rollbacks().delete_unclaimed
            self.claim_memories = self._rollbacks().claim_memories
            self.update_memory = writes.update_memory
            self.update_memory_removing = writes.update_memory_removing
            self.delete_memory = writes.delete_memory
            self.create_dream_task = dream.create_dream_task
            self.create_session_dream_task = dream.create_session_dream_task
            self.get_dream_task = dream.get_dream_task
            self.list_dream_tasks = dream.list_dream_tasks
            self.cancel_dream_task = dream.cancel_dream_task
            self.list_dream_actions = dream.list_dream_actions
            self.apply_dream_actions = dream.apply_dream_actions

    def _part(self, part: str) -> Any:
        """The collaborator that answers the operations of ``part`` (:data:`_LATER`)."""
        builders: dict[str, Callable[[], Any]] = {
            "catalog": self._catalog,
            "reads": self._reads,
            "writes": lambda: self._writes,
            "facts": self._facts,
            "messages": self._messages,
            "log": self._log,
            "links": self._links,
            "rollbacks": self._rollbacks,
            "dream": self._dream,
        }
        return builders[part]()

    def _once(self, part: str, build: Callable[[], _T]) -> _T:
        """The collaborator ``part``, built once (under a lock: two threads that ask at once
        get the same one)."""
        self._tx.check_process()  # before the lock: a forked child is refused, never hangs
        with self._parts_lock:
            if part not in self._parts:
                self._parts[part] = build()
            return self._parts[part]  # type: ignore[no-any-return]

    def _catalog(self) -> StoreCatalog:
        def build() -> StoreCatalog:
            from memcore_sqlite.operations.catalog import StoreCatalog

            return StoreCatalog(self._tx)

        return self._once("catalog", build)

    def _reads(self) -> RecordReads:
        def build() -> RecordReads:
            from memcore_sqlite.operations.reads import RecordReads

            return RecordReads(self._tx)

        return self._once("reads", build)

    @property
    def _writes(self) -> MemoryWrites:
        def build() -> MemoryWrites:
            from memcore_sqlite.operations.writes import MemoryWrites

            return MemoryWrites(self._tx)

        return self._once("writes", build)

    def _facts(self) -> FactWrites:
        def build() -> FactWrites:
            from memcore_sqlite.operations.facts import FactWrites

            return FactWrites(self._tx, self._writes, self._extractor)

        return self._once("facts", build)

    def _messages(self) -> MessageMoves:
        def build() -> MessageMoves:
            from memcore_sqlite.operations.message_moves import MessageMoves

            return MessageMoves(self._tx)

        return self._once("messages", build)

    def _log(self) -> MessageLogs:
        def build() -> MessageLogs:
            from memcore_sqlite.operations.message_log import MessageLogs

            return MessageLogs(self._tx)

        return self._once("log", build)

    def _links(self) -> VersionLinks:
        def build() -> VersionLinks:
            from memcore_sqlite.operations.version_links import VersionLinks

            return VersionLinks(self._tx)

        return self._once("links", build)

    def _rollbacks(self) -> ImportRollbacks:
        def build() -> ImportRollbacks:
            from memcore_sqlite.operations.rollbacks import ImportRollbacks

            return ImportRollbacks(self._tx)

        return self._once("rollbacks", build)

    def _dream(self) -> DreamTasks:
        def build() -> DreamTasks:
            from memcore_sqlite.dream.tasks import DreamTasks

            return DreamTasks(self._tx, self._writes, self._dream_reviewer)

        return self._once("dream", build)

    # The two optional ports' operations (NeighbourTurns, DreamUndo), with their signatures
    # on the class: hosts check for them with isinstance.
    def neighbour_turns(
        self, store: str, scope: Scope, memory_id: str, *, turns: int
    ) -> TurnContext:
        return self._reads().neighbour_turns(store, scope, memory_id, turns=turns)

    def undo_dream_action(self, store: str, task_id: str, action_id: str) -> DreamAction:
        return self._dream().undo_dream_action(store, task_id, action_id)

    @property
    def search_mode(self) -> str:
        """``hybrid`` with an embedder, else ``lexical``; ``doctor`` reports it."""
        return self._tx.search_mode

    def __repr__(self) -> str:
        return f"SqliteMemoryStore({self.path!r}, search_mode={self.search_mode!r})"

    # -- reads --------------------------------------------------------------------------
    def get_memory(self, store: str, scope: Scope, memory_id: str) -> MemoryRecord:
        started = time.perf_counter()
        check_scope(scope)
        with (
            self._tx.audit_failure(store, "GetMemory", started, scope, memory_id),
            self._tx.read() as conn,
        ):
            sid = self._tx.store_id(conn, store)
            row = self._writes.own_row(conn, sid, scope, memory_id)
            [memory] = supersession.annotate(conn, sid, [memory_from_row(row)])
        self._tx.audit_read(store, "GetMemory", started, scope=scope, target=memory_id)
        return memory

    def find_memory(self, store: str, pattern: ScopePattern, memory_id: str) -> MemoryRecord:
        """The memory ``memory_id`` under ``pattern`` (:class:`~memcore.ports.MemoryLookup`):
        one read by the unique id, whatever the scope. Outside the pattern it is missing."""
        started = time.perf_counter()
        check_pattern(pattern)
        with (
            self._tx.audit_failure(store, "GetMemory", started, None, memory_id),
            self._tx.read() as conn,
        ):
            sid = self._tx.store_id(conn, store)
            row = self._writes.own_row(conn, sid, pattern, memory_id)
            [memory] = supersession.annotate(conn, sid, [memory_from_row(row)])
        self._tx.audit_read(store, "GetMemory", started, scope=memory.scope, target=memory_id)
        return memory

    def list_memories(
        self,
        store: str,
        pattern: ScopePattern,
        *,
        limit: int = 50,
        next_token: str | None = None,
        current_only: bool = False,
    ) -> Page[MemoryRecord]:
        """Memories in insertion order; ``extras`` tell what each supersedes or was superseded
        by, and ``current_only`` leaves the superseded ones out."""
        started = time.perf_counter()
        check_pattern(pattern)
        limits.check_limit(limit)
        cursor = self._tx.tokens.listing("memories", store, pattern, current_only)
        after = cursor.open(next_token)
        where, params = pattern_sql(pattern)
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            current = " AND superseded_by IS NULL" if current_only else ""
            rows = conn.execute(
                f"SELECT {MEMORY_COLUMNS} FROM memories WHERE store_id = ?{where}{current}"
                " AND seq > ? ORDER BY seq LIMIT ?",
                (sid, *params, after, limit + 1),
            ).fetchall()
            listed = supersession.annotate(conn, sid, [memory_from_row(r) for r in rows])
        self._tx.audit_read(store, "ListMemories", started)
        return page([(int(memory_row(r).seq), m) for r, m in zip(rows, listed)], limit, cursor.seal)

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
        self._tx.check_process()  # before the query vectors' lock
        flt, floor = check_search(pattern, query, top_k, filters, min_similarity)
        limits.check_context_scope(context_scope, pattern)
        asked = limits.check_reference_time(reference_time)
        mode = self.search_mode if mode is None else mode
        if mode not in ("lexical", "vector", "hybrid"):
            raise InvalidInput("mode must be lexical, vector or hybrid", field="mode")
        if mode != "lexical" and self.embedder is None:
            raise Unsupported(f"{mode} search needs an embedder; this store is lexical-only")
        qvec = self._tx.query_vectors.vector(query, self._tx.embed) if mode != "lexical" else None
        return self._search(
            store,
            pattern,
            # What is asked, not who asks ("[Tom] When did Priya ..."): the vector reads the
            # same (the embedder is given no label either, see ``Transactions.embed``).
            speakers.spoken(query),
            top_k,
            flt,
            floor,
            qvec,
            started,
            use_lexical=mode != "vector",
            reference=asked,
        )

    def warm(self, store: str, pattern: ScopePattern) -> None:
        """Build now what the first searches of ``pattern`` would build: the scope's vector
        codes (floats for a small one) and, for a scope searched in stages, its sketch; its
        tenant's rows' lengths and, for a large tenant, its postings (in the background); the
        English word list lexical scores weigh query words by; and the thread that writes the
        records of reads. A host calls it in the background after
        opening the store, so the first search of a session does not pay for them. No search
        is run or audited; a store that does not exist yet has nothing to warm. The sketch is
        waited for after the store's lock is let go: a search meanwhile does not wait for
        the build (seconds at 100k rows), it estimates every row as a first search does."""
        check_pattern(pattern)
        self._tx.check_process()
        with self._tx.lock:  # the thread that writes reads' records, started by the first one
            self._tx.read_audits.start()
        with self._tx.read() as conn:
            try:
                sid, generation, _ = self._tx.store_key(conn, store)
            except NotFound:
                return
            sketch = search.warm_scope(
                conn,
                sid,
                pattern,
                self._tx.vectors,
                self.embedder.name if self.embedder is not None else None,
                generation=generation,
                lengths=self._tx.lengths,
                postings=self._tx.postings,
            )
        ranking.warm_prior()  # outside the lock: no search waits for the word list
        if sketch is not None:  # built in the background, waited for outside the lock
            sketch()

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
        if self._tx.vectors is None:
            raise Unsupported("this store has no embedder, so it cannot search by vector")
        if mode not in ("vector", "hybrid"):
            raise InvalidInput("mode must be vector or hybrid", field="mode")
        qvec = self._tx.vectors.to_array([vector])[0]
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

        A semantic search first embeds the memories deferred writes of its tenant left
        without a vector (:mod:`~memcore_sqlite.operations.pending`); whether there are any
        is asked in the search's own snapshot, and only when there are does the search index
        them and start over in a new one (or, when another process holds the write lock,
        without them).
        """
        model = self.embedder.name if self.embedder is not None else None
        if qvec is not None:  # the vector signal weighs what the model covers of the query
            qvec = qvec * coverage(self.embedder, query)
        # What the search asks to start once it has returned (a large scope's sketch build),
        # so that it does not take the second core from this search.
        later: Later = []
        try:
            for check in (qvec is not None and not self.read_only, False):
                with self._tx.read() as conn:
                    sid, generation, pending = self._tx.store_key(
                        conn, store, pending=pattern if check else None
                    )
                    if not pending:
                        order = search.ranked(
                            conn,
                            sid,
                            pattern,
                            query,
                            flt,
                            qvec,
                            self._tx.vectors,
                            model,
                            use_lexical=use_lexical,
                            generation=generation,
                            beside=self._tx.overlap,
                            lengths=self._tx.lengths,
                            postings=self._tx.postings,
                            later=later,
                        )
                        now = reference or datetime.now(timezone.utc)
                        order = when.dated(conn, order, query, now)
                        found, links = search.hits(conn, sid, pattern, order, flt, floor, top_k)
                        found = supersession.prefer_current(
                            conn, sid, pattern, found, flt, top_k, links
                        )
                        break
                # Then search again, in a snapshot that has them; when another process holds
                # the write lock (or the disk is full), at once without them (their words
                # still find them): a read never waits for the write lock, nor fails on it.
                with contextlib.suppress(Unavailable):
                    self._writes.index_pending(store, pattern, wait=0.0)
            self._tx.audit_read(store, "SearchMemories", started)
            return found
        finally:
            for start in later:
                start()

    # -- maintenance --------------------------------------------------------------------
    def missing_vectors(self, store: str, pattern: ScopePattern | None = None) -> int:
        """How many memories have no vector from the current embedder (all, without one), or
        one an older release computed from their speaker's label too (schema 11); those of
        ``pattern`` only when it is given (a tenant's ``doctor`` counts its own)."""
        model = self.embedder.name if self.embedder is not None else ""
        where, fixed = ("", []) if pattern is None else pattern_sql(pattern, "m.")
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            row = conn.execute(
                f"SELECT (SELECT COUNT(*) {_MISSING}{where}), (SELECT COUNT(*) {_STALE}{where})",
                (model, sid, *fixed, STALE_HEAD, model, sid, *fixed),
            ).fetchone()
        return int(row[0]) + int(row[1])

    def backfill_vectors(
        self, store: str, *, batch: int = 64, progress: Callable[[int], None] | None = None
    ) -> int:
        """Embed memories that have no vector from the current embedder, then those whose
        vector an older release computed from their speaker's label too; returns how many.

        ``progress`` gets the running count after each batch (for a progress bar). A stale
        vector serves searches until its replacement lands in the same transaction that takes
        it off ``stale_vectors``, so each is re-embedded once.
        """
        if self.embedder is None:
            raise Unsupported("this store has no embedder to compute vectors with")
        model = self.embedder.name
        done = 0
        while True:
            with self._tx.read() as conn:
                sid = self._tx.store_id(conn, store)
                missing = conn.execute(
                    f"SELECT m.seq, m.text {_MISSING} ORDER BY m.seq LIMIT ?", (model, sid, batch)
                ).fetchall()
                rows = (
                    missing
                    or conn.execute(
                        f"SELECT m.seq, m.text {_STALE} ORDER BY s.seq LIMIT ?",
                        (STALE_HEAD, model, sid, batch),
                    ).fetchall()
                )
            if not rows:
                self._forget_replaced_stale()
                return done
            vectors = self._tx.embed([r[1] for r in rows]) or []
            with self._tx.write() as conn:
                gen = self._tx.bump(conn, sid)
                # A memory rewritten meanwhile has its new text's vector: keep that one.
                sql = "SELECT seq, text FROM memories WHERE seq IN ({})"
                now = dict(rows_in(conn, sql, [seq for seq, _ in rows]))
                fresh = [(seq, v) for (seq, text), v in zip(rows, vectors) if now.get(seq) == text]
                self._tx.store_vectors(conn, sid, gen, fresh, replace=True)
                conn.executemany(
                    "DELETE FROM stale_vectors WHERE seq = ?", [(seq,) for seq, _ in fresh]
                )
            done += len(rows)
            if progress is not None:
                progress(done)

    def _forget_replaced_stale(self) -> None:
        """Take off ``stale_vectors`` the rows whose vector was written since (a rewrite) or
        that are gone: they can never be stale again. Entries still stale stay listed, those of
        other stores included. A read-only handle leaves them to a writer."""
        if self.read_only:
            return
        replaced = (
            "FROM stale_vectors WHERE seq NOT IN (SELECT s.seq FROM stale_vectors s"
            " JOIN memory_vectors v ON v.seq = s.seq AND substr(v.vector, 1, ?) = s.head)"
        )
        with self._tx.read() as conn:
            if conn.execute(f"SELECT 1 {replaced} LIMIT 1", (STALE_HEAD,)).fetchone() is None:
                return
        with self._tx.write() as conn:
            conn.execute(f"DELETE {replaced}", (STALE_HEAD,))

    def compact(self) -> None:
        """Merge the FTS index, checkpoint the WAL and VACUUM: leaves no deleted text behind."""
        self._tx.check_process()
        with fork_guard.working(), self._tx.lock, mapped(self.path):
            self._tx.check_open()
            self._tx.conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
            self._tx.conn.execute("VACUUM")
            self._tx.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def settle(self, timeout: float | None = None) -> bool:
        """Wait for the store's background upkeep (a tenant's postings being built for the
        lexical stage, a large scope's vector sketch) to finish; False if it is still
        running at ``timeout`` seconds. Searches never need this: they use the full-text
        index and every row's int8 bounds meanwhile. Benchmarks do, to time the steady
        state."""
        started = time.monotonic()
        idle = self._tx.postings.wait_idle(timeout)
        if self._tx.vectors is None:
            return idle
        left = None if timeout is None else max(0.0, timeout - (time.monotonic() - started))
        return self._tx.vectors.wait_idle(left) and idle

    def __enter__(self) -> SqliteMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


if not TYPE_CHECKING:  # mypy reads the operations' types from __init__
    for _name, _part in _PART_OF.items():
        setattr(SqliteMemoryStore, _name, _Operation(_name, _part))
    del _name, _part
