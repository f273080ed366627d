"""The application service: every memory use case, through the policies and the limits.

Hosts (Hermes, the CLI, the library facade) translate to and from this service; they never
call a store directly for memory operations, so validation and tenant safety live in one place.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Collection, Iterable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import TypeVar

import attrs

from memcore import limits
from memcore.errors import (
    InvalidInput,
    MemcoreError,
    NotFound,
    PermissionDenied,
    StoreNotFound,
    Unsupported,
)
from memcore.neighbours import fit as fit_turns
from memcore.paging import every_item, pages
from memcore.policies import ScopePolicy
from memcore.ports import (
    BulkAdd,
    DreamUndo,
    KeyRemoval,
    MemoryLookup,
    MemoryStore,
    MessageLog,
    MessageMove,
    NeighbourTurns,
    SearchWarmup,
    UnclaimedDelete,
    VersionHistory,
)
from memcore.recall import format_recall, strip_recall
from memcore.scope import Scope, ScopePattern
from memcore.turn_policy import check_store_assistant, plan_memories
from memcore.values import (
    DreamAction,
    DreamTask,
    LoggedMessage,
    MemoryRecord,
    MemoryTask,
    MemoryVersion,
    Message,
    Page,
    SearchHit,
    TextItem,
    TurnContext,
    VersionLink,
    WriteReceipt,
)

BUILTIN_SOURCE = "builtin_memory"
#: Metadata keys that describe where a memory came from; callers may not forge scope keys.
RESERVED_METADATA_KEYS = frozenset({"app_id", "tenant_id", "agent_id", "run_id", "scope"})
_SCOPE_PAGES = 1_000
#: The most listing reads one page of current memories takes (superseded ones skipped).
_CURRENT_READS = 50
_FORGET_ALL_PAGES = 10_000
#: A supersession chain longer than this is cut (a guard against a corrupt cycle).
_HISTORY_LIMIT = 100
T = TypeVar("T")


@attrs.frozen
class TurnWrite:
    """One write of a turn after splitting to the limits."""

    messages: tuple[Message, ...]


def _owned(patterns: Iterable[ScopePattern], tenant: ScopePattern) -> bool:
    """Whether every pattern lies inside ``tenant`` (an empty set proves nothing: refused)."""
    listed = list(patterns)
    return bool(listed) and all(p.within(tenant) for p in listed)


def _in_tenant(what: str, task_id: str, fetch: Callable[[], T], owned: Callable[[T], bool]) -> T:
    """``fetch()``'s answer when ``owned``; else the very NotFound a missing id gets."""
    limits.check_id(task_id, field="task_id")
    missing = NotFound(f"{what} {task_id!r} was not found in this tenant", field="task_id")
    try:
        found = fetch()
    except StoreNotFound:
        raise  # the store itself is gone: not an id's answer
    except NotFound:
        raise missing from None
    if not owned(found):
        raise missing
    return found


