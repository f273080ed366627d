"""The message log as a backup carries it (:class:`~memcore.ports.MessageLog`): every message
under a pattern with the memory it became, and such a log written back, so that a restored
memory is shown with the turns it was said among."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Sequence
from typing import Any

from memcore import limits
from memcore.errors import InvalidInput
from memcore.paging import page
from memcore.scope import Scope, ScopePattern
from memcore.values import LoggedMessage, Message, Page
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.operations.writes import MemoryWrites
from memcore_sqlite.storage.rows import check_pattern, check_scope, pattern_sql, scope_of

#: The log's rows under a pattern (its clauses go in ``{}``), each with the id of the memory
#: it became when that memory is in the message's own scope.
_LISTING = (
    "SELECT g.seq, g.app_id, g.tenant_id, g.agent_id, g.run_id, g.id, g.role, g.content,"
    " g.timestamp, g.metadata, m.id FROM messages g LEFT JOIN memories m ON m.seq ="
    " g.memory_seq AND m.store_id = g.store_id AND m.app_id = g.app_id AND m.tenant_id ="
    " g.tenant_id AND m.agent_id = g.agent_id AND m.run_id = g.run_id"
    " WHERE g.store_id = ?{} AND g.seq > ? ORDER BY g.seq LIMIT ?"
)

#: What tells a logged message again, in its scope: its id, role, text and time, each None
#: where the message to restore gives none (the store made one up when it logged it).
_Key = tuple[str | None, str, str, float | None]


class MessageLogs:
    """The log listed for a backup, and written back from one in one transaction."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def list_logged_messages(
        self,
        store: str,
        pattern: ScopePattern,
        *,
        limit: int = 50,
        next_token: str | None = None,
    ) -> Page[LoggedMessage]:
        check_pattern(pattern)
        limits.check_limit(limit)
        cursor = self._tx.tokens.listing("message_log", store, pattern)
        after = cursor.open(next_token)
        where, params = pattern_sql(pattern, "g.")
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            rows = conn.execute(_LISTING.format(where), (sid, *params, after, limit + 1)).fetchall()
        return page([(int(r[0]), _logged(r)) for r in rows], limit, cursor.seal)

    def restore_messages(self, store: str, messages: Sequence[LoggedMessage]) -> int:
        started = time.perf_counter()
        if isinstance(messages, (str, bytes)) or not isinstance(messages, Sequence):
            raise InvalidInput("messages must be a list", field="messages")
        checked: list[tuple[Scope, Message, str | None]] = []
        for i, logged in enumerate(messages):  # every message, before anything is written
            field = f"messages[{i}]"
            if not isinstance(logged, LoggedMessage):
                raise InvalidInput(f"{field} must be a LoggedMessage", field=field)
            message = limits.check_logged_message(logged.message, field=field)
            check_scope(message.scope)
            assert message.scope is not None
            if logged.memory_id is not None:
                limits.check_id(logged.memory_id, field=f"{field}.memory_id")
            checked.append((message.scope, message, logged.memory_id))
        if not checked:
            return 0
        added = 0
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            gen = self._tx.bump(conn, sid)
            logged_keys: dict[Scope, set[_Key]] = {}
            now = time.time()
            for scope, message, memory_id in checked:
                keys = logged_keys.get(scope)
                if keys is None:
                    keys = logged_keys[scope] = _keys(conn, sid, scope)
                if _key(message) in keys:
                    continue
                stamp = now if message.timestamp is None else float(message.timestamp)
                keys.update(_matches(message.id, message.role, message.content, stamp))
                link = None if memory_id is None else _memory_seq(conn, sid, scope, memory_id)
                MemoryWrites.log_message(conn, sid, scope, message, now, memory_seq=link)
                added += 1
            self._tx.audit(conn, sid, "RestoreMessages", started, scope=checked[0][0])
            self._tx.after_write(sid, gen, ())
        return added


def _logged(row: Any) -> LoggedMessage:
    _, app_id, tenant_id, agent_id, run_id, mid, role, content, stamp, meta, memory = row
    message = Message(
        role=role,
        content=content,
        id=mid,
        timestamp=stamp,
        metadata={} if meta == "{}" else json.loads(meta),
        scope=scope_of(app_id, tenant_id, agent_id, run_id),
    )
    return LoggedMessage(message, memory)


def _key(message: Message) -> _Key:
    """What the message to restore gives of what tells it: an id or a time it leaves out is
    None, so it matches a logged one whatever the store made up for it."""
    stamp = None if message.timestamp is None else float(message.timestamp)
    return (message.id, message.role, message.content, stamp)


def _matches(message_id: str | None, role: str, content: str, stamp: float) -> set[_Key]:
    """Every key that finds a logged message: with and without its id and its time (one
    logged without an id got one made up, which no restore can name)."""
    return {
        (message_id, role, content, stamp),
        (None, role, content, stamp),
        (message_id, role, content, None),
        (None, role, content, None),
    }


def _keys(conn: sqlite3.Connection, store_id: int, scope: Scope) -> set[_Key]:
    """What ``scope`` logs already (read once per scope a restore writes to)."""
    rows = conn.execute(
        "SELECT id, role, content, timestamp FROM messages WHERE store_id = ? AND app_id = ?"
        " AND tenant_id = ? AND agent_id = ? AND run_id = ?",
        (store_id, *scope.as_tuple()),
    )
    keys: set[_Key] = set()
    for i, r, c, t in rows:
        keys.update(_matches(str(i), str(r), str(c), float(t)))
    return keys


def _memory_seq(
    conn: sqlite3.Connection, store_id: int, scope: Scope, memory_id: str
) -> int | None:
    """The seq of memory ``memory_id`` when it is in ``scope``; None otherwise (a link never
    reaches into another scope, let alone another tenant)."""
    row = conn.execute(
        "SELECT seq FROM memories WHERE id = ? AND store_id = ? AND app_id = ? AND tenant_id = ?"
        " AND agent_id = ? AND run_id = ?",
        (memory_id, store_id, *scope.as_tuple()),
    ).fetchone()
    return None if row is None else int(row[0])
