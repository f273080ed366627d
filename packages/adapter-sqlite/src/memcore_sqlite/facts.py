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
from memcore_sqlite.rows import check_scope
from memcore_sqlite.writes import MemoryWrites


class FactWrites(MemoryWrites):
    #: Set by :func:`memcore_sqlite.model.attach_model`; None stores turns as they are.
    extractor: FactExtractor | None = None

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
            return super().add_messages(store, scope, messages, metadata=metadata, sync=sync)
        started = time.perf_counter()
        check_scope(scope)
        checked = limits.check_messages(messages)
        meta = limits.check_metadata(metadata)
        facts = self.extractor.extract(checked)
        if facts is None:
            return super().add_messages(store, scope, messages, metadata=metadata, sync=sync)
        vectors = self._embed(facts)
        added: list[tuple[tuple[str, str, str, str], int, Any]] = []
        ids: list[str] = []
        now = time.time()
        said = max((m.timestamp for m in checked if m.timestamp is not None), default=now)
        with self._write() as conn:
            sid = self._store_id(conn, store)
            gen = self._bump(conn, sid)
            for i, fact in enumerate(facts):
                mid, _ = self._insert(
                    conn,
                    sid,
                    scope,
                    fact,
                    meta,
                    "fact",
                    vectors[i] if vectors else None,
                    added,
                    created_at=said,
                )
                ids.append(mid)
            for m in checked:
                self._log_message(conn, sid, scope, m, now)
            unique = list(dict.fromkeys(ids))
            tid = self._task(conn, sid, "AddMemories", scope, unique)
            rid = self._audit(conn, sid, "AddMemories", started, scope=scope)
            self._after_write(sid, gen, added)
        return WriteReceipt(tid, "completed", tuple(unique), rid, accepted_messages=len(checked))
