"""Local dream on SQLite: the service's dream lifecycle, planned by the core's planner.

A task runs inside ``create_dream_task``: ``queued`` -> ``running`` (its memories are read) ->
``planning`` -> (``applying``, in ``safe_auto``) -> ``completed`` or
``completed_with_failures``; ``failed`` if planning raised. Each step is its own transaction,
so another process sees the task move, and may cancel it before its actions are written.

A pass stopped by an error that is not a memcore error is failed too (the error goes on to
the caller). One whose process ended half way (killed, the machine restarted) is reported
failed by the next call that reads it: its id, or a listing or pass over its scopes
(:mod:`~memcore_sqlite.dream.owners`).
Its automatic applying is one transaction, so such a pass applied nothing; the actions it
had planned stay proposed. A task once finished never moves again.
"""

from __future__ import annotations

import contextlib
import json
import sqlite3
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Any

import attrs

from memcore import limits
from memcore.dream import (
    MANUAL_REASONS,
    SCOPE_OUTPUT_MODES,
    Candidate,
    PlannedAction,
    PlannerSettings,
    check_thresholds,
    decide,
    plan,
)
from memcore.errors import InvalidInput, MemcoreError, NotFound, Unavailable
from memcore.paging import page
from memcore.ports import DreamReviewer
from memcore.scope import Scope, ScopePattern
from memcore.values import DREAM_STATUSES, DreamAction, DreamTask, Page
from memcore_sqlite.dream import inputs as dream_inputs
from memcore_sqlite.dream import owners
from memcore_sqlite.dream.apply import Added, DreamApplier, Outcome, Removed
from memcore_sqlite.dream.rows import (
    ACTION,
    TASK,
    ActionRow,
    TaskRow,
    action_value,
    dream_value,
    inside,
    overlap,
    patterns_of,
    planned_state,
)
from memcore_sqlite.operations.transactions import Transactions
from memcore_sqlite.operations.writes import MemoryWrites
from memcore_sqlite.search import pipeline as search
from memcore_sqlite.storage.rows import rows_in
from memcore_sqlite.vector import stored

#: The service's default and maximum for ``maxMemories``.
DEFAULT_MAX_MEMORIES = 1000
MAX_MEMORIES = 5000
#: A session pass: at most this many new memories each, planned against their neighbours.
DEFAULT_MAX_NEW = 200
#: The statuses of a task whose pass has not finished.
UNFINISHED = ("queued", "running", "planning", "applying")
#: What a task whose process ended half way says.
ABANDONED = (
    "abandoned: the process running this pass ended before it finished; nothing of it was "
    "applied, and the actions it had planned stay proposed"
)


@attrs.frozen
class _Pass:
    """What one pass was asked for, checked: the scopes it reads, how it applies and what it
    plans (``max_new`` None: a full pass; a number: a session pass over what is new)."""

    patterns: tuple[ScopePattern, ...]
    mode: str
    thresholds: Mapping[str, float]
    scope_output_mode: str
    instructions: str | None
    max_memories: int
    max_new: int | None


