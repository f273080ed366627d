"""``SqliteMemoryStore``: the ``MemoryStore`` port on one SQLite file.

Every write is one ``BEGIN IMMEDIATE`` transaction (memory row, FTS row, vector, task and audit
together), so a write either happened completely or not at all, and writers from several
processes queue on SQLite's lock with ``busy_timeout`` instead of failing.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import attrs

from memcore import limits
from memcore.errors import Conflict, InvalidInput, MemcoreError, NotFound, Unsupported
from memcore.paging import decode_token, page
from memcore.ports import Embedder, ProgressCallback
from memcore.scope import Scope, ScopePattern
from memcore.values import (
    DreamAction,
    DreamTask,
    Memory,
    MemoryTask,
    Message,
    Page,
    RequestRecord,
    SearchHit,
    StoreInfo,
    WriteReceipt,
)
from memcore_sqlite import analysis, ranking, tags
from memcore_sqlite.schema import migrate
from memcore_sqlite.sqlite_errors import mapped
from memcore_sqlite.vectors import VectorCache
from memcore_sqlite.wal import enable_wal

_MEMORY_COLUMNS = (
    "seq, id, app_id, tenant_id, agent_id, run_id, text, metadata, unit_type, "
    "created_at, updated_at, version"
)
#: How many audit records a store keeps; older ones are pruned as new ones arrive.
AUDIT_KEEP = 100_000
_DREAM_UNSUPPORTED = (
    "the local SQLite store has no consolidation (dream) engine; duplicates are already merged "
    "on write by content hash. Use the tablestore backend for dream tasks."
)


@attrs.frozen
class TextItem:
    """One memory to add in a batch (see :meth:`SqliteMemoryStore.add_many`)."""

    scope: Scope
    text: str
    metadata: Mapping[str, str] = attrs.field(factory=dict)
    #: Keep this id (an import restoring an export); None lets the store choose one.
    id: str | None = None
    #: Keep this creation time (an import); None means now.
    created_at: float | None = None


def _content_hash(scope: Scope, text: str) -> bytes:
    return hashlib.sha256(f"{scope}\x00{text.strip()}".encode("utf-8", "surrogatepass")).digest()


def _pattern_sql(pattern: ScopePattern, prefix: str = "") -> tuple[str, list[str]]:
    clauses: list[str] = []
    params: list[str] = []
    for name, value in pattern.levels():
        if value != "*":
            clauses.append(f"{prefix}{name} = ?")
            params.append(value)
    return "".join(f" AND {c}" for c in clauses), params


class SqliteMemoryStore:
    """The embedded memory store. Thread-safe; several processes may share one file.

    ``embedder`` turns on hybrid search (FTS5 BM25 fused with exact cosine); without one,
    search is lexical-only. ``synchronous`` is SQLite's setting: ``NORMAL`` survives a killed
    process, ``FULL`` also survives power loss at some cost per write.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        *,
        embedder: Embedder | None = None,
        busy_timeout: float = 30.0,
        synchronous: str = "NORMAL",
        vector_cache_rows: int = 1_000_000,
    ) -> None:
        if synchronous not in ("NORMAL", "FULL"):
            raise InvalidInput("synchronous must be NORMAL or FULL", field="synchronous")
        if not math.isfinite(busy_timeout) or busy_timeout < 0:
            raise InvalidInput("busy_timeout must be a number of seconds", field="busy_timeout")
        self.path = str(path)
        self.embedder = embedder
        self._lock = threading.RLock()
        self._post_commit: list[Any] = []
        self._vectors = (
            VectorCache(embedder.dimension, max_rows=vector_cache_rows) if embedder else None
        )
        with mapped(self.path):
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            self._conn = sqlite3.connect(
                self.path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
            )
            try:
                self._conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout * 1000)}")
                enable_wal(self._conn, timeout=busy_timeout)
                self._conn.execute(f"PRAGMA synchronous = {synchronous}")
                # Freed pages are zeroed, so deleted text does not linger in the file.
                self._conn.execute("PRAGMA secure_delete = ON")
                self._conn.execute("PRAGMA foreign_keys = ON")
                migrate(self._conn)
            except BaseException:
                self._conn.close()
                raise
        self._closed = False

    # -- plumbing -----------------------------------------------------------------------
    @property
    def search_mode(self) -> str:
        """``hybrid`` with an embedder, else ``lexical``; ``doctor`` reports it."""
        return "hybrid" if self.embedder is not None else "lexical"

    def __repr__(self) -> str:
        return f"SqliteMemoryStore({self.path!r}, search_mode={self.search_mode!r})"

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        with self._lock, mapped(self.path):
            self._check_open()
            conn = self._conn
            conn.execute("BEGIN IMMEDIATE")
            try:
                yield conn
                conn.execute("COMMIT")
            except BaseException:
                self._post_commit.clear()
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
            for callback in self._post_commit:
                callback()
            self._post_commit.clear()

    @contextmanager
    def _read(self) -> Iterator[sqlite3.Connection]:
        """A snapshot: every statement inside sees the same state of the file."""
        with self._lock, mapped(self.path):
            self._check_open()
            conn = self._conn
            conn.execute("BEGIN")
            try:
                yield conn
            finally:
                if conn.in_transaction:
                    conn.execute("COMMIT")

    def _check_open(self) -> None:
        if self._closed:
            raise InvalidInput("this store is closed", field="store")

    def _store_id(self, conn: sqlite3.Connection, name: str) -> int:
        limits.check_store_name(name)
        row = conn.execute("SELECT id FROM stores WHERE name = ?", (name,)).fetchone()
        if row is None:
            raise NotFound(f"memory store {name!r} does not exist", field="memory_store_name")
        return int(row[0])

    def _audit(
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
        rid = uuid.uuid4().hex
        cur = conn.execute(
            "INSERT INTO requests (id, store_id, operation, status, scope, target_id, latency_ms,"
            " created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
            (
                rid,
                store_id,
                operation,
                status,
                None if scope is None else json.dumps(scope.as_dict()),
                target,
                (time.perf_counter() - started) * 1000.0,
                time.time(),
            ),
        )
        seq = cur.lastrowid or 0
        if seq % 1000 == 0:
            conn.execute(
                "DELETE FROM requests WHERE store_id = ? AND seq <= ?", (store_id, seq - AUDIT_KEEP)
            )
        return rid

    def _audit_read(self, store: str, operation: str, started: float, **kw: Any) -> None:
        """Reads log in their own short write, after the snapshot closed."""
        with self._write() as conn:
            row = conn.execute("SELECT id FROM stores WHERE name = ?", (store,)).fetchone()
            if row is not None:
                self._audit(conn, int(row[0]), operation, started, **kw)

    @contextmanager
    def _audit_failure(
        self, store: str, operation: str, started: float, scope: Scope, memory_id: str
    ) -> Iterator[None]:
        """A memory that is not found in the scope is still an audited request (failed)."""
        try:
            yield
        except NotFound as exc:
            if exc.field == "memory_id":
                self._audit_read(
                    store, operation, started, scope=scope, target=memory_id, status="failed"
                )
            raise

    def _task(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        operation: str,
        scope: Scope,
        ids: Sequence[str],
    ) -> str:
        tid = uuid.uuid4().hex
        now = time.time()
        conn.execute(
            "INSERT INTO tasks (id, store_id, status, operation, scope, created_at, finished_at,"
            " memory_ids) VALUES (?, ?, 'completed', ?, ?, ?, ?, ?)",
            (
                tid,
                store_id,
                operation,
                json.dumps(scope.as_dict()),
                now,
                now,
                json.dumps(list(ids)),
            ),
        )
        return tid

    def _bump(self, conn: sqlite3.Connection, store_id: int) -> tuple[int, int]:
        before = int(
            conn.execute("SELECT generation FROM stores WHERE id = ?", (store_id,)).fetchone()[0]
        )
        conn.execute("UPDATE stores SET generation = ? WHERE id = ?", (before + 1, store_id))
        return before, before + 1

    def _embed(self, texts: Sequence[str]) -> list[Any] | None:
        if self.embedder is None or self._vectors is None or not texts:
            return None
        try:
            vectors = self.embedder.embed(list(texts))
        except MemcoreError:
            raise
        except Exception as exc:  # an embedder is foreign code: report it as ours
            raise InvalidInput(
                f"the embedder failed: {type(exc).__name__}", field="embedder"
            ) from exc
        if len(vectors) != len(texts):
            raise InvalidInput(
                "the embedder returned the wrong number of vectors", field="embedder"
            )
        arr = self._vectors.to_array(vectors)
        return list(arr)

    # -- stores -------------------------------------------------------------------------
    @staticmethod
    def _info(row: Sequence[Any]) -> StoreInfo:
        return StoreInfo(name=row[0], description=row[1], status="ready", created_at=row[2])

    def ensure_store(
        self,
        store: str,
        *,
        description: str = "",
        create: bool = True,
        extract_instructions: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> StoreInfo:
        """``extract_instructions`` is checked and ignored: nothing is extracted locally."""
        limits.check_store_name(store)
        limits.check_extract_instructions(extract_instructions)
        if not create:
            return self.describe_store(store)
        with self._write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO stores (name, description, created_at) VALUES (?, ?, ?)",
                (store, description, time.time()),
            )
            row = conn.execute(
                "SELECT name, description, created_at FROM stores WHERE name = ?", (store,)
            ).fetchone()
        return self._info(row)

    def describe_store(self, store: str) -> StoreInfo:
        limits.check_store_name(store)
        with self._read() as conn:
            row = conn.execute(
                "SELECT name, description, created_at FROM stores WHERE name = ?", (store,)
            ).fetchone()
        if row is None:
            raise NotFound(f"memory store {store!r} does not exist", field="memory_store_name")
        return self._info(row)

    def list_stores(self) -> list[StoreInfo]:
        with self._read() as conn:
            rows = conn.execute(
                "SELECT name, description, created_at FROM stores ORDER BY name"
            ).fetchall()
        return [self._info(r) for r in rows]

    def create_store(
        self, store: str, *, description: str = "", extract_instructions: str | None = None
    ) -> StoreInfo:
        limits.check_store_name(store)
        limits.check_extract_instructions(extract_instructions)
        with self._write() as conn:
            if conn.execute("SELECT 1 FROM stores WHERE name = ?", (store,)).fetchone():
                raise Conflict(
                    f"memory store {store!r} already exists",
                    field="memory_store_name",
                    retryable=False,
                )
            now = time.time()
            conn.execute(
                "INSERT INTO stores (name, description, created_at) VALUES (?, ?, ?)",
                (store, description, now),
            )
        return StoreInfo(name=store, description=description, status="ready", created_at=now)

    def update_store(
        self,
        store: str,
        *,
        description: str | None = None,
        extract_instructions: str | None = None,
    ) -> StoreInfo:
        """PATCH of the description (None leaves it); extraction instructions are ignored."""
        if description is not None and not isinstance(description, str):
            raise InvalidInput("description must be a string", field="description")
        limits.check_extract_instructions(extract_instructions)
        with self._write() as conn:
            sid = self._store_id(conn, store)
            if description is not None:
                conn.execute("UPDATE stores SET description = ? WHERE id = ?", (description, sid))
            row = conn.execute(
                "SELECT name, description, created_at FROM stores WHERE id = ?", (sid,)
            ).fetchone()
        return self._info(row)

    def delete_store(self, store: str) -> None:
        """Delete the store and everything in it: memories, index, vectors, messages, logs."""
        with self._write() as conn:
            sid = self._store_id(conn, store)
            seqs = "SELECT seq FROM memories WHERE store_id = ?"
            conn.execute(f"DELETE FROM memory_fts WHERE rowid IN ({seqs})", (sid,))
            conn.execute(f"DELETE FROM memory_vectors WHERE seq IN ({seqs})", (sid,))
            for table in ("memories", "messages", "tasks", "requests"):
                conn.execute(f"DELETE FROM {table} WHERE store_id = ?", (sid,))
            conn.execute("DELETE FROM stores WHERE id = ?", (sid,))
            if self._vectors is not None:
                # After COMMIT, like the other cache updates (see _after_write).
                cache = self._vectors
                self._post_commit.append(lambda: cache.drop_store(sid))

    # -- writes -------------------------------------------------------------------------
    def _insert(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        scope: Scope,
        text: str,
        metadata: Mapping[str, str],
        unit_type: str,
        vector: Any,
        added: list[tuple[tuple[str, str, str, str], int, Any]],
        *,
        memory_id: str | None = None,
        created_at: float | None = None,
    ) -> tuple[str, int]:
        """Insert one unit unless the same text is already in the scope; (id, seq).

        ``memory_id`` keeps a caller's id (import); one already taken by another memory is a
        :class:`Conflict`, so an import can never overwrite or alias an existing memory.
        """
        digest = _content_hash(scope, text)
        # The digest covers the scope; comparing the scope columns in Python keeps the planner
        # on the hash index (with them in SQL it prefers the scope index and scans the scope).
        for row in conn.execute(
            "SELECT id, seq, app_id, tenant_id, agent_id, run_id FROM memories"
            " WHERE store_id = ? AND content_hash = ?",
            (store_id, digest),
        ):
            if tuple(row[2:]) == scope.as_tuple():
                return str(row[0]), int(row[1])
        mid = memory_id or uuid.uuid4().hex
        if (
            memory_id is not None
            and conn.execute("SELECT 1 FROM memories WHERE id = ?", (memory_id,)).fetchone()
        ):
            raise Conflict(
                f"memory id {memory_id!r} is already used by another memory",
                field="id",
                retryable=False,
            )
        now = time.time()
        created = now if created_at is None else created_at
        cur = conn.execute(
            "INSERT INTO memories (id, store_id, app_id, tenant_id, agent_id, run_id, text,"
            " content_hash, metadata, unit_type, created_at, updated_at)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                mid,
                store_id,
                *scope.as_tuple(),
                text,
                digest,
                json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True),
                unit_type,
                created,
                now,
            ),
        )
        seq = int(cur.lastrowid or 0)
        self._index(conn, store_id, seq, scope, text, metadata)
        if vector is not None and self.embedder is not None and self._vectors is not None:
            conn.execute(
                "INSERT INTO memory_vectors (seq, model, vector) VALUES (?, ?, ?)",
                (seq, self.embedder.name, self._vectors.to_blob(vector)),
            )
        added.append((scope.as_tuple(), seq, vector))
        return mid, seq

    @staticmethod
    def _index(
        conn: sqlite3.Connection,
        store_id: int,
        seq: int,
        scope: Scope,
        text: str,
        metadata: Mapping[str, str],
    ) -> None:
        """The FTS row: words, the same words tenant-prefixed, and the scope/metadata tags."""
        words = analysis.tokens(text)
        prefix = tags.tenant_prefix(store_id, scope.app_id, scope.tenant_id)
        conn.execute(
            "INSERT INTO memory_fts (rowid, body, tbody, tags) VALUES (?, ?, ?, ?)",
            (
                seq,
                analysis.index_text(words),
                analysis.index_text(words, prefix),
                tags.row_tags(store_id, scope, metadata),
            ),
        )

    def _after_write(
        self,
        store_id: int,
        gen: tuple[int, int],
        added: Sequence[tuple[tuple[str, str, str, str], int, Any]],
        removed: Sequence[tuple[tuple[str, str, str, str], int]] = (),
    ) -> None:
        # Runs after COMMIT: a rolled-back write must not reach the cache.
        if self._vectors is not None:
            cache = self._vectors
            self._post_commit.append(
                lambda: cache.apply_write(store_id, gen[0], gen[1], added, removed)
            )

    def add_text(
        self,
        store: str,
        scope: Scope,
        text: str,
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> WriteReceipt:
        started = time.perf_counter()
        _check_scope(scope)
        limits.check_text(text)
        meta = limits.check_metadata(metadata)
        vectors = self._embed([text])
        added: list[tuple[tuple[str, str, str, str], int, Any]] = []
        with self._write() as conn:
            sid = self._store_id(conn, store)
            gen = self._bump(conn, sid)
            mid, _ = self._insert(
                conn, sid, scope, text, meta, "text", vectors[0] if vectors else None, added
            )
            tid = self._task(conn, sid, "AddMemories", scope, [mid])
            rid = self._audit(conn, sid, "AddMemories", started, scope=scope, target=mid)
            self._after_write(sid, gen, added)
        return WriteReceipt(tid, "completed", (mid,), rid)

    def add_many(self, store: str, items: Sequence[TextItem]) -> list[str]:
        """Add many memories in one transaction (embedded in one batch); ids in input order.

        This is the bulk-import path: one task and one audit record cover the whole batch.
        """
        started = time.perf_counter()
        checked: list[tuple[Scope, str, dict[str, str]]] = []
        for i, item in enumerate(items):
            if not isinstance(item, TextItem):
                raise InvalidInput(f"items[{i}] must be a TextItem", field=f"items[{i}]")
            _check_scope(item.scope)
            limits.check_text(item.text, field=f"items[{i}].text")
            if item.id is not None:
                limits.check_id(item.id, field=f"items[{i}].id")
            checked.append(
                (
                    item.scope,
                    item.text,
                    limits.check_metadata(item.metadata, field=f"items[{i}].metadata"),
                )
            )
        if not checked:
            return []
        vectors = self._embed([t for _, t, _ in checked])
        added: list[tuple[tuple[str, str, str, str], int, Any]] = []
        ids: list[str] = []
        with self._write() as conn:
            sid = self._store_id(conn, store)
            gen = self._bump(conn, sid)
            for i, (scope, text, meta) in enumerate(checked):
                mid, _ = self._insert(
                    conn,
                    sid,
                    scope,
                    text,
                    meta,
                    "text",
                    vectors[i] if vectors else None,
                    added,
                    memory_id=items[i].id,
                    created_at=items[i].created_at,
                )
                ids.append(mid)
            self._task(conn, sid, "AddMemories", checked[0][0], list(dict.fromkeys(ids)))
            self._audit(conn, sid, "AddMemories", started, scope=checked[0][0])
            self._after_write(sid, gen, added)
        return ids

    def add_messages(
        self,
        store: str,
        scope: Scope,
        messages: Sequence[Message],
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> WriteReceipt:
        """Store the turn as short-term messages, and each message as one memory unit."""
        started = time.perf_counter()
        _check_scope(scope)
        checked = limits.check_messages(messages)
        meta = limits.check_metadata(metadata)
        vectors = self._embed([m.content for m in checked])
        added: list[tuple[tuple[str, str, str, str], int, Any]] = []
        ids: list[str] = []
        with self._write() as conn:
            sid = self._store_id(conn, store)
            gen = self._bump(conn, sid)
            now = time.time()
            for i, m in enumerate(checked):
                unit_meta = {**meta, **m.metadata}
                mid, seq = self._insert(
                    conn,
                    sid,
                    scope,
                    m.content,
                    unit_meta,
                    "message",
                    vectors[i] if vectors else None,
                    added,
                )
                ids.append(mid)
                conn.execute(
                    "INSERT INTO messages (store_id, app_id, tenant_id, agent_id, run_id, id, role,"
                    " content, timestamp, metadata, memory_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        sid,
                        *scope.as_tuple(),
                        m.id or uuid.uuid4().hex,
                        m.role,
                        m.content,
                        m.timestamp if m.timestamp is not None else now,
                        json.dumps(dict(m.metadata), ensure_ascii=False, sort_keys=True),
                        seq,
                    ),
                )
            unique = list(dict.fromkeys(ids))
            tid = self._task(conn, sid, "AddMemories", scope, unique)
            rid = self._audit(conn, sid, "AddMemories", started, scope=scope)
            self._after_write(sid, gen, added)
        return WriteReceipt(tid, "completed", tuple(unique), rid)

    def _own_row(
        self, conn: sqlite3.Connection, store_id: int, scope: Scope, memory_id: str
    ) -> tuple[Any, ...]:
        limits.check_id(memory_id)
        row = conn.execute(
            f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE id = ? AND store_id = ?"
            " AND app_id = ? AND tenant_id = ? AND agent_id = ? AND run_id = ?",
            (memory_id, store_id, *scope.as_tuple()),
        ).fetchone()
        # Another scope's memory is reported exactly like a missing one: existence never leaks.
        if row is None:
            raise NotFound(
                f"memory {memory_id!r} was not found in scope {scope}", field="memory_id"
            )
        return tuple(row)

    def update_memory(
        self,
        store: str,
        scope: Scope,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Memory:
        """Replace the text and/or merge the metadata map; the index and vector follow."""
        started = time.perf_counter()
        _check_scope(scope)
        limits.check_id(memory_id)
        if text is not None:
            limits.check_text(text)
        meta = None if metadata is None else limits.check_metadata(metadata)
        vectors = self._embed([text]) if text is not None else None
        with (
            self._audit_failure(store, "UpdateMemory", started, scope, memory_id),
            self._write() as conn,
        ):
            sid = self._store_id(conn, store)
            row = self._own_row(conn, sid, scope, memory_id)
            seq = int(row[0])
            new_text = row[6] if text is None else text
            old_meta = json.loads(row[7])
            # Merged as on the service: the same key overwrites, {} clears the map.
            new_meta = old_meta if meta is None else ({**old_meta, **meta} if meta else {})
            gen = self._bump(conn, sid)
            conn.execute(
                "UPDATE memories SET text = ?, content_hash = ?, metadata = ?, updated_at = ?,"
                " version = version + 1 WHERE seq = ?",
                (
                    new_text,
                    _content_hash(scope, new_text),
                    json.dumps(new_meta, ensure_ascii=False, sort_keys=True),
                    time.time(),
                    seq,
                ),
            )
            conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (seq,))
            self._index(conn, sid, seq, scope, new_text, new_meta)
            added: list[tuple[tuple[str, str, str, str], int, Any]] = []
            removed: list[tuple[tuple[str, str, str, str], int]] = []
            if text is not None:
                # A vector of the old text would be wrong; replace it or drop it.
                conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (seq,))
                removed.append((scope.as_tuple(), seq))
                if vectors and self.embedder is not None and self._vectors is not None:
                    conn.execute(
                        "INSERT INTO memory_vectors (seq, model, vector) VALUES (?, ?, ?)",
                        (seq, self.embedder.name, self._vectors.to_blob(vectors[0])),
                    )
                    added.append((scope.as_tuple(), seq, vectors[0]))
            self._audit(conn, sid, "UpdateMemory", started, scope=scope, target=memory_id)
            out = self._memory(
                conn.execute(
                    f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE seq = ?", (seq,)
                ).fetchone()
            )
            self._after_write(sid, gen, added, removed)
        return out

    def delete_memory(self, store: str, scope: Scope, memory_id: str) -> None:
        """Delete the unit, its FTS row, its vector and the messages it was made from."""
        started = time.perf_counter()
        _check_scope(scope)
        with (
            self._audit_failure(store, "DeleteMemory", started, scope, memory_id),
            self._write() as conn,
        ):
            sid = self._store_id(conn, store)
            seq = int(self._own_row(conn, sid, scope, memory_id)[0])
            gen = self._bump(conn, sid)
            conn.execute("DELETE FROM memories WHERE seq = ?", (seq,))
            conn.execute("DELETE FROM memory_fts WHERE rowid = ?", (seq,))
            conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (seq,))
            conn.execute("DELETE FROM messages WHERE memory_seq = ?", (seq,))
            self._audit(conn, sid, "DeleteMemory", started, scope=scope, target=memory_id)
            self._after_write(sid, gen, (), [(scope.as_tuple(), seq)])

    # -- reads --------------------------------------------------------------------------
    @staticmethod
    def _memory(row: Sequence[Any]) -> Memory:
        return Memory(
            id=row[1],
            text=row[6],
            scope=Scope(row[2], row[3], row[4], row[5]),
            metadata=json.loads(row[7]),
            created_at=row[9],
            updated_at=row[10],
            unit_type=row[8],
            version=row[11],
        )

    def get_memory(self, store: str, scope: Scope, memory_id: str) -> Memory:
        started = time.perf_counter()
        _check_scope(scope)
        with (
            self._audit_failure(store, "GetMemory", started, scope, memory_id),
            self._read() as conn,
        ):
            sid = self._store_id(conn, store)
            memory = self._memory(self._own_row(conn, sid, scope, memory_id))
        self._audit_read(store, "GetMemory", started, scope=scope, target=memory_id)
        return memory

    def list_memories(
        self, store: str, pattern: ScopePattern, *, limit: int = 50, next_token: str | None = None
    ) -> Page[Memory]:
        started = time.perf_counter()
        _check_pattern(pattern)
        limits.check_limit(limit)
        after = decode_token(next_token)
        where, params = _pattern_sql(pattern)
        with self._read() as conn:
            sid = self._store_id(conn, store)
            rows = conn.execute(
                f"SELECT {_MEMORY_COLUMNS} FROM memories WHERE store_id = ?{where} AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (sid, *params, after, limit + 1),
            ).fetchall()
        self._audit_read(store, "ListMemories", started)
        return page([(int(r[0]), self._memory(r)) for r in rows], limit)

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
    ) -> list[SearchHit]:
        """Lexical (FTS5 BM25) and, with an embedder, exact cosine; fused by RRF.

        Scores are in [0, 1]. Lexical: the share of query terms matched, refined by BM25.
        Vector: the cosine (negative clipped to 0). Hybrid: the RRF score divided by its
        maximum (1.0 = first in both lists). ``mode`` (``lexical``, ``vector``, ``hybrid``)
        overrides :attr:`search_mode` for one call. ``enable_rerank``, ``context_scope`` (checked)
        and ``include_evidence`` have no local meaning.
        """
        started = time.perf_counter()
        flt, floor = _check_search(pattern, query, top_k, filters, min_similarity)
        limits.check_context_scope(context_scope, pattern)
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
        flt, floor = _check_search(pattern, query, top_k, filters, min_similarity)
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
    ) -> list[SearchHit]:
        """Rank, fetch and filter the hits; a search that succeeds is audited after its read."""
        want = max(top_k * 3, 30)
        with self._read() as conn:
            sid = self._store_id(conn, store)
            restrict = tags.filter_expression(sid, pattern, flt)
            prefix = tags.pattern_prefix(sid, pattern)
            exact_tenant = pattern.agent_id == "*" and prefix is not None and not flt
            # For a whole tenant without filters the prefixed terms already select the scope:
            # ANDing the tenant's tag would only walk its postings once more.
            lexq = analysis.build_query(
                query, tags=None if exact_tenant else restrict, prefix=prefix, scope=restrict
            )
            semantic: dict[int, float] = {}
            if qvec is not None and self._vectors is not None:
                # Scoring in a thread beside FTS5 was measured slower on 2 cores: BLAS already
                # uses both, so the two compete.
                entry, allowed = self._vector_candidates(
                    conn, sid, pattern, restrict if flt else None
                )
                semantic = dict(self._vectors.top(entry, qvec, want, allowed))
            lexical = ranking.lexical(conn, lexq, want, top_k) if use_lexical else {}
            fused = ranking.fuse(lexical, semantic)
            order = sorted(fused.items(), key=lambda kv: (-kv[1], -kv[0]))
            seqs = [s for s, _ in order]
            # One statement fetches them all: the lexical and vector rankings each return at
            # most ``want`` seqs, and top_k <= limits.MAX_TOP_K (50) makes that 150, so there are
            # at most 300 parameters, within SQLite's smallest limit of 999.
            rows = {}
            if seqs:
                marks = ",".join("?" * len(seqs))
                # By primary key only; the store and scope are checked below (a scope clause
                # here would lure the planner onto the scope index and scan the whole scope).
                for r in conn.execute(
                    f"SELECT {_MEMORY_COLUMNS}, store_id FROM memories WHERE seq IN ({marks})",
                    seqs,
                ):
                    rows[int(r[0])] = r
        hits: list[SearchHit] = []
        for seq, score in order:
            row = rows.get(seq)
            if row is None or row[-1] != sid:
                continue
            memory = self._memory(row)
            if not pattern.matches(memory.scope):
                continue
            if any(memory.metadata.get(k) != v for k, v in flt.items()):
                continue
            score = min(1.0, max(0.0, float(score)))
            if floor is not None and score < floor:
                continue
            hits.append(SearchHit(memory, score))
            if len(hits) == top_k:
                break
        self._audit_read(store, "SearchMemories", started)
        return hits

    def _vector_candidates(
        self, conn: sqlite3.Connection, store_id: int, pattern: ScopePattern, restrict: str | None
    ) -> tuple[Any, Any]:
        """The pattern's cached matrix (reloaded when stale) and the seqs filters allow."""
        assert self._vectors is not None and self.embedder is not None
        gen = int(
            conn.execute("SELECT generation FROM stores WHERE id = ?", (store_id,)).fetchone()[0]
        )
        where, params = _pattern_sql(pattern, "m.")
        model = self.embedder.name

        def load() -> Iterator[tuple[int, bytes]]:
            yield from conn.execute(
                "SELECT v.seq, v.vector FROM memories m JOIN memory_vectors v ON v.seq = m.seq"
                f" WHERE m.store_id = ?{where} AND v.model = ?",
                (store_id, *params, model),
            )

        entry = self._vectors.get((store_id, pattern.as_tuple()), gen, load)
        allowed = None
        if restrict is not None:
            import numpy

            allowed = numpy.fromiter(
                (
                    r[0]
                    for r in conn.execute(
                        "SELECT rowid FROM memory_fts WHERE memory_fts MATCH ?",
                        (f"tags : ({restrict})",),
                    )
                ),
                dtype=numpy.int64,
            )
        return entry, allowed

    def list_messages(
        self, store: str, scope: Scope, *, limit: int = 50, next_token: str | None = None
    ) -> Page[Message]:
        _check_scope(scope)
        limits.check_limit(limit)
        after = decode_token(next_token)
        with self._read() as conn:
            sid = self._store_id(conn, store)
            rows = conn.execute(
                "SELECT seq, id, role, content, timestamp, metadata FROM messages"
                " WHERE store_id = ? AND app_id = ? AND tenant_id = ? AND agent_id = ?"
                " AND run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (sid, *scope.as_tuple(), after, limit + 1),
            ).fetchall()
        return page(
            [
                (
                    int(r[0]),
                    Message(
                        role=r[2],
                        content=r[3],
                        id=r[1],
                        timestamp=r[4],
                        metadata=json.loads(r[5]),
                        scope=scope,
                    ),
                )
                for r in rows
            ],
            limit,
        )

    def _rows_after(
        self,
        store: str,
        table: str,
        columns: str,
        column: str,
        value: object,
        limit: int,
        next_token: str | None,
    ) -> list[Any]:
        """One page (plus one row) of a store's ``table`` rows in seq order, after the token;
        only rows whose ``column`` equals ``value`` when it is given."""
        limits.check_limit(limit)
        after = decode_token(next_token)
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"{column} must be a string", field=column)
        where = "" if value is None else f" AND {column} = ?"
        with self._read() as conn:
            sid = self._store_id(conn, store)
            return conn.execute(
                f"SELECT {columns} FROM {table} WHERE store_id = ?{where}"
                " AND seq > ? ORDER BY seq LIMIT ?",
                (sid, *(() if value is None else (value,)), after, limit + 1),
            ).fetchall()

    def list_requests(
        self,
        store: str,
        *,
        operation: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[RequestRecord]:
        """``pattern`` filters each page (a page may then hold fewer than ``limit`` items)."""
        rows = self._rows_after(
            store,
            "requests",
            "seq, id, operation, status, scope, target_id, latency_ms, created_at",
            "operation",
            operation,
            limit,
            next_token,
        )
        return page(
            [
                (
                    int(r[0]),
                    RequestRecord(
                        id=r[1],
                        operation=r[2],
                        status=r[3],
                        scope=None if r[4] is None else Scope.from_mapping(json.loads(r[4])),
                        target_id=r[5],
                        latency_ms=r[6],
                        created_at=r[7],
                    ),
                )
                for r in rows
            ],
            limit,
        ).filter(lambda r: pattern is None or (r.scope is not None and pattern.matches(r.scope)))

    def list_scopes(
        self,
        store: str,
        pattern: ScopePattern | None = None,
        *,
        limit: int = 50,
        next_token: str | None = None,
    ) -> Page[Scope]:
        limits.check_limit(limit)
        after = decode_token(next_token)
        if pattern is not None:
            _check_pattern(pattern)
        where, params = _pattern_sql(pattern) if pattern is not None else ("", [])
        with self._read() as conn:
            sid = self._store_id(conn, store)
            rows = conn.execute(
                "SELECT MIN(seq) AS first, app_id, tenant_id, agent_id, run_id FROM memories"
                f" WHERE store_id = ?{where} GROUP BY app_id, tenant_id, agent_id, run_id"
                " HAVING first > ? ORDER BY first LIMIT ?",
                (sid, *params, after, limit + 1),
            ).fetchall()
        return page([(int(r[0]), Scope(r[1], r[2], r[3], r[4])) for r in rows], limit)

    @staticmethod
    def _task_value(row: Sequence[Any]) -> MemoryTask:
        return MemoryTask(
            id=row[1],
            status=row[2],
            operation=row[3],
            scope=None if row[4] is None else Scope.from_mapping(json.loads(row[4])),
            created_at=row[5],
            finished_at=row[6],
            memory_ids=tuple(json.loads(row[7])),
            error=row[8],
        )

    _TASK_COLUMNS = "seq, id, status, operation, scope, created_at, finished_at, memory_ids, error"

    def get_task(self, store: str, task_id: str) -> MemoryTask:
        limits.check_id(task_id, field="task_id")
        with self._read() as conn:
            sid = self._store_id(conn, store)
            row = conn.execute(
                f"SELECT {self._TASK_COLUMNS} FROM tasks WHERE id = ? AND store_id = ?",
                (task_id, sid),
            ).fetchone()
        if row is None:
            raise NotFound(f"task {task_id!r} does not exist", field="task_id")
        return self._task_value(row)

    def list_tasks(
        self,
        store: str,
        *,
        status: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[MemoryTask]:
        """``pattern`` filters each page (a page may then hold fewer than ``limit`` items)."""
        rows = self._rows_after(
            store, "tasks", self._TASK_COLUMNS, "status", status, limit, next_token
        )
        return page([(int(r[0]), self._task_value(r)) for r in rows], limit).filter(
            lambda t: pattern is None or (t.scope is not None and pattern.matches(t.scope))
        )

    # -- dream --------------------------------------------------------------------------
    def create_dream_task(
        self,
        store: str,
        scopes: ScopePattern | Sequence[ScopePattern],
        *,
        apply_mode: str = "proposal",
        instructions: str | None = None,
    ) -> DreamTask:
        raise Unsupported(_DREAM_UNSUPPORTED)

    def get_dream_task(self, store: str, task_id: str) -> DreamTask:
        raise Unsupported(_DREAM_UNSUPPORTED)

    def list_dream_tasks(
        self,
        store: str,
        *,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
        status: str | None = None,
    ) -> Page[DreamTask]:
        raise Unsupported(_DREAM_UNSUPPORTED)

    def cancel_dream_task(self, store: str, task_id: str) -> DreamTask:
        raise Unsupported(_DREAM_UNSUPPORTED)

    def list_dream_actions(
        self, store: str, task_id: str, *, limit: int = 50, next_token: str | None = None
    ) -> Page[DreamAction]:
        raise Unsupported(_DREAM_UNSUPPORTED)

    def apply_dream_actions(
        self, store: str, task_id: str, action_ids: Sequence[str]
    ) -> list[DreamAction]:
        raise Unsupported(_DREAM_UNSUPPORTED)

    # -- maintenance --------------------------------------------------------------------
    def backfill_vectors(self, store: str, *, batch: int = 64) -> int:
        """Embed memories that have no vector from the current embedder; returns how many."""
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
                self._bump(conn, sid)
                for (seq, _), vec in zip(rows, vectors):
                    assert self._vectors is not None
                    conn.execute(
                        "INSERT OR REPLACE INTO memory_vectors (seq, model, vector)"
                        " SELECT ?, ?, ? WHERE EXISTS (SELECT 1 FROM memories WHERE seq = ?)",
                        (seq, self.embedder.name, self._vectors.to_blob(vec), seq),
                    )
            done += len(rows)

    def compact(self) -> None:
        """Merge the FTS index, checkpoint the WAL and VACUUM: leaves no deleted text behind."""
        with self._lock, mapped(self.path):
            self._check_open()
            self._conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('optimize')")
            self._conn.execute("VACUUM")
            self._conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")

    def close(self) -> None:
        with self._lock:
            if not self._closed:
                self._closed = True
                with mapped(self.path):
                    self._conn.close()

    def __enter__(self) -> SqliteMemoryStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _check_scope(scope: object) -> None:
    if not isinstance(scope, Scope):
        raise InvalidInput("scope must be a concrete Scope", field="scope")


def _check_pattern(pattern: object) -> None:
    if not isinstance(pattern, ScopePattern):
        raise InvalidInput("pattern must be a ScopePattern", field="scope")


def _check_search(
    pattern: object,
    query: object,
    top_k: object,
    filters: Mapping[str, str] | None,
    min_similarity: float | None,
) -> tuple[dict[str, str], float | None]:
    """The arguments both searches share, checked before anything is embedded.

    Returns the checked filters and the similarity floor.
    """
    _check_pattern(pattern)
    limits.check_query(query)
    limits.check_top_k(top_k)
    flt = limits.check_metadata(filters, field="filters")
    floor = limits.check_min_similarity(min_similarity)
    return flt, floor
