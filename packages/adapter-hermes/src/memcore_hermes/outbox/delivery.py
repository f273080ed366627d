"""Delivering spooled writes to the backend: in order, with backoff, exactly once as seen by it.

A send whose answer was lost may still have landed; such an entry's next attempt first looks
for it at the backend (a turn by its message ids, a text by the write marker it carries), so a
replay (also after a restart) never duplicates. After an answer that never came the entry
waits one call timeout first: the request may still be on its way in.
"""

from __future__ import annotations

import json
import logging
import random
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import wait as wait_for_future

import attrs

from memcore import limits
from memcore.config import LOCAL, MemcoreConfig
from memcore.errors import (
    InvalidInput,
    MemcoreError,
    NotFound,
    OutcomeUnknown,
    StoreClosed,
    Unavailable,
    Unsupported,
)
from memcore.outbox import OutboxEntry
from memcore.paging import pages
from memcore.ports import MemoryStore
from memcore.service import BUILTIN_SOURCE, MemoryService
from memcore_hermes.outbox.entries import MessagesWrite, MirrorWrite, TextWrite, Write, decode
from memcore_hermes.outbox.spool import SqliteOutbox, new_owner

logger = logging.getLogger(__name__)

#: How many pages of a run's messages a replay check reads before assuming "not landed"
#: (100,000 messages: a session's whole history, where 20 pages once missed a long session's
#: last turns and sent one twice). Only replays pay for it.
_LANDED_SCAN_PAGES = 1000
#: The metadata key a spooled text write carries with its spool key, so that a replay can tell
#: whether an earlier, unanswered attempt landed (the memory is found by it).
WRITE_MARKER = "memcore_write"
#: Keys the service adds to a mirrored write (source, target, action).
_MIRROR_TAGS = 3
#: Seconds between two WAL checkpoints (run here, in the lane, off the agent's thread).
_CHECKPOINT_INTERVAL_S = 30.0
#: Entries read per look at the spool: enough to reach every busy gateway session's next write.
_PASS_BATCH = 200


def in_flight_s(config: MemcoreConfig) -> float:
    """How long a killed worker's entry stays held before another sends it again: one call
    timeout for a remote backend, whose server may still be applying the last request; none
    for the local store, whose write ended (committed or rolled back) with the process that
    made it. A replay first looks for it either way."""
    return 0.0 if config.backend == LOCAL else config.timeout


@attrs.frozen
class RetryPolicy:
    """Exponential backoff with jitter, capped."""

    base_s: float = 1.0
    cap_s: float = 60.0
    jitter: float = 0.2

    def delay(self, attempts: int) -> float:
        # The exponent stops at 64: 2.0 ** 1024 overflows, which a backend down for a day
        # (1,024 tries at the cap) reached, and the pass that asked for its delay failed.
        raw = min(self.cap_s, self.base_s * 2.0 ** min(max(0, attempts - 1), 64))
        return float(raw * (1.0 + random.uniform(-self.jitter, self.jitter)))


