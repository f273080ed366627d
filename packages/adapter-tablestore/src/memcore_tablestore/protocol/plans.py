"""Every Memory Store operation, written once as a plan that the sync and async stores run.

A plan is a generator: it validates the input, yields a :class:`Call` (one API request) or a
:class:`Pause`, receives the decoded response (or has the mapped error thrown into it), and
returns the core's value. It does no I/O itself, so :class:`TableStoreMemoryStore` drives it
with ``OTSClient`` and :class:`AsyncTableStoreMemoryStore` with ``AsyncOTSClient``.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Generator, Mapping, Sequence
from datetime import datetime
from typing import Any, TypeVar

import attrs

from memcore import limits
from memcore.errors import (
    Conflict,
    InvalidInput,
    MemcoreError,
    NotFound,
    ProtocolError,
    StoreNotFound,
)
from memcore.ports import ProgressCallback
from memcore.scope import Scope, ScopePattern
from memcore.values import (
    DREAM_STATUSES,
    TASK_STATUSES,
    DreamAction,
    DreamTask,
    MemoryRecord,
    MemoryTask,
    Message,
    Page,
    RequestRecord,
    SearchHit,
    StoreInfo,
    WriteReceipt,
)
from memcore_tablestore.protocol import answers, bodies, wire
from memcore_tablestore.protocol.apis import READ_ONLY

T = TypeVar("T")

#: The concrete scope the readiness probe reads (cheap, and holds nothing of anyone's).
PROBE_SCOPE = Scope("__default__", "__default__", "__default__", "__default__")


@attrs.frozen
class Call:
    """One API request.

    ``replay_safe``: sending it a second time after an *ambiguous* failure (timeout, dropped
    connection, 500, a 2xx that is not the service's) cannot change the outcome; a call that
    is not fails with :class:`memcore.errors.OutcomeUnknown` then. Refused requests (429, 503, 409) are always
    safe to resend; see :mod:`memcore_tablestore.client.error_map`.
    ``retry_conflict``: a 409 means "busy, try again" for this call (a new store's index).
    """

    api: str
    body: dict[str, Any]
    replay_safe: bool = True
    retry_conflict: bool = True


@attrs.frozen
class Pause:
    seconds: float


Step = Call | Pause
Plan = Generator[Step, Any, T]


class Plans:
    """The operations of :class:`memcore.ports.MemoryStore`, as plans."""

    def __init__(self, *, auto_create: bool = True, ready_timeout: float = 180.0) -> None:
        self.auto_create = auto_create
        self.ready_timeout = ready_timeout

    # -- stores -------------------------------------------------------------------------
    def ensure_store(
        self,
        store: str,
        *,
        description: str = "",
        create: bool = True,
        extract_instructions: str | None = None,
        progress: ProgressCallback | None = None,
    ) -> Plan[StoreInfo]:
        body = bodies.named(store)
        try:
            answer = yield Call("GetMemoryStore", body, retry_conflict=False)
            return answers.store_info("GetMemoryStore", answer)
        except Conflict:
            # Only while initialising does a store answer 409: wait, then describe it.
            yield from self.wait_ready(store, progress=progress)
            return answers.store_info("GetMemoryStore", (yield Call("GetMemoryStore", body)))
        except NotFound:
            if not (create and self.auto_create):
                raise bodies.store_missing(store) from None
        info: StoreInfo | None
        try:
            info = yield from self.create_store(
                store, description=description, extract_instructions=extract_instructions
            )
        except Conflict:
            info = None  # created meanwhile by someone else: fine, wait for it below
        yield from self.wait_ready(store, progress=progress)
        if info is None:
            info = answers.store_info("GetMemoryStore", (yield Call("GetMemoryStore", body)))
        return info

    def wait_ready(self, store: str, *, progress: ProgressCallback | None = None) -> Plan[None]:
        """Wait until a new store's index serves. GetMemoryStore reports no state; the
        documented signal is ``409 CONFLICT`` on data-plane calls while the index initialises,
        so a tiny ListMemories is probed until it answers, within ``ready_timeout``."""
        _, probe = bodies.listing(store, PROBE_SCOPE, 1, None)
        deadline = time.monotonic() + self.ready_timeout
        started = time.monotonic()
        delay = 0.05
        waited = False
        while True:
            try:
                yield Call("ListMemories", probe, retry_conflict=False)
                if progress is not None and waited:
                    progress(f"memory store {store!r} is ready")
                return
            except (Conflict, NotFound):
                pass  # NotFound: a just-created store may not be visible to every node yet
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise Conflict(
                    f"memory store {store!r} is still initialising its index after "
                    f"{self.ready_timeout:.0f}s; try again later",
                    field="memory_store_name",
                )
            waited = True
            if progress is not None:
                progress(
                    f"waiting for memory store {store!r} to initialise its index "
                    f"({time.monotonic() - started:.0f}s of at most {self.ready_timeout:.0f}s)"
                )
            yield Pause(min(delay, remaining))
            delay = min(delay * 2, 2.0)

    def describe_store(self, store: str) -> Plan[StoreInfo]:
        answer = yield from _of_store(Call("GetMemoryStore", bodies.named(store)))
        return answers.store_info("GetMemoryStore", answer)

    def list_stores(self) -> Plan[list[StoreInfo]]:
        out: list[StoreInfo] = []
        token: str | None = None
        for _ in range(10_000):
            body = bodies.paging({}, limits.MAX_PAGE_LIMIT, token)
            page = answers.list_stores((yield Call("ListMemoryStores", body)))
            out.extend(page.items)
            token = page.next_token
            if token is None:
                return out
        raise ProtocolError("ListMemoryStores never stopped paging")

    def create_store(
        self, store: str, *, description: str = "", extract_instructions: str | None = None
    ) -> Plan[StoreInfo]:
        body: dict[str, Any] = {**bodies.named(store)}
        if limits.check_description(description):
            body["description"] = description
        instructions = limits.check_extract_instructions(extract_instructions)
        if instructions:
            body["extractInstructions"] = instructions
        # Not replayed after an ambiguous failure: a replay would answer "already exists".
        answer = yield Call("CreateMemoryStore", body, replay_safe=False, retry_conflict=False)
        return answers.store_info("CreateMemoryStore", answer)

    def update_store(
        self,
        store: str,
        *,
        description: str | None = None,
        extract_instructions: str | None = None,
    ) -> Plan[StoreInfo]:
        """PATCH: a field left as None is not sent (unchanged); "" clears it."""
        body = bodies.named(store)
        if description is not None:
            body["description"] = limits.check_description(description)
        instructions = limits.check_extract_instructions(extract_instructions)
        if instructions is not None:
            body["extractInstructions"] = instructions
        # Setting the same values twice has the same effect as once.
        answer = yield from _of_store(Call("UpdateMemoryStore", body))
        return answers.store_info("UpdateMemoryStore", answer)

    def delete_store(self, store: str) -> Plan[None]:
        call = Call("DeleteMemoryStore", bodies.named(store), replay_safe=False)
        answer = yield from _of_store(call)
        # ``deleted: false`` is the service saying it deleted nothing: not a success.
        if not answers.deleted("DeleteMemoryStore", answer):
            raise bodies.store_missing(store)

    # -- memories -----------------------------------------------------------------------
    def add_text(
        self,
        store: str,
        scope: Scope,
        text: str,
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> Plan[WriteReceipt]:
        body = {
            **bodies.named(store),
            "scope": bodies.write_scope(scope),
            "text": limits.check_text(text),
            "metadata": limits.check_metadata(metadata),
            "sync": bool(sync),
        }
        # Not replay-safe: nothing documented says the service deduplicates a text, so after an
        # ambiguous failure the caller gets OutcomeUnknown and looks before sending it again.
        call = Call("AddMemories", body, replay_safe=False)
        # Its 404 is the store's (the body names no memory): asking the store could find it
        # made meanwhile by another first write, and the refused write would not be resent.
        return (yield from self._written(store, scope, (yield from _of_store(call)), sync))

    def add_messages(
        self,
        store: str,
        scope: Scope,
        messages: Sequence[Message],
        *,
        metadata: Mapping[str, str] | None = None,
        sync: bool = False,
    ) -> Plan[WriteReceipt]:
        checked = limits.check_messages(messages)
        body = {
            **bodies.named(store),
            "scope": bodies.write_scope(scope),
            "messages": [bodies.message(m) for m in checked],
            "metadata": limits.check_metadata(metadata),
            "sync": bool(sync),
        }
        # Not replay-safe: messages are appended to the short-term log, so a replay after an
        # ambiguous failure could record the turn twice. Refusals (429/503/409) still retry.
        call = Call("AddMemories", body, replay_safe=False)
        return (yield from self._written(store, scope, (yield from _of_store(call)), sync))

    def _written(
        self, store: str, scope: Scope, answer: dict[str, Any], sync: bool
    ) -> Plan[WriteReceipt]:
        """The receipt of a write that landed. ``AddMemoriesResponse`` types no ``memoryIds``
        (only the documentation names them for sync writes): when a sync answer has none, the
        write's task (``derivedUnitIds``) names them. That read never fails the write."""
        receipt = bodies.receipt(answer)
        if not sync or "memoryIds" in answer or receipt.status != "completed":
            return receipt
        if receipt.task_id is None:
            return receipt
        body = {
            **bodies.named(store),
            "requestId": receipt.task_id,
            "scope": bodies.write_scope(scope),
        }
        try:
            task = answers.one_task((yield Call("GetMemoryTask", body)))
        except MemcoreError:
            return receipt
        if task.id != receipt.task_id or task.scope != scope:
            return receipt
        return attrs.evolve(receipt, memory_ids=task.memory_ids)

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
    ) -> Plan[list[SearchHit]]:
        """``reference_time`` is checked and not sent (the stores declare
        ``supports_reference_time = False``): SearchMemories has no field for it, the
        service ranks on its side and returns only ``topK`` hits, so a date could only
        reorder those, not bring an older memory in."""
        limits.check_reference_time(reference_time)
        wanted = bodies.as_pattern(pattern)
        body: dict[str, Any] = {
            **bodies.named(store),
            "scope": wire.scope_to_wire(wanted),
            "query": limits.check_query(query),
            "topK": limits.check_top_k(top_k),
            "enableRerank": bool(enable_rerank),
        }
        flt = limits.check_metadata(filters, field="filters")
        if flt:
            body["metadata"] = flt  # exact equality, ANDed (``filter`` is the Scope Filter)
        floor = limits.check_min_similarity(min_similarity)
        if floor is not None:
            body["minSimilarity"] = floor  # filters on ``score``
        context = limits.check_context_scope(context_scope, wanted)
        if context is not None:
            body["contextScope"] = wire.scope_to_wire(context)
        if include_evidence:
            body["includeEvidence"] = True
        hits = answers.search((yield from _in_store(Call("SearchMemories", body))))
        bodies.must_match(wanted, (hit.memory.scope for hit in hits), "SearchMemories")
        return hits

    def list_memories(
        self, store: str, pattern: ScopePattern, *, limit: int = 50, next_token: str | None = None
    ) -> Plan[Page[MemoryRecord]]:
        wanted, body = bodies.listing(store, pattern, limit, next_token)
        page = answers.list_memories((yield from _in_store(Call("ListMemories", body))))
        bodies.must_match(wanted, (memory.scope for memory in page.items), "ListMemories")
        return page

    def get_memory(self, store: str, scope: Scope, memory_id: str) -> Plan[MemoryRecord]:
        body = bodies.target(store, scope, memory_id)
        try:
            answer = yield from _in_store(Call("GetMemory", body))
        except StoreNotFound:
            raise
        except NotFound:
            raise bodies.missing(scope, memory_id) from None
        return bodies.own(answers.one_memory("GetMemory", answer), scope, memory_id)

    def update_memory(
        self,
        store: str,
        scope: Scope,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
    ) -> Plan[MemoryRecord]:
        body = bodies.target(store, scope, memory_id)
        if text is not None:
            body["text"] = limits.check_text(text)
        if metadata is not None:
            body["metadata"] = limits.check_metadata(metadata)  # merged; {} clears
        # Seen in this scope first: the scope is checked here, not left to the service.
        found = yield from self.get_memory(store, scope, memory_id)
        if text is None and metadata is None:
            return found
        try:
            # Replay-safe: the same PATCH applied twice leaves the same state.
            answer = yield from _in_store(Call("UpdateMemory", body))
        except StoreNotFound:
            raise
        except NotFound:
            raise bodies.missing(scope, memory_id) from None
        return bodies.own(answers.one_memory("UpdateMemory", answer), scope, memory_id)

    def delete_memory(self, store: str, scope: Scope, memory_id: str) -> Plan[None]:
        body = bodies.target(store, scope, memory_id)
        # Seen in this scope first: the answer to a delete names no scope to check.
        yield from self.get_memory(store, scope, memory_id)
        try:
            # Not replayed after an ambiguous failure: the replay would answer 404 for a
            # delete that succeeded, and we would report a failure that did not happen.
            answer = yield from _in_store(Call("DeleteMemory", body, replay_safe=False))
        except StoreNotFound:
            raise
        except NotFound:
            raise bodies.missing(scope, memory_id) from None
        if not answers.deleted("DeleteMemory", answer):
            raise bodies.missing(scope, memory_id)

    # -- messages, audit, scopes, tasks -------------------------------------------------
    def list_messages(
        self, store: str, scope: Scope, *, limit: int = 50, next_token: str | None = None
    ) -> Plan[Page[Message]]:
        body = bodies.paging(
            {**bodies.named(store), "scope": bodies.write_scope(scope)}, limit, next_token
        )
        page = answers.messages((yield from _in_store(Call("ListMemoryStoreMessages", body))))
        # The session's scope is the only scope the answer names (a tenant guard): it must be
        # the one asked for, and messages under no scope prove nothing.
        if any(m.scope != scope for m in page.items):
            raise ProtocolError(
                "ListMemoryStoreMessages answered with messages of another session", field="scope"
            )
        return page

    def list_requests(
        self,
        store: str,
        *,
        operation: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Plan[Page[RequestRecord]]:
        body = bodies.paging(bodies.named(store), limit, next_token)
        wanted = None if pattern is None else bodies.as_pattern(pattern)
        if wanted is not None:  # optional in the types: omitted means the whole store
            body["scope"] = wire.scope_to_wire(wanted)
        if limits.check_operation(operation) is not None:
            body["operation"] = operation
        page = answers.requests((yield from _in_store(Call("ListMemoryStoreRequests", body))))
        if wanted is None:
            return page
        # A tenant's audit log names other tenants' scopes and memory ids if the service
        # answered more than was asked: only records shown to lie inside the pattern are kept.
        return page.filter(lambda r: _audited_within(r.scope, wanted))

    def list_scopes(
        self,
        store: str,
        pattern: ScopePattern | None = None,
        *,
        limit: int = 50,
        next_token: str | None = None,
    ) -> Plan[Page[Scope]]:
        wanted, body = bodies.listing(store, pattern, limit, next_token)
        page = answers.scopes((yield from _in_store(Call("ListMemoryStoreScopes", body))))
        bodies.must_match(wanted, page.items, "ListMemoryStoreScopes")
        return page

    def get_task(self, store: str, task_id: str) -> Plan[MemoryTask]:
        """``task_id`` is the write's ``requestId``."""
        body = {**bodies.named(store), "requestId": limits.check_id(task_id, field="task_id")}
        return answers.one_task((yield from _in_store(Call("GetMemoryTask", body))))

    def list_tasks(
        self,
        store: str,
        *,
        status: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Plan[Page[MemoryTask]]:
        _, body = bodies.listing(store, pattern, limit, next_token)
        if status is not None:
            body["status"] = bodies.status(status, TASK_STATUSES)
        return answers.tasks((yield from _in_store(Call("ListMemoryTasks", body))))

    # -- dream --------------------------------------------------------------------------
    def create_dream_task(
        self,
        store: str,
        scopes: ScopePattern | Sequence[ScopePattern],
        *,
        apply_mode: str = "proposal",
        instructions: str | None = None,
    ) -> Plan[DreamTask]:
        patterns = limits.check_dream_scopes(scopes)
        body: dict[str, Any] = {
            **bodies.named(store),
            "scopes": [wire.scope_to_wire(p) for p in patterns],
            "applyMode": limits.check_apply_mode(apply_mode),
        }
        text = limits.check_dream_instructions(instructions)
        if text:
            body["instructions"] = text
        # The typed SDK's idempotency key (a 7-day window): a resend after an ambiguous failure
        # resolves to the dream the first attempt started, so it is replay-safe. One per call.
        body["clientToken"] = uuid.uuid4().hex
        answer = yield from _in_store(Call("CreateMemoryDreamTask", body))
        task = answers.dream("CreateMemoryDreamTask", answer)
        # The answer is {dreamId, status, createdAt}: the rest is what we asked for.
        return attrs.evolve(
            task, scopes=patterns, apply_mode=body["applyMode"], instructions=text or None
        )

    def get_dream_task(self, store: str, task_id: str) -> Plan[DreamTask]:
        body = bodies.dream_id(store, task_id)
        answer = yield from _in_store(Call("GetMemoryDreamTask", body))
        return answers.dream("GetMemoryDreamTask", answer)

    def list_dream_tasks(
        self,
        store: str,
        *,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
        status: str | None = None,
    ) -> Plan[Page[DreamTask]]:
        _, body = bodies.listing(store, pattern, limit, next_token)
        if status is not None:
            body["status"] = bodies.status(status, DREAM_STATUSES)
        return answers.dreams((yield from _in_store(Call("ListMemoryDreamTasks", body))))

    def cancel_dream_task(self, store: str, task_id: str) -> Plan[DreamTask]:
        body = bodies.dream_id(store, task_id)
        # Cancelling twice leaves the task cancelled, as once does.
        cancelled = answers.dream(
            "CancelMemoryDreamTask", (yield from _in_store(Call("CancelMemoryDreamTask", body)))
        )
        # The answer is {dreamId, status, taskType}: decoded alone it would show defaults (no
        # scopes, "proposal", no dates) for what the task really is. The task is read back.
        task = answers.dream("GetMemoryDreamTask", (yield Call("GetMemoryDreamTask", body)))
        if task.id != cancelled.id:
            raise ProtocolError("GetMemoryDreamTask answered with another task", field="dreamId")
        return task

    def list_dream_actions(
        self, store: str, task_id: str, *, limit: int = 50, next_token: str | None = None
    ) -> Plan[Page[DreamAction]]:
        body = bodies.paging(bodies.dream_id(store, task_id), limit, next_token)
        return answers.actions((yield from _in_store(Call("ListMemoryDreamActions", body))))

    def apply_dream_actions(
        self, store: str, task_id: str, action_ids: Sequence[str]
    ) -> Plan[list[DreamAction]]:
        ids = limits.check_action_ids(action_ids)
        body = {**bodies.dream_id(store, task_id), "actionIds": ids}
        # Not replayed after an ambiguous failure: applied actions report differently twice.
        answer = yield from _in_store(Call("ApplyMemoryDreamActions", body, replay_safe=False))
        return answers.applied(answer)

    # -- the live check -----------------------------------------------------------------
    def call_read_only(self, api: str, body: Mapping[str, Any]) -> Plan[dict[str, Any]]:
        """One read-only API call, answered as the service sent it (for ``doctor --live``)."""
        if api not in READ_ONLY:
            raise InvalidInput(f"{api} is not a read-only Memory Store API", field="api")
        answer: dict[str, Any] = yield Call(api, dict(body))
        return answer


def _of_store(call: Call) -> Plan[dict[str, Any]]:
    """The answer to a call on the store itself; its 404 is the store's."""
    try:
        answer: dict[str, Any] = yield call
    except NotFound:
        raise bodies.store_missing(call.body["memoryStoreName"]) from None
    return answer


def _in_store(call: Call) -> Plan[dict[str, Any]]:
    """The answer to a call inside a store. A 404 says only that something is missing (the
    service documents no code that tells a store from a memory or task), so the store is
    asked about: if it is gone the call raises :class:`StoreNotFound`, never the answer of an
    empty store or of a missing id; otherwise the 404 stands as it was."""
    try:
        answer: dict[str, Any] = yield call
    except NotFound as missing:
        store = call.body["memoryStoreName"]
        try:
            yield Call("GetMemoryStore", bodies.named(store), retry_conflict=False)
        except NotFound:
            raise bodies.store_missing(store) from None
        except MemcoreError:
            pass  # cannot tell: the call's own answer stands
        raise missing
    return answer


def _audited_within(scope: Scope | ScopePattern | None, wanted: ScopePattern) -> bool:
    """Whether an audit record's scope lies inside ``wanted`` (a record naming none does not)."""
    if isinstance(scope, Scope):
        return wanted.matches(scope)
    return isinstance(scope, ScopePattern) and scope.within(wanted)
