"""``hermes tablestore-mem`` (while this provider is selected): add, search, list, get, forget,
export, import, stats, doctor, setup, reindex, migrate-tenant.

Every command but ``setup`` (and ``export`` to stdout, JSON Lines) prints one JSON document.
A failure prints ``{"error": ...}`` there, one line ``tablestore-mem: error: ...`` on stderr,
and exits with the ``memcore`` CLI's codes (:mod:`memcore.exit_codes`): 1 unexpected, 2 usage,
invalid input or configuration, 3 not found, 4 permission or auth, 5 backend unavailable or
throttled (an ``add`` then stays in the spool), 130 interrupted (Ctrl-C: one line
``tablestore-mem: interrupted``, naming what was undone, e.g. the memories an import had
added). Hermes exits with a handler's ``SystemExit``.
Commands that use the backend first deliver what waits in the spool (bounded in time).
Only argparse and json load here: Hermes builds this tree on every start. When the
command line runs a sub-command that embeds, the model starts loading right here, while
Hermes goes on with its own start (see :mod:`memcore_hermes.backend.preload`).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcore.errors import MemcoreError

#: The command Hermes gives this provider's tree (its name).
PROVIDER_COMMAND = "tablestore-mem"
ACTIONS = (
    "add", "search", "list", "get", "forget", "export", "import", "stats", "doctor", "setup",
    "reindex", "migrate-tenant",
)  # fmt: skip


def register_cli(subparser: argparse.ArgumentParser) -> None:
    """Build the argument tree under ``hermes tablestore-mem``."""
    commands = subparser.add_subparsers(
        dest="tablestore_mem_action", metavar="{" + ",".join(ACTIONS) + "}"
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
    _user_options(add)

    search = commands.add_parser("search", help="Search the current user's memories")
    search.add_argument("query", help="What to look for")
    search.add_argument("--top-k", type=int, default=None, help="How many results (1-50)")
    _user_options(search)
    search.add_argument(
        "--at",
        default=None,
        metavar="ISO8601",
        help="When the question is asked (default now; UTC without an offset): time words "
        "such as 'last month' or '3 days ago' are read from it",
    )

    listing = commands.add_parser("list", help="List the user's memories, a page at a time")
    listing.add_argument("--limit", type=int, default=20, help="Items per page (1 to 100)")
    listing.add_argument("--all", action="store_true", help="Every page")
    listing.add_argument("--next-token", default=None, help="Continue from a previous page")
    _user_options(listing)

    get = commands.add_parser("get", help="Show one memory by id")
    get.add_argument("memory_id", help="The memory id")
    _user_options(get)

    forget = commands.add_parser("forget", help="Delete memories by id (asks first on a terminal)")
    forget.add_argument("memory_ids", nargs="+", metavar="ID", help="Memory ids")
    forget.add_argument("--yes", "-y", action="store_true", help="Do not ask for confirmation")
    _user_options(forget)

    export = commands.add_parser(
        "export", help="The user's memories as JSON Lines (memcore's format)"
    )
    export.add_argument(
        "--out", "-o", default=None, help="Write here (mode 0600), not stdout ('-': stdout)"
    )
    _user_options(export)

    imp = commands.add_parser("import", help="Import a file written by an export (either CLI)")
    imp.add_argument("file", help="JSON Lines ('-' for stdin)")
    _user_options(imp)

    stats = commands.add_parser("stats", help="How many memories, by agent, and the spool")
    _user_options(stats)

    doctor = commands.add_parser("doctor", help="Read-only diagnostics (secrets redacted)")
    _user_options(doctor, "The user to inspect")

    setup = commands.add_parser(
        "setup", help="Choose the backend and its settings (asks on a terminal, else flags)"
    )
    setup.add_argument("--backend", choices=["local", "tablestore"], default=None)
    setup.add_argument("--instance-name", default=None, help="TableStore instance")
    setup.add_argument("--endpoint", default=None, help="TableStore instance endpoint")
    setup.add_argument("--region", default=None, help="TableStore region")
    setup.add_argument("--tenant-id", default=None, help="A fixed tenant (blank: each user's own)")
    setup.add_argument(
        "--tenant-scope",
        choices=["platform", "user"],
        default=None,
        help="Each user's tenant: per platform (telegram:12345, the default) or the user id "
        "alone, shared across platforms",
    )

    commands.add_parser("reindex", help="Embed memories lacking a vector from the current embedder")
    migrate = commands.add_parser(
        "migrate-tenant",
        help="Move a user's memories (and, on the embedded store, their message log) from the "
        "tenant of the user id alone (0.1.0) to the tenants of the platforms they were said on",
    )
    migrate.add_argument("--user-id", dest="legacy_user", required=True, help="The user id")
    migrate.add_argument(
        "--platform",
        dest="fallback_platform",
        default=None,
        help="Where memories go whose session names no platform (default: they stay)",
    )
    migrate.add_argument(
        "--user-id-alt",
        dest="alt_users",
        action="append",
        default=[],
        metavar="PLATFORM=ID",
        help="The id that names the user's tenant on PLATFORM (Signal's UUID, Feishu's union_id, "
        "Google Chat's users/...): memories said there go to that tenant; repeat for more",
    )
    migrate.add_argument("--dry-run", action="store_true", help="Only say what would move")
    if loads_model(sys.argv[1:]):
        from memcore_hermes.backend import preload

        preload.start()


def _user_options(parser: argparse.ArgumentParser, what: str = "The user to act for") -> None:
    parser.add_argument("--user-id", default=None, help=f"{what} (default: no user)")
    parser.add_argument(
        "--platform",
        default=None,
        help="The chat platform of --user-id (telegram, discord, ...): tenants are per platform",
    )


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
    from memcore.transfer import escape_json  # stored text may hold a terminal's controls

    document = json.dumps(data, ensure_ascii=False, indent=2, default=str)
    _write(escape_json(document) + "\n")


def _write(text: str) -> None:
    """Write ``text`` to stdout; a full disk or a closed stdout is
    :class:`~memcore.errors.Unavailable` (exit 5, as for ``memcore``), not a traceback."""
    from memcore.errors import Unavailable

    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise  # a reader that stopped early (``| head``): quiet, as everywhere
    except (OSError, ValueError, AttributeError) as exc:  # ValueError: closed; None: ``>&-``
        why = (getattr(exc, "strerror", None) or "stdout is closed").lower()
        raise Unavailable(
            f"cannot write the output: {why}", field="stdout", retryable=False
        ) from None


def _stdout_gone() -> None:
    """Point stdout at /dev/null, so that the interpreter's last flush of what could not be
    written does not fail again with a traceback."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):  # closed, or no descriptor (a test's stream)
        pass


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
    """Run the chosen sub-command; a failure exits with its documented non-zero code."""
    from memcore.errors import InvalidInput, MemcoreError, Unavailable
    from memcore.exit_codes import exit_code_for

    action = getattr(args, "tablestore_mem_action", None)
    _warn_elsewhere()
    try:
        handler = _HANDLERS.get(action or "")
        if handler is None:
            raise InvalidInput(f"choose one of: {', '.join(ACTIONS)}", field="command")
        handler(args)
    except BrokenPipeError:  # the reader went away: stop quietly, with memcore's code for it
        _stdout_gone()
        raise SystemExit(1) from None
    except MemcoreError as exc:
        exc = _store_advice(exc)
        code = int(exit_code_for(exc))
        message = exc.message
        if exc.field == "stdout" and isinstance(exc, Unavailable):  # nowhere to print it
            _stdout_gone()
            message = _lost_after_write(message, action or "", args)
        else:
            _print({"error": {**exc.to_dict(), "exit_code": code}})
        sys.stderr.write(f"tablestore-mem: error: {' '.join(message.split())}\n")
        raise SystemExit(code) from None
    except KeyboardInterrupt as exc:
        raise SystemExit(_interrupted(str(exc))) from None
    finally:
        from memcore_hermes.backend.preload import finish

        finish()  # an early model load must not be cut short by the exit


