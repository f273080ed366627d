"""``hermes tablestore-mem add|search|doctor|setup|reindex`` (while this provider is selected).

Every command but ``setup`` prints one JSON document; errors are ``{"error": ...}`` with exit
status 1. Only argparse and json load here: Hermes builds this tree on every start. When the
command line runs a sub-command that embeds, the model starts loading right here, while
Hermes goes on with its own start (see :mod:`memcore_hermes.preload`).
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

#: The command Hermes gives this provider's tree (its name).
PROVIDER_COMMAND = "tablestore-mem"


def register_cli(subparser: argparse.ArgumentParser) -> None:
    """Build the argument tree under ``hermes tablestore-mem``."""
    commands = subparser.add_subparsers(
        dest="tablestore_mem_action", metavar="{add,search,doctor,setup,reindex}"
    )

    add = commands.add_parser("add", help="Store a memory for the current user")
    add.add_argument("text", help="The memory text")
    add.add_argument(
        "--metadata",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="A metadata tag (repeatable)",
    )
    add.add_argument("--sync", action="store_true", help="Wait until the backend has stored it")
    add.add_argument("--user-id", default=None, help="The user (tenant) to act for")

    search = commands.add_parser("search", help="Search the current user's memories")
    search.add_argument("query", help="What to look for")
    search.add_argument("--top-k", type=int, default=None, help="How many results (1-50)")
    search.add_argument("--user-id", default=None, help="The user (tenant) to act for")

    doctor = commands.add_parser("doctor", help="Read-only diagnostics (secrets redacted)")
    doctor.add_argument("--user-id", default=None, help="The user (tenant) to inspect")

    setup = commands.add_parser(
        "setup", help="Choose the backend and its settings (asks on a terminal, else flags)"
    )
    setup.add_argument("--backend", choices=["local", "tablestore"], default=None)
    setup.add_argument("--instance-name", default=None, help="TableStore instance")
    setup.add_argument("--endpoint", default=None, help="TableStore instance endpoint")
    setup.add_argument("--region", default=None, help="TableStore region")
    setup.add_argument("--tenant-id", default=None, help="A fixed tenant (blank: the user id)")

    commands.add_parser("reindex", help="Embed memories lacking a vector from the current embedder")
    if loads_model(sys.argv[1:]):
        from memcore_hermes import preload

        preload.start()


def loads_model(argv: list[str]) -> bool:
    """Whether ``argv`` runs one of our sub-commands that embeds (never for ``--help``)."""
    if PROVIDER_COMMAND not in argv:
        return False
    rest = argv[argv.index(PROVIDER_COMMAND) + 1 :]
    if not rest or "-h" in rest or "--help" in rest:
        return False
    return rest[0] in ("search", "reindex") or (rest[0] == "add" and "--sync" in rest[1:])


def _say(message: str) -> None:
    """Progress on stderr, so stdout stays one JSON document."""
    sys.stderr.write(f"{message}\n")


def _print(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False, indent=2, default=str) + "\n")
    sys.stdout.flush()


def _parse_metadata(pairs: list[str]) -> dict[str, str]:
    from memcore.errors import InvalidInput

    out: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise InvalidInput(f"--metadata expects KEY=VALUE, got {pair!r}", field="metadata")
        out[key] = value
    return out


def tablestore_mem_command(args: argparse.Namespace) -> None:
    """Run the chosen sub-command; exits with status 1 after printing an error."""
    from memcore.errors import MemcoreError

    action = getattr(args, "tablestore_mem_action", None)
    try:
        if action == "doctor":
            result = _doctor(args)
            _print(result)
            if not result.get("ok"):
                raise SystemExit(1)
            return
        if action == "add":
            _print(_add(args))
            return
        if action == "search":
            _print(_search(args))
            return
        if action == "setup":
            _setup(args)
            return
        if action == "reindex":
            _print(_reindex(args))
            return
        _print(
            {
                "error": {
                    "code": "usage",
                    "message": "choose one of: add, search, doctor, setup, reindex",
                }
            }
        )
        raise SystemExit(2)
    except MemcoreError as exc:
        _print({"error": exc.to_dict()})
        raise SystemExit(1) from None
    finally:
        from memcore_hermes.preload import finish

        finish()  # an early model load must not be cut short by the exit


def _doctor(args: argparse.Namespace) -> dict[str, Any]:
    from memcore_hermes.doctor import run_doctor
    from memcore_hermes.home import HermesHome

    def progress(message: str) -> None:
        sys.stderr.write(message + "\n")

    return run_doctor(HermesHome(), user_id=args.user_id, progress=progress)


def _open(args: argparse.Namespace, *, defer_vectors: bool = False) -> Any:
    """A provider for one command (no background re-embedding: ``reindex`` does that), with
    the model this process started loading early, if any."""
    from memcore_hermes import preload
    from memcore_hermes.provider import TablestoreMemProvider

    provider = TablestoreMemProvider(
        background_reindex=False, defer_vectors=defer_vectors, preload=preload.current()
    )
    provider.initialize(
        "cli",
        platform="cli",
        agent_context="primary",
        user_id=getattr(args, "user_id", None),
        status_callback=lambda m: sys.stderr.write(f"{m}\n"),
    )
    return provider


def _add(args: argparse.Namespace) -> dict[str, Any]:
    from memcore.errors import MemcoreError

    # Without --sync the vector is left to the next search: this process loads no model.
    provider = _open(args, defer_vectors=not args.sync)
    runtime = provider.runtime
    try:
        metadata = _parse_metadata(args.metadata)
        if args.sync:
            receipt = runtime.remember_now(args.text, metadata=metadata)
            return {
                "status": receipt.status,
                "memory_ids": list(receipt.memory_ids),
                "task_id": receipt.task_id,
                "scope": str(runtime.scope),
            }
        key = runtime.remember(args.text, metadata=metadata)
        problem: MemcoreError | None
        try:
            runtime.handle.ready()  # an unreachable endpoint answers in seconds, not a timeout
        except MemcoreError as exc:
            delivered, problem = False, exc
        else:
            delivered, problem = runtime.flush(runtime.config.timeout), None
        ids = runtime.deliverer.receipts.get(key)
        out: dict[str, Any] = {
            "status": "stored" if delivered or ids else "queued",
            "memory_ids": list(ids or ()),
            "scope": str(runtime.scope),
        }
        if not delivered and not ids:
            if problem is not None:
                out["error"] = problem.to_dict()
            out["note"] = (
                "kept in the spool; it is delivered when the backend answers (the next start "
                "retries) and gets its memory id then; --sync waits for it"
            )
        elif not ids:
            out["note"] = "the backend assigns the memory id asynchronously; --sync waits for it"
        elif getattr(runtime.handle.store, "defer_vectors", False):
            out["note"] = (
                "found by its words now; its vector (for search by meaning) is computed by the "
                "next search or the agent's background re-embedding; --sync embeds it at once"
            )
        return out
    finally:
        provider.shutdown()


def _search(args: argparse.Namespace) -> dict[str, Any]:
    """A read: the configured store and scope only, without the spool and its delivery lane
    that a provider starts (those are for writes; the next ``add`` or agent start replays)."""
    from memcore.scope import SessionContext, resolve_scope
    from memcore.service import MemoryService
    from memcore_hermes import preload
    from memcore_hermes.backends import open_backend_store
    from memcore_hermes.credentials import access_keys, load_environment
    from memcore_hermes.home import HermesHome
    from memcore_hermes.tools import hit_json

    home = HermesHome()
    config = home.load_config()
    env = load_environment(home.env_file)
    config, store = open_backend_store(
        home,
        config,
        access_keys(env),
        progress=_say,
        preload=preload.current(),
        environ=env,
    )
    try:
        store.ensure_store(
            config.memory_store_name,
            description=config.description,
            create=config.auto_create_store,
            extract_instructions=config.extract_instructions,
            progress=lambda m: _say(f"tablestore-mem: {m}"),
        )
        scope = resolve_scope(
            SessionContext(user_id=args.user_id, session_id="cli"),
            app_id=config.app_id,
            tenant_id=config.tenant_id,
        )
        service = MemoryService(
            store,
            store_name=config.memory_store_name,
            scope=scope,
            top_k=config.top_k,
            enable_rerank=config.enable_rerank,
        )
        hits = service.search(args.query, top_k=args.top_k)
        return {
            "scope": str(service.search_pattern),
            "results": [hit_json(h) for h in hits],
        }
    finally:
        store.close()


def _setup(args: argparse.Namespace) -> None:
    from memcore_hermes.home import HermesHome
    from memcore_hermes.setup import Answers, run_setup

    answers = Answers(
        backend=args.backend,
        instance_name=args.instance_name,
        endpoint=args.endpoint,
        region=args.region,
        tenant_id=args.tenant_id,
    )
    readiness = run_setup(HermesHome(), answers=answers)
    if readiness is None or not readiness.available:
        raise SystemExit(1)


def _reindex(args: argparse.Namespace) -> dict[str, Any]:
    from memcore_hermes.reindex import missing_vectors, reindex

    provider = _open(args)
    runtime = provider.runtime
    try:
        store = runtime.handle.ready()
        name = runtime.store_name
        total = missing_vectors(store, name) or 0
        with _progress_bar("re-embedding", total) as step:
            done = reindex(store, name, progress=step)
        return {"embedded": done, "model": store.embedder.name}
    finally:
        provider.shutdown()


class _progress_bar:
    """A rich progress bar on stderr (Hermes ships rich); plain lines when not a terminal."""

    def __init__(self, label: str, total: int) -> None:
        self.label, self.total = label, total
        self._bar: Any = None

    def __enter__(self) -> Any:
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import Progress

            self._bar = Progress(console=Console(stderr=True))
            self._bar.start()
            task = self._bar.add_task(self.label, total=self.total)
            return lambda done: self._bar.update(task, completed=done)
        return lambda done: sys.stderr.write(f"{self.label}: {done}/{self.total}\n")

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()


# Hermes looks the handler up as ``<provider name>_command``; the name has a dash.
globals()["tablestore-mem_command"] = tablestore_mem_command
