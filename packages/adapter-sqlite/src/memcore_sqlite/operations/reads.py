"""Reads of the store's records besides memories: messages (and the turns around a memory),
requests, scopes and tasks."""

from __future__ import annotations

import json
from typing import Any, NamedTuple

from memcore import limits
from memcore.errors import InvalidInput, NotFound
from memcore.paging import page
from memcore.scope import Scope, ScopePattern
from memcore.values import MemoryTask, Message, Page, RequestRecord, TurnContext
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.storage.page_tokens import Cursor
from memcore_sqlite.storage.rows import check_pattern, check_scope, columns, pattern_sql


class _MessageRow(NamedTuple):
    seq: int
    id: str
    role: str
    content: str
    timestamp: float | None
    metadata: str


class _RequestRow(NamedTuple):
    seq: int
    id: str
    operation: str
    status: str
    scope: str | None
    target_id: str | None
    latency_ms: float
    created_at: float


class _TaskRow(NamedTuple):
    seq: int
    id: str
    status: str
    operation: str
    scope: str | None
    created_at: float
    finished_at: float | None
    memory_ids: str
    error: str | None


def _message(row: Any, scope: Scope) -> Message:
    r = _MessageRow._make(row)
    return Message(
        role=r.role,
        content=r.content,
        id=r.id,
        timestamp=r.timestamp,
        metadata=json.loads(r.metadata),
        scope=scope,
    )


def _scope(column: str | None) -> Scope | None:
    return None if column is None else Scope.from_mapping(json.loads(column))


class RecordReads:
    """Paged listings of messages, audit records, scopes and tasks."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def list_messages(
        self, store: str, scope: Scope, *, limit: int = 50, next_token: str | None = None
    ) -> Page[Message]:
        check_scope(scope)
        limits.check_limit(limit)
        cursor = self._tx.tokens.listing("messages", store, scope)
        after = cursor.open(next_token)
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            rows = conn.execute(
                f"SELECT {columns(_MessageRow)} FROM messages"
                " WHERE store_id = ? AND app_id = ? AND tenant_id = ? AND agent_id = ?"
                " AND run_id = ? AND seq > ? ORDER BY seq LIMIT ?",
                (sid, *scope.as_tuple(), after, limit + 1),
            ).fetchall()
        return page([(int(r[0]), _message(r, scope)) for r in rows], limit, cursor.seal)

    def neighbour_turns(
        self, store: str, scope: Scope, memory_id: str, *, turns: int
    ) -> TurnContext:
        """Up to ``turns`` messages of exactly ``scope`` each side of the last message that
        became ``memory_id`` (``messages.memory_seq``), in the order they were said. Every
        read names the whole scope, so nothing of another session or tenant can come back;
        a memory not in ``scope`` answers as one that came from no message (empty)."""
        check_scope(scope)
        limits.check_id(memory_id)
        if turns < 1:
            return TurnContext()
        where = (
            " WHERE store_id = ? AND app_id = ? AND tenant_id = ? AND agent_id = ? AND run_id = ?"
        )
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            key = (sid, *scope.as_tuple())
            memory = conn.execute(
                f"SELECT seq FROM memories{where} AND id = ?", (*key, memory_id)
            ).fetchone()
            anchor = (
                None
                if memory is None
                else conn.execute(
                    f"SELECT timestamp, seq FROM messages{where} AND memory_seq = ?"
                    " ORDER BY seq DESC LIMIT 1",
                    (*key, memory[0]),
                ).fetchone()
            )
            if anchor is None:
                return TurnContext()
            # In the order said, which is the order written unless a conversation was added
            # after a later one (an older chat imported into the same session): by time,
            # then as written.
            select = f"SELECT {columns(_MessageRow)} FROM messages{where}"
            before = conn.execute(
                f"{select} AND (timestamp, seq) < (?, ?) ORDER BY timestamp DESC, seq DESC LIMIT ?",
                (*key, *anchor, turns),
            ).fetchall()
            after = conn.execute(
                f"{select} AND (timestamp, seq) > (?, ?) ORDER BY timestamp, seq LIMIT ?",
                (*key, *anchor, turns),
            ).fetchall()
        return TurnContext(
            tuple(_message(r, scope) for r in reversed(before)),
            tuple(_message(r, scope) for r in after),
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
        pattern: ScopePattern | None = None,
    ) -> tuple[list[Any], Cursor]:
        """One page (plus one row) of a store's ``table`` rows in seq order, after the token,
        and the listing's cursor;
        only rows whose ``column`` equals ``value`` when it is given, and whose ``scope``
        (JSON) lies in ``pattern``: filtered in the query, so another tenant's rows neither
        shorten a page nor leave it empty before the end."""
        limits.check_limit(limit)
        cursor = self._tx.tokens.listing(table, store, value, pattern)
        after = cursor.open(next_token)
        if value is not None and not isinstance(value, str):
            raise InvalidInput(f"{column} must be a string", field=column)
        where = "" if value is None else f" AND {column} = ?"
        params: list[object] = [] if value is None else [value]
        if pattern is not None:
            check_pattern(pattern)
            levels, fixed = pattern_sql(pattern, level="json_extract(scope, '$.{name}')")
            where += levels
            params.extend(fixed)
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            rows = conn.execute(
                f"SELECT {columns} FROM {table} WHERE store_id = ?{where}"
                " AND seq > ? ORDER BY seq LIMIT ?",
                (sid, *params, after, limit + 1),
            ).fetchall()
        return rows, cursor

    def list_requests(
        self,
        store: str,
        *,
        operation: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[RequestRecord]:
        """Only the records of ``pattern`` when it is given; every read made before the call
        is in it (its record is written first)."""
        limits.check_operation(operation)
        self._tx.flush_read_audits()
        rows, cursor = self._rows_after(
            store,
            "requests",
            columns(_RequestRow),
            "operation",
            operation,
            limit,
            next_token,
            pattern,
        )
        return page(
            [
                (
                    int(r.seq),
                    RequestRecord(
                        id=r.id,
                        operation=r.operation,
                        status=r.status,
                        scope=_scope(r.scope),
                        target_id=r.target_id,
                        latency_ms=r.latency_ms,
                        created_at=r.created_at,
                    ),
                )
                for r in map(_RequestRow._make, rows)
            ],
            limit,
            cursor.seal,
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
        cursor = self._tx.tokens.listing("scopes", store, pattern)
        after = cursor.open(next_token)
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
        return page([(int(first), Scope(*levels)) for first, *levels in rows], limit, cursor.seal)

    @staticmethod
    def _task_value(r: _TaskRow) -> MemoryTask:
        return MemoryTask(
            id=r.id,
            status=r.status,
            operation=r.operation,
            scope=_scope(r.scope),
            created_at=r.created_at,
            finished_at=r.finished_at,
            memory_ids=tuple(json.loads(r.memory_ids)),
            error=r.error,
        )

    _TASK_COLUMNS = columns(_TaskRow)

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
        return self._task_value(_TaskRow._make(row))

    def list_tasks(
        self,
        store: str,
        *,
        status: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[MemoryTask]:
        """Only the tasks of ``pattern`` when it is given."""
        limits.check_status(status)
        rows, cursor = self._rows_after(
            store, "tasks", self._TASK_COLUMNS, "status", status, limit, next_token, pattern
        )
        tasks = map(_TaskRow._make, rows)
        return page([(int(r.seq), self._task_value(r)) for r in tasks], limit, cursor.seal).filter(
            lambda t: pattern is None or (t.scope is not None and pattern.matches(t.scope))
        )
