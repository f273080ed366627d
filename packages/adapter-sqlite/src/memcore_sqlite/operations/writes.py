"""Writes of memories: add (one, many, a turn of messages), update and delete.

A text already in the scope is not stored twice: the existing memory's id is returned, and
its version moves (even when nothing else of it changes), so that every write that landed in
a memory can be told from none.
"""

from __future__ import annotations

import json
import sqlite3
import time
import uuid
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from memcore import limits
from memcore.errors import Conflict, InvalidInput, NotFound
from memcore.scope import Scope, ScopePattern
from memcore.values import MemoryRecord, Message, TextItem, WriteReceipt
from memcore_sqlite.lexical import analysis, tags
from memcore_sqlite.operations import pending as deferred
from memcore_sqlite.operations import version_links
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.search import supersession
from memcore_sqlite.storage import tenant_prefixes as prefixes
from memcore_sqlite.storage.rows import (
    MEMORY_COLUMNS,
    check_scope,
    content_hash,
    memory_from_row,
    memory_row,
    pattern_sql,
    rows_in,
    tenant_holds,
)


def _said_before(
    conn: sqlite3.Connection, store_id: int, scope: Scope, memory_id: str, when: float
) -> bool:
    """Whether the memory ``memory_id`` of ``scope``'s tenant was said before ``when``."""
    row = conn.execute(
        "SELECT said_at, created_at FROM memories WHERE id = ? AND store_id = ? AND app_id = ?"
        " AND tenant_id = ?",
        (memory_id, store_id, scope.app_id, scope.tenant_id),
    ).fetchone()
    return row is not None and float(row[0] if row[0] is not None else row[1]) < when


