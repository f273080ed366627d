"""Applying one dream action, atomically, and undoing it from the record it leaves.

Every applied action stores an undo record (the before-image of each memory it changed, the
rows it deleted, the memories it created), so the audit trail can take it back exactly.
A memory that action supersedes keeps its row and records ``superseded_by``; the memory
that supersedes it lists it in ``supersedes``. Both get a new version, as for every write
that lands in a memory (:mod:`memcore_sqlite.operations.rollbacks`)."""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import Any, NamedTuple

import attrs

from memcore import limits
from memcore.dream.scopes import in_scopes
from memcore.errors import Conflict
from memcore.scope import Scope, ScopePattern
from memcore_sqlite.dream.rows import text_digest, text_key
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.operations.writes import MemoryWrites
from memcore_sqlite.storage.rows import (
    MEMORY_COLUMNS,
    MEMORY_WIDTH,
    columns,
    content_hash,
    memory_row,
    rows_in,
)


class _Links(NamedTuple):
    """What a memory supersedes or was superseded by (selected after its own columns)."""

    superseded_by: str | None
    superseded_how: str | None
    supersedes: str | None


_ROW = f"{MEMORY_COLUMNS}, {columns(_Links)}"
#: A tenant (app and tenant ids): memory ids are unique within one (schema 16).
Tenant = tuple[str, str]
_IN_TENANT = " AND app_id = ? AND tenant_id = ?"


class _Row:
    """A memory row with its supersession links: the before-image an undo record keeps."""

    __slots__ = ("links", "memory")

    def __init__(self, row: Sequence[Any]) -> None:
        self.memory = memory_row(row)
        self.links = _Links._make(row[MEMORY_WIDTH:])

    @property
    def scope(self) -> Scope:
        m = self.memory
        return Scope(m.app_id, m.tenant_id, m.agent_id, m.run_id)


Added = list[tuple[tuple[str, str, str, str], int, Any]]
Removed = list[tuple[tuple[str, str, str, str], int]]


@attrs.frozen
class Outcome:
    status: str
    skipped_reason: str | None = None
    result_id: str | None = None
    undo: str | None = None


def _said(row: _Row) -> float:
    """When a memory's text was last said (its creation, in rows from before schema 10)."""
    m = row.memory
    return float(m.said_at if m.said_at is not None else m.created_at)


def _image(row: _Row) -> dict[str, Any]:
    return {**row.memory._asdict(), **row.links._asdict()}