def _warn_elsewhere() -> None:
    """Say where the plugin's files are when a quoted ``~`` in ``HERMES_HOME`` left them
    in another folder than the one Hermes (and so this command) uses."""
    from memcore_hermes.config.home import HermesHome

    warning = HermesHome().elsewhere_warning()
    if warning is not None:
        sys.stderr.write(f"tablestore-mem: warning: {warning}\n")


def _store_advice(exc: MemcoreError) -> MemcoreError:
    """A missing store's advice pointed at this Hermes home (see ``HermesHome.store_advice``)."""
    from memcore_hermes.config.home import HermesHome

    try:
        return HermesHome().store_advice(exc)
    except MemcoreError:  # no usable home: the error as it was
        return exc


#: Sub-commands that have made their change before they print their answer.
_WRITES = ("add", "forget", "import", "reindex", "migrate-tenant")


def _lost_after_write(message: str, action: str, args: argparse.Namespace) -> str:
    """The line for an answer that could not be written (a full disk): after a write, it
    says the write was done, lest the command be run again as if it had failed."""
    if action not in _WRITES or getattr(args, "dry_run", False):
        return message
    look = "doctor" if action == "reindex" else "list"
    return (
        f"{message}; hermes tablestore-mem {action} was done before its answer was lost, so "
        f"do not run it again: see what it changed with hermes tablestore-mem {look}"
    )