class MemoryWrites:
    """The write half of the memory operations; each is one transaction."""

    def __init__(self, tx: Transactions) -> None:
        self._tx = tx

    def insert(
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
        said_at: float | None = None,
        new_id_if_taken: bool = False,
        restored: tuple[float | None, int | None] = (None, None),
    ) -> tuple[str, int]:
        """Insert one unit unless the same text is already in the scope; (id, seq).

        A repeated text is not stored twice: the existing memory takes the repeat as its newest
        occurrence (see :meth:`_repeat`). ``memory_id`` keeps a caller's id (import); one
        another memory of the tenant holds is a :class:`Conflict`, so an import can never
        overwrite or alias an existing memory, or with ``new_id_if_taken`` the unit gets a
        new id instead. Ids are unique per tenant (schema 16): what other tenants hold never
        decides, so an import cannot tell whether one of them holds the id.
        ``said_at``, when the text was said (a message's own time), is the memory's
        ``created_at`` unless one is given (an import gives both) and, as a repeat, the time
        compared; ``updated_at`` stays when the row
        was written (what a session dream pass looks for). ``restored`` is the
        ``(updated_at, version)`` an import gives back to a new row (None: now, and 1).
        """
        now = time.time()
        created = (said_at if said_at is not None else now) if created_at is None else created_at
        digest = content_hash(scope, text)
        # The digest covers the scope; comparing the scope columns (and the text, which a
        # 16-byte digest could in principle share with another) in Python keeps the planner on
        # the hash index (with them in SQL it prefers the scope index and scans the scope).
        for selected in conn.execute(
            f"SELECT {MEMORY_COLUMNS}, superseded_how, superseded_by FROM memories"
            " WHERE store_id = ? AND content_hash = ?",
            (store_id, digest),
        ):
            row, superseded = memory_row(selected), selected[-1] is not None
            replaced_by = selected[-1] if selected[-2] == "updated" else None
            if (row.app_id, row.tenant_id, row.agent_id, row.run_id) == scope.as_tuple() and str(
                row.text
            ).strip() == text.strip():
                seq, found = int(row.seq), (str(row.metadata), float(row.updated_at))
                if said_at is None:
                    newer = self._repeat(conn, store_id, seq, found, scope, text, metadata, created)
                else:
                    last = row.said_at
                    if last is None:  # a row written before schema 10
                        last = self._last_said(conn, seq, found[1])
                    newer = self._repeat(
                        conn, store_id, seq, found, scope, text, metadata, now, said=(said_at, last)
                    )
                if (
                    newer
                    and superseded
                    and supersession.forgotten(
                        conn, store_id, (scope.app_id, scope.tenant_id, str(row.id))
                    )
                ):
                    # A copy a merge folded away, whose merged memory was forgotten since:
                    # said again now, the fact is current again (else the write that answered
                    # with this id would show nowhere). An older occurrence leaves it hidden.
                    conn.execute(
                        "UPDATE memories SET superseded_by = NULL, superseded_how = NULL"
                        " WHERE seq = ?",
                        (seq,),
                    )
                elif newer and replaced_by is not None:
                    heard = created if said_at is None else said_at
                    if _said_before(conn, store_id, scope, str(replaced_by), heard):
                        # A fact a newer one replaced, said again since ("I run 3 times a
                        # week" after "I now run 5"): true again, so current, as an edit's
                        # new text is; it stayed hidden, and went when its successor did.
                        version_links.made_current(conn, store_id, scope, seq)
                return str(row.id), seq
        mid = memory_id or uuid.uuid4().hex
        if memory_id is not None and tenant_holds(conn, store_id, scope, memory_id):
            if new_id_if_taken:
                mid = uuid.uuid4().hex
            else:
                raise Conflict(
                    f"memory id {memory_id!r} is already used by another memory",
                    field="id",
                    retryable=False,
                )
        words = analysis.tokens(text)
        cur = conn.execute(
            "INSERT INTO memories (id, store_id, app_id, tenant_id, agent_id, run_id, text,"
            " content_hash, metadata, unit_type, created_at, updated_at, words, said_at, version)"
            " VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                mid,
                store_id,
                *scope.as_tuple(),
                text,
                digest,
                json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True),
                unit_type,
                created,
                now if restored[0] is None else restored[0],
                len(words),
                created if said_at is None else said_at,
                1 if restored[1] is None else restored[1],
            ),
        )
        seq = int(cur.lastrowid or 0)
        self._index(conn, store_id, seq, scope, words, metadata)
        if vector is not None and self._tx.embedder is not None and self._tx.vectors is not None:
            conn.execute(
                "INSERT INTO memory_vectors (seq, model, vector) VALUES (?, ?, ?)",
                (seq, self._tx.embedder.name, self._tx.vectors.to_blob(vector)),
            )
        added.append((scope.as_tuple(), seq, vector))
        return mid, seq

    def _repeat(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        seq: int,
        found: tuple[str, float],
        scope: Scope,
        text: str,
        metadata: Mapping[str, str],
        when: float,
        *,
        said: tuple[float, float] | None = None,
    ) -> bool:
        """The same text again in the scope: keep its provenance on the one memory; whether
        this occurrence is the newest.

        The newest occurrence wins: its metadata keys overwrite the memory's (keys only an
        older occurrence set are kept while the map stays within the limit, see
        :func:`memcore.limits.merge_metadata`) and ``updated_at`` becomes its time, so a fact
        repeated in a later session carries that session's metadata and date. An older occurrence (an
        import of earlier data) changes nothing but the version: every repeat moves it by one,
        so a write that landed in the memory can always be told from none. Each message occurrence also stays in the
        message log with its own metadata and timestamp. ``found`` is the memory's metadata
        JSON and ``updated_at``, as the digest lookup read them.

        A message's repeat (``said``: when it was said, when the memory was last said)
        compares said-times instead, so a replay of dated conversations keeps the newest said
        occurrence whatever order they are replayed in; ``when`` is then the write time, and
        ``said_at`` the said time (what the recall block dates the memory by).
        """
        old_json, updated = found
        older = said[0] < said[1] if said is not None else when < updated
        merged = {} if older else limits.merge_metadata(json.loads(old_json), metadata)
        new_json = json.dumps(merged, ensure_ascii=False, sort_keys=True)
        if older or (new_json == old_json and when == updated):
            # Nothing of the memory changes, yet a write landed in it and was answered with
            # its id: the version still moves, so an import's rollback that created the row
            # sees it was claimed since and keeps it (:mod:`.rollbacks`).
            conn.execute("UPDATE memories SET version = version + 1 WHERE seq = ?", (seq,))
            return not older
        conn.execute(
            "UPDATE memories SET metadata = ?, updated_at = ?, said_at = ?, version = version + 1"
            " WHERE seq = ?",
            (new_json, when, when if said is None else said[0], seq),
        )
        if new_json != old_json:
            conn.execute("DELETE FROM memory_fts_text WHERE seq = ?", (seq,))
            self._index(conn, store_id, seq, scope, analysis.tokens(text), merged)
        return True

    def retag(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        seq: int,
        scope: Scope,
        text: str,
        metadata: Mapping[str, str],
    ) -> None:
        """Give a stored memory another metadata map: its row and the tags filters read."""
        conn.execute(
            "UPDATE memories SET metadata = ? WHERE seq = ?",
            (json.dumps(dict(metadata), ensure_ascii=False, sort_keys=True), seq),
        )
        conn.execute("DELETE FROM memory_fts_text WHERE seq = ?", (seq,))
        self._index(conn, store_id, seq, scope, analysis.tokens(text), metadata)

    @staticmethod
    def _last_said(conn: sqlite3.Connection, seq: int, updated: float) -> float:
        """When a row written before schema 10 (no ``said_at``) was last said: its newest
        message, else (a text) its last write."""
        row = conn.execute("SELECT MAX(timestamp) FROM messages WHERE memory_seq = ?", (seq,))
        newest = row.fetchone()[0]
        return updated if newest is None else float(newest)

    @staticmethod
    def _index(
        conn: sqlite3.Connection,
        store_id: int,
        seq: int,
        scope: Scope,
        words: list[str],
        metadata: Mapping[str, str],
    ) -> None:
        """The FTS row: the words, the same words tenant-prefixed, the scope/metadata tags.
        ``memory_fts_text`` keeps the words, the row's scope (its prefix and tags are kept once,
        in ``memory_fts_scopes``) and its metadata tags, and the index is given the values its
        view rebuilds from them (:mod:`memcore_sqlite.storage.schema`). The memory row keeps
        ``len(words)`` (written by its INSERT or UPDATE), which the lexical score discounts
        long memories by."""
        body = analysis.index_text(words)
        prefix = prefixes.assign(conn, store_id, scope.app_id, scope.tenant_id)
        own = " ".join(tags.scope_tags(store_id, scope))
        extra = " ".join(tags.metadata_tags(store_id, scope, metadata))
        found = conn.execute(
            "SELECT id FROM memory_fts_scopes WHERE prefix = ? AND tags = ?", (prefix, own)
        ).fetchone()
        scope_id = (
            found[0]
            if found is not None
            else conn.execute(
                "INSERT INTO memory_fts_scopes (prefix, tags) VALUES (?, ?)", (prefix, own)
            ).lastrowid
        )
        conn.execute(
            "INSERT INTO memory_fts_text (seq, body, scope, tags) VALUES (?, ?, ?, ?)",
            (seq, body, scope_id, extra),
        )
        conn.execute(
            "INSERT INTO memory_fts (rowid, body, tbody, tags) VALUES (?, ?, ?, ?)",
            (seq, body, analysis.index_text(words, prefix), f"{own} {extra}" if extra else own),
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
        check_scope(scope)
        limits.check_text(text)
        meta = limits.check_metadata(metadata)
        deferred = self._tx.defer_vectors and not sync
        vectors = None if deferred else self._tx.embed([text])
        status = "pending" if deferred else "completed"
        added: list[tuple[tuple[str, str, str, str], int, Any]] = []
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            gen = self._tx.bump(conn, sid)
            mid, _ = self.insert(
                conn, sid, scope, text, meta, "text", vectors[0] if vectors else None, added
            )
            tid = self._tx.task(conn, sid, "AddMemories", scope, [mid], status=status)
            rid = self._tx.audit(conn, sid, "AddMemories", started, scope=scope, target=mid)
            self._tx.after_write(sid, gen, added)
        return WriteReceipt(tid, status, (mid,), rid)

    def index_pending(
        self, store: str, pattern: ScopePattern, *, wait: float | None = None
    ) -> None:
        """Embed the memories that deferred writes of the tenant ``pattern`` reaches left
        without a vector, before a semantic search of it (it has the model loaded anyway),
        and complete their tasks (:mod:`~memcore_sqlite.operations.pending`). Pending tasks
        are found through their index, so a store without any costs one indexed read. ``wait``:
        at most this long for another process's write lock (else the busy timeout), then
        :class:`~memcore.errors.Unavailable`."""
        if self._tx.embedder is None or self._tx.vectors is None or self._tx.read_only:
            return
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            where, params = deferred.tasks_of(pattern)
            tasks = conn.execute(
                f"SELECT id, memory_ids FROM tasks WHERE store_id = ? AND {where} ORDER BY seq",
                (sid, *params),
            ).fetchall()
            ids = [i for _, listed in tasks for i in json.loads(listed)]
            rows = list(
                rows_in(
                    conn,
                    "SELECT m.seq, m.text FROM memories m WHERE m.store_id = ? AND m.id IN ({})"
                    " AND NOT EXISTS (SELECT 1 FROM memory_vectors v WHERE v.seq = m.seq)",
                    ids,
                    before=(sid,),
                )
            )
        if not tasks:
            return
        vectors = self._tx.embed([text for _, text in rows]) or []
        with self._tx.write(wait=wait) as conn:
            gen = self._tx.bump(conn, sid)
            # A text changed while it was embedded (by a process that stores no vector, or a
            # seq taken again) must not get this one's vector: its tasks stay pending, and the
            # next semantic search embeds the text it holds then.
            sql = "SELECT seq, text FROM memories WHERE seq IN ({})"
            now = dict(rows_in(conn, sql, [seq for seq, _ in rows]))
            fresh = [
                (seq, v) for (seq, text), v in zip(rows, vectors) if now.get(seq, text) == text
            ]
            self._tx.store_vectors(conn, sid, gen, fresh, replace=False)
            if len(fresh) == len(rows):
                conn.executemany(
                    "UPDATE tasks SET status = 'completed', finished_at = ?"
                    " WHERE id = ? AND status = 'pending'",
                    [(time.time(), tid) for tid, _ in tasks],
                )

    def add_many(
        self,
        store: str,
        items: Sequence[TextItem],
        *,
        ahead: Sequence[TextItem] = (),
        new_id_if_taken: bool = False,
        created: set[str] | None = None,
        versions: dict[str, int] | None = None,
    ) -> list[str]:
        """Add many memories in one transaction (embedded in one batch); ids in input order.

        This is the bulk-import path: one task and one audit record cover the whole batch.
        ``ahead``, the batch the caller will add next, is embedded in the background while
        this one is written (nothing of it is stored until it is added itself). An item's
        ``id`` already held by another memory of its tenant is a :class:`Conflict` (nothing of
        the batch is written), or with ``new_id_if_taken`` that item gets a new id. ``created`` receives,
        after the commit, the ids of the rows this call inserted (not those of repeats), and
        ``versions`` each id answered with -> its row's version as the batch left it (every
        write that lands in a row moves its version, :meth:`_repeat`).
        A new row keeps the item's ``updated_at``, ``unit_type`` and ``version`` where given;
        a text already in its scope is left as it is.
        """
        started = time.perf_counter()
        checked: list[tuple[Scope, str, dict[str, str]]] = []
        for i, item in enumerate(items):
            if not isinstance(item, TextItem):
                raise InvalidInput(f"items[{i}] must be a TextItem", field=f"items[{i}]")
            check_scope(item.scope)
            limits.check_text(item.text, field=f"items[{i}].text")
            if item.id is not None:
                limits.check_id(item.id, field=f"items[{i}].id")
            limits.check_stored_time(item.created_at, field=f"items[{i}].created_at")
            limits.check_stored_time(item.said_at, field=f"items[{i}].said_at")
            limits.check_stored_time(item.updated_at, field=f"items[{i}].updated_at")
            limits.check_unit_type(item.unit_type, field=f"items[{i}].unit_type")
            limits.check_version(item.version, field=f"items[{i}].version")
            checked.append(
                (
                    item.scope,
                    item.text,
                    limits.check_metadata(item.metadata, field=f"items[{i}].metadata"),
                )
            )
        if not checked:
            return []
        upcoming = [i.text for i in ahead if isinstance(i, TextItem) and isinstance(i.text, str)]
        vectors = self._tx.embed([t for _, t, _ in checked], ahead=upcoming)
        added: list[tuple[tuple[str, str, str, str], int, Any]] = []
        ids: list[str] = []
        new: list[str] = []
        seqs: list[int] = []
        left: dict[str, int] = {}
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            gen = self._tx.bump(conn, sid)
            for i, (scope, text, meta) in enumerate(checked):
                inserted = len(added)
                mid, seq = self.insert(
                    conn,
                    sid,
                    scope,
                    text,
                    meta,
                    items[i].unit_type or "text",
                    vectors[i] if vectors else None,
                    added,
                    memory_id=items[i].id,
                    created_at=items[i].created_at,
                    said_at=items[i].said_at,
                    new_id_if_taken=new_id_if_taken,
                    restored=(items[i].updated_at, items[i].version),
                )
                ids.append(mid)
                seqs.append(seq)
                if len(added) > inserted:  # a new row, not a repeat of a stored text
                    new.append(mid)
            if versions is not None:
                sql = "SELECT id, version FROM memories WHERE seq IN ({})"
                left = {str(i): int(v) for i, v in rows_in(conn, sql, list(dict.fromkeys(seqs)))}
            self._tx.task(conn, sid, "AddMemories", checked[0][0], list(dict.fromkeys(ids)))
            self._tx.audit(conn, sid, "AddMemories", started, scope=checked[0][0])
            self._tx.after_write(sid, gen, added)
        if created is not None:
            created.update(new)
        if versions is not None:
            versions.update(left)
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
        """Store the turn as short-term messages, and each message as one memory unit (unless
        it is marked ``remember=False``: then the log only)."""
        started = time.perf_counter()
        check_scope(scope)
        checked = limits.check_messages(messages)
        meta = limits.check_metadata(metadata)
        kept = [m for m in checked if m.remember]
        vectors = self._tx.embed([m.content for m in kept]) if kept else None
        added: list[tuple[tuple[str, str, str, str], int, Any]] = []
        ids: list[str] = []
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            gen = self._tx.bump(conn, sid)
            now = time.time()
            i = 0
            for m in checked:
                if not m.remember:  # kept in the message log only
                    self.log_message(conn, sid, scope, m, now)
                    continue
                unit_meta = limits.merge_metadata(meta, m.metadata)
                mid, seq = self.insert(
                    conn,
                    sid,
                    scope,
                    m.content,
                    unit_meta,
                    "message",
                    vectors[i] if vectors else None,
                    added,
                    said_at=m.timestamp,
                )
                i += 1
                ids.append(mid)
                self.log_message(conn, sid, scope, m, now, memory_seq=seq)
            unique = list(dict.fromkeys(ids))
            tid = self._tx.task(conn, sid, "AddMemories", scope, unique)
            rid = self._tx.audit(conn, sid, "AddMemories", started, scope=scope)
            self._tx.after_write(sid, gen, added)
        return WriteReceipt(tid, "completed", tuple(unique), rid)

    @staticmethod
    def log_message(
        conn: sqlite3.Connection,
        store_id: int,
        scope: Scope,
        message: Message,
        now: float,
        *,
        memory_seq: int | None = None,
    ) -> None:
        """One row of the short-term message log (``memory_seq``: the unit it became, if one)."""
        conn.execute(
            "INSERT INTO messages (store_id, app_id, tenant_id, agent_id, run_id, id, role,"
            " content, timestamp, metadata, memory_seq) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            (
                store_id,
                *scope.as_tuple(),
                message.id or uuid.uuid4().hex,
                message.role,
                message.content,
                message.timestamp if message.timestamp is not None else now,
                json.dumps(dict(message.metadata), ensure_ascii=False, sort_keys=True),
                memory_seq,
            ),
        )

    def own_row(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        reach: Scope | ScopePattern,
        memory_id: str,
    ) -> tuple[Any, ...]:
        """The row of ``memory_id`` in a scope, or anywhere under a pattern: one read by the
        id. Another scope's memory is reported exactly like a missing one. Ids are unique per
        tenant, so a pattern over several tenants may find the id in more than one: the
        oldest answers (every host's reach is one tenant)."""
        limits.check_id(memory_id)
        pattern = reach.pattern() if isinstance(reach, Scope) else reach
        where, params = pattern_sql(pattern)
        row = conn.execute(
            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE id = ? AND store_id = ?{where}"
            " ORDER BY seq LIMIT 1",
            (memory_id, store_id, *params),
        ).fetchone()
        if row is None:
            place = f"scope {reach}" if isinstance(reach, Scope) else str(reach)
            raise NotFound(f"memory {memory_id!r} was not found in {place}", field="memory_id")
        return tuple(row)

    def update_memory(
        self,
        store: str,
        scope: Scope,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> MemoryRecord:
        """Replace the text and/or merge the metadata map; the index and vector follow."""
        return self.update_memory_removing(
            store, scope, memory_id, remove=(), text=text, metadata=metadata
        )

    def update_memory_removing(
        self,
        store: str,
        scope: Scope,
        memory_id: str,
        *,
        remove: Collection[str],
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> MemoryRecord:
        """As :meth:`update_memory`, the keys ``remove`` then taken out of the merged map, in
        the same transaction (:class:`~memcore.ports.KeyRemoval`): read, merged and written
        under the write lock, so a key another writer set meanwhile stays."""
        started = time.perf_counter()
        check_scope(scope)
        limits.check_id(memory_id)
        if text is not None:
            limits.check_text(text)
        meta = None if metadata is None else limits.check_metadata(metadata)
        vectors = self._tx.embed([text]) if text is not None else None
        with (
            self._tx.audit_failure(store, "UpdateMemory", started, scope, memory_id),
            self._tx.write() as conn,
        ):
            sid = self._tx.store_id(conn, store)
            row = memory_row(self.own_row(conn, sid, scope, memory_id))
            seq = int(row.seq)
            new_text = row.text if text is None else text
            old_meta = json.loads(row.metadata)
            # Merged as on the service: the same key overwrites, {} clears the map.
            if not remove:
                new_meta = (
                    old_meta if meta is None else limits.merge_update_metadata(old_meta, meta)
                )
            else:  # merged, then the keys taken out; only the result must fit the limit
                merged = old_meta if meta is None else {**old_meta, **meta} if meta else {}
                gone = set(remove)
                kept = {k: v for k, v in merged.items() if k not in gone}
                new_meta = limits.check_metadata(kept)
            gen = self._tx.bump(conn, sid)
            words = analysis.tokens(new_text)
            now = time.time()
            # A new text is stated now; a metadata change leaves when it was said.
            said = now if new_text != row.text else row.said_at
            conn.execute(
                "UPDATE memories SET text = ?, content_hash = ?, metadata = ?, updated_at = ?,"
                " said_at = ?, words = ?, version = version + 1 WHERE seq = ?",
                (
                    new_text,
                    content_hash(scope, new_text),
                    json.dumps(new_meta, ensure_ascii=False, sort_keys=True),
                    now,
                    said,
                    len(words),
                    seq,
                ),
            )
            conn.execute("DELETE FROM memory_fts_text WHERE seq = ?", (seq,))
            self._index(conn, sid, seq, scope, words, new_meta)
            if new_text != row.text:
                version_links.made_current(conn, sid, scope, seq)
            added: list[tuple[tuple[str, str, str, str], int, Any]] = []
            removed: list[tuple[tuple[str, str, str, str], int]] = []
            if text is not None:
                # A vector of the old text would be wrong; replace it or drop it.
                conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (seq,))
                removed.append((scope.as_tuple(), seq))
                if vectors and self._tx.embedder is not None and self._tx.vectors is not None:
                    conn.execute(
                        "INSERT INTO memory_vectors (seq, model, vector) VALUES (?, ?, ?)",
                        (seq, self._tx.embedder.name, self._tx.vectors.to_blob(vectors[0])),
                    )
                    added.append((scope.as_tuple(), seq, vectors[0]))
            self._tx.audit(conn, sid, "UpdateMemory", started, scope=scope, target=memory_id)
            # As stored after, with its links (as a get answers): a metadata change leaves a
            # superseded memory superseded, and the caller must read so.
            [out] = supersession.annotate(
                conn,
                sid,
                [
                    memory_from_row(
                        conn.execute(
                            f"SELECT {MEMORY_COLUMNS} FROM memories WHERE seq = ?", (seq,)
                        ).fetchone()
                    )
                ],
            )
            self._tx.after_write(sid, gen, added, removed, indexed=[scope.as_tuple()])
        return out

    @staticmethod
    def drop(conn: sqlite3.Connection, seq: int) -> None:
        """Take the row ``seq`` out: the memory, its FTS row, its vector and its messages."""
        conn.execute("DELETE FROM memories WHERE seq = ?", (seq,))
        conn.execute("DELETE FROM memory_fts_text WHERE seq = ?", (seq,))
        conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (seq,))
        conn.execute("DELETE FROM messages WHERE memory_seq = ?", (seq,))

    def delete_memory(self, store: str, scope: Scope, memory_id: str) -> None:
        """Delete the unit, its FTS row, its vector and the messages it was made from."""
        started = time.perf_counter()
        check_scope(scope)
        with (
            self._tx.audit_failure(store, "DeleteMemory", started, scope, memory_id),
            self._tx.write() as conn,
        ):
            sid = self._tx.store_id(conn, store)
            seq = int(memory_row(self.own_row(conn, sid, scope, memory_id)).seq)
            gen = self._tx.bump(conn, sid)
            self.drop(conn, seq)
            self._tx.audit(conn, sid, "DeleteMemory", started, scope=scope, target=memory_id)
            self._tx.after_write(sid, gen, (), [(scope.as_tuple(), seq)])
