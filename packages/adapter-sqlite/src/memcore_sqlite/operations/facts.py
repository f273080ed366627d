"""Writes of chat turns through the user's model: the turn is kept as short-term messages,
and the concise facts the model found in it become the long-term memories.

Without an extractor, or when the model fails, the turn is stored message by message as
before: a write the store accepted is never lost to a model outage.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import Any

from memcore import limits
from memcore.ports import FactExtractor
from memcore.scope import Scope
from memcore.values import Message, WriteReceipt
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.operations.writes import MemoryWrites
from memcore_sqlite.storage.rows import check_scope


class FactWrites:
    """``add_messages`` through an extractor, else (none given, or it failed) as ``writes``
    stores a turn: message by message."""

    def __init__(
        self, tx: Transactions, writes: MemoryWrites, extractor: FactExtractor | None
    ) -> None:
        self._tx = tx
        self._writes = writes
        self.extractor = extractor

    def add_messages(
        self,
        store: str,
        scope: Scope,
        messages: Sequence[Message],
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> WriteReceipt:
        """With an extractor, the memories are the facts of the turn (none when it holds
        nothing worth keeping); its messages are kept either way."""
        if self.extractor is None:
            return self._writes.add_messages(store, scope, messages, metadata=metadata, sync=sync)
        started = time.perf_counter()
        check_scope(scope)
        checked = limits.check_messages(messages)
        meta = limits.check_metadata(metadata)
        facts = self.extractor.extract(checked)
        if facts is None:
            return self._writes.add_messages(store, scope, messages, metadata=metadata, sync=sync)
        vectors = self._tx.embed(facts)
        added: list[tuple[tuple[str, str, str, str], int, Any]] = []
        ids: list[str] = []
        now = time.time()
        # The facts were said with the turn's last dated message (none dated: now).
        said = max((m.timestamp for m in checked if m.timestamp is not None), default=None)
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            gen = self._tx.bump(conn, sid)
            for i, fact in enumerate(facts):
                mid, _ = self._writes.insert(
                    conn,
                    sid,
                    scope,
                    fact,
                    meta,
                    "fact",
                    vectors[i] if vectors else None,
                    added,
                    said_at=said,
                )
                ids.append(mid)
            for m in checked:
                self._writes.log_message(conn, sid, scope, m, now)
            unique = list(dict.fromkeys(ids))
            tid = self._tx.task(conn, sid, "AddMemories", scope, unique)
            rid = self._tx.audit(conn, sid, "AddMemories", started, scope=scope)
            self._tx.after_write(sid, gen, added)
        return WriteReceipt(tid, "completed", tuple(unique), rid, accepted_messages=len(checked))
