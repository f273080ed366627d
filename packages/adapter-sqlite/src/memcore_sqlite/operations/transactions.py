"""Where a write is made durable: the connection, read and write transactions, audit and tasks.

Every write is one ``BEGIN IMMEDIATE`` transaction (memory row, FTS row, vector, task and audit
together), so a write either happened completely or not at all, and writers from several
processes queue on SQLite's lock with ``busy_timeout`` instead of failing.
"""

from __future__ import annotations

import errno
import importlib.util
import json
import logging
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, nullcontext
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcore import limits, speakers
from memcore.errors import (
    InvalidInput,
    MemcoreError,
    NotFound,
    PermissionDenied,
    StoreClosed,
    StoreCorrupted,
    StoreNotFound,
    Unavailable,
)
from memcore.scope import Scope, ScopePattern
from memcore.wording import counted
from memcore_sqlite.lexical.fts_upkeep import Upkeep
from memcore_sqlite.lexical.lengths import LengthCache
from memcore_sqlite.lexical.postings.cache import PostingsCache
from memcore_sqlite.operations import pending as deferred
from memcore_sqlite.operations.read_audits import ReadAudits, Record
from memcore_sqlite.search.overlap import Overlap
from memcore_sqlite.search.ranking import COMMON_TERM_ROWS
from memcore_sqlite.storage import clean_close, damage_record, file_modes, fork_guard, integrity
from memcore_sqlite.storage.checkpoints import Checkpoints
from memcore_sqlite.storage.errors import mapped
from memcore_sqlite.storage.page_tokens import PageTokens
from memcore_sqlite.storage.rows import rows_in
from memcore_sqlite.storage.schema import (
    PAGE_SIZE,
    migrate,
    page_token_key,
    refuse_another_programs,
)
from memcore_sqlite.storage.wal import enable_wal, is_busy
from memcore_sqlite.vector import code_pages
from memcore_sqlite.vector.cache import VectorCache
from memcore_sqlite.vector.embed_ahead import EmbedAhead
from memcore_sqlite.vector.passages import combine, passages
from memcore_sqlite.vector.query_vectors import QueryVectors

if TYPE_CHECKING:
    from memcore.ports import Embedder

_log = logging.getLogger(__name__)

#: How many audit records a store keeps; older ones are pruned as new ones arrive.
AUDIT_KEEP = 100_000
#: Seconds a close waits for the whole-file check its open started (on a file with no
#: clean-close record): past it the check goes on, and the next open checks the file again.
CHECK_WAIT = 2.0
#: Seconds between a write's tries for another process's write lock: SQLite's own busy
#: handler's steps, so a lock let go is taken as soon as SQLite itself would have taken it.
_PAUSES = (0.001, 0.002, 0.005, 0.01, 0.015, 0.02, 0.025, 0.025, 0.025, 0.05, 0.05, 0.1)

_KEY = "SELECT id, generation, 0 FROM stores WHERE name = ?"
_KEY_PENDING = (
    "SELECT id, generation, EXISTS (SELECT 1 FROM tasks WHERE store_id = stores.id AND {})"
    " FROM stores WHERE name = ?"
)


#: The longest busy timeout, in seconds (a day). SQLite keeps it as a 32-bit count of
#: milliseconds, and a larger one wraps to no wait at all: a write meant to wait for weeks
#: would fail at once.
MAX_BUSY_TIMEOUT = 86_400.0