class DreamApplier:
    """Applies and undoes actions inside the caller's write transaction."""

    def __init__(self, tx: Transactions, writes: MemoryWrites) -> None:
        self._tx = tx
        self._writes = writes

    @staticmethod
    def _rows(
        conn: sqlite3.Connection, store_id: int, tenant: Tenant, ids: Sequence[str]
    ) -> dict[str, _Row]:
        sql = f"SELECT {_ROW} FROM memories WHERE store_id = ?{_IN_TENANT} AND id IN ({{}})"
        rows = map(_Row, rows_in(conn, sql, ids, before=(store_id, *tenant)))
        return {r.memory.id: r for r in rows}

    def apply_action(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        task_seq: int,
        action: Mapping[str, Any],
        patterns: Sequence[ScopePattern],
        vector: Any,
        added: Added,
        removed: Removed,
    ) -> Outcome:
        """Apply ``action`` (a dream_actions row as a mapping) or say why it is skipped."""
        kind = action["action"]
        target_scope = Scope.from_mapping(json.loads(action["target_scope"]))
        sources: list[str] = json.loads(action["source_ids"])
        versions: dict[str, Any] = json.loads(action["versions"])
        target = action["target_id"]
        ids = [*sources, *([target] if target else [])]
        # Every memory an action names is one of its target's tenant (the planner pairs
        # none across tenants); ids are unique per tenant, so each is looked for there.
        tenant = (target_scope.app_id, target_scope.tenant_id)
        rows = self._rows(conn, store_id, tenant, ids)
        scopes = [r.scope for r in rows.values()]
        if not in_scopes(target_scope, patterns) or not all(in_scopes(s, patterns) for s in scopes):
            return Outcome("skipped", "scope_violation")
        if kind == "NOOP":
            return Outcome("skipped", "noop_nothing_to_apply")
        if any(i not in rows for i in ids):
            return Outcome("skipped", "missing_source")
        for i in ids:
            r = rows[i]
            if r.links.superseded_by:
                # Superseded already: by an earlier action of this task, or by another task.
                mine = conn.execute(
                    "SELECT 1 FROM dream_actions WHERE dream_seq = ? AND status = 'applied'"
                    " AND result_id = ?",
                    (task_seq, r.links.superseded_by),
                ).fetchone()
                return Outcome("skipped", "conflicting_action" if mine else "stale_target_memory")
            if versions.get(i) is not None and int(r.memory.version) != int(versions[i]):
                return Outcome("skipped", "stale_target_memory")
        said = versions.get(text_key(target)) if target else None
        if said is not None and text_digest(rows[target].memory.text) != said:
            return Outcome("skipped", "stale_target_memory")  # reworded since
        now = time.time()
        undo: dict[str, Any] = {"created": [], "changed": [], "deleted": []}
        if kind == "DELETE":
            row = rows[target]
            seq = int(row.memory.seq)
            # The turns it was made from: an undo links them again (its context in recall).
            said = conn.execute("SELECT seq FROM messages WHERE memory_seq = ?", (seq,))
            undo["deleted"].append({**_image(row), "messages": [int(m) for (m,) in said]})
            conn.execute("DELETE FROM memories WHERE seq = ?", (seq,))
            conn.execute("DELETE FROM memory_fts_text WHERE seq = ?", (seq,))
            conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (seq,))
            conn.execute("UPDATE messages SET memory_seq = NULL WHERE memory_seq = ?", (seq,))
            removed.append((row.scope.as_tuple(), seq))
            return Outcome("applied", result_id=target, undo=json.dumps(undo))
        if kind in ("MERGE", "ADD"):
            text = action["text"] or ""
            # Keys merge as over a repeated text's occurrences (oldest first, so the newest
            # wins): where each fact came from stays on the memory, within the key limit.
            meta: dict[str, str] = {}
            for i in sources:
                meta = limits.merge_metadata(meta, json.loads(rows[i].memory.metadata))
            # The same text already in the target scope (often the newest source) becomes the
            # merged memory as it is; only a new text is a new memory.
            digest = content_hash(target_scope, text)
            same = next(
                (
                    r
                    for r in map(
                        _Row,
                        conn.execute(
                            f"SELECT {_ROW} FROM memories WHERE store_id = ? AND content_hash = ?",
                            (store_id, digest),
                        ),
                    )
                    if r.scope == target_scope and r.memory.text.strip() == text.strip()
                ),
                None,
            )
            if same is not None:
                mid = same.memory.id
                undo["changed"].append(_image(same))
                own = json.loads(same.memory.metadata)
                kept = limits.merge_metadata(meta, own)
                if kept != own:
                    seq = int(same.memory.seq)
                    self._writes.retag(conn, store_id, seq, target_scope, same.memory.text, kept)
            else:
                # A new wording of facts said before: said when the newest of them was (as a
                # kept memory keeps its own), not on the day the pass ran. An ADD of a new
                # fact has no source: it is said now.
                said = max((_said(rows[i]) for i in sources), default=None)
                mid, _ = self._writes.insert(
                    conn, store_id, target_scope, text, meta, "dream", vector, added, said_at=said
                )
                undo["created"].append(mid)
            target = mid
            folded = [i for i in sources if i != mid]
            how = "merged"
        elif kind == "UPDATE":
            undo["changed"].append(_image(rows[target]))
            folded = [i for i in sources if i != target]
            how = "updated"
        else:
            return Outcome("skipped", "invalid_action")
        for i in folded:
            undo["changed"].append(_image(rows[i]))
            # A fold is a write that lands in the memory, so it moves its version as every
            # write does: an import still under way that created it keeps it on rollback,
            # or the merged memory would name a deleted one (and its undo could not run).
            conn.execute(
                "UPDATE memories SET superseded_by = ?, superseded_how = ?, updated_at = ?,"
                f" version = version + 1 WHERE id = ? AND store_id = ?{_IN_TENANT}",
                (target, how, now, i, store_id, *tenant),
            )
        if folded:
            current = conn.execute(
                f"SELECT supersedes FROM memories WHERE id = ? AND store_id = ?{_IN_TENANT}",
                (target, store_id, *tenant),
            ).fetchone()[0]
            merged = list(dict.fromkeys([*json.loads(current), *folded]))
            conn.execute(
                "UPDATE memories SET supersedes = ?, version = version + 1, updated_at = ?"
                f" WHERE id = ? AND store_id = ?{_IN_TENANT}",
                (json.dumps(merged), now, target, store_id, *tenant),
            )
        touched = [*undo["created"], *(image["id"] for image in undo["changed"])]
        undo["after"] = self._states(conn, store_id, tenant, touched)
        return Outcome("applied", result_id=target, undo=json.dumps(undo))

    @staticmethod
    def _states(
        conn: sqlite3.Connection, store_id: int, tenant: Tenant, ids: Sequence[str]
    ) -> dict[str, Any]:
        """Each memory's ``[version, superseded_by]``: what an undo finds unless it changed."""
        sql = (
            "SELECT id, version, superseded_by FROM memories"
            f" WHERE store_id = ?{_IN_TENANT} AND id IN ({{}})"
        )
        rows = rows_in(conn, sql, ids, before=(store_id, *tenant))
        return {i: [int(v), by] for i, v, by in rows}

    def undo_action(
        self,
        conn: sqlite3.Connection,
        store_id: int,
        tenant: Tenant,
        undo: Mapping[str, Any],
        added: Added,
        removed: Removed,
    ) -> None:
        """Take an applied action back; :class:`Conflict` if its memories changed since.
        ``tenant`` is the action's target's: every memory the record names is one of it."""
        # A memory the action made that is gone (forgotten) is checked too when the undo
        # would bring others back: the folded copies would recall the forgotten fact. An
        # ADD's alone has nothing to take back.
        restores = bool(undo["changed"] or undo["deleted"])
        kept = [image["id"] for image in undo["changed"]]
        for mid in [*kept, *(undo["created"] if restores else [])]:
            row = conn.execute(
                f"SELECT version FROM memories WHERE id = ? AND store_id = ?{_IN_TENANT}",
                (mid, store_id, *tenant),
            ).fetchone()
            if row is None:
                raise Conflict(
                    f"memory {mid!r} was deleted since; the action cannot be undone",
                    field="action_id",
                    retryable=False,
                )
        for image in undo["deleted"]:
            # Stored again under its id since (an import restoring a backup): giving the
            # deleted row back would overwrite that write, version and all.
            if conn.execute(
                f"SELECT 1 FROM memories WHERE id = ? AND store_id = ?{_IN_TENANT}",
                (image["id"], store_id, *tenant),
            ).fetchone():
                raise Conflict(
                    f"memory {image['id']!r} was stored again since; the DELETE cannot be undone",
                    field="action_id",
                    retryable=False,
                )
        # Written by an undo record from before "after" was kept: nothing to compare with.
        after: Mapping[str, Any] = undo.get("after") or {}
        current = self._states(conn, store_id, tenant, list(after))
        for mid, state in after.items():
            if mid in current and current[mid] != state:
                # Edited, said again, claimed by an import of a file holding it, or
                # superseded by a later action: restoring the image would take the version
                # back under a newer write (and hide the change, or let that import's
                # rollback delete what it counted present).
                raise Conflict(
                    f"memory {mid!r} changed since the action was applied (edited, said "
                    "again, imported again, or changed by a later dream action: undo that "
                    "one first); the action cannot be undone",
                    field="action_id",
                    retryable=False,
                )
        for mid in undo["created"]:
            row = conn.execute(
                "SELECT seq, app_id, tenant_id, agent_id, run_id, supersedes FROM memories"
                f" WHERE id = ? AND store_id = ?{_IN_TENANT}",
                (mid, store_id, *tenant),
            ).fetchone()
            if row is None:
                continue
            seq, app_id, tenant_id, agent_id, run_id, _ = row
            conn.execute("DELETE FROM memories WHERE seq = ?", (seq,))
            conn.execute("DELETE FROM memory_fts_text WHERE seq = ?", (seq,))
            conn.execute("DELETE FROM memory_vectors WHERE seq = ?", (seq,))
            removed.append(((app_id, tenant_id, agent_id, run_id), int(seq)))
        for image in undo["changed"]:
            conn.execute(
                "UPDATE memories SET superseded_by = ?, superseded_how = ?, supersedes = ?,"
                f" version = ?, updated_at = ? WHERE id = ? AND store_id = ?{_IN_TENANT}",
                (
                    image["superseded_by"],
                    image["superseded_how"],
                    image["supersedes"],
                    image["version"],
                    image["updated_at"],
                    image["id"],
                    store_id,
                    *tenant,
                ),
            )
            seq, metadata = conn.execute(
                f"SELECT seq, metadata FROM memories WHERE id = ? AND store_id = ?{_IN_TENANT}",
                (image["id"], store_id, *tenant),
            ).fetchone()
            if json.loads(metadata) != json.loads(image["metadata"]):
                scope = Scope(
                    image["app_id"], image["tenant_id"], image["agent_id"], image["run_id"]
                )
                self._writes.retag(
                    conn, store_id, int(seq), scope, image["text"], json.loads(image["metadata"])
                )
        for image in undo["deleted"]:
            scope = Scope(image["app_id"], image["tenant_id"], image["agent_id"], image["run_id"])
            meta = json.loads(image["metadata"])
            vectors = None
            # Re-embedding happens in the caller's transaction: the text is known to be valid.
            if self._tx.embedder is not None:
                vectors = self._tx.embed([image["text"]])
            mid, seq = self._writes.insert(
                conn,
                store_id,
                scope,
                image["text"],
                meta,
                image["unit_type"] or "text",
                vectors[0] if vectors else None,
                added,
                memory_id=image["id"],
                created_at=image["created_at"],
                said_at=image.get("said_at"),
                restored=(image["updated_at"], image["version"]),
            )
            if mid != image["id"]:
                raise Conflict(
                    "the same text was stored again since; the DELETE cannot be undone",
                    field="action_id",
                    retryable=False,
                )
            conn.execute(
                "UPDATE memories SET version = ?, supersedes = ?, content_hash = ? WHERE seq = ?",
                (image["version"], image["supersedes"], content_hash(scope, image["text"]), seq),
            )
            # A record written before the turns were kept names none; a turn since forgotten
            # (or linked to another memory) stays as it is.
            conn.executemany(
                "UPDATE messages SET memory_seq = ? WHERE seq = ? AND store_id = ?"
                " AND memory_seq IS NULL",
                [(seq, int(m), store_id) for m in image.get("messages", [])],
            )
