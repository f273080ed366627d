"""The message log moved to another tenant (:class:`~memcore.ports.MessageMove`): a
session's turns follow its memories, so each moved memory keeps the turns around it."""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Sequence

from memcore import limits
from memcore.scope import Scope, ScopePattern
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.storage.rows import check_pattern, content_hash, pattern_sql

#: A scope's messages, each with the text of the memory it became (NULL: none, or one that
#: is not in the message's own scope).
_LOG = (
    "SELECT g.seq, m.text FROM messages g LEFT JOIN memories m ON m.seq = g.memory_seq"
    " AND m.app_id = g.app_id AND m.tenant_id = g.tenant_id AND m.agent_id = g.agent_id"
    " AND m.run_id = g.run_id WHERE g.store_id = ? AND g.app_id = ? AND g.tenant_id = ?"
    " AND g.agent_id = ? AND g.run_id = ?"
)

#: How many messages each scope logs (the pattern's clauses go in ``{}``), first written first.
_COUNTS = (
    "SELECT app_id, tenant_id, agent_id, run_id, COUNT(*) FROM messages WHERE store_id = ?{}"
    " GROUP BY app_id, tenant_id, agent_id, run_id ORDER BY MIN(seq)"
)


class MessageMoves:
    """Counts of the message log by scope, and its moves; a move is one transaction."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def message_counts(self, store: str, pattern: ScopePattern) -> dict[Scope, int]:
        """How many messages each scope under ``pattern`` logs, in the order first written."""
        check_pattern(pattern)
        where, params = pattern_sql(pattern)
        with self._tx.read() as conn:
            rows = conn.execute(_COUNTS.format(where), (self._tx.store_id(conn, store), *params))
            return {Scope(*levels): int(n) for *levels, n in rows}

    def move_messages(self, store: str, moves: Sequence[tuple[Scope, Scope]]) -> int:
        """Each source's messages become its target's rows, keeping their seqs (so their
        place in the order said), ids and times; each that became a memory points at the
        target's memory of that memory's text, else at none. The memory's own delete then
        leaves them alone, and a source moved once has nothing left to move."""
        started = time.perf_counter()
        checked = limits.check_message_moves(moves)
        moved = 0
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            for source, target in checked:
                rows = conn.execute(_LOG, (sid, *source.as_tuple())).fetchall()
                if not rows:
                    continue
                texts = {str(text) for _, text in rows if text is not None}
                links = {text: _same_text(conn, sid, target, text) for text in texts}
                conn.executemany(
                    "UPDATE messages SET app_id = ?, tenant_id = ?, agent_id = ?, run_id = ?,"
                    " memory_seq = ? WHERE seq = ?",
                    [
                        (*target.as_tuple(), None if text is None else links[str(text)], seq)
                        for seq, text in rows
                    ],
                )
                moved += len(rows)
                self._tx.audit(conn, sid, "MoveMessages", started, scope=source)
        return moved


def _same_text(conn: sqlite3.Connection, store_id: int, scope: Scope, text: str) -> int | None:
    """The seq of ``scope``'s memory of ``text`` (a scope holds a text once), if it has one."""
    for seq, *levels, stored in conn.execute(
        "SELECT seq, app_id, tenant_id, agent_id, run_id, text FROM memories"
        " WHERE store_id = ? AND content_hash = ?",
        (store_id, content_hash(scope, text)),
    ):
        if tuple(levels) == scope.as_tuple() and str(stored).strip() == text.strip():
            return int(seq)
    return None