class StoreHandle:
    """Opens the backend lazily and ensures the memory store once, retrying after failures."""

    def __init__(
        self,
        opener: Callable[[], MemoryStore],
        *,
        store_name: str,
        description: str,
        auto_create: bool,
        extract_instructions: str | None = None,
        on_open: Callable[[MemoryStore], None] | None = None,
        lasting: Callable[[MemcoreError], bool] | None = None,
    ) -> None:
        """``lasting``: whether an opening's error is one no later try can get past (bad
        config, keys refused, a read-only or newer file): the store is not opened again."""
        self._opener = opener
        self.store_name = store_name
        self._description = description
        self._auto_create = auto_create
        self._extract_instructions = extract_instructions
        self._lock = threading.Lock()
        self._ensure_lock = threading.Lock()
        self._store: MemoryStore | None = None
        self._ensured = False
        self._failure: tuple[MemcoreError | None, float] = (None, 0.0)
        self.last_error: MemcoreError | None = None
        #: The only thread that may call the opener (the lane), once set: opening can take
        #: seconds (another process's lock, a first run's bootstrap), never a turn's.
        self._opens_on: threading.Thread | None = None
        self._on_open = on_open
        #: The opening ``initialize`` started and stopped waiting for: the store comes from
        #: it (the lane waits for it), never from a second opening competing with it.
        self._opening: Future[MemoryStore] | None = None
        self._lasting = lasting
        #: Why the store can never open in this session (an opening failed for a reason
        #: that does not pass); kept without a traceback.
        self.refused: MemcoreError | None = None
        #: A session's lane goes on opening the store; a one-shot command's process ends.
        self.opens_later = True
        #: :meth:`close` ran: the session is over, and nothing opens the store again.
        self._closed = False

    @property
    def store(self) -> MemoryStore | None:
        return self._store

    @property
    def opening(self) -> bool:
        """The opening started at the session's start is still under way."""
        opening = self._opening
        return opening is not None and not opening.done()

    def wait_open(self, timeout: float) -> None:
        """Wait up to ``timeout`` for the opening under way to end (at once when none is)."""
        opening = self._opening
        if opening is not None and timeout > 0:
            wait_for_future([opening], timeout=timeout)

    @property
    def waiting_to_open(self) -> bool:
        """The store is not open yet: the lane tries again even with nothing to deliver."""
        return self._store is None and self._opens_on is not None and self.refused is None

    def open_only_on(self, thread: threading.Thread) -> None:
        """Let only ``thread`` open the store; others get :class:`Unavailable` at once."""
        self._opens_on = thread

    def set_store(self, store: MemoryStore) -> None:
        with self._lock:
            self._store = store

    def get(self) -> MemoryStore:
        """The opened store (without ensuring it); raises the opening error."""
        self.check_usable()
        if self._store is None and not self._may_open(self._opening):
            raise self._unavailable()
        with self._lock:
            if self._store is None:
                self.check_usable()  # refused while this thread waited for the lock
                opening = self._opening
                if not self._may_open(opening):  # the lane took the opening meanwhile
                    raise self._unavailable()
                try:
                    self._store = self._open(opening)
                except MemcoreError as exc:
                    self.last_error = detached(exc)  # its frames may hold the caller
                    if self._lasting is not None and self._lasting(exc):
                        self._refuse(exc)
                        raise _unusable(exc) from None  # as every later call answers
                    raise
                except Exception as exc:  # a bug: tried again with backoff, as any failure
                    logger.error("tablestore-mem: opening the memory store failed", exc_info=exc)
                    # Kept without a traceback: its frames may hold the caller (a provider).
                    self.last_error = _opening_failed(exc)
                    raise _opening_failed(exc) from None
                if self._on_open is not None:
                    self._on_open(self._store)
            return self._store

    def check_usable(self) -> None:
        """Raise why the store can never open in this session, if it cannot."""
        if self._closed:
            # Not "opened again in the background": a call that raced the shutdown.
            raise StoreClosed(
                "memory is unavailable: this session was shut down; writes queued before it "
                "wait in the spool for the next start",
                field="store",
            )
        refused = self.refused
        if refused is not None:
            raise _unusable(refused)

    def _refuse(self, error: MemcoreError) -> None:
        """Give up on the store for good: no more tries, and say so once, loudly."""
        self.refused = detached(error)
        logger.error(
            "tablestore-mem: the memory store cannot be used (%s: %s); it is not opened again, "
            "and this session records no more memories; fix the cause and start a new session "
            "(writes queued before this wait in the spool for it)",
            error.code,
            error,
        )

    def _may_open(self, opening: Future[MemoryStore] | None) -> bool:
        """Whether this thread may open the store: the lane (or any thread when no lane is
        named), and any thread to take an opening that has ended."""
        opens_on = self._opens_on
        if opens_on is None or threading.current_thread() is opens_on:
            return True
        return opening is not None and opening.done()

    def _open(self, opening: Future[MemoryStore] | None) -> MemoryStore:
        """The store from ``opening`` (waiting for it), else from a new opening."""
        if opening is None:
            return self._opener()
        try:
            return opening.result()
        finally:
            self._opening = None

    def _unavailable(self) -> Unavailable:
        reason = self.last_error
        why = f" ({reason.code}: {reason})" if reason is not None else ""
        if not self.opens_later:
            # Nothing more: an ``add`` says itself that its write waits in the spool, and
            # an ``add --sync`` kept nothing.
            return Unavailable(
                f"memory is unavailable: the memory store could not be opened{why}", field="store"
            )
        again = "still being opened" if self.opening else "opened again"
        return Unavailable(
            f"memory is unavailable: the memory store is not open yet{why}; it is {again} "
            "in the background, and queued writes are stored once it opens",
            field="store",
        )

    def ready(self) -> MemoryStore:
        """The store, created if missing (when allowed) and ready for memory operations.

        One ensure runs at a time; a caller that waited for another's failed attempt gets that
        failure instead of trying again, so a down endpoint costs one connect timeout, not one
        per thread (warm-up, delivery and a tool call arrive together).
        """
        store = self.get()
        asked_at = time.monotonic()
        with self._ensure_lock:
            with self._lock:
                if self._ensured:
                    return store
                failure, failed_at = self._failure
            if failure is not None and failed_at >= asked_at:
                raise failure
            try:
                store.ensure_store(
                    self.store_name,
                    description=self._description,
                    create=self._auto_create,
                    extract_instructions=self._extract_instructions,
                    # A new store's index takes about a minute: say so in the log as it goes.
                    progress=lambda message: logger.info("tablestore-mem: %s", message),
                )
            except MemcoreError as exc:
                with self._lock:
                    self.last_error = exc
                    self._failure = (exc, time.monotonic())
                raise
            with self._lock:
                self._ensured = True
                self.last_error = None
                self._failure = (None, 0.0)
        return store

    @classmethod
    def opened(cls, store: MemoryStore, config: MemcoreConfig) -> StoreHandle:
        """A handle over an already opened ``store``, with the config's store settings."""
        handle = cls(
            lambda: store,
            store_name=config.memory_store_name,
            description=config.description,
            auto_create=config.auto_create_store,
            extract_instructions=config.extract_instructions,
        )
        handle.set_store(store)
        return handle

    @classmethod
    def deferred(
        cls,
        opener: Callable[[], MemoryStore],
        config: MemcoreConfig,
        error: MemcoreError,
        *,
        on_open: Callable[[MemoryStore], None] | None = None,
        opening: Future[MemoryStore] | None = None,
        lasting: Callable[[MemcoreError], bool] | None = None,
        opens_later: bool = True,
    ) -> StoreHandle:
        """A handle whose store could not be opened yet (``error``, a reason that passes):
        the lane opens it later, retrying with backoff; the runtime names the lane. With
        ``opening`` (still under way) the lane first waits for that one; an opening that
        fails for a ``lasting`` reason ends the tries (see :meth:`check_usable`).
        ``opens_later``: False for a one-shot command, whose process ends before a later try
        could open it (its errors then say so)."""
        handle = cls(
            opener,
            store_name=config.memory_store_name,
            description=config.description,
            auto_create=config.auto_create_store,
            extract_instructions=config.extract_instructions,
            on_open=on_open,
            lasting=lasting,
        )
        # Without its traceback: its frames hold the caller (the provider), which the lane
        # holding this handle would keep alive, and the lane ends only once it is collected.
        handle.last_error = error.with_traceback(None)
        handle._opening = opening
        handle.opens_later = opens_later
        return handle

    def forget_ready(self) -> None:
        """The store vanished (deleted behind our back): ensure it again before the next write."""
        with self._lock:
            self._ensured = False

    def close(self) -> None:
        with self._lock:
            self._closed = True
            store, self._store = self._store, None
            opening, self._opening = self._opening, None
        if opening is not None:  # never taken: what it opens is closed when it ends
            opening.add_done_callback(_close_opened)
        if store is not None:
            try:
                store.close()
            except MemcoreError:
                pass


