"""The CLI's composition root: settings in, an open store and a ``MemoryService`` out.

Memory use cases, and every command that takes an id (memories, write tasks, dream tasks and
actions), go through :class:`memcore.service.MemoryService` (policies, limits, the tenant
check); only store housekeeping and the audit listings use the store port directly. Tests inject a store
through :class:`memcore_cli.wiring.state.Overrides` instead of patching anything here.
"""

from __future__ import annotations

import functools
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from memcore.ports import MemoryStore
from memcore.service import MemoryService
from memcore.store_names import ready_for
from memcore_cli.settings.options import GlobalOptions
from memcore_cli.settings.resolve import Settings, resolve_settings
from memcore_cli.wiring.overrides import StoreFactory

_CONFIGURED: Any = object()


def open_default_store(
    settings: Settings,
    environ: Mapping[str, str] | None = None,
    *,
    embedder: Any = _CONFIGURED,
    defer_vectors: bool = False,
    busy_timeout: float | None = None,
) -> MemoryStore:
    """Open the selected backend through the ``memcore.backends`` entry points.

    TableStore credentials come from ``environ`` when one is given (and only from it), else
    from the process environment and the Alibaba Cloud default chain. ``embedder`` hands the
    local store an embedder already being loaded (see :meth:`Runtime.warm_embedder`);
    ``defer_vectors`` lets an ``add`` without ``--sync`` leave its vector to the next search;
    ``busy_timeout`` is how long the local store waits for another process's lock (None: its
    default).
    """
    from memcore.discovery import open_store

    if settings.backend == "local":
        from memcore_cli.settings.home import HOME_ENV, checked_database

        where = HOME_ENV if settings.database_setting == HOME_ENV else "local_path"
        path = checked_database(settings.db_path, field=where)
        local: dict[str, Any] = {"path": path, "location_advice": settings.move_advice}
        if embedder is not _CONFIGURED:
            local["embedder"] = embedder
        if defer_vectors:
            local["defer_vectors"] = True
        if busy_timeout is not None:
            local["busy_timeout"] = busy_timeout
        return open_store("local", settings.config, **local)
    if settings.backend == "tablestore":
        return open_store(
            "tablestore", settings.config, credentials=tablestore_auth(settings, environ)
        )
    return open_store(settings.backend, settings.config)


def tablestore_auth(settings: Settings, environ: Mapping[str, str] | None) -> Any:
    """The credentials a TableStore store of these settings authenticates with (``doctor``
    checks these very ones): a Hermes home's, else those of ``environ`` (or, when None, of
    the process environment and the Alibaba Cloud default chain)."""
    if settings.hermes_home is None:
        from memcore_tablestore.credentials import resolve_auth

        return resolve_auth(environ)
    return _hermes_credentials(settings, environ)


def credential_environ(settings: Settings, environ: Mapping[str, str]) -> Mapping[str, str]:
    """Where the credential variables are read: ``environ``, over a Hermes home's ``.env``."""
    if settings.hermes_home is None:
        return environ
    from memcore_hermes.config.credentials import load_environment
    from memcore_hermes.config.home import HermesHome

    return load_environment(HermesHome(settings.hermes_home).env_file, environ)


def _hermes_credentials(settings: Settings, environ: Mapping[str, str] | None) -> Any:
    """The credentials the Hermes plugin uses (its API key over its key pair): the environment
    over the home's ``.env``."""
    import os

    from memcore.errors import ConfigError
    from memcore_hermes.backend.open_store import tablestore_credentials
    from memcore_hermes.config.credentials import access_keys
    from memcore_hermes.config.home import HermesHome

    assert settings.hermes_home is not None
    env_file = HermesHome(settings.hermes_home).env_file
    keys = access_keys(credential_environ(settings, os.environ if environ is None else environ))
    if keys is None:
        raise ConfigError(
            f"the tablestore backend needs TABLESTORE_MEMORY_AK and TABLESTORE_MEMORY_SK (or "
            f"TABLESTORE_MEMORY_API_KEY) in {env_file} (or the environment)",
            field="TABLESTORE_MEMORY_AK",
        )
    return tablestore_credentials(keys)


