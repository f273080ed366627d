"""``InMemoryMemoryStore``: a fake ``MemoryStore`` with the service's semantics.

Scope matching with wildcards, opaque page tokens, content dedup per scope, an audit log,
tasks, a simple dream (consolidation of duplicates), lexical scoring in [0, 1], optional
eventual consistency and fault injection. Thread-safe, so it can sit behind an HTTP server.
"""

from __future__ import annotations

import itertools
import math
import threading
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime

import attrs

from memcore import limits
from memcore.errors import Conflict, NotFound, StoreClosed, StoreNotFound
from memcore.paging import paginate
from memcore.ports import Embedder, ProgressCallback
from memcore.scope import Scope, ScopePattern
from memcore.testing.fake import reading
from memcore.testing.fake.dreaming import apply_actions, counts, overlaps, propose_merges
from memcore.testing.fake.ranking import hit_for
from memcore.testing.fake.reading import tokens
from memcore.testing.fake.state import StoreState, Unit
from memcore.testing.faults import FaultPlan
from memcore.values import (
    DreamAction,
    DreamTask,
    MemoryRecord,
    MemoryTask,
    Message,
    Page,
    RequestRecord,
    SearchHit,
    StoreInfo,
    TurnContext,
    WriteReceipt,
)


class InMemoryMemoryStore:
    """A fake store for the core and the contract suite.

    ``consistency_lag``: a write becomes visible to search only after that many later calls,
    as with the cloud service's asynchronous indexing. ``faults``: see :class:`FaultPlan`.
    """

    #: The fake keeps no time-word parser (that is a store's own): the date is checked only.
    supports_reference_time = False

    def __init__(
        self,
        *,
        consistency_lag: int = 0,
        embedder: Embedder | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.consistency_lag = consistency_lag
        self.embedder = embedder
        self.faults = FaultPlan()
        self._clock = clock
        self._lock = threading.RLock()
        self._stores: dict[str, StoreState] = {}
        self._seq = itertools.count(1)
        self._calls = 0
        self.closed = False

    # -- helpers ------------------------------------------------------------------------
    def _enter(self, operation: str) -> None:
        if self.closed:
            raise StoreClosed("this InMemoryMemoryStore is closed", field="store")
        self.faults.check(operation)
        self._calls += 1

    def _store(self, name: str) -> StoreState:
        limits.check_store_name(name)
        try:
            return self._stores[name]
        except KeyError:
            raise StoreNotFound(
                f"memory store {name!r} does not exist", field="memory_store_name"
            ) from None

    def _audit(
        self,
        st: StoreState,
        operation: str,
        *,
        scope: Scope | None = None,
        target: str | None = None,
        started: float,
        status: int = 200,
        rid: str | None = None,
    ) -> str:
        rid = rid or uuid.uuid4().hex
        record = RequestRecord(
            id=rid,
            operation=operation,
            status=str(status),
            scope=scope,
            target_id=target,
            latency_ms=(time.perf_counter() - started) * 1000.0,
            created_at=self._clock(),
            response_status=status,
        )
        st.requests.append((next(self._seq), record))
        return rid

    def _task(
        self, st: StoreState, operation: str, scope: Scope, ids: Sequence[str], accepted: int = 0
    ) -> MemoryTask:
        """The write's task, keyed by the write's request id as on the service."""
        now = self._clock()
        task = MemoryTask(
            id=uuid.uuid4().hex,
            status="completed",
            operation=operation,
            scope=scope,
            created_at=now,
            finished_at=now,
            memory_ids=tuple(ids),
            updated_at=now,
            accepted_messages=accepted,
        )
        st.tasks[task.id] = (next(self._seq), task)
        return task

    def _insert(
        self,
        st: StoreState,
        scope: Scope,
        text: str,
        metadata: Mapping[str, str],
        unit_type: str,
        said: float | None = None,
    ) -> str:
        """``said``: when the text was said (a message's own time), else now. It is the
        memory's ``created_at``; ``updated_at`` is when it was written, as in the embedded
        store."""
        key = reading.content_key(scope, text)
        existing = st.by_content.get(key)
        now = self._clock()
        when = now if said is None else said
        if existing is not None and existing in st.units:
            # The same text again: the newest said occurrence's metadata wins, within the
            # limit (limits.merge_metadata), and it dates the memory, as the embedded store
            # does; one said before the memory's last one changes nothing.
            unit = st.units[existing]
            if when < unit.said:
                return existing
            old = unit.memory
            unit.said = when
            unit.memory = attrs.evolve(
                old,
                metadata=limits.merge_metadata(old.metadata, metadata),
                updated_at=max(now, old.updated_at or now),
                version=(old.version or 0) + 1,
                said_at=when,
            )
            return existing
        memory = MemoryRecord(
            id=uuid.uuid4().hex,
            text=text,
            scope=scope,
            metadata=dict(metadata),
            created_at=when,
            updated_at=now,
            unit_type=unit_type,
            version=1,
            said_at=when,
        )
        vector = self.embedder.embed([text])[0] if self.embedder else None
        st.units[memory.id] = Unit(
            next(self._seq), memory, self._calls + self.consistency_lag, vector, when
        )
        st.by_content[key] = memory.id
        return memory.id

    def _unit_in_scope(self, st: StoreState, scope: Scope, memory_id: str) -> Unit:
        limits.check_id(memory_id)
        unit = st.units.get(memory_id)
        # Another scope's memory is reported exactly like a missing one: existence never leaks.
        if unit is None or unit.memory.scope != scope:
            raise NotFound(
                f"memory {memory_id!r} was not found in scope {scope}", field="memory_id"
            )
        return unit

    # -- stores -------------------------------------------------------------------------
    def _new_store(self, store: str, description: str, instructions: str | None) -> StoreInfo:
        limits.check_description(description)
        limits.check_extract_instructions(instructions)
        now = self._clock()
        info = StoreInfo(
            store,
            description,
            "ready",
            now,
            storage_mode="ots",
            extract_instructions=instructions or None,
            updated_at=now,
        )
        self._stores[store] = StoreState(info)
        return info

    def ensure_store(
        self,
        store: str,
        *,
        description: str = "",
        create: bool = True,
        extract_instructions: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> StoreInfo:
        self._enter("ensure_store")
        with self._lock:
            limits.check_store_name(store)
            if store not in self._stores:
                if not create:
                    raise StoreNotFound(
                        f"memory store {store!r} does not exist", field="memory_store_name"
                    )
                return self._new_store(store, description, extract_instructions)
            return self._stores[store].info

    def describe_store(self, store: str) -> StoreInfo:
        self._enter("describe_store")
        with self._lock:
            return self._store(store).info

    def list_stores(self) -> list[StoreInfo]:
        self._enter("list_stores")
        with self._lock:
            return [s.info for s in self._stores.values()]

    def create_store(
        self, store: str, *, description: str = "", extract_instructions: str | None = None
    ) -> StoreInfo:
        self._enter("create_store")
        with self._lock:
            limits.check_store_name(store)
            if store in self._stores:
                raise Conflict(
                    f"memory store {store!r} already exists",
                    field="memory_store_name",
                    retryable=False,
                )
            return self._new_store(store, description, extract_instructions)

    def update_store(
        self,
        store: str,
        *,
        description: str | None = None,
        extract_instructions: str | None = None,
    ) -> StoreInfo:
        """PATCH: None leaves a field as it is, "" clears it."""
        self._enter("update_store")
        if description is not None:
            limits.check_description(description)
        limits.check_extract_instructions(extract_instructions)
        with self._lock:
            st = self._store(store)
            changes: dict[str, object] = {}
            if description is not None:
                changes["description"] = description
            if extract_instructions is not None:
                changes["extract_instructions"] = extract_instructions or None
            if changes:
                st.info = attrs.evolve(st.info, updated_at=self._clock(), **changes)  # type: ignore[arg-type]
            return st.info

    def delete_store(self, store: str) -> None:
        self._enter("delete_store")
        with self._lock:
            self._store(store)
            del self._stores[store]

    # -- memories -----------------------------------------------------------------------
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
        self._enter("add_text")
        limits.check_text(text)
        meta = limits.check_metadata(metadata)
        with self._lock:
            st = self._store(store)
            mid = self._insert(st, scope, text, meta, "text")
            task = self._task(st, "AddMemories", scope, [mid])
            self._audit(st, "AddMemories", scope=scope, target=mid, started=started, rid=task.id)
            return WriteReceipt(task.id, task.status, (mid,), task.id)

    def add_messages(
        self,
        store: str,
        scope: Scope,
        messages: Sequence[Message],
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> WriteReceipt:
        started = time.perf_counter()
        self._enter("add_messages")
        checked = limits.check_messages(messages)
        meta = limits.check_metadata(metadata)
        with self._lock:
            st = self._store(store)
            log = st.messages.setdefault(scope, [])
            ids: list[str] = []
            for m in checked:
                stored = Message(
                    role=m.role,
                    content=m.content,
                    id=m.id or uuid.uuid4().hex,
                    timestamp=m.timestamp or self._clock(),
                    metadata=m.metadata,
                    scope=scope,
                )
                log.append((next(self._seq), stored))
                if m.remember:  # otherwise kept in the log only
                    mid = self._insert(
                        st,
                        scope,
                        m.content,
                        limits.merge_metadata(meta, m.metadata),
                        "message",
                        m.timestamp,
                    )
                    st.became[stored.id or ""] = mid
                    ids.append(mid)
            ids = list(dict.fromkeys(ids))
            task = self._task(st, "AddMemories", scope, ids, accepted=len(checked))
            self._audit(st, "AddMemories", scope=scope, started=started, rid=task.id)
            return WriteReceipt(task.id, task.status, tuple(ids), task.id, len(checked))

    def search(
        self,
        store: str,
        pattern: ScopePattern,
        query: str,
        *,
        top_k: int = 10,
        enable_rerank: bool = True,
        filters: Mapping[str, str] | None = None,
        min_similarity: float | None = None,
        context_scope: Scope | None = None,
        include_evidence: bool = False,
        reference_time: datetime | None = None,
    ) -> list[SearchHit]:
        """Lexical overlap (or cosine, with an embedder) as ``score``; with a
        ``context_scope``, that conversation's hits rank first (``ranking_score``).
        ``reference_time`` is checked and not used (:attr:`supports_reference_time`)."""
        started = time.perf_counter()
        self._enter("search")
        limits.check_query(query)
        limits.check_top_k(top_k)
        flt = limits.check_metadata(filters, field="filters")
        floor = limits.check_min_similarity(min_similarity)
        limits.check_context_scope(context_scope, pattern)
        limits.check_reference_time(reference_time)
        q = tokens(query)
        qvec = self.embedder.embed([query])[0] if self.embedder else None
        with self._lock:
            st = self._store(store)
            hits: list[SearchHit] = []
            for unit in st.units.values():
                if unit.visible_after > self._calls or not pattern.matches(unit.memory.scope):
                    continue
                hit = hit_for(
                    st,
                    unit,
                    q,
                    qvec,
                    filters=flt,
                    floor=floor,
                    context_scope=context_scope,
                    include_evidence=include_evidence,
                )
                if hit is not None:
                    hits.append(hit)
            hits.sort(
                key=lambda h: (
                    -(h.score if h.ranking_score is None else h.ranking_score),
                    -st.units[h.memory.id].seq,
                )
            )
            self._audit(st, "SearchMemories", scope=None, started=started)
            return hits[:top_k]

    def neighbour_turns(
        self, store: str, scope: Scope, memory_id: str, *, turns: int
    ) -> TurnContext:
        """The messages of ``scope``'s log around the last one that became ``memory_id``."""
        self._enter("neighbour_turns")
        with self._lock:
            st = self._store(store)
            try:
                self._unit_in_scope(st, scope, memory_id)
            except NotFound:
                return TurnContext()
            # In the order said (a message without its own time was said when written, so
            # after every dated one), then as written: a conversation added after a later
            # one still shows its own turns around its hits.
            written = [m for _, m in st.messages.get(scope, [])]
            log = sorted(written, key=lambda m: math.inf if m.timestamp is None else m.timestamp)
            at = [i for i, m in enumerate(log) if st.became.get(m.id or "") == memory_id]
            if not at or turns < 1:
                return TurnContext()
            i = at[-1]
            return TurnContext(tuple(log[max(0, i - turns) : i]), tuple(log[i + 1 : i + 1 + turns]))

    def list_memories(
        self, store: str, pattern: ScopePattern, *, limit: int = 50, next_token: str | None = None
    ) -> Page[MemoryRecord]:
        started = time.perf_counter()
        self._enter("list_memories")
        limits.check_limit(limit)
        with self._lock:
            st = self._store(store)
            items = sorted(
                (u.seq, u.memory) for u in st.units.values() if pattern.matches(u.memory.scope)
            )
            page = paginate(items, limit, next_token)
            self._audit(st, "ListMemories", started=started)
            return page

    def get_memory(self, store: str, scope: Scope, memory_id: str) -> MemoryRecord:
        started = time.perf_counter()
        self._enter("get_memory")
        with self._lock:
            st = self._store(store)
            unit = self._unit_in_scope(st, scope, memory_id)
            self._audit(st, "GetMemory", scope=scope, target=memory_id, started=started)
            return unit.memory

    def update_memory(
        self,
        store: str,
        scope: Scope,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> MemoryRecord:
        started = time.perf_counter()
        self._enter("update_memory")
        if text is not None:
            limits.check_text(text)
        meta = None if metadata is None else limits.check_metadata(metadata)
        with self._lock:
            st = self._store(store)
            unit = self._unit_in_scope(st, scope, memory_id)
            old = unit.memory
            now = self._clock()
            edited = text is not None and text != old.text
            new = attrs.evolve(
                old,
                text=old.text if text is None else text,
                # Merged as on the service: same key overwrites, {} clears the map.
                metadata=old.metadata
                if meta is None
                else limits.merge_update_metadata(old.metadata, meta),
                updated_at=now,
                version=(old.version or 0) + 1,
                # A new text is stated now; a metadata change leaves when it was said.
                said_at=now if edited else old.said_at,
            )
            if text is not None and text != old.text:
                unit.said = now
                st.by_content.pop(reading.content_key(scope, old.text), None)
                st.by_content[reading.content_key(scope, text)] = memory_id
                if self.embedder:
                    unit.vector = self.embedder.embed([text])[0]
            unit.memory = new
            self._audit(st, "UpdateMemory", scope=scope, target=memory_id, started=started)
            return new

    def delete_memory(self, store: str, scope: Scope, memory_id: str) -> None:
        started = time.perf_counter()
        self._enter("delete_memory")
        with self._lock:
            st = self._store(store)
            unit = self._unit_in_scope(st, scope, memory_id)
            del st.units[memory_id]
            st.by_content.pop(reading.content_key(scope, unit.memory.text), None)
            self._audit(st, "DeleteMemory", scope=scope, target=memory_id, started=started)

    # -- messages, audit, scopes, tasks -------------------------------------------------
    def list_messages(
        self, store: str, scope: Scope, *, limit: int = 50, next_token: str | None = None
    ) -> Page[Message]:
        self._enter("list_messages")
        limits.check_limit(limit)
        with self._lock:
            st = self._store(store)
            return paginate(list(st.messages.get(scope, [])), limit, next_token)

    def message_counts(self, store: str, pattern: ScopePattern) -> dict[Scope, int]:
        self._enter("message_counts")
        with self._lock:
            st = self._store(store)
            return {s: len(log) for s, log in st.messages.items() if log and pattern.matches(s)}

    def move_messages(self, store: str, moves: Sequence[tuple[Scope, Scope]]) -> int:
        """Each source's log onto its target's, in the order said; a message that became a
        memory becomes the target's memory of that text (none if it has none)."""
        started = time.perf_counter()
        self._enter("move_messages")
        checked = limits.check_message_moves(moves)
        moved = 0
        with self._lock:
            st = self._store(store)
            for source, target in checked:
                log = st.messages.pop(source, [])
                for _, message in log:
                    was = st.units.get(st.became.pop(message.id or "", ""))
                    if was is not None:
                        now = st.by_content.get(reading.content_key(target, was.memory.text))
                        if now is not None:
                            st.became[message.id or ""] = now
                moved += len(log)
                kept = st.messages.get(target, [])
                st.messages[target] = sorted(
                    kept + [(seq, attrs.evolve(m, scope=target)) for seq, m in log],
                    key=lambda entry: entry[0],
                )
                self._audit(st, "MoveMessages", scope=source, started=started)
        return moved

    def list_requests(
        self,
        store: str,
        *,
        operation: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[RequestRecord]:
        self._enter("list_requests")
        limits.check_limit(limit)
        limits.check_operation(operation)
        with self._lock:
            st = self._store(store)
            items = [
                (s, r)
                for s, r in st.requests
                if (operation is None or r.operation == operation)
                and (pattern is None or _audited_within(r.scope, pattern))
            ]
            return paginate(items, limit, next_token)

    def list_scopes(
        self,
        store: str,
        pattern: ScopePattern | None = None,
        *,
        limit: int = 50,
        next_token: str | None = None,
    ) -> Page[Scope]:
        self._enter("list_scopes")
        limits.check_limit(limit)
        with self._lock:
            st = self._store(store)
            first: dict[Scope, int] = {}
            for unit in st.units.values():
                s = unit.memory.scope
                if pattern is None or pattern.matches(s):
                    first[s] = min(first.get(s, unit.seq), unit.seq)
            return paginate(sorted((seq, s) for s, seq in first.items()), limit, next_token)

    def get_task(self, store: str, task_id: str) -> MemoryTask:
        self._enter("get_task")
        with self._lock:
            st = self._store(store)
            limits.check_id(task_id, field="task_id")
            if task_id not in st.tasks:
                raise NotFound(f"task {task_id!r} does not exist", field="task_id")
            return st.tasks[task_id][1]

    def list_tasks(
        self,
        store: str,
        *,
        status: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[MemoryTask]:
        self._enter("list_tasks")
        limits.check_limit(limit)
        limits.check_status(status)
        with self._lock:
            st = self._store(store)
            items = sorted(
                (seq, t)
                for seq, t in st.tasks.values()
                if (status is None or t.status == status)
                and (pattern is None or (t.scope is not None and pattern.matches(t.scope)))
            )
            return paginate(items, limit, next_token)

    # -- dream --------------------------------------------------------------------------
    def create_dream_task(
        self,
        store: str,
        scopes: ScopePattern | Sequence[ScopePattern],
        *,
        apply_mode: str = "proposal",
        instructions: str | None = None,
    ) -> DreamTask:
        """Consolidate: propose merging each memory whose text repeats an older one's
        (case-folded) into that older one, as the service's planner does for duplicates."""
        self._enter("create_dream_task")
        patterns = limits.check_dream_scopes(scopes)
        mode = limits.check_apply_mode(apply_mode)
        limits.check_dream_instructions(instructions)
        with self._lock:
            st = self._store(store)
            now = self._clock()
            dream_id = uuid.uuid4().hex
            actions = propose_merges(st, patterns, dream_id, now, self._seq)
            st.actions[dream_id] = actions
            task = DreamTask(
                dream_id,
                "completed",
                patterns,
                now,
                now,
                apply_mode=mode,
                updated_at=now,
                action_counts=counts([a for _, a in actions]),
                instructions=instructions or None,
            )
            st.dreams[task.id] = (next(self._seq), task)
            return task

    def _dream(self, st: StoreState, task_id: str) -> DreamTask:
        limits.check_id(task_id, field="task_id")
        if task_id not in st.dreams:
            raise NotFound(f"dream task {task_id!r} does not exist", field="task_id")
        return st.dreams[task_id][1]

    def get_dream_task(self, store: str, task_id: str) -> DreamTask:
        self._enter("get_dream_task")
        with self._lock:
            return self._dream(self._store(store), task_id)

    def list_dream_tasks(
        self,
        store: str,
        *,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
        status: str | None = None,
    ) -> Page[DreamTask]:
        self._enter("list_dream_tasks")
        limits.check_limit(limit)
        limits.check_status(status, dream=True)
        with self._lock:
            items = [
                (seq, t)
                for seq, t in sorted(self._store(store).dreams.values(), key=lambda e: e[0])
                if (status is None or t.status == status)
                and (pattern is None or any(overlaps(pattern, p) for p in t.scopes))
            ]
            return paginate(items, limit, next_token)

    def cancel_dream_task(self, store: str, task_id: str) -> DreamTask:
        self._enter("cancel_dream_task")
        with self._lock:
            st = self._store(store)
            task = self._dream(st, task_id)
            if not task.finished:
                task = attrs.evolve(task, status="cancelled")
                st.dreams[task_id] = (st.dreams[task_id][0], task)
            return task

    def list_dream_actions(
        self, store: str, task_id: str, *, limit: int = 50, next_token: str | None = None
    ) -> Page[DreamAction]:
        self._enter("list_dream_actions")
        limits.check_limit(limit)
        with self._lock:
            st = self._store(store)
            self._dream(st, task_id)
            return paginate(list(st.actions.get(task_id, [])), limit, next_token)

    def apply_dream_actions(
        self, store: str, task_id: str, action_ids: Sequence[str]
    ) -> list[DreamAction]:
        self._enter("apply_dream_actions")
        ids = limits.check_action_ids(action_ids)
        with self._lock:
            st = self._store(store)
            task = self._dream(st, task_id)
            now = self._clock()
            return apply_actions(st, task, ids, now)

    def close(self) -> None:
        """Every call after it raises ``StoreClosed``, as a real store's does."""
        self.closed = True

    def reopen(self) -> InMemoryMemoryStore:
        """This store open again, its data kept: a new client of the same service, for a
        test that restarts a host (whose shutdown closed the store it was given)."""
        self.closed = False
        return self

    # -- test helpers -------------------------------------------------------------------
    def all_memories(self, store: str) -> list[MemoryRecord]:
        with self._lock:
            return [
                u.memory for u in sorted(self._store(store).units.values(), key=lambda u: u.seq)
            ]

    def count(self, store: str, pattern: ScopePattern | None = None) -> int:
        with self._lock:
            return sum(
                1
                for u in self._store(store).units.values()
                if pattern is None or pattern.matches(u.memory.scope)
            )


def _audited_within(scope: Scope | ScopePattern | None, pattern: ScopePattern) -> bool:
    """Whether an audit record's scope (a pattern for a wildcard call) lies inside ``pattern``."""
    if scope is None:
        return False
    return pattern.matches(scope) if isinstance(scope, Scope) else scope.within(pattern)