class Transactions:
    """One SQLite connection behind a lock, the caches its writes keep current, and the
    helpers every operation shares: transactions, audit records, tasks, embedding.

    ``embedder`` turns on hybrid search; ``synchronous`` is SQLite's setting: ``NORMAL``
    survives a killed process, ``FULL`` also survives power loss at some cost per write.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        embedder: Embedder | None = None,
        busy_timeout: float = 30.0,
        synchronous: str = "NORMAL",
        vector_cache_rows: int = 1_000_000,
        defer_vectors: bool = False,
        embedding_ahead: EmbedAhead | None = None,
        location_advice: str = file_modes.MOVE_ADVICE,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise InvalidInput("synchronous must be NORMAL or FULL", field="synchronous")
        if not limits.is_finite(busy_timeout) or not 0 <= busy_timeout <= MAX_BUSY_TIMEOUT:
            raise InvalidInput(
                f"busy_timeout must be a number of seconds from 0 to {MAX_BUSY_TIMEOUT:g}",
                field="busy_timeout",
            )
        self.path = str(path)
        problem = limits.path_problem(self.path)
        if problem is not None:  # else a ValueError or UnicodeEncodeError from the first call
            raise InvalidInput(f"the memory database path is not a file path: {problem}")
        if self.path != ":memory:" and damage_record.emptied(self.path):
            raise StoreCorrupted(
                f"the memory database {self.path} was found damaged and is now empty: the "
                "recovery that replaced it wrote nothing (check that your sqlite3 has "
                "'.recover', or use '.dump' in its place, and that the new file holds your "
                "memories before moving it); to start an empty store instead, delete "
                f"{damage_record.record_path(self.path)}",
                field=self.path,
            )
        #: The process that opened the connection: SQLite's connection must not cross a
        #: ``fork`` (:meth:`check_process`).
        self._pid = os.getpid()
        #: Seconds a write waits for another process's write lock (SQLite's busy timeout).
        self.busy_timeout = busy_timeout
        #: When the file was last found sound in full, if its last close left it unchanged
        #: since (read before this process opens it; :mod:`~memcore_sqlite.storage.clean_close`).
        self._sound_since = (
            None if self.path == ":memory:" else clean_close.checked_since(self.path)
        )
        self.embedder = embedder
        #: ``add_text`` without ``sync`` stores the text and its lexical index at once and
        #: leaves the vector to the next semantic search (a pending task until then), so a
        #: short-lived writer (one CLI ``add``) never loads the model.
        self.defer_vectors = defer_vectors and embedder is not None
        self.lock = threading.RLock()
        self.post_commit: list[Any] = []
        #: Embeds a bulk write's next batch while this one is written (see ``embed``).
        self._embedding_ahead = embedding_ahead or EmbedAhead()
        #: The records of reads, written with the next write transaction.
        self.read_audits = ReadAudits(lambda wait: self.flush_read_audits(wait=wait))
        self.fts_upkeep = Upkeep()
        #: The thread a hybrid search runs its vector shortlist in, beside the lexical stage.
        self.overlap = Overlap()
        self.vectors = (
            VectorCache(embedder.dimension, max_rows=vector_cache_rows) if embedder else None
        )
        #: The vectors of recent queries (the same text is not embedded twice).
        self.query_vectors = QueryVectors()
        #: Rows' lengths in words for the lexical stage, per tenant searched.
        self.lengths = LengthCache(max_rows=vector_cache_rows)
        #: Large tenants' postings for the lexical stage, built in the background from a
        #: read-only connection of their own (``connect``'s timeout is its busy timeout).
        self.postings = PostingsCache(
            partial(_connect, self.path, busy_timeout, read_only=True)
            if _can_build_postings(self.path)
            else None,
            COMMON_TERM_ROWS + 1,
            max_rows=vector_cache_rows,
        )
        #: How to move the file, said when it cannot be written.
        self.location_advice = location_advice
        writable, created = (
            (True, False) if self.path == ":memory:" else _prepare_file(self.path, location_advice)
        )
        #: True when the file or its folder is not ours to write: reads work, writes are
        #: refused with PermissionDenied naming the file.
        self.read_only = not writable
        if created:  # nothing in it to check; a clean close records it as sound since now
            self._sound_since = time.time()
        with fork_guard.working(), mapped(self.path):
            self.conn = _connect(self.path, busy_timeout, read_only=self.read_only)
            try:
                self.conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
                if self.conn.execute("PRAGMA user_version").fetchone()[0] == 0:
                    refuse_another_programs(self.conn)  # before WAL mode changes it
                if not self.read_only:
                    # A new file only (SQLite ignores it once the file has pages): a float
                    # vector's row (1.5 KB) then fills 4096-byte pages to 76%, 8192 to 96%.
                    self.conn.execute(f"PRAGMA page_size = {PAGE_SIZE}")
                    enable_wal(self.conn, timeout=busy_timeout)
                    self.conn.execute(f"PRAGMA synchronous = {synchronous}")
                # Freed pages are zeroed, so deleted text does not linger in the file.
                self.conn.execute("PRAGMA secure_delete = ON")
                self.conn.execute("PRAGMA foreign_keys = ON")
                migrate(self.conn, read_only=self.read_only)
                #: Seals the listings' cursors, so no token shows the file's row count.
                self.tokens = PageTokens(page_token_key(self.conn))
                self._checkpoints = Checkpoints(self.path, self.conn, self.lock)
            except BaseException:
                self.conn.close()
                raise
        if not self.read_only and self.path != ":memory:":
            file_modes.restrict(self.path)
        self._closed = False
        #: Set once SQLite reports the file damaged (a statement, or the quick_check started
        #: here): from then on every write is refused with it, so nothing more lands in it.
        self._damage: StoreCorrupted | None = None
        #: The whole file is checked unless its last close left it sound and unchanged since.
        self._checking: threading.Thread | None = None
        if not self.read_only and self.path != ":memory:" and damage_record.noted(self.path):
            # Found damaged before: checked before any write, lest one land in it.
            self._check_soundness()
        elif not self.read_only and self.path != ":memory:" and self._sound_since is None:
            self._checking = threading.Thread(
                target=self._check_soundness, name="memcore-quick-check", daemon=True
            )
            self._checking.start()

    def check_integrity(self) -> integrity.IntegrityReport:
        """``PRAGMA quick_check`` of the file, timed; damage found refuses every later write."""
        if self.path == ":memory:":
            return integrity.IntegrityReport(self.path, (), 0.0)
        started = time.time()
        report = integrity.quick_check(self.path)
        if not report.ok and self._damage is None:
            self._damage = integrity.corrupted(self.path, report.problems[0])
            damage_record.note(self.path, report.problems[0])
            _log.warning("%s", self._damage.message)
        elif report.ok:
            self._sound_since = started
            damage_record.clear(self.path)
        return report

    def _check_soundness(self) -> None:
        """:meth:`check_integrity` beside the store's work (on its own read-only connection),
        so opening stays fast; writes committed before it reports were not refused. A check
        that could not run (a full disk) leaves the file unchecked: the next open checks it."""
        try:
            self.check_integrity()
        except MemcoreError as exc:
            _log.warning("could not check %s: %s", self.path, exc.message)

    @contextmanager
    def _latch(self) -> Iterator[None]:
        """Remember damage that a statement ran into (see ``_damage``)."""
        try:
            yield
        except StoreCorrupted as exc:
            self._damage = self._damage or exc
            if self.path != ":memory:":
                damage_record.note(self.path, exc.message)
            raise

    @property
    def search_mode(self) -> str:
        """``hybrid`` with an embedder, else ``lexical``; ``doctor`` reports it."""
        return "hybrid" if self.embedder is not None else "lexical"

    @contextmanager
    def write(
        self, *, checkpoint: bool = True, wait: float | None = None
    ) -> Iterator[sqlite3.Connection]:
        """One ``BEGIN IMMEDIATE`` transaction, which also writes the records of the reads
        made since the last one (:mod:`~memcore_sqlite.operations.read_audits`); without ``checkpoint``
        its commit leaves the WAL to :mod:`~memcore_sqlite.storage.checkpoints` (reads' records).

        Another process's write lock is waited for (at most ``wait`` seconds, else the busy
        timeout) between tries made without waiting, outside the store's lock: reads in this
        process, which need that lock, go on meanwhile (a WAL reader never waits for a writer)."""
        self.check_process()
        deadline = time.monotonic() + (self.busy_timeout if wait is None else wait)
        pauses = iter(_PAUSES)
        while True:
            with (
                fork_guard.working(),
                self.lock,
                self._latch(),
                mapped(self.path, self.location_advice),
            ):
                self.check_open()
                if self._damage is not None:
                    raise self._damage
                conn = self.conn
                with nullcontext() if checkpoint else self._checkpoints.off(conn):
                    began = self._begin(conn, last=time.monotonic() >= deadline)
                    if began:
                        with self._transaction(conn):
                            yield conn
                if began:
                    self._committed(conn)
                    return
            time.sleep(max(0.0, min(next(pauses, _PAUSES[-1]), deadline - time.monotonic())))

    def _begin(self, conn: sqlite3.Connection, *, last: bool) -> bool:
        """``BEGIN IMMEDIATE`` without waiting; False when another connection holds the write
        lock, unless this is the ``last`` try (then SQLite's busy error is raised)."""
        conn.execute("PRAGMA busy_timeout = 0")
        try:
            conn.execute("BEGIN IMMEDIATE")
        except sqlite3.OperationalError as exc:
            if last or not is_busy(exc):
                raise
            return False
        finally:
            conn.execute(f"PRAGMA busy_timeout = {int(self.busy_timeout * 1000)}")
        return True

    @contextmanager
    def _transaction(self, conn: sqlite3.Connection) -> Iterator[None]:
        """The body of a write begun, with the reads' records; COMMIT, or ROLLBACK on error."""
        reads = self.read_audits.take()
        try:
            self._write_read_audits(conn, reads)
            yield
            conn.execute("COMMIT")
        except BaseException:
            self.read_audits.give_back(reads)
            self.post_commit.clear()
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    def _committed(self, conn: sqlite3.Connection) -> None:
        """After COMMIT, still under the store's lock: the caches follow the write."""
        for callback in self.post_commit:
            callback()
        self.post_commit.clear()
        self.fts_upkeep.after_commit(conn)

    @contextmanager
    def read(self) -> Iterator[sqlite3.Connection]:
        """A snapshot: every statement inside sees the same state of the file."""
        self.check_process()
        with fork_guard.working(), self.lock, self._latch(), mapped(self.path):
            self.check_open()
            conn = self.conn
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def check_process(self) -> None:
        """Refuse, before any lock is taken, a call in a process forked from the one that
        opened the store: SQLite forbids using (or closing) a connection a child inherited,
        and a lock another thread held at the fork is never let go in the child (its calls
        hung). The child opens the store again, its own connection."""
        if os.getpid() != self._pid:
            raise StoreClosed(
                f"this store ({self.path}) was opened in process {self._pid}, before a fork; "
                "a connection cannot be shared with a forked process: open the store again "
                "in this process",
                field="store",
            )

    def check_open(self) -> None:
        self.check_process()
        if self._closed:
            raise StoreClosed(f"this store ({self.path}) is closed", field="store")

    def store_id(self, conn: sqlite3.Connection, name: str) -> int:
        return self.store_key(conn, name)[0]

    def store_key(
        self, conn: sqlite3.Connection, name: str, *, pending: ScopePattern | None = None
    ) -> tuple[int, int, bool]:
        """(id, generation, tasks pending) of the named store, in one statement: a semantic
        search needs all three in its snapshot. The last is whether deferred writes left
        memories of the tenant ``pending`` reaches to embed (asked only with it; an indexed
        probe of ``tasks_store``, then the few pending tasks' scopes)."""
        limits.check_store_name(name)
        if pending is None:
            row = conn.execute(_KEY, (name,)).fetchone()
        else:
            where, params = deferred.tasks_of(pending)
            row = conn.execute(_KEY_PENDING.format(where), (*params, name)).fetchone()
        if row is None:
            raise StoreNotFound(f"memory store {name!r} does not exist", field="memory_store_name")
        return int(row[0]), int(row[1]), bool(row[2])

    def audit(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        operation: str,
        started: float,
        *,
        scope: Scope | None = None,
        target: str | None = None,
        status: str = "succeeded",
    ) -> str:
        """Record operation, scope, target id, status and latency — never text or queries."""
        return self._request(conn, store_id, *_record(operation, started, scope, target, status))

    def _request(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        operation: str,
        status: str,
        scope: str | None,
        target: str | None,
        latency_ms: float,
        created_at: float,
    ) -> str:
        rid = uuid.uuid4().hex
        cur = conn.execute(
            "INSERT INTO requests (id, store_id, operation, status, scope, target_id, latency_ms,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (rid, store_id, operation, status, scope, target, latency_ms, created_at),
        )
        seq = cur.lastrowid or 0
        if seq % 1000 == 0:
            conn.execute(
                "DELETE FROM requests WHERE store_id = ? AND seq <= ?", (store_id, seq - AUDIT_KEEP)
            )
        return rid

    def audit_read(
        self,
        store: str,
        operation: str,
        started: float,
        *,
        scope: Scope | None = None,
        target: str | None = None,
        status: str = "succeeded",
    ) -> None:
        """A read's record, kept until the store's next write transaction writes it (see
        :mod:`~memcore_sqlite.operations.read_audits`); not on a read-only file: a read there must
        still work."""
        if self.read_only:
            return
        self.check_process()
        with self.lock:  # the counts, and the threads they start, are the lock's too
            self.check_open()
            full = self.read_audits.add(
                (store, *_record(operation, started, scope, target, status))
            )
            self._checkpoints.audited()
        if full:
            # Not waiting for another process's lock: a read must not wait for its record.
            # A busy file keeps them for the writing thread (or the next write).
            try:
                self.flush_read_audits(wait=0.0)
            except (Unavailable, StoreClosed):
                pass

    def flush_read_audits(self, *, wait: float | None = None) -> None:
        """Write the records of reads kept so far, in a transaction of their own, waiting at
        most ``wait`` seconds (default: the busy timeout) for another process's write lock;
        records not written stay kept. A closed store has written or dropped them already."""
        self.check_process()
        with self.lock:
            if self._closed or not len(self.read_audits):
                return
        try:
            with self.write(checkpoint=False, wait=wait):
                pass
        except StoreClosed:
            pass

    def _write_read_audits(self, conn: sqlite3.Connection, reads: list[Record]) -> None:
        """Inside a write: the records of reads (of a store deleted since: none)."""
        ids: dict[str, int | None] = {}
        for record in reads:
            store = record[0]
            if store not in ids:
                row = conn.execute("SELECT id FROM stores WHERE name = ?", (store,)).fetchone()
                ids[store] = None if row is None else int(row[0])
            sid = ids[store]
            if sid is not None:
                self._request(conn, sid, *record[1:])

    @contextmanager
    def audit_failure(
        self, store: str, operation: str, started: float, scope: Scope | None, memory_id: str
    ) -> Iterator[None]:
        """A memory that is not found in the scope (or a pattern: None) is still an audited
        request (failed)."""
        try:
            yield
        except NotFound as exc:
            if exc.field == "memory_id":
                self.audit_read(
                    store, operation, started, scope=scope, target=memory_id, status="failed"
                )
            raise

    def task(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        operation: str,
        scope: Scope,
        ids: Sequence[str],
        *,
        status: str = "completed",
    ) -> str:
        tid = uuid.uuid4().hex
        now = time.time()
        conn.execute(
            "INSERT INTO tasks (id, store_id, status, operation, scope, created_at, finished_at,"
            " memory_ids) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                tid,
                store_id,
                status,
                operation,
                json.dumps(scope.as_dict()),
                now,
                None if status == "pending" else now,
                json.dumps(list(ids)),
            ),
        )
        return tid

    def bump(self, conn: sqlite3.Connection, store_id: int) -> tuple[int, int]:
        before = int(
            conn.execute("SELECT generation FROM stores WHERE id = ?", (store_id,)).fetchone()[0]
        )
        conn.execute("UPDATE stores SET generation = ? WHERE id = ?", (before + 1, store_id))
        self.fts_upkeep.note_write()
        return before, before + 1

    def embed(self, texts: Sequence[str], ahead: Sequence[str] = ()) -> list[Any] | None:
        """One unit vector per text, in their order; a long text is embedded whole, as passages
        (see :mod:`memcore_sqlite.vector.passages`), in the same call as the others.

        Each distinct passage is embedded once, and the embedder sees them shortest first: it
        pads every batch to its longest member, so batches of similar lengths waste less work.
        ``ahead`` (a bulk write's next batch) starts embedding in the background once these
        vectors are ready, while the caller writes them; see :mod:`memcore_sqlite.vector.embed_ahead`.
        """
        if self.embedder is None or self.vectors is None or not texts:
            return None
        self.check_process()  # the embedder's threads did not cross a fork either
        split, distinct = _distinct_passages(texts)
        vectors = self._embedding_ahead.take(distinct)
        if vectors is None:
            vectors = self._embed_distinct(distinct)
        if ahead:
            self._embedding_ahead.start(_distinct_passages(ahead)[1], self._embed_distinct)
        arr = self.vectors.to_array(vectors)
        row = {p: i for i, p in enumerate(distinct)}
        by_text = {
            t: arr[row[parts[0]]] if len(parts) == 1 else combine(arr[[row[p] for p in parts]])
            for t, parts in split.items()
        }
        return [by_text[t] for t in texts]

    def _embed_distinct(self, distinct: list[str]) -> list[Any]:
        assert self.embedder is not None
        try:
            vectors = self.embedder.embed(distinct)
        except MemcoreError:
            raise
        except Exception as exc:  # an embedder is foreign code: report it as ours
            # Retryable: the embedder's failure is not the text's fault (at shutdown its
            # worker pool refuses work), and a host's spool keeps a retryable write for its
            # next attempt where it would dead-letter invalid input.
            raise Unavailable(
                f"the embedder failed: {type(exc).__name__}", field="embedder"
            ) from exc
        if len(vectors) != len(distinct):
            raise Unavailable("the embedder returned the wrong number of vectors", field="embedder")
        return vectors

    def store_vectors(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        gen: tuple[int, int],
        rows: Sequence[tuple[int, Any]],
        *,
        replace: bool,
    ) -> None:
        """Vectors computed outside the write for memories that may have gone meanwhile: only
        live ones get theirs, with their codes. ``replace`` overwrites a vector already there
        (another process may have filled it: replaced, never doubled); else it is kept."""
        assert self.embedder is not None and self.vectors is not None
        verb = "INSERT OR REPLACE" if replace else "INSERT OR IGNORE"
        added: list[tuple[tuple[str, str, str, str], int, Any]] = []
        scopes = _live_scopes(conn, [seq for seq, _ in rows])
        for seq, vec in rows:
            scope = scopes.get(seq)
            if scope is None:
                continue
            cur = conn.execute(
                f"{verb} INTO memory_vectors (seq, model, vector) VALUES (?, ?, ?)",
                (seq, self.embedder.name, self.vectors.to_blob(vec)),
            )
            if cur.rowcount:
                added.append((scope, seq, vec))
        self.after_write(store_id, gen, added, [(a[0], a[1]) for a in added] if replace else [])

    def after_write(
        self,
        store_id: int,
        gen: tuple[int, int],
        added: Sequence[tuple[tuple[str, str, str, str], int, Any]],
        removed: Sequence[tuple[tuple[str, str, str, str], int]] = (),
        indexed: Sequence[tuple[str, str, str, str]] = (),
    ) -> None:
        """Write the code pages inside the transaction; update the caches after COMMIT.

        ``indexed``: scopes whose full-text rows were rewritten besides those in ``added``
        and ``removed`` (a memory's metadata changed); their tenants' postings go."""
        lengths, postings = self.lengths, self.postings
        touched = [a[1] for a in added] + [r[1] for r in removed]
        self.post_commit.append(lambda: lengths.apply_write(store_id, gen[0], gen[1], touched))
        new_rows = [(a[0][:2], a[1]) for a in added]
        changed = [s[:2] for s in [*(r[0] for r in removed), *indexed]]
        tenants = [t for t, _ in new_rows] + changed
        appended = postings.appended_rows(self.conn, store_id, new_rows, changed)
        self.post_commit.append(
            lambda: postings.apply_write(store_id, gen[0], gen[1], tenants, appended)
        )
        if self.vectors is None or self.embedder is None:
            return
        cache = self.vectors
        # A deferred write has no vector yet: encoding nothing must not import numpy.
        written = cache.encode(added) if any(a[2] is not None for a in added) else []
        pages = [(scope, codes) for scope, codes, _ in written]
        code_pages.write(self.conn, store_id, self.embedder.name, cache.dimension, removed, pages)
        # After COMMIT: a rolled-back write must not reach the cache.
        self.post_commit.append(
            lambda: cache.apply_write(store_id, gen[0], gen[1], written, removed)
        )

    def close(self) -> None:
        """Bounded even while another process holds the write lock: the reads' records kept
        wait for it at most :data:`~memcore_sqlite.operations.read_audits.WAIT` seconds, and
        are dropped (logged) after that (see :mod:`~memcore_sqlite.operations.read_audits`).
        In a forked child it does nothing: the connection and the threads are the parent's."""
        if os.getpid() != self._pid:
            return
        if self._checking is not None and self._checking is not threading.current_thread():
            # Its connection, still open, would keep the -shm file and the clean-close
            # record from being written; the check takes 49 ms on a 20 MB file.
            self._checking.join(CHECK_WAIT)
        self._checkpoints.close()
        self.read_audits.close()
        with fork_guard.working(), self.lock:
            if not self._closed:
                self._last_read_audits()
                self._closed = True
                self._embedding_ahead.close()
                self.overlap.close()  # under the lock: no search is using it
                self.postings.close()  # stops a build under way, and waits for it
                if self.vectors is not None:
                    self.vectors.close()  # their sketches' builds not under way never start
                with mapped(self.path):
                    self.conn.close()
                if not self.read_only and self.path != ":memory:":
                    if self._damage is None and self._sound_since is not None:
                        clean_close.closed_cleanly(self.path, self._sound_since)
                    else:
                        clean_close.forget(self.path)

    def _last_read_audits(self) -> None:
        """At close, under the lock (no read adds one meanwhile): write the reads' records
        kept, or drop them when the file cannot take them now (locked, full)."""
        try:
            self.flush_read_audits(wait=self.read_audits.wait)
        except MemcoreError as exc:
            dropped = len(self.read_audits.take())
            _log.warning(
                "%s of reads in %s %s not written at close and %s dropped: %s",
                counted(dropped, "record"),
                self.path,
                "was" if dropped == 1 else "were",
                "is" if dropped == 1 else "are",
                exc.message,
            )


