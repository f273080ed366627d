"""Which tenant a request acts for, and its memory service over the server's one open store.

The tenant comes from the server's configuration (``--tenant``, ``MEMCORE_TENANT``, the config
file's ``tenant_id``: the ``memcore`` CLI's resolution) on stdio, and from the bearer token on
HTTP. It is never a tool argument. Every use case, dream tasks included, goes through a
:class:`memcore.service.MemoryService` for that tenant, whose one tenant check serves every
host: nothing here calls the store.
"""

from __future__ import annotations

import dataclasses
import logging
import threading
from collections.abc import Callable, Iterable, Mapping

import anyio
import attrs

from memcore.errors import InvalidInput
from memcore.limits import check_unicode
from memcore.ports import MemoryStore
from memcore.scope import WILDCARD, normalize_segment
from memcore.service import MemoryService
from memcore_cli.settings.options import GlobalOptions
from memcore_cli.settings.resolve import Settings
from memcore_cli.settings.scopes import ScopeChoice, choose_scope
from memcore_cli.wiring.runtime import Runtime

logger = logging.getLogger(__name__)

TENANT_ENV = "MEMCORE_TENANT"
#: The worker threads each tenant's calls may hold at once: the size of anyio's default pool,
#: which every tenant's calls shared before, so a tenant alone is served as it was.
THREADS_PER_TENANT = 40
#: The agent segment the server writes under when ``--agent`` is not given; reads still cover
#: every agent of the tenant, so memories written by the CLI or Hermes are found too.
DEFAULT_AGENT = "mcp"


def server_options(options: GlobalOptions, environ: Mapping[str, str]) -> GlobalOptions:
    """``options`` with ``MEMCORE_TENANT`` applied when ``--tenant`` was not given (an MCP
    client's config sets environment variables more easily than flags)."""
    if options.tenant is not None:
        return options
    tenant = environ.get(TENANT_ENV)
    if tenant is None:
        return options
    if not tenant.strip():
        raise InvalidInput(
            f"{TENANT_ENV} is empty (an unset variable?); give a value or leave it out",
            field="tenant_id",
        )
    # Bytes that are not UTF-8 arrive as surrogates, a tenant --tenant refuses to name.
    check_unicode(tenant, field="tenant_id", label=TENANT_ENV)
    if tenant == WILDCARD:  # refused as --tenant '*' is, but named as the user gave it
        raise InvalidInput(
            f"{TENANT_ENV} may not be '*': reads never leave one tenant", field="tenant_id"
        )
    return dataclasses.replace(options, tenant=tenant)


def tenant_scope(options: GlobalOptions, settings: Settings, tenant: str | None) -> ScopeChoice:
    """The scope of ``tenant`` (None: the configured one), as ``memcore --tenant`` resolves it."""
    if tenant is not None:
        options = dataclasses.replace(options, tenant=tenant)
    choice = choose_scope(options, settings.config)
    if choice.wildcard_flag is not None:
        raise InvalidInput(
            f"the server writes memories, so {choice.wildcard_flag} may not be '*'",
            field=choice.wildcard_flag.removeprefix("--") + "_id",
        )
    if options.agent is None:
        choice = attrs.evolve(
            choice, scope=choice.scope.replace(agent_id=normalize_segment(DEFAULT_AGENT))
        )
    return choice


class Tenants:
    """The open store and one memory service per tenant the server serves.

    ``current`` says which tenant the running request is for (the configured one on stdio,
    the token's on HTTP); services are built on first use and kept.
    """

    def __init__(
        self,
        runtime: Runtime,
        options: GlobalOptions,
        current: Callable[[], str | None],
    ) -> None:
        self.runtime = runtime
        self.options = options
        self._current = current
        self._services: dict[str | None, MemoryService] = {}
        self._threads: dict[str | None, anyio.CapacityLimiter] = {}
        self._lock = threading.Lock()
        self._creating = threading.Lock()

    @property
    def store(self) -> MemoryStore:
        """The open store; the memory store in it may not exist yet (:meth:`ready`)."""
        return self.runtime.store

    def ready(self) -> None:
        """Make sure the configured memory store exists before a tool's call, on its worker
        thread: a missing one raises ``StoreNotFound``, so a read of a mistyped or not yet
        created store says so instead of finding nothing in a new empty one. Once found it
        is not asked for again; a store deleted later is reported by the call itself."""
        self.runtime.ready_store(create=False)

    @property
    def store_found(self) -> bool:
        """Whether the configured memory store has been found (or made) since the start."""
        return self.runtime.store_ready

    def create_store(self) -> None:
        """Create the missing memory store for a write that met its absence (the write was
        refused, so nothing landed), when ``auto_create_store`` allows (else
        ``StoreNotFound``). One creation: the other writes that met the absence wait for it,
        then find it made."""
        with self._creating:
            self.runtime.ready_store(create=True)

    @property
    def database(self) -> str:
        """The embedded store's file, as the server opens it (on another backend, the file it
        would open, whose folder is the server's home all the same): no answer names it."""
        return str(self.runtime.settings.db_path)

    def scope_for(self, tenant: str | None) -> ScopeChoice:
        return tenant_scope(self.options, self.runtime.settings, tenant)

    def worker(self) -> tuple[MemoryService, anyio.CapacityLimiter]:
        """The service of the tenant the running request is for, and the worker threads its
        calls run on: each tenant has its own :data:`THREADS_PER_TENANT` (a call past them
        waits for one of its own), so one tenant's calls waiting for a lock, or slow, never
        take the threads another tenant's calls need. Called on the event loop."""
        tenant = self._current()
        threads = self._threads.get(tenant)
        if threads is None:
            threads = self._threads[tenant] = anyio.CapacityLimiter(THREADS_PER_TENANT)
        return self._service_of(tenant), threads

    def warm(self, tenants: Iterable[str | None]) -> threading.Thread:
        """Build each served tenant's search caches in a background thread (its own search
        pattern, through its service), so the first ``recall`` after a start does not pay for
        them; a failure only leaves that to the first search, which reports it."""

        def run() -> None:
            for tenant in tenants:
                try:
                    self._service_of(tenant).warm_search()
                except Exception as exc:  # the store closed under it, a file error, ...
                    logger.debug("memcore mcp: search caches not warmed (%s)", type(exc).__name__)

        thread = threading.Thread(target=run, name="memcore-mcp-warm", daemon=True)
        thread.start()
        return thread

    def _service_of(self, tenant: str | None) -> MemoryService:
        with self._lock:
            service = self._services.get(tenant)
            if service is None:
                choice = self.scope_for(tenant)
                config = self.runtime.settings.config
                service = MemoryService(
                    self.store,
                    store_name=self.runtime.store_name,
                    scope=choice.scope,
                    policy=choice.policy,
                    top_k=config.top_k,
                    enable_rerank=config.enable_rerank,
                    store_assistant=config.store_assistant,
                )
                self._services[tenant] = service
        return service
