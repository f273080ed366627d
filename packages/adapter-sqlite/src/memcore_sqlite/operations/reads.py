"""Reads of the store's records besides memories: messages, requests, scopes and tasks."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from memcore import limits
from memcore.errors import InvalidInput, NotFound
from memcore.paging import decode_token, page
from memcore.scope import Scope, ScopePattern
from memcore.values import MemoryTask, Message, Page, RequestRecord
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.storage.rows import check_pattern, check_scope, pattern_sql


class RecordReads:
    """Paged listings of messages, audit records, scopes and tasks."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def list_messages(
        self, store: str, scope: Scope, *, limit: int = 50, next_token: str | None = None
    ) -> Page[Message]:
        check_scope(scope)
        limits.check_limit(limit)
        after = decode_token(next_token)
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
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
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
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
        """``pattern`` filters each page (a page may then hold fewer than ``limit`` items);
        every read made before the call is in it (its record is written first)."""
        self._tx.flush_read_audits()
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
            check_pattern(pattern)
        where, params = pattern_sql(pattern) if pattern is not None else ("", [])
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
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
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
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