def _record(
    operation: str, started: float, scope: Scope | None, target: str | None, status: str
) -> tuple[str, str, str | None, str | None, float, float]:
    """The fields of a request record, from the call's start to now."""
    return (
        operation,
        status,
        None if scope is None else json.dumps(scope.as_dict()),
        target,
        (time.perf_counter() - started) * 1000.0,
        time.time(),
    )


def _live_scopes(
    conn: sqlite3.Connection, seqs: Sequence[int]
) -> dict[int, tuple[str, str, str, str]]:
    """The scope of each of ``seqs`` still in the file."""
    sql = "SELECT seq, app_id, tenant_id, agent_id, run_id FROM memories WHERE seq IN ({})"
    return {
        int(seq): (app, tenant, agent, run)
        for seq, app, tenant, agent, run in rows_in(conn, sql, seqs)
    }


def _distinct_passages(texts: Sequence[str]) -> tuple[dict[str, list[str]], list[str]]:
    """Each text's passages, and every distinct passage once, shortest first. A speaker's
    label ("Priya: ...") is not embedded: the vector reads what was said
    (:mod:`memcore.speakers`), the lexical index still holds the name."""
    split = {t: passages(speakers.spoken(t)) for t in texts}
    return split, sorted({p: None for parts in split.values() for p in parts}, key=len)