class Runtime:
    """Lazily opens the store once per invocation and closes it at the end."""

    def __init__(
        self,
        options: GlobalOptions,
        environ: Mapping[str, str],
        store_factory: StoreFactory | None = None,
        *,
        explicit_environ: bool = False,
        busy_timeout: float | None = None,
    ) -> None:
        self.options = options
        self.environ = environ
        self.settings = resolve_settings(options, environ)
        #: The default opener, when no factory was injected (it can take a warmed embedder).
        self._default: functools.partial[MemoryStore] | None = None
        if store_factory is None:
            env = environ if explicit_environ else None
            # A CLI process is short-lived: an ``add`` stores its text at once and the next
            # search, which loads the model anyway, computes the vector.
            self._default = functools.partial(
                open_default_store, environ=env, defer_vectors=True, busy_timeout=busy_timeout
            )
            store_factory = self._default
        self._factory: StoreFactory = store_factory
        self._store: MemoryStore | None = None
        self._ensured = False
        self._warming: threading.Thread | None = None

    def warm_embedder(self) -> None:
        """Load the local embedder's model in a thread, now, for a command that will embed.

        The model load (numpy, onnxruntime, the session: most of a ``search``) then overlaps
        with parsing the command's arguments, importing the core and checking the input;
        onnxruntime releases the GIL while it builds the session. The store, opened once the
        load is over, gets this very embedder. A failed load is left for its first ``embed``
        to report. Commands that do not embed never call this, and never load the model.
        """
        if self.settings.backend != "local" or self._default is None or self._store:
            return
        from memcore_sqlite.backend import choose_embedder

        try:
            embedder = choose_embedder(self.settings.config.embedder)
        except Exception:  # reported by the store's own open, with its exit code
            return
        warm_up = getattr(embedder, "warm_up", None)
        if embedder is None or warm_up is None:
            return

        def load() -> None:
            try:
                warm_up()
            except Exception:  # pragma: no cover - embed() loads again and raises it
                pass

        thread = threading.Thread(target=load, name="memcore-embedder-load", daemon=True)
        thread.start()
        self._warming = thread
        opener = functools.partial(self._default, embedder=embedder)

        def open_when_loaded(settings: Settings) -> MemoryStore:
            # numpy must not be imported by two threads at once (it fails half-initialised).
            thread.join()
            return opener(settings)

        self._factory = open_when_loaded

    @property
    def store_name(self) -> str:
        return self.settings.config.memory_store_name

    @property
    def store(self) -> MemoryStore:
        """The open store, without creating the memory store inside it."""
        if self._store is None:
            local = self.settings.backend == "local"
            first_run = local and not _exists(self.settings.db_path)
            self._store = self._factory(self.settings)
            if first_run and _exists(self.settings.db_path):
                # Said only once the file exists: a home that cannot be created gets the
                # error alone, not a welcome followed by a failure.
                if self.settings.hermes_home is not None:
                    sys.stderr.write(
                        f"memcore: the Hermes home had no database yet; created "
                        f"{self.settings.db_path}, where its tablestore-mem keeps memories\n"
                    )
                else:
                    sys.stderr.write(
                        f"memcore: first run; your memories are stored in "
                        f"{self.settings.db_path} (set {self.settings.database_setting} to "
                        "keep them elsewhere)\n"
                    )
        return self._store

    @property
    def opened_store(self) -> MemoryStore | None:
        """The store if this invocation opened it, else None (nothing is opened here)."""
        return self._store

    @property
    def store_ready(self) -> bool:
        """Whether :meth:`ready_store` has found (or made) the configured memory store."""
        return self._ensured

    def ready_store(self, *, create: bool = True) -> MemoryStore:
        """The open store, with the configured memory store created when allowed.

        ``create=False`` (a command that only reads, or changes what is there): a missing
        TableStore memory store is an error, not created empty, so a deleted or mistyped store
        is reported instead of read as one holding nothing (``auto_create_store`` means "the
        first write creates it"). The embedded store's is a row of the file just opened, and
        is still made on the first run's first read: by a file that holds no store yet, not
        by one whose stores have other names (a mistyped name is reported there too)."""
        store = self.store
        if not self._ensured:
            config, name = self.settings.config, self.store_name
            ready_for(
                store,
                name,
                writes=create,
                auto_create=config.auto_create_store,
                first_read_creates=self.settings.backend == "local",
                advice=f"the first write does, or 'memcore stores create {name}'",
                description=config.description,
                extract_instructions=config.extract_instructions,
                progress=self._progress,
            )
            self._ensured = True
        return store

    def service(self, *, create: bool = True) -> MemoryService:
        """The service over :meth:`ready_store` (``create`` as there)."""
        config = self.settings.config
        return MemoryService(
            self.ready_store(create=create),
            store_name=self.store_name,
            scope=self.settings.scope.scope,
            policy=self.settings.scope.policy,
            top_k=config.top_k,
            enable_rerank=config.enable_rerank,
            store_assistant=config.store_assistant,
        )

    @staticmethod
    def _progress(message: str) -> None:
        """Progress of a long wait (a new store's index), on stderr so stdout stays clean."""
        sys.stderr.write(f"memcore: {message}\n")

    def close(self) -> None:
        if self._warming is not None:
            # A command that fails before it embeds (bad input) must still let the load
            # finish: onnxruntime aborts the process if it exits mid-session-creation.
            self._warming.join()
            self._warming = None
        if self._store is not None:
            store, self._store = self._store, None
            store.close()


def _exists(path: Path) -> bool:
    """Whether ``path`` exists; a name no file can have (too long) does not, and opening it
    gives the store's own error."""
    try:
        return bool(path.exists())
    except OSError:
        return False