class DreamTasks:
    """The six dream operations of the port, plus :meth:`undo_dream_action`.

    ``reviewer``: a model that checks the planner's actions (see
    :class:`memcore.ports.DreamReviewer`); None plans by the rules only."""

    def __init__(
        self, tx: Transactions, writes: MemoryWrites, reviewer: DreamReviewer | None
    ) -> None:
        self._tx = tx
        self._applier = DreamApplier(tx, writes)
        self.reviewer = reviewer

    # -- values -------------------------------------------------------------------------
    def _dream_row(self, conn: sqlite3.Connection, store_id: int, task_id: str) -> TaskRow:
        limits.check_id(task_id, field="task_id")
        row = conn.execute(
            f"SELECT {TASK} FROM dream_tasks WHERE id = ? AND store_id = ?", (task_id, store_id)
        ).fetchone()
        if row is None:
            raise NotFound(f"dream task {task_id!r} does not exist", field="task_id")
        return TaskRow._make(row)

    @staticmethod
    def _action_row(conn: sqlite3.Connection, task_seq: int, action_id: str) -> ActionRow | None:
        row = conn.execute(
            f"SELECT {ACTION} FROM dream_actions WHERE dream_seq = ? AND id = ?",
            (task_seq, action_id),
        ).fetchone()
        return None if row is None else ActionRow._make(row)

    def _set_status(self, store_id: int, task_id: str, status: str, **extra: Any) -> bool:
        """Move the task on unless it finished meanwhile (cancelled); False when it did."""
        with self._tx.write() as conn:
            row = self._dream_row(conn, store_id, task_id)
            if row.status not in UNFINISHED:
                return False
            sets = ", ".join(f"{k} = ?" for k in ("status", "updated_at", *extra))
            conn.execute(
                f"UPDATE dream_tasks SET {sets} WHERE seq = ?",
                (status, time.time(), *extra.values(), row.seq),
            )
        return True

    def _reap(
        self,
        store: str,
        *,
        task_id: str | None = None,
        patterns: Sequence[ScopePattern] | None = None,
    ) -> None:
        """Report failed the unfinished tasks whose process is gone, of those the caller is
        about to look at: ``task_id``, or those reading a scope ``patterns`` overlap (all when
        None). A read-only store leaves them as they are."""
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            rows = conn.execute(
                "SELECT seq, id, status, owner, scopes FROM dream_tasks WHERE store_id = ?"
                f" AND status IN ({', '.join('?' * len(UNFINISHED))})"
                + ("" if task_id is None else " AND id = ?"),
                (sid, *UNFINISHED, *(() if task_id is None else (task_id,))),
            ).fetchall()
        left = [
            (seq, status, owner)
            for seq, tid, status, owner, scopes in rows
            if (
                patterns is None
                or any(overlap(p, q) for p in patterns for q in patterns_of(scopes))
            )
            and owners.gone(owner, tid)
        ]
        if not left or self._tx.read_only:
            return
        # Never waited for: a look at a task does not stall (or fail) behind another
        # process's long write; the next look reports it.
        with contextlib.suppress(Unavailable), self._tx.write(wait=0.0) as conn:
            now = time.time()
            for seq, status, owner in left:  # unless it moved meanwhile
                conn.execute(
                    "UPDATE dream_tasks SET status = 'failed', error = ?, updated_at = ?,"
                    " finished_at = ? WHERE seq = ? AND status = ? AND owner IS ?",
                    (ABANDONED, now, now, seq, status, owner),
                )

    # -- the port -----------------------------------------------------------------------
    def create_dream_task(
        self,
        store: str,
        scopes: ScopePattern | Sequence[ScopePattern],
        *,
        apply_mode: str = "proposal",
        instructions: str | None = None,
        confidence_thresholds: Mapping[str, float] | None = None,
        scope_output_mode: str = "preserve_scope",
        max_memories: int = DEFAULT_MAX_MEMORIES,
    ) -> DreamTask:
        """Plan (and in ``safe_auto`` apply) consolidation over the scopes' memories."""
        return self._create(
            store,
            scopes,
            apply_mode,
            instructions,
            confidence_thresholds,
            scope_output_mode,
            max_memories,
            None,
        )

    def create_session_dream_task(
        self,
        store: str,
        scopes: ScopePattern | Sequence[ScopePattern],
        *,
        apply_mode: str = "safe_auto",
        max_new: int = DEFAULT_MAX_NEW,
        max_memories: int = MAX_MEMORIES,
    ) -> DreamTask:
        """A pass that costs what was written since the last one, not what the scopes hold.

        Plans only the pairs that hold a memory written (or changed) since the last finished
        task over the same scopes in the same apply mode (the newest ``max_new`` of them):
        each against its nearest in the scopes (the vector index search uses) and the
        memories among the newest ``max_memories`` that share a rare word with it, by the
        rules and word weights of a full pass over those. New memories past ``max_new`` wait
        for a full pass (:meth:`create_dream_task`)."""
        if isinstance(max_new, bool) or not isinstance(max_new, int) or max_new < 0:
            raise InvalidInput("max_new must be a non-negative integer", field="max_new")
        return self._create(
            store, scopes, apply_mode, None, None, "preserve_scope", max_memories, max_new
        )

    def _create(
        self,
        store: str,
        scopes: ScopePattern | Sequence[ScopePattern],
        apply_mode: str,
        instructions: str | None,
        confidence_thresholds: Mapping[str, float] | None,
        scope_output_mode: str,
        max_memories: int,
        max_new: int | None,
    ) -> DreamTask:
        started = time.perf_counter()
        patterns = limits.check_dream_scopes(scopes)
        mode = limits.check_apply_mode(apply_mode)
        limits.check_dream_instructions(instructions)
        thresholds = check_thresholds(confidence_thresholds)
        if scope_output_mode not in SCOPE_OUTPUT_MODES:
            raise InvalidInput(
                f"scope_output_mode must be one of {', '.join(SCOPE_OUTPUT_MODES)}",
                field="scope_output_mode",
            )
        if (
            isinstance(max_memories, bool)
            or not isinstance(max_memories, int)
            or not (0 <= max_memories <= MAX_MEMORIES)
        ):
            raise InvalidInput(
                f"max_memories must be an integer in 0..{MAX_MEMORIES}", field="max_memories"
            )
        self._reap(store, patterns=patterns)
        job = _Pass(
            patterns, mode, thresholds, scope_output_mode, instructions, max_memories, max_new
        )
        dream_id = uuid.uuid4().hex
        owners.started(dream_id)
        try:
            return self._start(store, dream_id, job, started)
        finally:
            owners.ended(dream_id)

    def _start(self, store: str, dream_id: str, job: _Pass, started: float) -> DreamTask:
        now = time.time()
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            conn.execute(
                "INSERT INTO dream_tasks (id, store_id, status, apply_mode, scope_output_mode,"
                " scopes, thresholds, instructions, created_at, updated_at, owner)"
                " VALUES (?, ?, 'queued', ?, ?, ?, ?, ?, ?, ?, ?)",
                (
                    dream_id,
                    sid,
                    job.mode,
                    job.scope_output_mode,
                    json.dumps([p.as_dict() for p in job.patterns]),
                    json.dumps(job.thresholds),
                    job.instructions or None,
                    now,
                    now,
                    owners.this_process(),
                ),
            )
            self._tx.audit(conn, sid, "CreateMemoryDreamTask", started, target=dream_id)
        try:
            self._run(sid, dream_id, job)
        except MemcoreError as exc:
            self._set_status(sid, dream_id, "failed", error=str(exc), finished_at=time.time())
        except BaseException as exc:
            # Only the error's kind is kept: its message may carry anything (a model's answer).
            how = (
                "was interrupted"
                if isinstance(exc, KeyboardInterrupt)
                else f"stopped on an unexpected error ({type(exc).__name__})"
            )
            error = f"the pass {how}; nothing of it was applied"
            with contextlib.suppress(Exception):  # else the next look reports it abandoned
                self._set_status(sid, dream_id, "failed", error=error, finished_at=time.time())
            raise
        with self._tx.read() as conn:
            return dream_value(conn, self._dream_row(conn, sid, dream_id))

    def _run(self, sid: int, dream_id: str, job: _Pass) -> None:
        if not self._set_status(sid, dream_id, "running"):
            return
        patterns, max_new = job.patterns, job.max_new
        model = self._tx.embedder.name if self._tx.embedder is not None else None
        focus: list[str] | None = None
        candidates: list[Candidate] = []
        blobs: dict[str, bytes] = {}
        with self._tx.read() as conn:
            if max_new is not None:
                scopes_json = json.dumps([p.as_dict() for p in patterns])
                since = dream_inputs.last_pass(conn, sid, scopes_json, job.mode)
                focus = dream_inputs.written_since(conn, sid, patterns, since, max_new)
            if focus != []:  # nothing new: nothing to read
                candidates, blobs = dream_inputs.load_candidates(
                    conn, sid, patterns, job.max_memories, model
                )
            if focus and model is not None:
                # Each new memory's nearest anywhere in its scopes, by the store's own search.
                have = {c.order for c in candidates}
                far = [s for s in self._nearest(conn, sid, patterns, focus, blobs) if s not in have]
                more, more_blobs = dream_inputs.load_candidates(
                    conn, sid, patterns, len(far), model, far
                )
                candidates, blobs = dream_inputs.joined(candidates, blobs, more, more_blobs)
        if not self._set_status(sid, dream_id, "planning", memory_count=len(candidates)):
            return
        dim = self._tx.embedder.dimension if self._tx.embedder is not None else 0
        if not dim:
            near = []
        elif focus is None:
            near = dream_inputs.neighbours(candidates, blobs, dim)
        else:
            near = dream_inputs.neighbours_of(focus, candidates, blobs, dim)
        near = dream_inputs.read_by(near, candidates, self._tx.embedder)
        settings = PlannerSettings(promote_scope=job.scope_output_mode == "promote_scope")
        planned = plan(candidates, near, patterns, settings, focus=focus)
        if self.reviewer is not None:
            planned = self.reviewer.review(candidates, planned, job.instructions)
        by_id = {c.id: c for c in candidates}
        # Whatever proposed them, actions outside the task's scopes never reach the table.
        planned = [a for a in planned if inside(a, by_id, patterns)]
        self._write_plan(sid, dream_id, planned, by_id, patterns, job.mode, job.thresholds)

    def _nearest(
        self,
        conn: sqlite3.Connection,
        sid: int,
        patterns: Sequence[ScopePattern],
        focus: Sequence[str],
        blobs: Mapping[str, bytes],
    ) -> list[int]:
        """Seqs of the memories nearest each of ``focus`` in the patterns' vector index."""
        if self._tx.vectors is None or self._tx.embedder is None:
            return []
        model = self._tx.embedder.name
        generation = int(
            conn.execute("SELECT generation FROM stores WHERE id = ?", (sid,)).fetchone()[0]
        )
        fetch = search.float_vectors(conn, model)
        out: set[int] = set()
        for pattern in patterns:
            entry, _ = search.vector_candidates(
                conn, self._tx.vectors, model, sid, pattern, None, generation
            )
            for mid in focus:
                if mid in blobs:
                    query = stored.vector(blobs[mid])
                    top = self._tx.vectors.top(entry, query, 2 * dream_inputs.NEIGHBOURS, fetch)
                    out.update(s for s, c in top if c >= dream_inputs.MIN_COSINE)
        return sorted(out)

    def _write_plan(
        self,
        sid: int,
        dream_id: str,
        planned: Sequence[PlannedAction],
        by_id: Mapping[str, Any],
        patterns: tuple[ScopePattern, ...],
        mode: str,
        thresholds: Mapping[str, float],
    ) -> None:
        auto = [
            decide(
                a.action,
                a.confidence,
                apply_mode=mode,
                thresholds=thresholds,
                # Only a MERGE writes a memory above its sources' scopes; an UPDATE across
                # runs keeps the newer memory where it was said.
                promoted=a.action == "MERGE"
                and any(by_id[i].scope != a.target_scope for i in a.source_ids),
            )
            for a in planned
        ]
        texts = [a.text for a, d in zip(planned, auto) if d.apply and a.action in ("MERGE", "ADD")]
        vectors = iter(self._tx.embed([t or "" for t in texts]) or [None] * len(texts))
        auto_ids: list[str] = []
        with self._tx.write() as conn:
            row = self._dream_row(conn, sid, dream_id)
            if row.status != "planning":  # cancelled meanwhile
                return
            now = time.time()
            for action, decision in zip(planned, auto):
                versions = planned_state(action, by_id)
                action_id = uuid.uuid4().hex
                conn.execute(
                    "INSERT INTO dream_actions (id, dream_seq, action, status, target_scope,"
                    " target_id, source_ids, versions, text, confidence, reason, skipped_reason,"
                    " created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    (
                        action_id,
                        row.seq,
                        action.action,
                        decision.status,
                        json.dumps(action.target_scope.as_dict()),
                        action.target_id,
                        json.dumps(list(action.source_ids)),
                        json.dumps(versions),
                        action.text,
                        action.confidence,
                        action.reason,
                        decision.skipped_reason,
                        now,
                        now,
                    ),
                )
                if decision.apply:
                    auto_ids.append(action_id)
            status = "applying" if auto_ids else "completed"
            conn.execute(
                "UPDATE dream_tasks SET status = ?, updated_at = ?, finished_at = ? WHERE seq = ?",
                (status, now, None if auto_ids else now, row.seq),
            )
        if auto_ids:
            self._apply_auto(sid, dream_id, auto_ids, patterns, vectors)

    def _apply_auto(
        self,
        sid: int,
        dream_id: str,
        action_ids: Sequence[str],
        patterns: tuple[ScopePattern, ...],
        vectors: Any,
    ) -> None:
        """``safe_auto``: apply the confident actions (one savepoint each), then finish."""
        added: Added = []
        removed: Removed = []
        with self._tx.write() as conn:
            row = self._dream_row(conn, sid, dream_id)
            if row.status != "applying":  # cancelled meanwhile
                return
            failed = 0
            for action_id in action_ids:
                stored = self._action_row(conn, row.seq, action_id)
                assert stored is not None  # written by this task's plan
                vector = next(vectors) if stored.action in ("MERGE", "ADD") else None
                out = self._apply_one(conn, sid, row, stored, patterns, vector, added, removed)
                failed += out.status == "failed"
            now = time.time()
            conn.execute(
                "UPDATE dream_tasks SET status = ?, updated_at = ?, finished_at = ? WHERE seq = ?",
                ("completed_with_failures" if failed else "completed", now, now, row.seq),
            )
            if added or removed:
                self._tx.after_write(sid, self._tx.bump(conn, sid), added, removed)

    def _apply_one(
        self,
        conn: sqlite3.Connection,
        sid: int,
        task: TaskRow,
        stored: ActionRow,
        patterns: Sequence[ScopePattern],
        vector: Any,
        added: Added,
        removed: Removed,
    ) -> Outcome:
        """Apply one stored action in a savepoint: all of it lands, or none and it is failed."""
        action = stored._asdict()
        conn.execute("SAVEPOINT dream_action")
        try:
            out = self._applier.apply_action(
                conn, sid, task.seq, action, patterns, vector, added, removed
            )
            conn.execute("RELEASE dream_action")
        except MemcoreError as exc:
            conn.execute("ROLLBACK TO dream_action")
            conn.execute("RELEASE dream_action")
            out = Outcome("failed")
            conn.execute(
                "UPDATE dream_actions SET status = 'failed', error = ?, updated_at = ?"
                " WHERE seq = ?",
                (str(exc), time.time(), action["seq"]),
            )
            return out
        now = time.time()
        conn.execute(
            "UPDATE dream_actions SET status = ?, skipped_reason = ?, result_id = ?, undo = ?,"
            " applied_at = ?, undone_at = NULL, updated_at = ? WHERE seq = ?",
            (
                out.status,
                out.skipped_reason,
                out.result_id,
                out.undo,
                now if out.status == "applied" else None,
                now,
                action["seq"],
            ),
        )
        return out

    def get_dream_task(self, store: str, task_id: str) -> DreamTask:
        limits.check_id(task_id, field="task_id")
        self._reap(store, task_id=task_id)
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            return dream_value(conn, self._dream_row(conn, sid, task_id))

    def list_dream_tasks(
        self,
        store: str,
        *,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
        status: str | None = None,
    ) -> Page[DreamTask]:
        """``pattern`` keeps tasks with an input scope it overlaps; pages may then be short."""
        limits.check_limit(limit)
        if status is not None and status not in DREAM_STATUSES:
            raise InvalidInput(f"status must be one of {', '.join(DREAM_STATUSES)}", field="status")
        cursor = self._tx.tokens.listing("dream_tasks", store, pattern, status)
        after = cursor.open(next_token)
        self._reap(store, patterns=None if pattern is None else [pattern])
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            rows = conn.execute(
                f"SELECT {TASK} FROM dream_tasks WHERE store_id = ? AND seq > ?"
                + (" AND status = ?" if status else "")
                + " ORDER BY seq LIMIT ?",
                (sid, after, *((status,) if status else ()), limit + 1),
            ).fetchall()
            tasks = map(TaskRow._make, rows)
            got = page([(int(r.seq), dream_value(conn, r)) for r in tasks], limit, cursor.seal)
        return got.filter(lambda t: pattern is None or any(overlap(pattern, p) for p in t.scopes))

    def cancel_dream_task(self, store: str, task_id: str) -> DreamTask:
        """Cancel a task that is not finished; a finished one is returned as it is."""
        limits.check_id(task_id, field="task_id")
        self._reap(store, task_id=task_id)
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            row = self._dream_row(conn, sid, task_id)
            if row.status in UNFINISHED:
                now = time.time()
                conn.execute(
                    "UPDATE dream_tasks SET status = 'cancelled', updated_at = ?, finished_at = ?"
                    " WHERE seq = ?",
                    (now, now, row.seq),
                )
                conn.execute(
                    "UPDATE dream_actions SET status = 'skipped', skipped_reason = 'task_cancelled'"
                    " WHERE dream_seq = ? AND status = 'proposed'",
                    (row.seq,),
                )
            return dream_value(conn, self._dream_row(conn, sid, task_id))

    def list_dream_actions(
        self, store: str, task_id: str, *, limit: int = 50, next_token: str | None = None
    ) -> Page[DreamAction]:
        limits.check_limit(limit)
        cursor = self._tx.tokens.listing("dream_actions", store, task_id)
        after = cursor.open(next_token)
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            task = self._dream_row(conn, sid, task_id)
            rows = conn.execute(
                f"SELECT {ACTION} FROM dream_actions WHERE dream_seq = ? AND seq > ?"
                " ORDER BY seq LIMIT ?",
                (task.seq, after, limit + 1),
            ).fetchall()
        actions = map(ActionRow._make, rows)
        return page([(int(r.seq), action_value(task_id, r)) for r in actions], limit, cursor.seal)

    def apply_dream_actions(
        self, store: str, task_id: str, action_ids: Sequence[str]
    ) -> list[DreamAction]:
        """Apply proposed actions (and ones skipped only for want of a person); one result
        per id, ``not_found`` for ids the task does not have. Each action is atomic."""
        started = time.perf_counter()
        ids = limits.check_action_ids(action_ids)
        with self._tx.read() as conn:
            sid = self._tx.store_id(conn, store)
            task = self._dream_row(conn, sid, task_id)
            sql = (
                "SELECT id, text FROM dream_actions WHERE dream_seq = ? AND id IN ({})"
                " AND action IN ('MERGE', 'ADD')"
            )
            texts = dict(rows_in(conn, sql, ids, before=(task.seq,)))
        embedded = self._tx.embed([texts[k] or "" for k in texts]) if texts else None
        vectors = dict(zip(texts, embedded or [None] * len(texts)))
        added: Added = []
        removed: Removed = []
        results: list[DreamAction] = []
        with self._tx.write() as conn:
            task = self._dream_row(conn, sid, task_id)
            patterns = patterns_of(task.scopes)
            for aid in ids:
                stored = self._action_row(conn, task.seq, aid)
                if stored is None:
                    results.append(DreamAction(aid, task_id, "", status="not_found"))
                    continue
                status, reason = stored.status, stored.skipped_reason
                if task.status == "cancelled" and status == "proposed":
                    conn.execute(
                        "UPDATE dream_actions SET status = 'skipped',"
                        " skipped_reason = 'task_cancelled' WHERE seq = ?",
                        (stored.seq,),
                    )
                elif status == "proposed" or (status == "skipped" and reason in MANUAL_REASONS):
                    self._apply_one(
                        conn, sid, task, stored, patterns, vectors.get(aid), added, removed
                    )
                self._tx.audit(conn, sid, "ApplyMemoryDreamActions", started, target=aid)
                row = conn.execute(
                    f"SELECT {ACTION} FROM dream_actions WHERE seq = ?", (stored.seq,)
                ).fetchone()
                results.append(action_value(task_id, row))
            conn.execute(
                "UPDATE dream_tasks SET updated_at = ? WHERE seq = ?", (time.time(), task.seq)
            )
            if added or removed:
                self._tx.after_write(sid, self._tx.bump(conn, sid), added, removed)
        return results

    def undo_dream_action(self, store: str, task_id: str, action_id: str) -> DreamAction:
        """Take back an applied action from its undo record; it is proposed again after.

        :class:`~memcore.errors.Conflict` when the memories it wrote changed since."""
        started = time.perf_counter()
        limits.check_id(action_id, field="action_id")
        added: Added = []
        removed: Removed = []
        with self._tx.write() as conn:
            sid = self._tx.store_id(conn, store)
            task = self._dream_row(conn, sid, task_id)
            stored = self._action_row(conn, task.seq, action_id)
            if stored is None:
                raise NotFound(f"dream action {action_id!r} does not exist", field="action_id")
            a = stored._asdict()
            if a["status"] != "applied" or not a["undo"]:
                raise InvalidInput("only an applied action can be undone", field="action_id")
            target = Scope.from_mapping(json.loads(a["target_scope"]))
            tenant = (target.app_id, target.tenant_id)
            self._applier.undo_action(conn, sid, tenant, json.loads(a["undo"]), added, removed)
            now = time.time()
            conn.execute(
                "UPDATE dream_actions SET status = 'proposed', skipped_reason = NULL,"
                " result_id = NULL, undo = NULL, undone_at = ?, updated_at = ? WHERE seq = ?",
                (now, now, a["seq"]),
            )
            self._tx.audit(conn, sid, "UndoMemoryDreamAction", started, target=action_id)
            self._tx.after_write(sid, self._tx.bump(conn, sid), added, removed)
            row = conn.execute(
                f"SELECT {ACTION} FROM dream_actions WHERE seq = ?", (a["seq"],)
            ).fetchone()
        return action_value(task_id, row)
