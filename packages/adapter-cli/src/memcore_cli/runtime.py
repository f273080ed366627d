"""The CLI's composition root: settings in, an open store and a ``MemoryService`` out.

Memory use cases go through :class:`memcore.service.MemoryService` (policies and limits);
admin commands (stores, audit, tasks, dream) use the store port directly. Tests inject a store
through :class:`memcore_cli.state.Overrides` instead of patching anything here.
"""

from __future__ import annotations

import functools
import sys
from collections.abc import Mapping

from memcore.errors import PermissionDenied, Unavailable
from memcore.ports import MemoryStore
from memcore.service import MemoryService
from memcore_cli.settings import Settings, resolve_settings
from memcore_cli.state import GlobalOptions, StoreFactory


def open_default_store(settings: Settings, environ: Mapping[str, str] | None = None) -> MemoryStore:
    """Open the selected backend through the ``memcore.backends`` entry points.

    TableStore credentials come from ``environ`` when one is given (and only from it), else
    from the process environment and the Alibaba Cloud default chain.
    """
    from memcore.discovery import open_store

    if settings.backend == "local":
        return open_store("local", settings.config, path=settings.db_path)
    if settings.backend == "tablestore":
        from memcore_tablestore.credentials import resolve_credentials

        return open_store("tablestore", settings.config, credentials=resolve_credentials(environ))
    return open_store(settings.backend, settings.config)


class Runtime:
    """Lazily opens the store once per invocation and closes it at the end."""

    def __init__(
        self,
        options: GlobalOptions,
        environ: Mapping[str, str],
        store_factory: StoreFactory | None = None,
        *,
        explicit_environ: bool = False,
    ) -> None:
        self.options = options
        self.environ = environ
        self.settings = resolve_settings(options, environ)
        if store_factory is None:
            env = environ if explicit_environ else None
            store_factory = functools.partial(open_default_store, environ=env)
        self._factory = store_factory
        self._store: MemoryStore | None = None
        self._ensured = False

    @property
    def store_name(self) -> str:
        return self.settings.config.memory_store_name

    @property
    def store(self) -> MemoryStore:
        """The open store, without creating the memory store inside it."""
        if self._store is None:
            self._announce_first_run()
            self._store = self._factory(self.settings)
        return self._store

    def ready_store(self) -> MemoryStore:
        """The open store, with the configured memory store created when allowed."""
        store = self.store
        if not self._ensured:
            store.ensure_store(
                self.store_name,
                description=self.settings.config.description,
                create=self.settings.config.auto_create_store,
                extract_instructions=self.settings.config.extract_instructions,
                progress=self._progress,
            )
            self._ensured = True
        return store

    def service(self) -> MemoryService:
        config = self.settings.config
        return MemoryService(
            self.ready_store(),
            store_name=self.store_name,
            scope=self.settings.scope.scope,
            policy=self.settings.scope.policy,
            top_k=config.top_k,
            enable_rerank=config.enable_rerank,
        )

    @staticmethod
    def _progress(message: str) -> None:
        """Progress of a long wait (a new store's index), on stderr so stdout stays clean."""
        sys.stderr.write(f"memcore: {message}\n")

    def _announce_first_run(self) -> None:
        """Tell people where their memories go, once, when the embedded store is created."""
        if self.settings.backend != "local" or self.settings.db_path.exists():
            return
        folder = self.settings.db_path.parent
        try:
            folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        except PermissionError:
            raise PermissionDenied(
                f"cannot create {folder} (set MEMCORE_HOME)", field="home"
            ) from None
        except OSError as exc:
            raise Unavailable(f"cannot create {folder} ({exc.strerror})", field="home") from None
        sys.stderr.write(
            f"memcore: first run; your memories are stored in {self.settings.db_path} "
            "(set MEMCORE_HOME to keep them elsewhere)\n"
        )

    def close(self) -> None:
        if self._store is not None:
            store, self._store = self._store, None
            store.close()