def detached(error: MemcoreError) -> MemcoreError:
    """A copy of ``error`` without its traceback (whose frames may hold a provider), to
    keep and to raise copies of."""
    kept = type(error).__new__(type(error))
    kept.__dict__.update(vars(error))
    kept.args = error.args
    return kept


def retold(error: MemcoreError, message: str) -> MemcoreError:
    """A copy of ``error`` (its type, code and field) saying ``message``, not retryable: what
    a session answers once nothing it does can get past ``error``."""
    told = detached(error)
    told.retryable = False
    told.message = message
    told.args = (message,)
    return told


def _unusable(error: MemcoreError) -> MemcoreError:
    """``error`` (an opening's, for a reason that does not pass), as the session answers it
    from then on."""
    return retold(
        error,
        f"memory is unavailable: the memory store cannot be used ({error.code}: {error}); it "
        "is not opened again, and this session records no more memories: fix the cause and "
        "start a new session (writes queued before this wait in the spool for it)",
    )


def _opening_failed(exc: Exception) -> Unavailable:
    """An error that is no memcore error, escaped from an opening, as one the lane retries
    (escaping the delivery pass, it left the lane asleep until the next write)."""
    return Unavailable(f"opening the memory store failed ({type(exc).__name__})", field="store")


def _close_opened(opening: Future[MemoryStore]) -> None:
    if opening.cancelled() or opening.exception() is not None:
        return
    try:
        opening.result().close()
    except MemcoreError:
        pass


