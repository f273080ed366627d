"""The catalogue of memory stores in one file: create, describe, list, update, delete."""

from __future__ import annotations

import secrets
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memcore import limits
from memcore.errors import Conflict, InvalidInput, StoreNotFound
from memcore.values import StoreInfo
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.vector import code_pages

if TYPE_CHECKING:
    from memcore.ports import ProgressCallback


def first_generation() -> int:
    """A new store's first generation: random, not 0. A deleted store's id is taken again by
    the next store made (``INTEGER PRIMARY KEY``), and another process's caches are keyed by
    id and used at a matching generation (:mod:`memcore_sqlite.vector.cache`,
    :mod:`memcore_sqlite.lexical.postings.cache`, :mod:`memcore_sqlite.lexical.lengths`): counted
    from 0 again, the new store reached the generation they were held at, and they answered
    its searches with the old store's rows. 62 bits leave room for every write after."""
    return secrets.randbits(62)


class StoreCatalog:
    """Store-level operations of :class:`~memcore_sqlite.store.SqliteMemoryStore`."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    @staticmethod
    def _info(row: Sequence[Any]) -> StoreInfo:
        name, description, created_at = row
        return StoreInfo(name=name, description=description, status="ready", created_at=created_at)

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
        if not create or self._tx.read_only:
            return self.describe_store(store)
        with self._tx.read() as conn:  # the common case: no write lock for every open
            row = conn.execute(
                "SELECT name, description, created_at FROM stores WHERE name = ?", (store,)
            ).fetchone()
        if row is not None:
            return self._info(row)
        with self._tx.write() as conn:
            conn.execute(
                "INSERT OR IGNORE INTO stores (name, description, created_at, generation)"
                " VALUES (?, ?, ?, ?)",
                (store, description, time.time(), first_generation()),
            )
            row = conn.execute(
                "SELECT name, description, created_at FROM stores WHERE name = ?", (store,)
            ).fetchone()
        return self._info(row)

    def describe_store(self, store: str) -> StoreInfo:
        limits.check_store_name(store)
        with self._tx.read() as conn:
            row = conn.execute(
                "SELECT name, description, created_at FROM stores WHERE name = ?", (store,)
            ).fetchone()
        if row is None:
            raise StoreNotFound(f"memory store {store!r} does not exist", field="memory_store_name")
        return self._info(row)

    def list_stores(self) -> list[StoreInfo]:
        with self._tx.read() as conn:
            rows = conn.execute(
                "SELECT name, description, created_at FROM stores ORDER BY name"
            ).fetchall()
        return [self._info(r) for r in rows]

    def create_store(
        self, store: str, *, description: str = "", extract_instructions: str | None = None
    ) -> StoreInfo:
        limits.check_store_name(store)
        limits.check_extract_instructions(extract_instructions)
        with self._tx.write() as conn:
            if conn.execute("SELECT 1 FROM stores WHERE name = ?", (store,)).fetchone():
                raise Conflict(
                    f"memory store {store!r} already exists",
                    field="memory_store_name",
                    retryable=False,
                )
            now = time.time()
            conn.execute(
                "INSERT INTO stores (name, description, created_at, generation) VALUES (?, ?, ?, ?)",
                (store, description, now, first_generation()),
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
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            if description is not None:
                conn.execute("UPDATE stores SET description = ? WHERE id = ?", (description, sid))
            row = conn.execute(
                "SELECT name, description, created_at FROM stores WHERE id = ?", (sid,)
            ).fetchone()
        return self._info(row)

    def delete_store(self, store: str) -> None:
        """Delete the store and everything in it: memories, index, vectors, messages, logs."""
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            seqs = "SELECT seq FROM memories WHERE store_id = ?"
            conn.execute(f"DELETE FROM memory_fts_text WHERE seq IN ({seqs})", (sid,))
            conn.execute(f"DELETE FROM memory_vectors WHERE seq IN ({seqs})", (sid,))
            conn.execute(
                "DELETE FROM dream_actions WHERE dream_seq IN"
                " (SELECT seq FROM dream_tasks WHERE store_id = ?)",
                (sid,),
            )
            for table in ("memories", "messages", "tasks", "requests", "dream_tasks"):
                conn.execute(f"DELETE FROM {table} WHERE store_id = ?", (sid,))
            conn.execute("DELETE FROM stores WHERE id = ?", (sid,))
            # Its tenants' numbers go with it, never to be handed out again (AUTOINCREMENT).
            conn.execute("DELETE FROM tenant_prefixes WHERE store_id = ?", (sid,))
            code_pages.drop_store(conn, sid)
            lengths = self._tx.lengths
            self._tx.post_commit.append(lambda: lengths.drop_store(sid))
            postings = self._tx.postings
            self._tx.post_commit.append(lambda: postings.drop_store(sid))
            if self._tx.vectors is not None:
                # After COMMIT, like the other cache updates (see _after_write).
                cache = self._tx.vectors
                self._tx.post_commit.append(lambda: cache.drop_store(sid))