def _interrupted(detail: str) -> int:
    """Report Ctrl-C as a failure is reported (``detail``: what was undone, such as the
    memories an import had added); the exit code, 130."""
    from memcore.exit_codes import ExitCode

    code = int(ExitCode.INTERRUPTED)
    message = f"interrupted ({detail})" if detail else "interrupted"
    error = {"type": "Interrupted", "code": "interrupted", "message": message}
    _print({"error": {**error, "retryable": True, "exit_code": code}})
    sys.stderr.write(f"tablestore-mem: {message}\n")
    return code


def _run_doctor(args: argparse.Namespace) -> None:
    result = _doctor(args)
    _print(result)
    if not result.get("ok"):
        raise SystemExit(1)


def _run_add(args: argparse.Namespace) -> None:
    from memcore.exit_codes import exit_code_for

    out, problem = _add(args)
    _print(out)
    if problem is not None:  # the write waits in the spool; the backend did not take it
        sys.stderr.write(f"tablestore-mem: error: {' '.join(problem.message.split())}\n")
        raise SystemExit(int(exit_code_for(problem)))


def _doctor(args: argparse.Namespace) -> dict[str, Any]:
    from memcore_hermes.commands.doctor import run_doctor
    from memcore_hermes.config.home import HermesHome

    def progress(message: str) -> None:
        sys.stderr.write(message + "\n")

    user_id, platform = _who(args)
    return run_doctor(HermesHome(), user_id=user_id, platform=platform, progress=progress)


