"""The plugin's running state for one session: scope, spool, lane and backend.

The agent's thread only validates and spools (a memory copy into the spool's journal: no
system call, no network); the lane does every backend call. Tools are the exception: the
model asked for an answer, so they call through.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from datetime import datetime
from typing import Any, TypeVar

import attrs

from memcore import limits
from memcore.config import MemcoreConfig
from memcore.errors import InvalidInput, MemcoreError, PermissionDenied
from memcore.recall import format_recall, strip_recall
from memcore.scope import Scope
from memcore.service import BUILTIN_SOURCE, MemoryService
from memcore.values import Message
from memcore.wording import shown
from memcore_hermes.outbox.delivery import (
    WRITE_MARKER,
    Deliverer,
    RetryPolicy,
    StoreHandle,
    detached,
    in_flight_s,
)
from memcore_hermes.outbox.entries import MessagesWrite, MirrorWrite, TextWrite, Write, make_entry
from memcore_hermes.outbox.lane import Lane
from memcore_hermes.outbox.spool import SqliteOutbox
from memcore_hermes.session.clock import now as users_now

logger = logging.getLogger(__name__)

T = TypeVar("T")


#: A shutdown flush gives up when no write was delivered for this long (seconds): a healthy
#: backend delivers a write well within it; one that is down would hold the exit for a whole
#: call's retry budget (3.7 s measured with the emulator stopped and a 3 s timeout).
SHUTDOWN_STALL_S = 0.5
#: How long a shutdown waits for the lane's current call once the backend is failing.
_STOP_JOIN_S = 0.1
_POLL_S = 0.02

#: Searches for recall running at once on a remote store; a stuck one does not block the next.
_MAX_RECALLS_RUNNING = 2
#: How long the lane's next task waits for an in-process recall to end (seconds). The recall
#: is the turn's critical path; a delivery beside it took the same cores (the model embedding
#: the previous turn) and the store's lock, and added 10-40 ms to it on a busy 2-core machine.
#: A recall takes a few milliseconds; this bound only matters if one hangs.
RECALL_FIRST_S = 0.25
#: Hermes provenance keys worth keeping on a mirrored write (values are plain strings).
_MIRROR_METADATA_KEYS = ("write_origin", "execution_context", "platform", "tool_name", "session_id")


class MemoryRuntime:
    """One provider's memory machinery; thread-safe for the agent's calls."""

    def __init__(
        self,
        *,
        config: MemcoreConfig,
        scope: Scope,
        handle: StoreHandle,
        spool: SqliteOutbox,
        read_only: bool = False,
        retry: RetryPolicy | None = None,
        clock: Callable[[], float] = time.time,
        name: str = "lane",
        recall_inline: bool = False,
        warm_search: bool = True,
        turn_time: Callable[[], datetime] | None = None,
        writes_off: MemcoreError | None = None,
        on_close: Callable[[], None] | None = None,
    ) -> None:
        """``writes_off``: why no write may be spooled (the session's own spool could not be
        opened; ``spool`` is then an empty stand-in); ``on_close`` runs after the spool
        closes."""
        self.config = config
        self.writes_off = writes_off
        self._on_close = on_close
        self.store_name = config.memory_store_name
        self.handle = handle
        self.spool = spool
        self.read_only = read_only
        self.clock = clock
        #: When the turn being answered is asked: the searches' reference time, which time
        #: words in a query ("last month") are read from. Hermes passes no time with a turn,
        #: so it is now; a replay of dated conversations sets it. Not ``clock``: the spool's
        #: backoff must keep running on real time.
        self.turn_time = turn_time or users_now
        self._scope = scope
        self._scope_lock = threading.Lock()
        self._recall_lock = threading.Lock()
        self._recall_text = ""
        self._recall_scope: Scope | None = None
        self._recall_generation = 0
        self._recall_kept = 0
        self._recalls_running = 0
        self._recall_closed = False
        #: Search on the agent's thread (an in-process store) rather than wait on a remote one.
        self.recall_inline = recall_inline
        #: Build the first recall's caches on the lane (a session; not a one-shot command,
        #: which searches once at most and would load numpy for an ``add``).
        self.warm_search = warm_search
        self._inline_recalls = 0
        self._recall_done = threading.Condition(self._recall_lock)
        self.refused_writes = 0
        self._stalled_at: int | None = None  # deliveries counted when a flush stalled
        self.deliverer = Deliverer(
            spool,
            handle,
            retry=retry or RetryPolicy(),
            lease_s=max(5.0, config.timeout * 2),
            in_flight_s=in_flight_s(config),
            clock=clock,
        )
        self.lane = Lane(name, self.deliverer.drain, before_task=self._let_recall_finish)
        handle.open_only_on(self.lane.thread)
        # Replay what an earlier run left behind, and ensure the store, off the agent's thread.
        self.lane.request_drain()
        self.in_background(self._warm_up)

    # -- scope ------------------------------------------------------------------------------
    @property
    def scope(self) -> Scope:
        with self._scope_lock:
            return self._scope

    def switch_scope(self, scope: Scope) -> None:
        with self._scope_lock:
            self._scope = scope

    def service(self, store: Any = None) -> MemoryService:
        """A service for the current scope (cheap; built per use so a scope switch applies)."""
        return MemoryService(
            store if store is not None else self.handle.get(),
            store_name=self.store_name,
            scope=self.scope,
            top_k=self.config.top_k,
            enable_rerank=self.config.enable_rerank,
            read_only=self.read_only,
            store_assistant=self.config.store_assistant,
        )

    def _check_writable(self) -> None:
        if self.read_only:
            raise PermissionDenied(
                "this session is read-only (not the primary agent context)", field="agent_context"
            )
        # A write taken now could never be stored by this session: refused, not spooled.
        self.handle.check_usable()

    def _check_spooling(self) -> None:
        """Writable, and with a spool to keep the write in until it lands."""
        self._check_writable()
        if self.writes_off is not None:
            raise detached(self.writes_off)  # a copy: a raise keeps the caller's frames

    def _warm_up(self) -> None:
        if not self.read_only and self.writes_off is None:
            try:
                self.spool.prepare()  # the turn journal, so the first turn does not create it
            except MemcoreError:
                pass
        if self.handle.last_error is not None:
            return  # delivery already tried and failed; it retries with backoff
        try:
            store = self.handle.ready()
        except MemcoreError as exc:
            logger.warning("tablestore-mem: memory store not ready yet (%s: %s)", exc.code, exc)
            return
        if self.warm_search:
            self._warm_search(store)

    def _warm_search(self, store: Any) -> None:
        """Build what the session's first recall would (an in-process store's caches of the
        searched scope), here on the lane rather than in the first turn."""
        try:
            self.service(store).warm_search()
        except MemcoreError as exc:  # the first search builds them then, and reports
            logger.debug("tablestore-mem: search caches not warmed (%s)", exc.code)

    # -- writes: validated here, spooled, delivered by the lane ---------------------------------
    def _spool(self, writes: Sequence[Write]) -> list[str]:
        now = self.clock()
        entries = [make_entry(w, now=now)[0] for w in writes]
        try:
            self.spool.put_fast(entries)
        except MemcoreError:
            self.refused_writes += len(entries)
            raise
        self.lane.request_drain()
        return [e.key for e in entries]

    def record_turn(
        self,
        user: str,
        assistant: str,
        *,
        session_id: str = "",
        messages: Sequence[Message] | None = None,
    ) -> list[str]:
        """Spool a completed turn (split to the limits); returns the entries' keys."""
        self._check_spooling()
        scope = self.scope
        service = MemoryService(
            _NoStore(),
            store_name=self.store_name,
            scope=scope,
            store_assistant=self.config.store_assistant,
        )
        batches = service.plan_turn(user, assistant, messages=messages)
        if not batches:
            return []
        meta = {"source": "hermes_turn"}
        if session_id and isinstance(session_id, str):
            meta["session_id"] = session_id[: limits.MAX_METADATA_VALUE_CHARS]
        writes = [
            MessagesWrite(self.store_name, scope, self._stamped(b.messages), meta) for b in batches
        ]
        for w in writes:
            limits.check_messages(w.messages)
        return self._spool(writes)

    def _stamped(self, messages: Sequence[Message]) -> tuple[Message, ...]:
        """``messages`` stamped with the turn's time (a message that has its own time keeps
        it): now, or a replay's time. Stamped when spooled, not when delivered: a turn that
        waited in the spool (an outage, a lock, the next start days later) was dated by the
        store when it landed, and recalled as said that day. A naive turn time is UTC, as
        the search reads it, not the machine's local time."""
        moment = limits.check_reference_time(self.turn_time(), field="turn_time")
        assert moment is not None
        said = moment.timestamp()
        return tuple(
            m if m.timestamp is not None else attrs.evolve(m, timestamp=said) for m in messages
        )

    def remember(self, text: str, *, metadata: Mapping[str, str] | None = None) -> str:
        """Validate and spool an explicit memory; returns the entry key."""
        self._check_spooling()
        text = strip_recall(text) if isinstance(text, str) else text
        limits.check_text(text, field="content")
        meta = _user_metadata(metadata)
        return self._spool([TextWrite(self.store_name, self.scope, text, meta)])[0]

    def remember_now(self, text: str, *, metadata: Mapping[str, str] | None = None) -> Any:
        """Write an explicit memory synchronously (the caller waits for the backend)."""
        self._check_writable()
        meta = _user_metadata(metadata)
        return self.service(self.handle.ready()).remember(text, metadata=meta, sync=True)

    def mirror(
        self, action: str, target: str, content: str, metadata: Mapping[str, Any] | None = None
    ) -> str | None:
        """Spool a mirror of a built-in memory write; None when there is nothing to mirror."""
        self._check_spooling()
        if action not in ("add", "replace", "remove"):
            raise InvalidInput(f"unknown memory action {shown(action)}", field="action")
        if not isinstance(target, str) or not target.strip():
            raise InvalidInput("target must be a non-empty string", field="target")
        raw = dict(metadata or {})
        old_text = raw.get("old_text")
        old = old_text if isinstance(old_text, str) and old_text.strip() else None
        text = content if isinstance(content, str) else ""
        if action != "remove":
            text = strip_recall(text)
        if action == "remove":
            if not text.strip() and not old:
                return None
        else:
            limits.check_text(text, field="content")
        meta: dict[str, str] = {}
        for key in _MIRROR_METADATA_KEYS:
            value = raw.get(key)
            if isinstance(value, (str, int, float)) and not isinstance(value, bool):
                value = str(value)
                if 0 < len(value) <= limits.MAX_METADATA_VALUE_CHARS:
                    meta[key] = value
        write = MirrorWrite(self.store_name, self.scope, action, target[:1024], text, meta, old)
        return self._spool([write])[0]

    # -- recall ------------------------------------------------------------------------------
    def _search_recall(
        self, query: str, scope: Scope, asked: datetime, open_wait: float = 0.0
    ) -> str:
        """Search for ``query`` as asked at ``asked`` and format the block; a few more hits
        than shown are asked for, so repeats of one text do not cost the block its places.
        A store whose opening is still under way is waited for up to ``open_wait``."""
        self.handle.wait_open(open_wait)
        store = self.handle.ready()
        k = self.config.top_k
        service = self.service(store)
        service.switch_scope(scope)
        # The current session is the context: the service ranks its memories higher.
        # Turns around each memory when configured and the store keeps their order.
        around = self.config.recall_neighbours if service.shows_neighbours else 0
        hits = service.search(
            query,
            top_k=min(limits.MAX_TOP_K, 2 * k),
            context_scope=True,
            reference_time=asked,
            neighbours=around,
        )
        return format_recall(hits, top_k=k, zone=asked.tzinfo)

    def _keep_recall(self, text: str, scope: Scope, generation: int) -> None:
        with self._recall_lock:
            if generation >= self._recall_kept:
                self._recall_kept = generation
                self._recall_text = text
                self._recall_scope = scope

    def _recall_job(self, query: str, open_wait: float = 0.0) -> Callable[[], str]:
        with self._recall_lock:
            self._recall_generation += 1
            generation = self._recall_generation
        scope = self.scope
        asked = self.turn_time()  # the turn's moment, even when a remote search runs late

        def run() -> str:
            try:
                text = self._search_recall(query, scope, asked, open_wait)
            except MemcoreError as exc:
                # Loud: a recall that fails on every turn must not look like "nothing found".
                logger.warning("tablestore-mem: recall failed (%s: %s)", exc.code, exc)
                raise
            self._keep_recall(text, scope, generation)
            return text

        return run

    def recall(self, query: str, *, max_wait_s: float | None = None) -> str:
        """The recall block for the message being answered.

        In-process stores answer on the calling thread (a few ms). A remote one searches on
        the recall thread while this waits up to ``recall_wait_ms`` (and ``max_wait_s``, the
        time the host gives a recall); then the last recall of this session stands in (it
        was for an earlier message, never another session) and the search, when it ends,
        leaves its answer for the next turn. A store whose opening the session's start left
        under way is waited for as long, on either kind. A message without words (or only a
        pasted block) asks nothing, and recalls nothing.
        """
        if not isinstance(query, str) or limits.is_blank(query):
            return ""
        query = strip_recall(query)  # a pasted block is not what the user asks about
        # The message's words, as its capture keeps them: half an emoji (a platform cut the
        # message there) becomes U+FFFD, and blanks before the words do not use up the
        # query's length, or the search would refuse the message on every turn.
        query = limits.repair_unicode(query).strip()[: limits.MAX_QUERY_CHARS]
        if limits.is_blank(query):
            return ""
        wait = self.config.recall_wait_ms / 1000
        if max_wait_s is not None:
            wait = min(wait, max_wait_s)
        job = self._recall_job(query, wait if self.handle.opening else 0.0)
        if self.recall_inline:
            with self._recall_lock:
                self._inline_recalls += 1
            try:
                return job()
            except MemcoreError:
                return self.cached_recall()
            finally:
                with self._recall_lock:
                    self._inline_recalls -= 1
                    self._recall_done.notify_all()
        future = self._start_recall(job)
        try:
            return str(future.result(timeout=wait))
        except Exception:  # late, failed or not started: what this session already has
            return self.cached_recall()

    def _let_recall_finish(self) -> None:
        """On the lane, before each task: wait (bounded) for the in-process recalls running
        now, so the turn's search does not share the cores and the store with a delivery."""
        with self._recall_lock:
            self._recall_done.wait_for(lambda: self._inline_recalls == 0, RECALL_FIRST_S)

    def _start_recall(self, job: Callable[[], str]) -> Future[str]:
        """Run ``job`` on a daemon thread (a search stuck on a dead backend must not hold up
        the process's exit); at most two at once, else the future fails at once."""
        future: Future[str] = Future()
        with self._recall_lock:
            if self._recalls_running >= _MAX_RECALLS_RUNNING or self._recall_closed:
                future.set_exception(TimeoutError("earlier searches are still running"))
                return future
            self._recalls_running += 1

        def run() -> None:
            try:
                future.set_result(job())
            except BaseException as exc:  # logged by the job
                future.set_exception(exc)
            finally:
                with self._recall_lock:
                    self._recalls_running -= 1

        threading.Thread(target=run, name="tablestore-mem-recall", daemon=True).start()
        return future

    def cached_recall(self) -> str:
        """The last recall for the current scope; never waits."""
        scope = self.scope
        with self._recall_lock:
            return self._recall_text if self._recall_scope == scope else ""

    def clear_recall(self) -> None:
        """Drop the last recall, and the answers of the searches still running (they may
        show what was just forgotten); the next search's answer is kept again."""
        with self._recall_lock:
            self._recall_text = ""
            self._recall_scope = None
            self._recall_kept = self._recall_generation + 1

    # -- lifecycle -----------------------------------------------------------------------------
    def flush(self, timeout: float, *, stall_s: float | None = None) -> bool:
        """Deliver everything now (ignoring backoff), waiting at most ``timeout``; True if empty.

        With ``stall_s`` (the shutdown paths) the wait also ends at the first failed delivery,
        or when nothing was delivered for ``stall_s``: a backend that is down costs a call's
        whole retry budget, and what is left stays in the spool for the next start or command.
        """
        if stall_s is not None and self.backend_failing():
            return False
        future = self.lane.flush_soon()
        deadline = time.monotonic() + max(0.0, timeout)
        failures, delivered = self.deliverer.failures, self.deliverer.delivered
        progress_at = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= deadline:
                return False
            step = deadline - now if stall_s is None else min(deadline - now, _POLL_S)
            try:
                future.result(timeout=step)
                break
            except FutureTimeout:
                pass
            except Exception:
                return False
            if stall_s is None:
                continue
            if self.deliverer.failures != failures:
                return False
            if self.deliverer.delivered != delivered:
                delivered, progress_at = self.deliverer.delivered, time.monotonic()
            elif time.monotonic() - progress_at >= stall_s:
                self._stalled_at = self.deliverer.delivered
                return False
        try:
            return self.spool.stats(self.clock()).depth == 0
        except MemcoreError:
            return False

    def in_background(self, task: Callable[[], T]) -> Future[T | None]:
        """Run ``task`` on the lane after what is queued, unless the session has shut down
        by then (None): work that :meth:`close` stopped waiting for (a consolidation pass
        queued behind a store still being opened) must not start after it returned. Writes
        are not queued this way: they wait in the spool for the next start."""
        return self.lane.submit(lambda: None if self.deliverer.stopping else task())

    def backend_failing(self) -> bool:
        """The last try to reach the backend failed, or a shutdown flush saw it stall."""
        stalled = self._stalled_at is not None and self._stalled_at == self.deliverer.delivered
        return self.handle.last_error is not None or self.deliverer.failing or stalled

    def retry_waiting(self) -> None:
        """A new turn after failures: waiting writes get a forced try now (never blocks)."""
        if self.handle.last_error is not None or self.deliverer.failures:
            self.lane.kick()

    def wait_idle(self, timeout: float) -> bool:
        """Wait for the lane to finish what was queued so far (tests, the CLI)."""
        return self.lane.idle(timeout)

    def close(self, timeout: float) -> bool:
        """Flush within ``timeout``; what is left stays in the spool for the next start.

        A backend that is down (or stops answering during the flush) is not waited for: the
        lane is asked to stop after its current call and left to end on its own.
        """
        deadline = time.monotonic() + max(0.0, timeout)
        if self.backend_failing():
            flushed = False
            logger.info("tablestore-mem: backend unreachable at shutdown; writes stay spooled")
        else:
            flushed = self.flush(timeout, stall_s=SHUTDOWN_STALL_S)
        with self._recall_lock:
            self._recall_closed = True
        self.deliverer.stopping = True  # a pass still running ends after its current send
        join = max(0.0, deadline - time.monotonic())
        if self.backend_failing():
            join = min(join, _STOP_JOIN_S)
        # Closed by the lane after its last task, so that a call still running (a store
        # being opened, a send) is followed by the close even when it ends after this wait.
        self.lane.stop_soon(self._close_resources)
        stopped = self.lane.join(join)
        if not stopped:
            logger.warning(
                "tablestore-mem: a backend call is still running at shutdown; pending writes stay "
                "in the spool and are replayed on the next start"
            )
        return flushed and stopped

    def abandon(self) -> None:
        """Let go without waiting: the provider was dropped without a shutdown (Hermes'
        gateway evicts a cached agent with ``release_clients()`` only). The lane runs what
        was queued, closes the spool and the store, and ends; what is not delivered by then
        stays in the spool for another session's lane or the next start.

        It runs in whichever thread the garbage collector does, maybe one holding a lock of
        this runtime: it takes none (a flag, and a put on the lane's reentrant queue)."""
        self._recall_closed = True
        self.lane.stop_soon(self._close_resources)

    def _close_resources(self) -> None:
        self.spool.close()
        self.handle.close()
        if self._on_close is not None:
            self._on_close()


class _NoStore:
    """Stands in for a store where only planning happens (``plan_turn`` never calls it)."""

    def __getattr__(self, name: str) -> Any:  # pragma: no cover - never reached by design
        raise AttributeError(name)


def _user_metadata(metadata: Mapping[str, str] | None) -> dict[str, str]:
    """Metadata a caller may set: within the limits, no scope keys, no forged provenance."""
    from memcore.service import check_user_metadata

    meta = check_user_metadata(metadata)
    if WRITE_MARKER in meta:
        raise InvalidInput(
            f"metadata.{WRITE_MARKER} is reserved: it marks a spooled write for its replay",
            field=f"metadata.{WRITE_MARKER}",
        )
    if meta.get("source") == BUILTIN_SOURCE:
        raise InvalidInput(
            "metadata.source 'builtin_memory' is reserved for mirrored writes",
            field="metadata.source",
        )
    return meta