@attrs.frozen
class _Busy:
    """The entry is another worker's for ``delay`` seconds, or not due yet: skip its scope."""

    delay: float


def _sooner(a: float | None, b: float) -> float:
    return b if a is None else min(a, b)


def ordering_key(entry: OutboxEntry) -> str:
    """What must stay in order: writes to one store and scope (an unreadable entry is alone)."""
    try:
        data = json.loads(entry.payload)
        return json.dumps([data["store"], data["scope"]], sort_keys=True)
    except (ValueError, TypeError, KeyError):
        return f"entry:{entry.key}"


_MAX_RECEIPTS = 256


class Deliverer:
    """Drains the spool through the store, one entry at a time, in spool order per scope."""

    def __init__(
        self,
        spool: SqliteOutbox,
        handle: StoreHandle,
        *,
        retry: RetryPolicy,
        lease_s: float,
        in_flight_s: float | None = None,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.spool = spool
        self.handle = handle
        self.retry = retry
        self.lease_s = lease_s
        # A killed worker's last request can still be landing for up to one call timeout.
        self.in_flight_s = in_flight_s if in_flight_s is not None else lease_s / 2
        self.clock = clock
        self.delivered = 0
        self.failures = 0
        #: The last attempt to reach the backend failed, and why (cleared by the next delivery).
        self.failing = False
        self.last_error: MemcoreError | None = None
        #: Memory ids of the explicit memories this process delivered, by spool key (bounded),
        #: so ``hermes tablestore-mem add`` can print an id that ``forget`` accepts.
        self.receipts: dict[str, tuple[str, ...]] = {}
        self.stopping = False
        self.owner = new_owner()
        self._store_attempts = 0
        self._checkpointed_at = 0.0

    def drain(self, force: bool = False) -> float | None:
        """Deliver due entries in order per scope; the delay until the next try, or None when empty."""
        if self.stopping:  # shutting down: not even a store that is still to be opened
            return None
        now = self.clock()
        if now - self._checkpointed_at >= _CHECKPOINT_INTERVAL_S:
            self._checkpointed_at = now
            self.spool.checkpoint()
        try:
            self.spool.expire(now)
            batch = self.spool.pending(limit=_PASS_BATCH)
        except Unavailable as exc:
            logger.error("tablestore-mem: cannot read the spool: %s", exc)
            return self.retry.cap_s
        if not batch and not self.handle.waiting_to_open:
            return None
        try:
            self._ready()
            self._store_attempts = 0
        except MemcoreError as exc:
            self._store_attempts += 1
            self.failing, self.last_error = True, exc
            delay = self.retry.delay(self._store_attempts)
            if batch:
                # The reason next to the waiting write, for ``doctor``; its lease stays as it
                # is (another lane, whose store is open, may be sending it right now).
                try:
                    self.spool.note_error(batch[0].key, f"{exc.code}: {exc}")
                except Unavailable:
                    pass
            if self.handle.refused is not None:  # it never opens: the writes wait for a start
                return None
            logger.warning(
                "tablestore-mem: memory backend not ready (%s: %s); %d write(s) wait in the spool, "
                "next try in %.1f s",
                exc.code,
                exc,
                len(batch),
                delay,
            )
            return delay
        # Order is kept per scope (a session's turn N lands before its turn N+1); an entry that
        # must wait, or that another worker is sending, holds back only its own scope, so the
        # lanes of a gateway's sessions deliver side by side.
        held: set[str] = set()
        lane_keys: dict[str, str] = {}  # each re-read of the spool sees most entries again

        def lane_of(entry: OutboxEntry) -> str:
            """Parsed only once a scope is held: the common pass decodes no payload at all."""
            lane_key = lane_keys.get(entry.key)
            if lane_key is None:
                lane_key = lane_keys[entry.key] = ordering_key(entry)
            return lane_key

        wait: float | None = None
        while batch:
            progressed = False
            for entry in batch:
                if self.stopping:
                    return None
                if held and lane_of(entry) in held:
                    continue
                now = self.clock()
                if not force and entry.next_attempt_at > now:
                    held.add(lane_of(entry))
                    wait = _sooner(wait, entry.next_attempt_at - now)
                    continue
                outcome = self._deliver_one(entry, now=now, force=force)
                if isinstance(outcome, _Busy):
                    held.add(lane_of(entry))
                    wait = _sooner(wait, outcome.delay)
                elif outcome is not None:
                    return outcome
                else:
                    progressed = True
            if not progressed:
                return wait
            try:
                batch = self.spool.pending(limit=_PASS_BATCH)
            except Unavailable:
                return self.retry.cap_s
        return wait

    def _ready(self) -> None:
        """The store, ensured; an error that is no memcore error (a foreign one escaped an
        adapter) is unavailable, retried with backoff as in a send: escaping the pass, it
        left the lane asleep until the next write."""
        try:
            self.handle.ready()
        except MemcoreError:
            raise
        except Exception as exc:
            logger.error("tablestore-mem: the memory store check failed", exc_info=exc)
            raise Unavailable(
                f"unexpected {type(exc).__name__} from the backend", field="store"
            ) from None

    def _deliver_one(self, entry: OutboxEntry, *, now: float, force: bool) -> float | _Busy | None:
        """Send one entry; None to go on, :class:`_Busy` to skip its scope, a delay to stop."""
        try:
            claim = self.spool.claim(
                entry.key,
                now=now,
                lease_s=self.lease_s,
                owner=self.owner,
                force=force,
                in_flight_s=self.in_flight_s,
            )
        except Unavailable as exc:
            logger.error("tablestore-mem: cannot claim a spooled write: %s", exc)
            return self.retry.cap_s
        if claim.busy_for_s is not None:  # leased to another worker, or waiting for its retry
            return _Busy(max(0.01, claim.busy_for_s))
        claimed = claim.entry
        if claimed is None:  # acknowledged meanwhile
            return None
        try:
            write = decode(claimed)
            store = self.handle.ready()
            landed = claimed.attempts > 0 and self._already_landed(store, write, claimed.key)
            if landed:
                logger.info(
                    "tablestore-mem: a replayed write had already landed; not sending it again"
                )
            ids = self._send(store, write, claimed.key, landed=landed)
            if ids:
                self._keep_receipt(claimed.key, ids)
        except InvalidInput as exc:
            self.spool.dead_letter(claimed.key, now=self.clock(), reason=f"{exc.code}: {exc}")
            return None
        except Unsupported as exc:
            self.spool.dead_letter(claimed.key, now=self.clock(), reason=f"{exc.code}: {exc}")
            return None
        except MemcoreError as exc:
            return self._failed(claimed, exc)
        except Exception as exc:  # a foreign error escaped an adapter: keep the write, retry
            return self._failed(
                claimed, Unavailable(f"unexpected {type(exc).__name__} from the backend")
            )
        try:
            self.spool.ack(claimed.key)
        except Unavailable as exc:
            logger.warning(
                "tablestore-mem: delivered but could not acknowledge (%s); a replay will be checked",
                exc,
            )
            return self.retry.cap_s
        self.delivered += 1
        self.failing, self.last_error = False, None
        return None

    def _failed(self, entry: OutboxEntry, exc: MemcoreError) -> float:
        self.failures += 1
        self.failing, self.last_error = True, exc
        if isinstance(exc, NotFound):
            self.handle.forget_ready()
        delay = self.retry.delay(entry.attempts + 1)
        # The request may still be landing: hold the entry (even against a forced flush) for
        # one call timeout, so the replay's look finds it instead of sending it twice.
        hold = self.in_flight_s if isinstance(exc, OutcomeUnknown) else 0.0
        try:
            self.spool.retry_later(
                entry.key,
                next_attempt_at=self.clock() + max(delay, hold),
                error=f"{exc.code}: {exc}",
                hold_until=self.clock() + hold if hold else None,
            )
        except Unavailable:
            pass
        logger.warning(
            "tablestore-mem: write not accepted (%s: %s); kept in the spool, retry in %.1f s",
            exc.code,
            exc,
            delay,
        )
        return delay

    def _already_landed(self, store: MemoryStore, write: Write, key: str) -> bool:
        """Whether an earlier, unanswered attempt of ``write`` reached the backend.

        A refusal of the look (a page token the service rejects, a listing it does not offer)
        says nothing about the write itself: it is :class:`Unavailable`, so the write is tried
        again later, never dead-lettered as if the write had been refused."""
        try:
            return self._looked_up(store, write, key)
        except (InvalidInput, Unsupported) as exc:
            raise Unavailable(
                f"could not tell whether an earlier attempt had landed ({exc.code}: {exc})"[:600]
            ) from exc

    def _looked_up(self, store: MemoryStore, write: Write, key: str) -> bool:
        if isinstance(write, MessagesWrite):
            return self._turn_landed(store, write)
        if isinstance(write, TextWrite) or (
            isinstance(write, MirrorWrite) and write.action != "remove"  # a removal repeats
        ):
            return text_landed(store, write, key)
        return False

    def _turn_landed(self, store: MemoryStore, write: MessagesWrite) -> bool:
        wanted = {m.id for m in write.messages if m.id}
        if not wanted:
            return False
        listing = pages(
            lambda token: store.list_messages(
                write.store, write.scope, limit=limits.MAX_PAGE_LIMIT, next_token=token
            ),
            max_pages=_LANDED_SCAN_PAGES,
        )
        for page in listing:
            if any(m.id in wanted for m in page.items):
                return True
        if not page.next_token:  # the whole run was read (pages() yields at least one page)
            return False
        logger.warning(
            "tablestore-mem: could not tell whether a replayed write had landed (more than %d pages "
            "of messages in its run); sending it again",
            _LANDED_SCAN_PAGES,
        )
        return False

    def _keep_receipt(self, key: str, ids: tuple[str, ...]) -> None:
        if len(self.receipts) >= _MAX_RECEIPTS:
            self.receipts.pop(next(iter(self.receipts)))
        self.receipts[key] = ids

    def _send(
        self, store: MemoryStore, write: Write, key: str, *, landed: bool = False
    ) -> tuple[str, ...]:
        """Send one write (what is left of it when an earlier attempt ``landed``); returns the
        memory ids an explicit memory got (when known)."""
        service = MemoryService(store, store_name=write.store, scope=write.scope)
        if landed:
            if isinstance(write, MirrorWrite) and write.action == "replace":
                send_mirror(service, write, added=True)  # the old text's removal repeats
            return ()
        if isinstance(write, MessagesWrite):
            limits.check_messages(write.messages)
            store.add_messages(
                write.store, write.scope, write.messages, metadata=dict(write.metadata) or None
            )
        elif isinstance(write, TextWrite):
            receipt = service.remember(text_of(write), metadata=marked(write, key) or None)
            return tuple(receipt.memory_ids)
        elif isinstance(write, MirrorWrite):
            send_mirror(service, attrs.evolve(write, metadata=marked(write, key)))
        return ()


def text_of(write: TextWrite | MirrorWrite) -> str:
    return write.text if isinstance(write, TextWrite) else write.content


def marked(write: TextWrite | MirrorWrite, key: str) -> dict[str, str]:
    """The write's metadata with its :data:`WRITE_MARKER`, when the metadata limits (keys and
    bytes as JSON, a mirror's tags counted) leave room (otherwise a replay recognises the
    write by its text and metadata)."""
    meta = dict(write.metadata)
    room = limits.MAX_METADATA_KEYS - (_MIRROR_TAGS if isinstance(write, MirrorWrite) else 0)
    if WRITE_MARKER in meta or len(meta) < room:
        sent = {**meta, WRITE_MARKER: key}
        if isinstance(write, MirrorWrite):  # the tags the service adds to a mirrored write
            sent.update(source=BUILTIN_SOURCE, target=write.target[:1024], action=write.action)
        if WRITE_MARKER in meta or limits.metadata_bytes(sent) <= limits.MAX_METADATA_JSON_BYTES:
            meta[WRITE_MARKER] = key
    return meta


def text_landed(store: MemoryStore, write: TextWrite | MirrorWrite, key: str) -> bool:
    """Whether a text write sent under spool ``key`` is at the backend: a memory of its scope
    carrying its marker, or (unmarked) its exact text with every metadata value it was sent
    with. A backend that rewrites texts and drops metadata would answer no: sent again."""
    meta = marked(write, key)
    text = text_of(write)
    if WRITE_MARKER in meta:
        filters = {WRITE_MARKER: key}
    else:
        filters = dict(meta)
        if isinstance(write, MirrorWrite):
            filters.update(source=BUILTIN_SOURCE, target=write.target[:1024])
    hits = store.search(
        write.store,
        write.scope.pattern(),
        text[: limits.MAX_QUERY_CHARS],
        top_k=limits.MAX_TOP_K,
        enable_rerank=False,
        filters=filters,
    )
    for hit in hits:
        if hit.memory.scope != write.scope:
            continue
        if WRITE_MARKER in meta or hit.memory.text.strip() == text.strip():
            return True
    return False


def send_mirror(service: MemoryService, write: MirrorWrite, *, added: bool = False) -> None:
    """Mirror a built-in memory change; a replace also removes the copy of the old text.
    ``added``: the new text already landed (an earlier attempt), only the removal is left."""
    if write.action == "remove":
        # Hermes removes the entry ``old_text`` names; ``content`` only when it names none.
        text = write.old_text or write.content
        service.mirror_builtin("remove", write.target, text)
        return
    if not added:
        service.mirror_builtin(
            write.action, write.target, write.content, metadata=dict(write.metadata) or None
        )
    if (
        write.action == "replace"
        and write.old_text
        and write.old_text.strip() != write.content.strip()
    ):
        service.mirror_builtin("remove", write.target, write.old_text, keep=write.content)


__all__ = [
    "BUILTIN_SOURCE",
    "WRITE_MARKER",
    "Deliverer",
    "RetryPolicy",
    "StoreHandle",
    "detached",
    "retold",
    "send_mirror",
]
