"""What a command opens: the provider (for ``add``) or the configured store with the user's
scope (``CommandSession``), after the writes waiting in the spool were delivered."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from memcore_hermes.commands.output import say


def who(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """``--user-id`` and ``--platform``, checked against the configured tenant rule before
    anything opens (:func:`memcore_hermes.session.tenancy.command_session`)."""
    from memcore_hermes.config.home import HermesHome
    from memcore_hermes.session.tenancy import command_session

    user_id, platform = given(args)
    if user_id is not None or platform is not None:
        command_session(user_id, platform, HermesHome().load_config())
    return user_id, platform


def given(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The command's ``--user-id`` and ``--platform`` as given (None where it has neither)."""
    return getattr(args, "user_id", None), getattr(args, "platform", None)


def open_provider(args: argparse.Namespace, *, defer_vectors: bool = False) -> Any:
    """A provider for one command (no background re-embedding: ``reindex`` does that), with
    the model this process started loading early, if any."""
    from memcore_hermes.backend import preload
    from memcore_hermes.session.provider import MemcoreMemoryProvider

    provider = MemcoreMemoryProvider(
        background_reindex=False,
        defer_vectors=defer_vectors,
        preload=preload.current(),
        bounded_start=False,  # this process's exit would end an opening left running
    )
    user_id, platform = who(args)
    provider.initialize(
        "cli",
        platform=platform or "cli",
        agent_context="primary",
        user_id=user_id,
        status_callback=lambda m: sys.stderr.write(f"{m}\n"),
    )
    return provider


def spool_waits(home: Any) -> bool | None:
    """Whether writes wait in the spool, or None when it cannot be opened (a read-only or full
    home): then the command goes on without sending them first, and says so, as a session
    goes on without its spool."""
    from memcore.errors import Unavailable
    from memcore_hermes.outbox.drain import writes_wait

    try:
        return writes_wait(home)
    except Unavailable as exc:
        if exc.field != "spool":
            raise
        say(
            f"tablestore-mem: warning: {exc}; writes waiting in it are not sent first, so this "
            "command may not see them (`hermes tablestore-mem doctor`)"
        )
        return None


class CommandSession:
    """The configured store and the user's scope for one command, without the provider's lane.

    Opening it delivers what waits in the spool first (bounded), so a command after an outage
    sees the writes made during it; the store is closed on exit.
    """

    def __init__(
        self, args: argparse.Namespace, *, writes: bool = False, check: Any = None
    ) -> None:
        self.args = args
        #: Run on the open store before the memory store is looked for: a command the backend
        #: cannot serve is refused as such, not as a missing store.
        self.check = check
        #: Whether the command adds memories: only then (or for writes waiting in the spool,
        #: or a new embedded file's first read) is a missing memory store created. A read of
        #: a deleted or mistyped store says it is missing, naming the close ones, instead of
        #: making it empty (:func:`memcore.store_names.ready_for`, as ``memcore`` does).
        self.writes = writes
        self.store: Any = None
        self.service: Any = None
        self.config: Any = None
        self.drained: dict[str, Any] = {}

    def __enter__(self) -> CommandSession:
        from memcore.config import LOCAL
        from memcore.errors import StoreNotFound
        from memcore.scope import resolve_scope
        from memcore.service import MemoryService
        from memcore.store_names import ready_for, with_close_names
        from memcore_hermes.backend import preload
        from memcore_hermes.backend.open_store import choose_backend, open_backend_store
        from memcore_hermes.config.credentials import access_keys, load_environment
        from memcore_hermes.config.home import HermesHome
        from memcore_hermes.outbox.drain import drain_spool
        from memcore_hermes.session.tenancy import command_session

        home = HermesHome()
        config = home.load_config()
        env = load_environment(home.env_file)
        keys = access_keys(env)
        config, self.store = open_backend_store(
            home,
            config,
            keys,
            progress=say,
            preload=preload.current(),
            environ=env,
        )
        try:
            if self.check is not None:
                self.check(self.store)
            waiting = spool_waits(home)
            name = config.memory_store_name
            try:
                ready_for(
                    self.store,
                    name,
                    writes=self.writes or bool(waiting),
                    auto_create=config.auto_create_store,
                    first_read_creates=choose_backend(config, keys) == LOCAL,
                    description=config.description,
                    extract_instructions=config.extract_instructions,
                    progress=lambda m: say(f"tablestore-mem: {m}"),
                )
            except StoreNotFound as exc:
                raise with_close_names(exc, self.store, name) from None
            if waiting is not None:
                self.drained = drain_spool(home, self.store, config)
            if self.drained.get("waiting"):
                say(
                    "tablestore-mem: writes still wait in the spool (`hermes tablestore-mem "
                    "doctor` says why)"
                )
        except BaseException:
            self.store.close()
            raise
        self.config = config
        scope = resolve_scope(
            command_session(*given(self.args), config),  # the config this session loaded
            app_id=config.app_id,
            tenant_id=config.tenant_id,
        )
        self.service = MemoryService(
            self.store,
            store_name=config.memory_store_name,
            scope=scope,
            top_k=config.top_k,
            enable_rerank=config.enable_rerank,
            store_assistant=config.store_assistant,
        )
        return self

    def __exit__(self, *exc: object) -> None:
        self.store.close()

    @property
    def pattern(self) -> str:
        return str(self.service.profile_pattern)

    def memories(self) -> Any:
        """Every memory of the tenant, page by page."""
        return self.service.every_memory()
