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
from typing import Any

from memcore import limits
from memcore.config import MemcoreConfig
from memcore.errors import InvalidInput, MemcoreError, PermissionDenied
from memcore.recall import format_recall
from memcore.scope import Scope
from memcore.service import BUILTIN_SOURCE, MemoryService
from memcore.values import Message
from memcore_hermes.delivery import WRITE_MARKER, Deliverer, RetryPolicy, StoreHandle
from memcore_hermes.entries import MessagesWrite, MirrorWrite, TextWrite, Write, make_entry
from memcore_hermes.lane import Lane
from memcore_hermes.spool import SqliteOutbox

logger = logging.getLogger(__name__)

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
    ) -> None:
        self.config = config
        self.store_name = config.memory_store_name
        self.handle = handle
        self.spool = spool
        self.read_only = read_only
        self.clock = clock
        self._scope = scope
        self._scope_lock = threading.Lock()
        self._recall_lock = threading.Lock()
        self._recall_text = ""
        self._recall_scope: Scope | None = None
        self._recall_generation = 0
        self.refused_writes = 0
        self.deliverer = Deliverer(
            spool,
            handle,
            retry=retry or RetryPolicy(),
            lease_s=max(5.0, config.timeout * 2),
            in_flight_s=config.timeout,
            clock=clock,
        )
        self.lane = Lane(name, self.deliverer.drain)
        # Replay what an earlier run left behind, and ensure the store, off the agent's thread.
        self.lane.request_drain()
        self.lane.submit(self._warm_up)

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
        )

    def _check_writable(self) -> None:
        if self.read_only:
            raise PermissionDenied(
                "this session is read-only (not the primary agent context)", field="agent_context"
            )

    def _warm_up(self) -> None:
        if not self.read_only:
            try:
                self.spool.prepare()  # the turn journal, so the first turn does not create it
            except MemcoreError:
                pass
        if self.handle.last_error is not None:
            return  # delivery already tried and failed; it retries with backoff
        try:
            self.handle.ready()
        except MemcoreError as exc:
            logger.warning("tablestore-mem: memory store not ready yet (%s: %s)", exc.code, exc)

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
        self._check_writable()
        scope = self.scope
        service = MemoryService(_NoStore(), store_name=self.store_name, scope=scope)
        batches = service.plan_turn(user, assistant, messages=messages)
        if not batches:
            return []
        meta = {"source": "hermes_turn"}
        if session_id and isinstance(session_id, str):
            meta["session_id"] = session_id[: limits.MAX_METADATA_VALUE_CHARS]
        writes = [MessagesWrite(self.store_name, scope, b.messages, meta) for b in batches]
        for w in writes:
            limits.check_messages(w.messages)
        return self._spool(writes)

    def remember(self, text: str, *, metadata: Mapping[str, str] | None = None) -> str:
        """Validate and spool an explicit memory; returns the entry key."""
        self._check_writable()
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
        self._check_writable()
        if action not in ("add", "replace", "remove"):
            raise InvalidInput(f"unknown memory action {action!r}", field="action")
        if not isinstance(target, str) or not target.strip():
            raise InvalidInput("target must be a non-empty string", field="target")
        raw = dict(metadata or {})
        old_text = raw.get("old_text")
        old = old_text if isinstance(old_text, str) and old_text.strip() else None
        text = content if isinstance(content, str) else ""
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
    def queue_recall(self, query: str) -> None:
        """Search in the lane, after every write queued so far; the result feeds ``cached_recall``."""
        if not isinstance(query, str) or not query.strip():
            return
        query = query[: limits.MAX_QUERY_CHARS]
        with self._recall_lock:
            self._recall_generation += 1
            generation = self._recall_generation
        scope = self.scope

        def run() -> None:
            with self._recall_lock:
                if generation != self._recall_generation:
                    return  # a newer recall is queued behind this one
            try:
                store = self.handle.ready()
                # The current session is the context: the service ranks its memories higher.
                hits = self.service(store).search(query, context_scope=True)
            except MemcoreError as exc:
                # Loud: a recall that fails on every turn must not look like "nothing found".
                logger.warning("tablestore-mem: recall failed (%s: %s)", exc.code, exc)
                return
            text = format_recall(hits)
            with self._recall_lock:
                if generation == self._recall_generation or not self._recall_text:
                    self._recall_text = text
                    self._recall_scope = scope

        self.lane.submit(run)

    def cached_recall(self) -> str:
        """The last recall for the current scope; never waits."""
        scope = self.scope
        with self._recall_lock:
            return self._recall_text if self._recall_scope == scope else ""

    def has_recall(self) -> bool:
        with self._recall_lock:
            return self._recall_scope is not None

    def clear_recall(self) -> None:
        with self._recall_lock:
            self._recall_text = ""
            self._recall_scope = None

    # -- lifecycle -----------------------------------------------------------------------------
    def flush(self, timeout: float) -> bool:
        """Deliver everything now (ignoring backoff), waiting at most ``timeout``; True if empty."""
        if not self.lane.flush(timeout):
            return False
        try:
            return self.spool.stats(self.clock()).depth == 0
        except MemcoreError:
            return False

    def retry_waiting(self) -> None:
        """A new turn after failures: waiting writes get a forced try now (never blocks)."""
        if self.handle.last_error is not None or self.deliverer.failures:
            self.lane.kick()

    def wait_idle(self, timeout: float) -> bool:
        """Wait for the lane to finish what was queued so far (tests, the CLI)."""
        return self.lane.idle(timeout)

    def close(self, timeout: float) -> bool:
        """Flush within ``timeout``; what is left stays in the spool for the next start."""
        deadline = time.monotonic() + max(0.0, timeout)
        if self.handle.last_error is None:
            flushed = self.flush(timeout)
        else:  # the store could not even be reached: waiting would only add a timeout
            flushed = False
            logger.info("tablestore-mem: backend unreachable at shutdown; writes stay spooled")
        self.deliverer.stopping = True  # a pass still running ends after its current send
        stopped = self.lane.stop(max(0.0, deadline - time.monotonic()))
        if stopped:
            self.spool.close()
            self.handle.close()
        else:
            logger.warning(
                "tablestore-mem: a backend call is still running at shutdown; pending writes stay "
                "in the spool and are replayed on the next start"
            )
        return flushed and stopped


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
