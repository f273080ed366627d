"""What the service keeps that the backing ``MemoryStore`` port does not model.

The store's ``storageMode`` and index readiness,
the request audit, ingest tasks keyed by the AddMemories ``requestId``, and dream tasks with
their actions. Rows are kept in their wire shape: the ledger *is* the service's record.
A ledger can outlive one :class:`EmulatorServer` (pass the same one to a restarted server).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import attrs

from memcore.scope import Scope, ScopePattern

Row = dict[str, Any]


@attrs.define
class StoreMeta:
    storage_mode: str = "ots"
    #: ``time.monotonic()`` until which data-plane calls answer 409 CONFLICT.
    ready_at: float = 0.0


@attrs.define
class Audited:
    row: Row
    #: The audited call's scope: a pattern for a search or listing over ``*`` levels.
    scope: Scope | ScopePattern | None
    created_ms: int


@attrs.define
class Task:
    row: Row
    scope: Scope
    created_ms: int


@attrs.define
class Dream:
    row: Row
    inputs: list[ScopePattern]
    created_ms: int
    actions: list[Row] = attrs.field(factory=list)


@attrs.define
class StoreLedger:
    meta: StoreMeta = attrs.field(factory=StoreMeta)
    audit: list[Audited] = attrs.field(factory=list)
    tasks: dict[str, Task] = attrs.field(factory=dict)
    dreams: dict[str, Dream] = attrs.field(factory=dict)
    client_tokens: dict[str, str] = attrs.field(factory=dict)
    #: (scopes, taskType) -> processedThroughMs of the last run, for incremental dreams.
    watermarks: dict[tuple[Any, ...], int] = attrs.field(factory=dict)


class Ledger:
    """Per-store service records, guarded by one lock."""

    #: Audit rows kept per store (oldest dropped first).
    MAX_AUDIT = 10_000

    def __init__(self) -> None:
        self._lock = threading.RLock()
        self._stores: dict[str, StoreLedger] = {}

    @contextmanager
    def of(self, store: str) -> Iterator[StoreLedger]:
        """The records of ``store`` (created on first use), under the lock."""
        with self._lock:
            yield self._stores.setdefault(store, StoreLedger())

    def forget(self, store: str) -> None:
        with self._lock:
            self._stores.pop(store, None)

    def initialising(self, store: str) -> bool:
        with self._lock:
            st = self._stores.get(store)
            return st is not None and time.monotonic() < st.meta.ready_at

    def record(self, store: str, entry: Audited) -> None:
        with self.of(store) as st:
            st.audit.append(entry)
            if len(st.audit) > self.MAX_AUDIT:
                del st.audit[: len(st.audit) - self.MAX_AUDIT]