def _who(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """``--user-id`` and ``--platform``, checked against the configured tenant rule before
    anything opens (:func:`memcore_hermes.session.tenancy.command_session`)."""
    from memcore_hermes.config.home import HermesHome
    from memcore_hermes.session.tenancy import command_session

    user_id, platform = _given(args)
    if user_id is not None or platform is not None:
        command_session(user_id, platform, HermesHome().load_config())
    return user_id, platform


def _given(args: argparse.Namespace) -> tuple[str | None, str | None]:
    """The command's ``--user-id`` and ``--platform`` as given (None where it has neither)."""
    return getattr(args, "user_id", None), getattr(args, "platform", None)


def _open(args: argparse.Namespace, *, defer_vectors: bool = False) -> Any:
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
    user_id, platform = _who(args)
    provider.initialize(
        "cli",
        platform=platform or "cli",
        agent_context="primary",
        user_id=user_id,
        status_callback=lambda m: sys.stderr.write(f"{m}\n"),
    )
    return provider


def _add(args: argparse.Namespace) -> tuple[dict[str, Any], Any]:
    """The answer, and the error that kept the write from the backend (None when it landed)."""
    from memcore.errors import MemcoreError, Unavailable

    # Without --sync the vector is left to the next search: this process loads no model.
    provider = _open(args, defer_vectors=not args.sync)
    runtime = provider.runtime
    try:
        metadata = _parse_metadata(args.metadata)
        if args.sync:
            receipt = runtime.remember_now(args.text, metadata=metadata)
            synced = {
                "status": receipt.status,
                "memory_ids": list(receipt.memory_ids),
                "task_id": receipt.task_id,
                "scope": str(runtime.scope),
            }
            return synced, None
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
            problem = (
                problem
                or runtime.deliverer.last_error
                or Unavailable("the backend did not take the write in time", field="backend")
            )
            out["error"] = problem.to_dict()
            out["note"] = (
                "kept in the spool; the next command or agent start delivers it once the "
                "backend takes it (fix the cause above first) and it gets its memory id then"
            )
        elif not ids:
            out["note"] = "the backend assigns the memory id asynchronously; --sync waits for it"
        elif getattr(runtime.handle.store, "defer_vectors", False):
            out["note"] = (
                "found by its words now; its vector (for search by meaning) is computed by the "
                "next search or the agent's background re-embedding; --sync embeds it at once"
            )
        return out, (None if delivered or ids else problem)
    finally:
        provider.shutdown()


def _writes_wait(home: Any) -> bool | None:
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
        _say(
            f"tablestore-mem: warning: {exc}; writes waiting in it are not sent first, so this "
            "command may not see them (`hermes tablestore-mem doctor`)"
        )
        return None


class _Session:
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

    def __enter__(self) -> _Session:
        from memcore.errors import StoreNotFound
        from memcore.scope import resolve_scope
        from memcore.service import MemoryService
        from memcore.store_names import ready_for, with_close_names
        from memcore_hermes.backend import preload
        from memcore_hermes.backend.open_store import LOCAL, choose_backend, open_backend_store
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
            progress=_say,
            preload=preload.current(),
            environ=env,
        )
        try:
            if self.check is not None:
                self.check(self.store)
            waiting = _writes_wait(home)
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
                    progress=lambda m: _say(f"tablestore-mem: {m}"),
                )
            except StoreNotFound as exc:
                raise with_close_names(exc, self.store, name) from None
            if waiting is not None:
                self.drained = drain_spool(home, self.store, config)
            if self.drained.get("waiting"):
                _say(
                    "tablestore-mem: writes still wait in the spool (`hermes tablestore-mem "
                    "doctor` says why)"
                )
        except BaseException:
            self.store.close()
            raise
        self.config = config
        scope = resolve_scope(
            command_session(*_given(self.args), config),  # the config this session loaded
            app_id=config.app_id,
            tenant_id=config.tenant_id,
        )
        self.service = MemoryService(
            self.store,
            store_name=config.memory_store_name,
            scope=scope,
            top_k=config.top_k,
            enable_rerank=config.enable_rerank,
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


def _run_search(args: argparse.Namespace) -> None:
    from memcore import limits
    from memcore_hermes.session.tools import hit_json

    asked = limits.parse_reference_time(args.at, field="at", label="--at")
    with _Session(args) as session:
        hits = session.service.search(args.query, top_k=args.top_k, reference_time=asked)
        _print(
            {"scope": str(session.service.search_pattern), "results": [hit_json(h) for h in hits]}
        )


def _run_list(args: argparse.Namespace) -> None:
    from memcore import limits
    from memcore.transfer import memory_record

    limits.check_limit(args.limit)
    with _Session(args) as session:
        if args.all:
            items, token = [memory_record(m) for m in session.memories()], None
        else:
            page = session.service.profile(limit=args.limit, next_token=args.next_token)
            items, token = [memory_record(m) for m in page.items], page.next_token
        _print({"scope": session.pattern, "items": items, "next_token": token})


def _run_get(args: argparse.Namespace) -> None:
    from memcore.transfer import memory_record

    with _Session(args) as session:
        _print(memory_record(session.service.get(args.memory_id)))


def _run_forget(args: argparse.Namespace) -> None:
    from memcore.errors import InvalidInput, not_confirmed
    from memcore.wording import counted

    ids = list(dict.fromkeys(args.memory_ids))
    with _Session(args) as session:
        found = [session.service.get(i) for i in ids]  # every id checked before any delete
        if not args.yes:
            what = counted(len(found), "memory")
            if not sys.stdin.isatty():
                raise InvalidInput(
                    f"not deleting {what} without confirmation: stdin is not a terminal; "
                    "pass --yes",
                    field="yes",
                )
            preview = "; ".join(m.text[:60] for m in found[:3])
            # Asked on stderr, as progress is: stdout stays the one JSON document.
            sys.stderr.write(f"Delete {what} ({preview})? [y/N] ")
            sys.stderr.flush()
            answer = sys.stdin.readline()
            if answer.strip().lower() not in ("y", "yes"):
                raise not_confirmed()
        forgotten = []
        for memory in found:
            scope = session.service.forget(memory.id)
            forgotten.append({"id": memory.id, "scope": scope.as_dict(), "deleted": True})
        _print({"forgotten": forgotten})


def _run_export(args: argparse.Namespace) -> None:
    from memcore.errors import InvalidInput
    from memcore.transfer import export_lines
    from memcore.wording import counted
    from memcore_hermes.config.home import home_expanded
    from memcore_sqlite.storage.file_modes import make_home
    from memcore_sqlite.storage.out_file import open_out

    to_stdout = args.out is None or args.out == "-"  # as import's '-' is stdin
    if not to_stdout and not args.out.strip():  # else ".": "cannot write . (a folder)"
        raise InvalidInput(
            "--out is empty (an unset shell variable?); give a file, or '-' (or no --out) "
            "for stdout",
            field="out",
        )
    target = None if to_stdout else home_expanded(args.out)
    if not to_stdout and target is None:  # "~nobody/x": refused before the store opens
        raise InvalidInput(
            f"cannot write {args.out} (a home folder this system does not know)", field="out"
        )
    counts: dict[str, int] = {}
    with _Session(args) as session:
        # The memories, then the message log where the store keeps one (the turns that
        # recall_neighbours shows), so an import restores both.
        lines = list(export_lines(session.service, counts))
    memories, messages = counts["memories"], counts["messages"]
    if target is None:
        _write("".join(lines))
        _say(
            f"exported {counted(memories, 'memory')}"
            + (f" and {counted(messages, 'message')}" if messages else "")
        )
        return
    from pathlib import Path

    # As `memcore export --out`: a FIFO or device written through, a symlink's target replaced.
    if not target.parent.exists():
        make_home(target.parent, advice="choose another --out")
    with open_out(Path(args.out)) as fh:
        fh.write("".join(lines))
    _print({"exported": memories, "messages": messages, "out": str(target)})


def _run_import(args: argparse.Namespace) -> None:
    from memcore.errors import InvalidInput, PermissionDenied
    from memcore.transfer import split_lines
    from memcore_hermes.commands.importing import import_lines
    from memcore_hermes.config.home import home_expanded

    if not args.file.strip():  # else " does not exist": a file the user never named
        raise InvalidInput(
            "the file name is empty (an unset shell variable?); give a file, or '-' for stdin",
            field="file",
        )
    # '~' is the home folder, as for export's --out (and memcore import): a file written
    # with one path is read back with it.
    path = None if args.file == "-" else home_expanded(args.file)
    if args.file != "-" and path is None:  # "~nobody/x": no such user's home
        raise InvalidInput(
            f"{args.file} names a home folder this system does not know", field="file"
        )
    try:
        if path is None:
            # A byte order mark, as a file's is (utf-8-sig): not part of the first record.
            raw_lines = split_lines(sys.stdin.read().removeprefix("\ufeff"))
        else:
            with open(path, encoding="utf-8-sig") as fh:
                raw_lines = split_lines(fh.read())
    except FileNotFoundError:
        raise InvalidInput(f"{args.file} does not exist", field="file") from None
    except PermissionError:  # exit 4, the code for a permission: not a malformed file
        raise PermissionDenied(
            f"cannot read {args.file} (permission denied)", field="file"
        ) from None
    except (OSError, UnicodeDecodeError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else "not UTF-8 text"
        raise InvalidInput(f"cannot read {args.file} ({reason})", field="file") from None
    with _Session(args, writes=True) as session:
        _print(import_lines(session.service, raw_lines, session.memories()))


def _run_stats(args: argparse.Namespace) -> None:
    from memcore_hermes.commands.doctor import spool_report
    from memcore_hermes.config.home import HermesHome

    with _Session(args) as session:
        by_agent: dict[str, int] = {}
        total, oldest, newest = 0, None, None
        for memory in session.memories():
            total += 1
            by_agent[memory.scope.agent_id] = by_agent.get(memory.scope.agent_id, 0) + 1
            stamp = memory.created_at
            if stamp is not None:
                oldest = stamp if oldest is None else min(oldest, stamp)
                newest = stamp if newest is None else max(newest, stamp)
        spool = spool_report(HermesHome())
        _print(
            {
                "scope": session.pattern,
                "memories": total,
                "by_agent": by_agent,
                "oldest_created_at": oldest,
                "newest_created_at": newest,
                "spool": {k: spool.get(k) for k in ("depth", "last_error", "dead_letters")},
            }
        )


def _run_reindex(args: argparse.Namespace) -> None:
    _print(_reindex(args))


def _run_migrate(args: argparse.Namespace) -> None:
    from memcore.errors import InvalidInput
    from memcore.scope import resolve_scope
    from memcore.service import MemoryService
    from memcore_hermes.commands.migrating import migrate_tenant
    from memcore_hermes.session.tenancy import per_platform

    with _Session(args) as session:
        config = session.config
        if not per_platform(config):
            raise InvalidInput(
                "nothing to move: tenants are not per platform here (tenant_scope: user, or a "
                "fixed tenant_id)",
                field="tenant_scope",
            )

        def open_service(context: Any) -> MemoryService:
            scope = resolve_scope(context, app_id=config.app_id)
            return MemoryService(session.store, store_name=config.memory_store_name, scope=scope)

        _print(
            migrate_tenant(
                open_service,
                args.legacy_user,
                platform=args.fallback_platform,
                alts=_alternate_ids(args.alt_users),
                dry_run=args.dry_run,
            )
        )


def _alternate_ids(given: list[str]) -> dict[str, str]:
    """``--user-id-alt PLATFORM=ID`` options as a mapping; one platform given twice, or a
    value without ``=``, is refused."""
    from memcore.errors import InvalidInput

    alts: dict[str, str] = {}
    for value in given:
        platform, sep, alt = value.partition("=")
        if not sep:
            raise InvalidInput(
                f"--user-id-alt takes PLATFORM=ID (signal=8c1f...), not {value!r}",
                field="user_id_alt",
            )
        if alts.setdefault(platform, alt) != alt:
            raise InvalidInput(
                f"--user-id-alt gives {platform!r} two ids; give one", field="user_id_alt"
            )
    return alts


def _setup(args: argparse.Namespace) -> None:
    from memcore_hermes.backend.setup import Answers, run_setup
    from memcore_hermes.config.home import HermesHome

    answers = Answers(
        backend=args.backend,
        instance_name=args.instance_name,
        endpoint=args.endpoint,
        region=args.region,
        tenant_id=args.tenant_id,
        tenant_scope=args.tenant_scope,
    )
    readiness = run_setup(HermesHome(), answers=answers)
    if readiness is None:  # cancelled: nothing saved
        raise SystemExit(1)
    if not readiness.available:  # saved, but unusable as it stands: a configuration error
        from memcore.exit_codes import ExitCode

        raise SystemExit(int(ExitCode.USAGE))


def _reindex(args: argparse.Namespace) -> dict[str, Any]:
    from memcore_hermes.backend.reindex import check_reindexable, missing_vectors, reindex

    # A read of the store, not a session: a mistyped store is refused, not made empty.
    with _Session(args, check=check_reindexable) as session:
        store, name = session.store, session.config.memory_store_name
        total = missing_vectors(store, name) or 0
        with _progress_bar("re-embedding", total) as step:
            done = reindex(store, name, progress=step)
        return {"embedded": done, "model": store.embedder.name}


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


_HANDLERS = {
    "add": _run_add,
    "search": _run_search,
    "list": _run_list,
    "get": _run_get,
    "forget": _run_forget,
    "export": _run_export,
    "import": _run_import,
    "stats": _run_stats,
    "doctor": _run_doctor,
    "setup": lambda args: _setup(args),
    "reindex": _run_reindex,
    "migrate-tenant": _run_migrate,
}

# Hermes looks the handler up as ``<provider name>_command``; the name has a dash.
globals()["tablestore-mem_command"] = tablestore_mem_command