def _check_list(value: object, *, field: str) -> None:
    """Refuse what is not a list of things (a string is a sequence of characters)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a list", field=field)


def check_user_metadata(
    metadata: Mapping[str, str] | None, *, scope_source: str = "the session"
) -> dict[str, str]:
    """Metadata a caller may set: within the limits, and no key that tries to name the scope."""
    checked = limits.check_metadata(metadata)
    refuse_scope_keys(checked, field="metadata", scope_source=scope_source)
    return checked


def refuse_scope_keys(
    metadata: Mapping[str, str], *, field: str, scope_source: str = "the session"
) -> None:
    """Refuse a metadata key that tries to name the scope (``field`` names the map)."""
    forged = sorted(RESERVED_METADATA_KEYS & metadata.keys())
    if forged:
        raise InvalidInput(
            f"{field} key {forged[0]!r} is reserved: the scope comes from {scope_source}",
            field=f"{field}.{forged[0]}",
        )


def restorable_text(text: object, *, field: str = "text") -> str:
    """A text as ``remember``, ``update`` and a restore write it: without a recall block (so a
    recalled block never comes back as a memory), and within the limits."""
    if isinstance(text, str):
        text = strip_recall(text)
    return limits.check_text(text, field=field)


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
        self.store = store
        self.store_name = limits.check_store_name(store_name)
        self.scope = scope
        self.policy = policy or ScopePolicy()
        self.top_k = limits.check_top_k(top_k)
        limits.check_flag(enable_rerank, field="enable_rerank")  # "no" would read as yes
        limits.check_flag(read_only, field="read_only")
        self.enable_rerank = enable_rerank
        self.read_only = read_only
        #: Which assistant messages of a turn become memories (``turn_policy``).
        self.store_assistant = check_store_assistant(store_assistant)
        self._recall_lock = threading.Lock()
        self._recall: dict[str, str] = {}

    # -- scopes -------------------------------------------------------------------------
    @property
    def write_scope(self) -> Scope:
        return self.policy.write.write_scope(self.scope)

    @property
    def search_pattern(self) -> ScopePattern:
        return self.policy.search.read_pattern(self.scope)

    @property
    def profile_pattern(self) -> ScopePattern:
        return self.policy.profile.read_pattern(self.scope)

    def switch_scope(self, scope: Scope) -> None:
        self.scope = scope

    def _check_writable(self) -> None:
        if self.read_only:
            raise PermissionDenied(
                "this session is read-only (not the primary agent context)", field="agent_context"
            )

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
        self._claim_from_mirror(receipt, meta)
        return receipt

    def _claim_from_mirror(self, receipt: WriteReceipt, meta: dict[str, str]) -> None:
        """A store that keeps one memory per text in a scope merges a write into a mirrored
        built-in entry of the same text, and the entry's tags stay: a later built-in remove
        would then delete what the user asked to remember. Such a memory is the user's now,
        its tags cleared. The write has landed: a failure here leaves the tags, never fails it.
        """
        for memory_id in receipt.memory_ids:
            try:
                found = self.store.get_memory(self.store_name, self.write_scope, memory_id)
                if found.metadata.get("source") != BUILTIN_SOURCE:
                    continue
                self.store.update_memory(self.store_name, self.write_scope, memory_id, metadata={})
                if meta:
                    self.store.update_memory(
                        self.store_name, self.write_scope, memory_id, metadata=meta
                    )
            except MemcoreError:
                return

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
        _check_list(items, field="items")
        _check_list(ahead, field="ahead")
        tenant = self.scope.tenant_pattern()
        checked: list[TextItem] = []
        for i, item in enumerate(items):  # every item, before anything is written
            if not isinstance(item, TextItem):
                raise InvalidInput(f"items[{i}] must be a TextItem", field=f"items[{i}]")
            if not isinstance(item.scope, Scope) or not tenant.matches(item.scope):
                raise InvalidInput(
                    f"items[{i}].scope is outside this session's tenant", field=f"items[{i}].scope"
                )
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
        if messages is not None:
            _check_list(messages, field="messages")
        turn: list[Message] = list(messages or [])
        if not turn:
            if isinstance(user, str) and user.strip():
                turn.append(Message(role="user", content=user))
            if isinstance(assistant, str) and assistant.strip():
                turn.append(Message(role="assistant", content=assistant))
        for i, m in enumerate(turn):
            if (
                not isinstance(m, Message)
                or not isinstance(m.role, str)
                or limits.plain(m.role) not in limits.MESSAGE_ROLES
            ):
                raise InvalidInput(f"messages[{i}] is not a valid message", field=f"messages[{i}]")
            if not isinstance(m.content, str):
                raise InvalidInput(
                    f"messages[{i}].content must be a string", field=f"messages[{i}].content"
                )
            # Plain strings from here on: a subclass's own hash or encode cannot pass a check.
            meta = limits.check_metadata(m.metadata, field=f"messages[{i}].metadata")
            refuse_scope_keys(meta, field=f"messages[{i}].metadata")
            limits.check_message_fields(m, index=i)  # every message before the first write
            turn[i] = attrs.evolve(
                m,
                role=limits.plain(m.role),
                content=limits.repair_unicode(limits.plain(m.content)),
                metadata=meta,
            )
        planned = plan_memories(turn, self.store_assistant)
        return [TurnWrite(tuple(batch)) for batch in limits.split_messages(planned)]

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
        writes = self.plan_turn(user, assistant, messages=messages)
        receipts: list[WriteReceipt] = []
        for write in writes:
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
            raise InvalidInput(f"unknown memory action {action!r}", field="action")
        if not isinstance(target, str) or not target.strip():
            raise InvalidInput("target must be a non-empty string", field="target")
        tags = {"source": BUILTIN_SOURCE, "target": target[:1024], "action": action}
        if action == "remove":
            self._remove_mirrored(target, content, keep=keep)
            return None
        extra = check_user_metadata(metadata)
        extra.update(tags)
        limits.check_metadata(extra)
        content = strip_recall(content) if isinstance(content, str) else content
        content = limits.check_text(content, field="content")
        if self._held_as_memory(content):
            return None
        return self.store.add_text(self.store_name, self.write_scope, content, metadata=extra)

    def _held_as_memory(self, content: str) -> bool:
        """Whether this scope holds ``content`` as a memory of its own (not a mirror): a store
        that keeps one memory per text would merge the mirror into it and tag it, and a later
        built-in remove would delete what the user asked to remember. Nothing is mirrored
        then; the text is recalled as the user's memory."""
        wanted = content.strip()
        return any(
            m.text.strip() == wanted and m.metadata.get("source") != BUILTIN_SOURCE
            for m in self._found_by_text(self.write_scope.pattern(), content)
        )

    def _found_by_text(
        self, pattern: ScopePattern, content: str, filters: Mapping[str, str] | None = None
    ) -> list[MemoryRecord]:
        """The memories a search for ``content`` finds first (as many as one search gives),
        for the callers that then look for the text itself among them."""
        hits = self.store.search(
            self.store_name,
            pattern,
            content[: limits.MAX_QUERY_CHARS],
            top_k=limits.MAX_TOP_K,
            enable_rerank=False,
            filters=filters,
        )
        return [h.memory for h in hits]

    def _remove_mirrored(self, target: str, content: str, *, keep: str | None = None) -> None:
        """Delete the mirrored copies of the one entry ``content`` names: those with exactly
        that text, else those containing it when they all hold one text. Copies of several
        texts contain it (a stale copy, another profile's entry): none is guessed at."""
        if not isinstance(content, str) or limits.is_blank(content):  # no query: nothing to match
            return
        wanted = content.strip()
        kept = keep.strip() if isinstance(keep, str) else None
        mirrors = self._found_by_text(
            self.search_pattern, content, {"source": BUILTIN_SOURCE, "target": target[:1024]}
        )
        found = [m for m in mirrors if wanted in m.text and m.text.strip() != kept]
        exact = [m for m in found if m.text.strip() == wanted]
        doomed = exact or (found if len({m.text.strip() for m in found}) == 1 else [])
        for memory in doomed:
            self.store.delete_memory(self.store_name, memory.scope, memory.id)

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
        flt = limits.check_metadata(filters, field="filters")
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
        for _ in range(_CURRENT_READS if current_only else 1):
            page = self.store.list_memories(
                self.store_name, self.profile_pattern, limit=limit - len(items), next_token=token
            )
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

    def history(self, memory_id: str) -> list[MemoryRecord]:
        """The memory and every memory linked to it by supersession, oldest first; each
        carries its version and its dates (``created_at``, ``updated_at``: when it last
        changed, or was superseded). Links that lead out of the tenant, or to a deleted
        memory, are left out. Only the embedded store keeps links; elsewhere the history is
        the memory itself with its version count."""
        first = self.locate(memory_id)
        found = {first.id: first}
        todo = [*first.supersedes, *filter(None, [first.superseded_by])]
        while todo and len(found) < _HISTORY_LIMIT:
            linked = todo.pop()
            if linked in found:
                continue
            try:
                memory = self.locate(linked)
            except StoreNotFound:
                raise
            except (NotFound, InvalidInput):
                continue
            found[memory.id] = memory
            todo.extend([*memory.supersedes, *filter(None, [memory.superseded_by])])
        return sorted(found.values(), key=lambda m: (m.created_at or 0.0, m.version or 0, m.id))

    def forget_all(self, *, pattern: ScopePattern | None = None) -> int:
        """Delete every memory of this tenant (or of ``pattern`` inside it); the count.

        The ids are listed first and deleted after, so paging never skips a memory that a
        delete moved. A backend that indexes later may still list a few just-written ones
        afterwards; run it again to catch them.
        """
        self._check_writable()
        reach = self._within_tenant(pattern)
        doomed = {m.id: m for m in self._memories_in(reach, max_pages=_FORGET_ALL_PAGES)}
        deleted = 0
        for memory in doomed.values():
            try:
                self.store.delete_memory(self.store_name, memory.scope, memory.id)
            except StoreNotFound:
                raise
            except NotFound:  # gone meanwhile (another caller, a dream merge): not ours to count
                continue
            deleted += 1
        return deleted

    def _target(self, agent_id: str | None, run_id: str | None) -> Scope:
        for field, value in (("agent_id", agent_id), ("run_id", run_id)):
            limits.check_optional_name(value, field=field, default="the session's own")
        return self.policy.forget.target_scope(self.scope, agent_id=agent_id, run_id=run_id)

    def locate(self, memory_id: str, *, pattern: ScopePattern | None = None) -> MemoryRecord:
        """Find a memory by id anywhere in the current tenant, or in ``pattern`` inside it
        (never outside), however many memories it holds: in one read where the store can
        (:class:`MemoryLookup`), else the session's own scope and then each scope of the
        reach (:meth:`find`)."""
        limits.check_id(memory_id)
        reach = self._within_tenant(pattern)
        try:
            if isinstance(self.store, MemoryLookup):
                found = self.store.find_memory(self.store_name, reach, memory_id)
                if reach.matches(found.scope):  # a store's answer is not trusted to stay in
                    return found
            else:
                return self.find(memory_id, pattern=reach)
        except StoreNotFound:
            raise  # the store itself is gone: say so, not "no such memory"
        except NotFound:
            pass
        where = "this tenant" if pattern is None else str(reach)
        raise NotFound(f"memory {memory_id!r} was not found in {where}", field="memory_id")

    def _memories_in(self, pattern: ScopePattern, *, max_pages: int) -> Iterator[MemoryRecord]:
        """Every memory the store lists under ``pattern`` (and that ``pattern`` matches: a
        store's answer is not trusted to stay inside it), page after page."""
        listing = pages(
            lambda token: self.store.list_memories(
                self.store_name, pattern, limit=limits.MAX_PAGE_LIMIT, next_token=token
            ),
            max_pages=max_pages,
        )
        return (m for page in listing for m in page.items if pattern.matches(m.scope))

    def find(self, memory_id: str, *, pattern: ScopePattern | None = None) -> MemoryRecord:
        """A memory by its exact id in this tenant, or in ``pattern`` inside it: the session's
        own scope first, then each scope the store lists under the pattern (a tenant has far
        fewer scopes than memories)."""
        limits.check_id(memory_id)
        reach = self._within_tenant(pattern)
        missing = NotFound(f"memory {memory_id!r} was not found in {reach}", field="memory_id")
        if reach.matches(self.scope):
            try:
                return self.store.get_memory(self.store_name, self.scope, memory_id)
            except StoreNotFound:
                raise
            except NotFound:
                if reach.is_concrete:
                    raise missing from None
        listing = pages(
            lambda token: self.store.list_scopes(
                self.store_name, reach, limit=limits.MAX_PAGE_LIMIT, next_token=token
            ),
            max_pages=_SCOPE_PAGES,
        )
        for page in listing:
            for scope in page.items:
                if scope == self.scope or not reach.matches(scope):
                    continue
                try:
                    return self.store.get_memory(self.store_name, scope, memory_id)
                except StoreNotFound:
                    raise
                except NotFound:
                    continue
        raise missing

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
        _check_list(memories, field="memories")
        memories = list(memories)
        tenant = self.scope.tenant_pattern()
        for i, memory in enumerate(memories):  # every one, before anything is deleted
            if not isinstance(memory, MemoryVersion):
                raise InvalidInput(f"memories[{i}] must be a MemoryVersion", field="memories")
            if not isinstance(memory.scope, Scope) or not tenant.matches(memory.scope):
                raise InvalidInput(
                    f"memories[{i}].scope is outside this session's tenant", field="memories"
                )
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
        _check_list(memories, field="memories")
        memories = list(memories)
        tenant = self.scope.tenant_pattern()
        for i, memory in enumerate(memories):  # every one, before anything is written
            if not isinstance(memory, tuple) or len(memory) != 2:
                raise InvalidInput(f"memories[{i}] must be a (scope, id) pair", field="memories")
            scope, memory_id = memory
            if not isinstance(scope, Scope) or not tenant.matches(scope):
                raise InvalidInput(
                    f"memories[{i}] scope is outside this session's tenant", field="memories"
                )
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
        return _in_tenant(
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
        reach = self._within_tenant(pattern)
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

    @property
    def moves_messages(self) -> bool:
        """Whether the store's message log can follow memories to another tenant
        (:class:`~memcore.ports.MessageMove`: the embedded store)."""
        return isinstance(self.store, MessageMove)

    def message_counts(self) -> dict[Scope, int]:
        """How many messages each scope of this tenant logs (scopes with none left out)."""
        store = self._message_move()
        tenant = self.scope.tenant_pattern()
        counts = store.message_counts(self.store_name, tenant)
        return {scope: n for scope, n in counts.items() if tenant.matches(scope)}

    def move_messages(self, scopes: Iterable[Scope], to: MemoryService) -> int:
        """Move the message log of each of this tenant's ``scopes`` to the same agent and run
        in ``to``'s tenant, all in one transaction; how many messages moved. What a move of
        their memories there leaves behind: the turns around each, which follow (each links
        to the target's memory of its text). Both sessions must use one store."""
        if not isinstance(to, MemoryService):
            raise InvalidInput("to must be a MemoryService", field="to")
        self._check_writable()
        to._check_writable()
        store = self._message_move()
        if to.store is not self.store or to.store_name != self.store_name:
            raise InvalidInput("messages move only within one memory store", field="store")
        source, target = self.scope.tenant_pattern(), to.scope.tenant_pattern()
        if source == target:
            raise InvalidInput("the messages are in that tenant already", field="tenant_id")
        _check_list(scopes, field="scopes")
        moves: dict[Scope, Scope] = {}
        for i, scope in enumerate(scopes):
            if not isinstance(scope, Scope) or not source.matches(scope):
                raise InvalidInput(
                    f"scopes[{i}] is outside this session's tenant", field=f"scopes[{i}]"
                )
            moves[scope] = Scope(to.scope.app_id, to.scope.tenant_id, scope.agent_id, scope.run_id)
        return store.move_messages(self.store_name, list(moves.items())) if moves else 0

    @property
    def keeps_message_log(self) -> bool:
        """Whether the store's message log can be listed for a backup and restored from one
        (:class:`~memcore.ports.MessageLog`: the embedded store)."""
        return isinstance(self.store, MessageLog)

    def every_logged_message(
        self, *, page_size: int = limits.MAX_PAGE_LIMIT
    ) -> Iterator[LoggedMessage]:
        """Every message of the log in reach (what :meth:`every_memory` covers), in the order
        logged, with the memory each became; nothing where the store cannot list its log."""
        store = self.store
        if not isinstance(store, MessageLog):
            return iter(())
        tenant = self.scope.tenant_pattern()
        pattern = self.profile_pattern
        listing = every_item(
            lambda token: store.list_logged_messages(
                self.store_name, pattern, limit=page_size, next_token=token
            )
        )
        return (
            m for m in listing if m.message.scope is not None and tenant.matches(m.message.scope)
        )

    def restore_messages(self, messages: Sequence[LoggedMessage]) -> int:
        """Log what an import restores, each message in its own scope, which must lie in this
        session's tenant, all or none; how many were added (one already logged is skipped).
        A message links to a memory of its own scope only."""
        self._check_writable()
        _check_list(messages, field="messages")
        tenant = self.scope.tenant_pattern()
        for i, logged in enumerate(messages):  # every message, before anything is written
            scope = logged.message.scope if isinstance(logged, LoggedMessage) else None
            if not isinstance(scope, Scope) or not tenant.matches(scope):
                raise InvalidInput(
                    f"messages[{i}].scope is outside this session's tenant",
                    field=f"messages[{i}].scope",
                )
        store = self.store
        if not isinstance(store, MessageLog):
            raise Unsupported(
                "this backend cannot restore a message log; only the embedded store can",
                field="messages",
            )
        return store.restore_messages(self.store_name, list(messages))

    @property
    def restores_history(self) -> bool:
        """Whether :meth:`restore` keeps ids and times and :meth:`restore_links` gives back
        which version replaced which (the embedded store): an import then restores the
        versions a dream replaced too, and the store recalls and ranks as the original."""
        return self.restores_exactly and isinstance(self.store, VersionHistory)

    def restore_links(self, links: Sequence[VersionLink], *, adding: bool = False) -> None:
        """Give back what an import restored its supersession links, every memory in this
        session's tenant, all or none (a link to a memory of another tenant is dropped).
        ``adding``: each link joins what its memory has now instead of replacing it
        (:meth:`~memcore.ports.VersionHistory.add_version_links`), so an import keeps what a
        dream or an edit linked after it listed the memories."""
        store = self._history(links)
        if adding:
            store.add_version_links(self.store_name, list(links))
        else:
            store.link_versions(self.store_name, list(links))

    def unlink(self, links: Sequence[VersionLink]) -> None:
        """Take ``links`` back out of what their memories have now, all or none
        (:meth:`~memcore.ports.VersionHistory.drop_version_links`): a stopped import's
        rollback undoes only what it linked, not what a dream or an edit linked since."""
        self._history(links).drop_version_links(self.store_name, list(links))

    def _history(self, links: Sequence[VersionLink]) -> VersionHistory:
        """The store, once ``links`` are checked to be in this session's tenant."""
        self._check_writable()
        _check_list(links, field="links")
        tenant = self.scope.tenant_pattern()
        for i, link in enumerate(links):  # every link, before anything is written
            scope = link.scope if isinstance(link, VersionLink) else None
            if not isinstance(scope, Scope) or not tenant.matches(scope):
                raise InvalidInput(
                    f"links[{i}].scope is outside this session's tenant", field=f"links[{i}].scope"
                )
        store = self.store
        if not isinstance(store, VersionHistory):
            raise Unsupported(
                "this backend keeps no version history; only the embedded store does",
                field="links",
            )
        return store

    def _message_move(self) -> MessageMove:
        if not isinstance(self.store, MessageMove):
            raise Unsupported(
                "this backend cannot move a message log to another tenant; only the embedded "
                "store can",
                field="messages",
            )
        return self.store

    def _within_tenant(self, pattern: ScopePattern | None) -> ScopePattern:
        tenant = self.scope.tenant_pattern()
        if pattern is None:
            return tenant
        if not isinstance(pattern, ScopePattern):
            raise InvalidInput("scope must be a ScopePattern", field="scope")
        if not pattern.within(tenant):
            raise InvalidInput(f"scope {pattern} is outside this tenant", field="scope")
        return pattern

    # -- dream (consolidation) -----------------------------------------------------------
    def dream(
        self,
        *,
        pattern: ScopePattern | None = None,
        apply_mode: str = "proposal",
        instructions: str | None = None,
    ) -> DreamTask:
        """Start a consolidation over this tenant (or ``pattern`` inside it)."""
        self._check_writable()
        return self.store.create_dream_task(
            self.store_name,
            self._within_tenant(pattern),
            apply_mode=apply_mode,
            instructions=instructions,
        )

    def dream_task(self, task_id: str) -> DreamTask:
        """A dream task, only when every scope it reads lies in this tenant.

        TableStore's Get lists the scopes a task expanded to: none for a tenant with no
        memories. Such a task is this tenant's only when a listing asked with the tenant's
        own pattern shows it reading nothing else. Another tenant's id and a missing id take
        the same path (a Get, then that listing) and answer the same NotFound.
        """
        limits.check_id(task_id, field="task_id")
        missing = NotFound(f"dream task {task_id!r} was not found in this tenant", field="task_id")
        tenant = self.scope.tenant_pattern()
        try:
            found: DreamTask | None = self.store.get_dream_task(self.store_name, task_id)
        except StoreNotFound:
            raise  # the store itself is gone: not an id's answer
        except NotFound:
            found = None
        if found is not None and found.id == task_id and _owned(found.scopes, tenant):
            return found
        listed = self._listed_dream(task_id, tenant)
        if found is None or found.id != task_id or found.scopes or listed is None:
            raise missing
        return found

    def _listed_dream(self, task_id: str, tenant: ScopePattern) -> DreamTask | None:
        """``task_id`` as this tenant's own listing shows it, if every scope it names lies in
        the tenant; the store is asked only with the tenant's pattern, up to the id or the end."""
        listing = every_item(
            lambda token: self.store.list_dream_tasks(
                self.store_name, limit=limits.MAX_PAGE_LIMIT, next_token=token, pattern=tenant
            )
        )
        for task in listing:
            if task.id == task_id:
                return task if _owned(task.scopes, tenant) else None
        return None

    def dream_tasks(
        self,
        *,
        limit: int = 50,
        next_token: str | None = None,
        status: str | None = None,
        pattern: ScopePattern | None = None,
    ) -> Page[DreamTask]:
        """This tenant's dream tasks; the store is always asked with the tenant's pattern,
        and a task that reads anything outside the tenant is left out."""
        limits.check_limit(limit)
        limits.check_status(status, dream=True)
        reach = self._within_tenant(pattern)
        tenant = self.scope.tenant_pattern()
        page = self.store.list_dream_tasks(
            self.store_name, limit=limit, next_token=next_token, pattern=reach, status=status
        )
        return page.filter(lambda t: _owned(t.scopes, tenant))

    def dream_actions(
        self, task_id: str, *, limit: int = 50, next_token: str | None = None
    ) -> Page[DreamAction]:
        limits.check_limit(limit)
        task = self.dream_task(task_id)
        return self.store.list_dream_actions(
            self.store_name, task.id, limit=limit, next_token=next_token
        )

    def apply_dream_actions(self, task_id: str, action_ids: Sequence[str]) -> list[DreamAction]:
        """One result per id; an action id the task does not have is ``not_found``."""
        self._check_writable()
        ids = limits.check_action_ids(action_ids)
        task = self.dream_task(task_id)
        return self.store.apply_dream_actions(self.store_name, task.id, ids)

    def undo_dream_action(self, task_id: str, action_id: str) -> DreamAction:
        """Take back an applied action (stores that keep undo records: the local one)."""
        self._check_writable()
        limits.check_id(action_id, field="action_id")
        if not isinstance(self.store, DreamUndo):
            raise Unsupported(
                "this backend cannot undo dream actions; only the local store keeps undo records"
            )
        task = self.dream_task(task_id)
        return self.store.undo_dream_action(self.store_name, task.id, action_id)

    def cancel_dream_task(self, task_id: str) -> DreamTask:
        self._check_writable()
        task = self.dream_task(task_id)
        return self.store.cancel_dream_task(self.store_name, task.id)

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
