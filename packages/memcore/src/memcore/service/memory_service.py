"""The application service: every memory use case, through the policies and the limits.

Hosts (Hermes, the CLI, the library facade) translate to and from this service; they never
call a store directly for memory operations, so validation and tenant safety live in one place.
Two families live beside it on the same session: :attr:`MemoryService.dreams` and
:attr:`MemoryService.logs`.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterator, Mapping, Sequence
from datetime import datetime

import attrs

from memcore import limits
from memcore.errors import InvalidInput, MemcoreError, NotFound, StoreNotFound, Unsupported
from memcore.neighbours import fit as fit_turns
from memcore.paging import every_item, pages
from memcore.policies import ScopePolicy
from memcore.ports import (
    BulkAdd,
    KeyRemoval,
    MemoryStore,
    NeighbourTurns,
    SearchWarmup,
    UnclaimedDelete,
)
from memcore.recall import format_recall, strip_recall
from memcore.scope import Scope, ScopePattern
from memcore.service import lookup, mirror
from memcore.service.dreams import Dreams
from memcore.service.inputs import (
    check_filters,
    check_list,
    check_user_metadata,
    restorable_text,
)
from memcore.service.logs import Logs
from memcore.service.session import Session, in_tenant, refuse_outside
from memcore.service.turns import TurnWrite, plan_turn
from memcore.turn_policy import check_store_assistant
from memcore.values import (
    MemoryRecord,
    MemoryTask,
    MemoryVersion,
    Message,
    Page,
    SearchHit,
    TextItem,
    TurnContext,
    WriteReceipt,
)
from memcore.wording import forgotten_so_far, shown

#: The most listing reads one page of current memories takes (superseded ones skipped).
_CURRENT_READS = 50
_FORGET_ALL_PAGES = 10_000


class MemoryService:
    """Memory use cases for one session scope."""

    def __init__(
        self,
        store: MemoryStore,
        *,
        store_name: str,
        scope: Scope,
        policy: ScopePolicy | None = None,
        top_k: int = 5,
        enable_rerank: bool = True,
        read_only: bool = False,
        store_assistant: str = "auto",
    ) -> None:
        name = limits.check_store_name(store_name)
        self.top_k = limits.check_top_k(top_k)
        limits.check_flag(enable_rerank, field="enable_rerank")  # "no" would read as yes
        limits.check_flag(read_only, field="read_only")
        #: What every use case reads; ``dreams`` and ``logs`` share it.
        self.session = Session(
            store=store,
            store_name=name,
            scope=scope,
            policy=policy or ScopePolicy(),
            read_only=read_only,
        )
        self.enable_rerank = enable_rerank
        #: Which assistant messages of a turn become memories (``turn_policy``).
        self.store_assistant = check_store_assistant(store_assistant)
        self._recall_lock = threading.Lock()
        self._recall: dict[str, str] = {}
        #: Consolidation passes over this session's tenant.
        self.dreams = Dreams(self.session)
        #: The message log and the version links, which imports and moves carry.
        self.logs = Logs(self.session)

    # -- the session ------------------------------------------------------------------
    @property
    def store(self) -> MemoryStore:
        return self.session.store

    @property
    def store_name(self) -> str:
        return self.session.store_name

    @property
    def scope(self) -> Scope:
        return self.session.scope

    @property
    def policy(self) -> ScopePolicy:
        return self.session.policy

    @property
    def read_only(self) -> bool:
        return self.session.read_only

    @property
    def write_scope(self) -> Scope:
        return self.session.write_scope

    @property
    def search_pattern(self) -> ScopePattern:
        return self.session.search_pattern

    @property
    def profile_pattern(self) -> ScopePattern:
        return self.session.profile_pattern

    def switch_scope(self, scope: Scope) -> None:
        self.session.scope = scope

    def _check_writable(self) -> None:
        self.session.check_writable()

    # -- writes -------------------------------------------------------------------------
    def remember(
        self, text: str, *, metadata: Mapping[str, str] | None = None, sync: bool = False
    ) -> WriteReceipt:
        self._check_writable()
        text = restorable_text(text)
        meta = check_user_metadata(metadata)
        receipt = self.store.add_text(
            self.store_name, self.write_scope, text, metadata=meta, sync=sync
        )
        mirror.claim_from_mirror(self.session, receipt, meta)
        return receipt

    @property
    def restores_exactly(self) -> bool:
        """Whether :meth:`restore` keeps the items' free ids and their times (the store is a
        :class:`~memcore.ports.BulkAdd`); elsewhere the store assigns ids and times."""
        return isinstance(self.store, BulkAdd)

    def restore(
        self,
        items: Sequence[TextItem],
        *,
        ahead: Sequence[TextItem] = (),
        created: set[str] | None = None,
        versions: dict[str, int] | None = None,
    ) -> list[str | None]:
        """Write what an import restores, each item in its own scope, which must lie in this
        session's tenant; the ids in order (None: the store made nothing new). A store that
        can keeps each id its tenant does not hold and the times in one transaction (ids are
        unique per tenant: what another tenant holds never decides, so an import never learns
        whether one holds it); an id another memory of the tenant holds gets a new one. Where
        :attr:`restores_exactly`, ``created`` receives the ids this call created (a text
        another writer stored first answers with that memory's id, which is not its own),
        and ``versions`` each id answered -> its memory's version as the call left it (what
        :meth:`forget_unclaimed` compares); elsewhere the store cannot tell, and both are
        left as they were."""
        self._check_writable()
        check_list(items, field="items")
        check_list(ahead, field="ahead")
        tenant = self.scope.tenant_pattern()
        checked: list[TextItem] = []
        for i, item in enumerate(items):  # every item, before anything is written
            if not isinstance(item, TextItem):
                raise InvalidInput(f"items[{i}] must be a TextItem", field=f"items[{i}]")
            refuse_outside(tenant, item.scope, what=f"items[{i}].scope", field=f"items[{i}].scope")
            text = restorable_text(item.text, field=f"items[{i}].text")
            meta = check_user_metadata(item.metadata)
            checked.append(attrs.evolve(item, text=text, metadata=meta))
        if isinstance(self.store, BulkAdd):
            return list(
                self.store.add_many(
                    self.store_name,
                    checked,
                    ahead=ahead,
                    new_id_if_taken=True,
                    created=created,
                    versions=versions,
                )
            )
        ids: list[str | None] = []
        for item in checked:
            receipt = self.store.add_text(
                self.store_name, item.scope, item.text, metadata=item.metadata, sync=True
            )
            ids.append(receipt.memory_ids[0] if receipt.memory_ids else None)
        return ids

    def plan_turn(
        self,
        user: str,
        assistant: str,
        *,
        messages: Sequence[Message] | None = None,
    ) -> list[TurnWrite]:
        """Split a completed turn into writes within the limits (nothing is truncated).

        A turn is captured automatically, so a lone surrogate (half an emoji) is replaced with
        U+FFFD rather than costing the whole turn. Recall blocks are cut out, and each message
        is marked whether it becomes a memory (``turn_policy``).
        """
        return plan_turn(user, assistant, messages, self.store_assistant)

    def write_turn(self, write: TurnWrite, *, sync: bool = False) -> WriteReceipt:
        self._check_writable()
        limits.check_messages(write.messages)
        return self.store.add_messages(self.store_name, self.write_scope, write.messages, sync=sync)

    def sync_turn(
        self,
        user: str,
        assistant: str,
        *,
        messages: Sequence[Message] | None = None,
        sync: bool = False,
    ) -> list[WriteReceipt]:
        """Write a turn; a turn too big for one write is sent in several, in order. If one of
        them fails after others landed, the error names those (``landed``) and is no longer
        retryable: sending the turn again would store them twice."""
        self._check_writable()
        return self.write_turns(self.plan_turn(user, assistant, messages=messages), sync=sync)

    def write_turns(
        self,
        writes: Sequence[TurnWrite],
        *,
        sync: bool = False,
        stop: Callable[[], bool] | None = None,
    ) -> list[WriteReceipt]:
        """Send a planned turn's writes (:meth:`plan_turn`) in order, as :meth:`sync_turn`
        does. ``stop`` is asked before each write after the first: True ends the turn there,
        and the receipts say how many of ``writes`` landed (a command stopped by Ctrl-C
        tells its user so, instead of leaving part of a turn stored without a word)."""
        self._check_writable()
        receipts: list[WriteReceipt] = []
        for write in writes:
            if receipts and stop is not None and stop():
                break
            try:
                receipts.append(self.write_turn(write, sync=sync))
            except MemcoreError as exc:
                told = exc.after_landed(tuple(r.task_id or "?" for r in receipts), len(writes))
                if told is exc:
                    raise
                raise told from exc
        return receipts

    def mirror_builtin(
        self,
        action: str,
        target: str,
        content: str,
        *,
        metadata: Mapping[str, str] | None = None,
        keep: str | None = None,
    ) -> WriteReceipt | None:
        """Mirror a built-in MEMORY.md / USER.md write; ``remove`` deletes the mirrored copy.

        A removal names its entry as Hermes' memory tool does: the entry's text, or a
        substring of it (``old_text``). ``keep``: a text never removed, the new text of the
        replace the removal belongs to (its ``old_text`` is often a substring of both)."""
        self._check_writable()
        if action not in ("add", "replace", "remove"):
            raise InvalidInput(f"unknown memory action {shown(action)}", field="action")
        if not isinstance(target, str) or not target.strip():
            raise InvalidInput("target must be a non-empty string", field="target")
        tags = {"source": mirror.BUILTIN_SOURCE, "target": target[:1024], "action": action}
        if action == "remove":
            mirror.remove_mirrored(self.session, target, content, keep=keep)
            return None
        extra = check_user_metadata(metadata)
        extra.update(tags)
        limits.check_metadata(extra)
        content = strip_recall(content) if isinstance(content, str) else content
        content = limits.check_text(content, field="content")
        if mirror.held_as_memory(self.session, content):
            return None
        return self.store.add_text(self.store_name, self.write_scope, content, metadata=extra)

    # -- reads --------------------------------------------------------------------------
    def warm_search(self) -> bool:
        """Build ahead what this session's first search would (a :class:`~memcore.ports.
        SearchWarmup` store's caches of its own search pattern, never another tenant's);
        False where the store has nothing to build."""
        if not isinstance(self.store, SearchWarmup):
            return False
        self.store.warm(self.store_name, self.search_pattern)
        return True

    def search(
        self,
        query: str,
        *,
        top_k: int | None = None,
        enable_rerank: bool | None = None,
        filters: Mapping[str, str] | None = None,
        min_similarity: float | None = None,
        context_scope: Scope | bool | None = None,
        include_evidence: bool = False,
        reference_time: datetime | None = None,
        neighbours: int = 0,
        neighbour_chars: int = limits.DEFAULT_NEIGHBOUR_CHARS,
    ) -> list[SearchHit]:
        """``context_scope=True`` ranks the current session's memories higher (when it lies
        inside the searched pattern); a Scope names another conversation.
        ``reference_time``: when the question is asked (None: now), what the query's time
        words count from. It is checked here whatever the store; a store whose
        ``supports_reference_time`` is False ranks as if it were not given (no ordering by
        time), as the TableStore service does.
        ``neighbours``: each hit comes with up to that many turns of its own session before
        and after it (``SearchHit.neighbours``), at most ``neighbour_chars`` characters in
        all; they do not change the ranking. Only stores that keep the turns' order can
        (:class:`~memcore.ports.NeighbourTurns`); others raise ``Unsupported``."""
        query = limits.check_query(query)
        limits.check_flag(enable_rerank, field="enable_rerank", optional=True)
        limits.check_flag(include_evidence, field="include_evidence")
        around = limits.check_neighbours(neighbours)
        budget = limits.check_neighbour_chars(neighbour_chars)
        if around and not self.shows_neighbours:
            raise Unsupported(
                "this backend does not keep the order of a session's turns, so a hit cannot "
                "come with its neighbours; only the embedded store can",
                field="neighbours",
            )
        k = limits.check_top_k(self.top_k if top_k is None else top_k)
        flt = check_filters(filters)
        sim = limits.check_min_similarity(min_similarity)
        rerank = self.enable_rerank if enable_rerank is None else bool(enable_rerank)
        asked = limits.check_reference_time(reference_time)
        pattern = self.search_pattern
        context: Scope | None
        if context_scope is True:
            context = self.scope if pattern.matches(self.scope) else None
        elif context_scope is False:
            context = None
        else:
            context = limits.check_context_scope(context_scope, pattern)
        hits = self.store.search(
            self.store_name,
            pattern,
            query,
            top_k=k,
            enable_rerank=rerank,
            filters=flt or None,
            min_similarity=sim,
            context_scope=context,
            include_evidence=bool(include_evidence),
            reference_time=asked,
        )
        if not around or not isinstance(self.store, NeighbourTurns):
            return hits
        return [self._with_neighbours(self.store, hit, around, budget) for hit in hits]

    def _with_neighbours(
        self, store: NeighbourTurns, hit: SearchHit, turns: int, budget: int
    ) -> SearchHit:
        """``hit`` with the turns of its own session around it. The store reads only the
        hit's exact scope, which the search kept inside this tenant's pattern."""
        scope = hit.memory.scope
        if not self.search_pattern.matches(scope):  # never read outside the tenant
            return attrs.evolve(hit, neighbours=TurnContext())
        context = store.neighbour_turns(self.store_name, scope, hit.memory.id, turns=turns)
        return attrs.evolve(hit, neighbours=fit_turns(context, budget))

    def profile(
        self, *, limit: int = 50, next_token: str | None = None, current_only: bool = False
    ) -> Page[MemoryRecord]:
        """A page of the memories in reach; ``current_only`` leaves out those a dream pass
        superseded, reading on until the page holds ``limit`` current ones or the listing
        ends (each read asks for what is still missing, so the token never skips a memory).
        An empty page therefore means the end, unless a long run of superseded memories
        outlasted :data:`_CURRENT_READS` reads: then it carries a token to go on from."""
        limits.check_limit(limit)
        items: list[MemoryRecord] = []
        token = next_token
        # Through ``pages``: a backend that answers a token it gave before is refused, where
        # the same memory filled the page (20 copies of one id, exit 0).
        for page in pages(
            lambda at: self.store.list_memories(
                self.store_name, self.profile_pattern, limit=limit - len(items), next_token=at
            ),
            start=next_token,
            max_pages=_CURRENT_READS if current_only else 1,
        ):
            items.extend(m for m in page.items if m.is_current or not current_only)
            token = page.next_token
            if len(items) >= limit or token is None:
                break
        return Page(tuple(items), token)

    def every_memory(
        self, *, page_size: int = limits.MAX_PAGE_LIMIT, current_only: bool = False
    ) -> Iterator[MemoryRecord]:
        """Every memory :meth:`profile` shows, page after page (each page read when reached)."""
        return every_item(
            lambda token: self.profile(limit=page_size, next_token=token, current_only=current_only)
        )

    # -- one memory by id: find, edit, forget ------------------------------------------
    def history(self, memory_id: str) -> list[MemoryRecord]:
        """The memory and every memory linked to it by supersession, oldest first; each
        carries its version and its dates (``created_at``, ``updated_at``: when it last
        changed, or was superseded). Links that lead out of the tenant, or to a deleted
        memory, are left out. Only the embedded store keeps links; elsewhere the history is
        the memory itself with its version count."""
        return lookup.history(self.session, memory_id)

    def forget_all(self, *, pattern: ScopePattern | None = None) -> int:
        """Delete every memory of this tenant (or of ``pattern`` inside it); the count.

        The ids are listed first and deleted after, so paging never skips a memory that a
        delete moved. A backend that indexes later may still list a few just-written ones
        afterwards; run it again to catch them.
        """
        self._check_writable()
        reach = self.session.within_tenant(pattern)
        listed = lookup.memories_in(self.session, reach, max_pages=_FORGET_ALL_PAGES)
        doomed = {m.id: m for m in listed}
        deleted = 0
        for memory in doomed.values():
            try:
                self.store.delete_memory(self.store_name, memory.scope, memory.id)
            except StoreNotFound:
                raise
            except NotFound:  # gone meanwhile (another caller, a dream merge): not ours to count
                continue
            except MemcoreError as exc:  # stopped half way: say how far (nothing is put back)
                if not deleted:
                    raise
                raise exc.saying(forgotten_so_far(deleted, len(doomed))) from None
            deleted += 1
        return deleted

    def _target(self, agent_id: str | None, run_id: str | None) -> Scope:
        for field, value in (("agent_id", agent_id), ("run_id", run_id)):
            limits.check_optional_name(value, field=field, default="the session's own")
        return self.policy.forget.target_scope(self.scope, agent_id=agent_id, run_id=run_id)

    def locate(self, memory_id: str, *, pattern: ScopePattern | None = None) -> MemoryRecord:
        """Find a memory by id anywhere in the current tenant, or in ``pattern`` inside it
        (never outside), however many memories it holds: in one read where the store can
        (:class:`~memcore.ports.MemoryLookup`), else the session's own scope and then each
        scope of the reach (:meth:`find`)."""
        limits.check_id(memory_id)
        reach = self.session.within_tenant(pattern)
        where = "this tenant" if pattern is None else str(reach)
        return lookup.locate(self.session, memory_id, reach, where=where)

    def find(self, memory_id: str, *, pattern: ScopePattern | None = None) -> MemoryRecord:
        """A memory by its exact id in this tenant, or in ``pattern`` inside it: the session's
        own scope first, then each scope the store lists under the pattern (a tenant has far
        fewer scopes than memories)."""
        limits.check_id(memory_id)
        return lookup.find(self.session, memory_id, self.session.within_tenant(pattern))

    def get(
        self,
        memory_id: str,
        *,
        agent_id: str | None = None,
        run_id: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> MemoryRecord:
        """The memory ``memory_id`` in the scope ``agent_id``/``run_id`` name, else anywhere
        in the tenant, or in ``pattern`` inside it (:meth:`locate`)."""
        limits.check_id(memory_id)
        if agent_id is None and run_id is None:
            return self.locate(memory_id, pattern=pattern)
        return self.store.get_memory(self.store_name, self._target(agent_id, run_id), memory_id)

    def update(
        self,
        memory_id: str,
        *,
        text: str | None = None,
        metadata: Mapping[str, str] | None = None,
        remove: Collection[str] = (),
        agent_id: str | None = None,
        run_id: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> MemoryRecord:
        """Replace the text and/or merge ``metadata`` into the memory's map, and take the keys
        ``remove`` out of it, in one write; ``remove`` needs :attr:`removes_keys`."""
        self._check_writable()
        limits.check_id(memory_id)
        gone = set(remove)
        if text is None and metadata is None and not gone:
            raise InvalidInput("update needs text or metadata", field="text")
        if any(not isinstance(key, str) or not key for key in gone):
            raise InvalidInput(
                "a metadata key to remove must be a non-empty string", field="remove"
            )
        if gone and not self.removes_keys:
            raise Unsupported(
                "this store cannot remove a metadata key in one write: clear the metadata "
                "({}) and write back the keys to keep",
                field="remove",
            )
        if text is not None:
            text = restorable_text(text)  # as remember: a recalled block is cut out
        meta = None if metadata is None else check_user_metadata(metadata)
        scope = self.get(memory_id, agent_id=agent_id, run_id=run_id, pattern=pattern).scope
        if gone and isinstance(self.store, KeyRemoval):
            return self.store.update_memory_removing(
                self.store_name, scope, memory_id, remove=gone, text=text, metadata=meta
            )
        return self.store.update_memory(self.store_name, scope, memory_id, text=text, metadata=meta)

    @property
    def removes_keys(self) -> bool:
        """Whether :meth:`update` can take metadata keys out (the store is a
        :class:`~memcore.ports.KeyRemoval`); elsewhere a key goes only by clearing the map
        and writing the rest back, two writes."""
        return isinstance(self.store, KeyRemoval)

    def forget(
        self,
        memory_id: str,
        *,
        agent_id: str | None = None,
        run_id: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Scope:
        """Delete one memory of this tenant (or of ``pattern`` inside it); returns the scope
        it was deleted from."""
        self._check_writable()
        limits.check_id(memory_id)
        scope = self.get(memory_id, agent_id=agent_id, run_id=run_id, pattern=pattern).scope
        self.store.delete_memory(self.store_name, scope, memory_id)
        return scope

    # -- what an import's rollback spares ----------------------------------------------
    @property
    def tells_claims(self) -> bool:
        """Whether :meth:`forget_unclaimed` can tell a memory that a write landed in since a
        point (the store is an :class:`~memcore.ports.UnclaimedDelete`: the embedded one);
        elsewhere (TableStore) a repeat of a text leaves no trace to tell it by."""
        return isinstance(self.store, UnclaimedDelete)

    def forget_unclaimed(self, memories: Sequence[MemoryVersion]) -> list[str]:
        """Delete each memory, which must lie in this session's tenant, only while it still
        has the version given, all in one transaction; the ids of those kept because a write
        landed in them since. How an import's rollback spares what another writer was told
        had landed (:attr:`tells_claims`; elsewhere ``Unsupported``)."""
        self._check_writable()
        check_list(memories, field="memories")
        memories = list(memories)
        tenant = self.scope.tenant_pattern()
        for i, memory in enumerate(memories):  # every one, before anything is deleted
            if not isinstance(memory, MemoryVersion):
                raise InvalidInput(f"memories[{i}] must be a MemoryVersion", field="memories")
            refuse_outside(tenant, memory.scope, what=f"memories[{i}].scope", field="memories")
            limits.check_id(memory.memory_id, field=f"memories[{i}].memory_id")
            if type(memory.version) is not int:
                raise InvalidInput(
                    f"memories[{i}].version must be an integer", field=f"memories[{i}].version"
                )
        if not isinstance(self.store, UnclaimedDelete):
            raise Unsupported(
                "this store cannot tell a memory another write landed in since; only the "
                "embedded store can",
                field="memories",
            )
        return list(self.store.delete_unclaimed(self.store_name, memories))

    def claim(self, memories: Sequence[tuple[Scope, str]]) -> list[str]:
        """Land a write in each memory (scope, id), which must lie in this session's tenant,
        that changes nothing but its version, all in one transaction; the ids no longer in
        their scope, which it did not claim. How an import that counts a memory present
        keeps it from another import's rollback (:attr:`tells_claims`; elsewhere
        ``Unsupported``)."""
        self._check_writable()
        check_list(memories, field="memories")
        memories = list(memories)
        tenant = self.scope.tenant_pattern()
        for i, memory in enumerate(memories):  # every one, before anything is written
            if not isinstance(memory, tuple) or len(memory) != 2:
                raise InvalidInput(f"memories[{i}] must be a (scope, id) pair", field="memories")
            scope, memory_id = memory
            refuse_outside(tenant, scope, what=f"memories[{i}] scope", field="memories")
            limits.check_id(memory_id, field=f"memories[{i}].memory_id")
        if not isinstance(self.store, UnclaimedDelete):
            raise Unsupported(
                "this store cannot tell a memory another write landed in since; only the "
                "embedded store can",
                field="memories",
            )
        return list(self.store.claim_memories(self.store_name, memories))

    # -- write tasks, messages ----------------------------------------------------------
    def task(self, task_id: str) -> MemoryTask:
        """A write's task, only when the write went to this tenant.

        Another tenant's id answers exactly like an id that does not exist: same error, same
        message, one store call either way. A task that names no scope is not found (fail
        closed).
        """
        tenant = self.scope.tenant_pattern()
        return in_tenant(
            "task",
            task_id,
            lambda: self.store.get_task(self.store_name, task_id),
            lambda task: task.scope is not None and tenant.matches(task.scope),
        )

    def tasks(
        self,
        *,
        status: str | None = None,
        limit: int = 50,
        next_token: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[MemoryTask]:
        """This tenant's write tasks (or those of ``pattern``, which must lie inside it)."""
        limits.check_limit(limit)
        limits.check_status(status)
        reach = self.session.within_tenant(pattern)
        page = self.store.list_tasks(
            self.store_name, status=status, limit=limit, next_token=next_token, pattern=reach
        )
        return page.filter(lambda t: t.scope is not None and reach.matches(t.scope))

    def messages(self, *, limit: int = 50, next_token: str | None = None) -> Page[Message]:
        """The short-term messages of the session's own scope."""
        limits.check_limit(limit)
        return self.store.list_messages(
            self.store_name, self.write_scope, limit=limit, next_token=next_token
        )

    @property
    def shows_neighbours(self) -> bool:
        """Whether :meth:`search` can give each hit the turns around it
        (:class:`~memcore.ports.NeighbourTurns`: the embedded store); elsewhere asking raises
        ``Unsupported``."""
        return isinstance(self.store, NeighbourTurns)

    # -- prefetch -----------------------------------------------------------------------
    def recall(
        self, query: str, *, top_k: int | None = None, reference_time: datetime | None = None
    ) -> str:
        """Search and format a fenced recall block; caches it for :meth:`cached_recall`.
        ``reference_time``: when the turn is asked (None: now), as for :meth:`search`."""
        k = limits.check_top_k(self.top_k if top_k is None else top_k)
        # Asked for a few more than shown: repeats of one text are dropped from the block.
        hits = self.search(query, top_k=min(limits.MAX_TOP_K, 2 * k), reference_time=reference_time)
        text = format_recall(hits, top_k=k)
        with self._recall_lock:
            self._recall["last"] = text
        return text

    def cached_recall(self) -> str:
        with self._recall_lock:
            return self._recall.get("last", "")