def _prepare_file(path: str, advice: str) -> tuple[bool, bool]:
    """Make the folder (0700) and the file (0600) when missing: whether they are writable
    (else the store opens read-only), and whether this call created the file. ``advice``
    ends the message of a folder that cannot be written: how to put the file elsewhere. A
    folder every user can write is refused: another user could leave the file or its
    ``-wal`` there first."""
    file = Path(path)
    try:
        file.exists()
    except OSError as exc:
        if exc.errno == errno.ENAMETOOLONG:
            raise InvalidInput(
                f"the memory database path {file} is too long for the file system ({advice})",
                field=str(file),
            ) from None
        raise Unavailable(f"cannot open {file} ({exc.strerror})", field=str(file)) from None
    if file_modes.open_to_all(file.parent):
        raise PermissionDenied(
            f"{file.parent} can be written by every user, who could read the memories through "
            f"files they put beside the database; use a folder only you can write ({advice})",
            field=str(file),
        )
    if file.exists():
        return file_modes.writable(file), False
    file_modes.make_home(file.parent, advice=advice)
    if not file_modes.writable(file):
        raise PermissionDenied(
            f"cannot create {file}: {file.parent} is not writable ({advice})",
            field=str(file),
        )
    try:
        created = file_modes.create_private(file)
    except OSError as exc:
        raise PermissionDenied(f"cannot create {file} ({exc.strerror})", field=str(file)) from None
    return True, created


