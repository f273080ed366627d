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
Only argparse and json load here: Hermes builds this tree on every start; what runs a
command (``actions``, over ``sessions`` and ``output``) loads when one runs. When the
command line runs a sub-command that embeds, the model starts loading right here, while
Hermes goes on with its own start (see :mod:`memcore_hermes.backend.preload`).
"""

from __future__ import annotations

import argparse
import io
import sys
from functools import partial
from typing import TYPE_CHECKING, NoReturn

if TYPE_CHECKING:
    from memcore.errors import MemcoreError

#: The command Hermes gives this provider's tree (its name).
PROVIDER_COMMAND = "tablestore-mem"
ACTIONS = (
    "add", "search", "list", "get", "forget", "export", "import", "stats", "doctor", "setup",
    "reindex", "migrate-tenant",
)  # fmt: skip


def _usage_error(prog: str, message: str) -> NoReturn:
    """A usage error as every other failure of these commands: ``{"error": ...}`` on stdout,
    one line on stderr, exit 2. argparse printed its usage block and ``hermes tablestore-mem
    list: error: ...``, and no JSON, where a script parses stdout."""
    from memcore.errors import InvalidInput
    from memcore.exit_codes import exit_code_for
    from memcore_hermes.commands.output import print_json

    if isinstance(sys.stderr, io.StringIO):
        # Hermes parses twice, the first time with stderr caught in a StringIO (to see
        # whether a command name was taken as a flag's value): that trial prints nothing.
        raise SystemExit(2)
    action = prog.rsplit(" ", 1)[-1]
    where = "" if action == PROVIDER_COMMAND else f"{action}: "
    exc = InvalidInput(f"{where}{message}", field="command")
    code = int(exit_code_for(exc))
    print_json({"error": {**exc.to_dict(), "exit_code": code}})
    sys.stderr.write(f"tablestore-mem: error: {' '.join(exc.message.split())}\n")
    raise SystemExit(code)


class _Parser(argparse.ArgumentParser):
    """A sub-command's parser whose usage errors are :func:`_usage_error`'s."""

    def error(self, message: str) -> NoReturn:
        _usage_error(self.prog, message)


def register_cli(subparser: argparse.ArgumentParser) -> None:
    """Build the argument tree under ``hermes tablestore-mem``."""
    # Hermes made this parser; its own errors (an unknown sub-command) answer as ours do.
    subparser.error = partial(_usage_error, subparser.prog)  # type: ignore[method-assign]
    commands = subparser.add_subparsers(
        dest="tablestore_mem_action",
        metavar="{" + ",".join(ACTIONS) + "}",
        parser_class=_Parser,
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


def tablestore_mem_command(args: argparse.Namespace) -> None:
    """Run the chosen sub-command; a failure exits with its documented non-zero code."""
    from memcore.errors import InvalidInput, MemcoreError, Unavailable
    from memcore.exit_codes import exit_code_for
    from memcore_hermes.commands.output import print_json, stdout_gone

    action = getattr(args, "tablestore_mem_action", None)
    _warn_elsewhere()
    try:
        from memcore_hermes.commands.actions import HANDLERS  # what runs loads when one runs

        handler = HANDLERS.get(action or "")
        if handler is None:
            raise InvalidInput(f"choose one of: {', '.join(ACTIONS)}", field="command")
        handler(args)
    except BrokenPipeError:  # the reader went away: stop quietly, with memcore's code for it
        stdout_gone()
        raise SystemExit(1) from None
    except MemcoreError as exc:
        exc = _store_advice(exc)
        code = int(exit_code_for(exc))
        message = exc.message
        if exc.field == "stdout" and isinstance(exc, Unavailable):  # nowhere to print it
            stdout_gone()
            message = _lost_after_write(message, action or "", args)
        else:
            print_json({"error": {**exc.to_dict(), "exit_code": code}})
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
    from memcore_hermes.commands.output import print_json

    code = int(ExitCode.INTERRUPTED)
    message = f"interrupted ({detail})" if detail else "interrupted"
    error = {"type": "Interrupted", "code": "interrupted", "message": message}
    print_json({"error": {**error, "retryable": True, "exit_code": code}})
    sys.stderr.write(f"tablestore-mem: {message}\n")
    return code


# Hermes looks the handler up as ``<provider name>_command``; the name has a dash.
globals()["tablestore-mem_command"] = tablestore_mem_command