def _can_build_postings(path: str) -> bool:
    """Postings are numpy arrays, read by a second connection: neither a lexical-only install
    (no numpy) nor an in-memory database, which no second connection sees, builds them."""
    return path != ":memory:" and importlib.util.find_spec("numpy") is not None


#: The size of a write-ahead log's header: a longer log holds frames (writes).
_WAL_HEADER = 32


def _refuse_unseen_log(path: str) -> None:
    """An immutable open reads the file alone: writes a killed (or still running elsewhere)
    writer left in the write-ahead log would be silently missing from every answer, and an
    export of it would lose them. Refused instead, with the way out."""
    try:
        size = os.stat(path + "-wal").st_size
    except OSError:
        return
    if size > _WAL_HEADER:
        raise PermissionDenied(
            f"the memory database {path} cannot be read here: its write-ahead log {path}-wal "
            f"holds {size:,} bytes of writes, which a reader sees only through {path}-shm, and "
            "that file cannot be made in this read-only folder; open it once where it can be "
            "written, or copy the folder with both files somewhere writable",
            field=path,
        )


def _connect(path: str, timeout: float, *, read_only: bool) -> sqlite3.Connection:
    """A connection; read-only ones open by URI, as ``immutable`` when SQLite cannot even make
    its WAL index next to the file (a read-only folder: nobody writes there meanwhile)."""
    if not read_only:
        return fork_guard.connect(
            path, timeout=timeout, isolation_level=None, check_same_thread=False
        )
    uri = Path(path).resolve().as_uri()
    try:
        conn = fork_guard.connect(
            uri + "?mode=ro",
            uri=True,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
        )
        conn.execute("SELECT count(*) FROM sqlite_master").fetchone()
        return conn
    except sqlite3.OperationalError:
        _refuse_unseen_log(path)
        return fork_guard.connect(
            uri + "?mode=ro&immutable=1",
            uri=True,
            timeout=timeout,
            isolation_level=None,
            check_same_thread=False,
        )
