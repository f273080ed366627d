"""The root command group: turns every failure into one stderr line and a distinct exit code.

Errors are caught here, once, rather than in each command; ``--debug`` adds the traceback.
Usage errors from the parser are shortened to one line too, with a pointer to ``--help``
(with ``--json`` before the command, the same JSON error object as every other error).
"""

from __future__ import annotations

import json
import os
import sys
import traceback
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import typer
from typer._click.core import Context as ClickContext
from typer._click.exceptions import ClickException, NoArgsIsHelpError, NoSuchOption, UsageError
from typer.core import TyperGroup

from memcore_cli.output.stderr import ForgivingStderr
from memcore_cli.output.stdout import GuardedStdout, lost
from memcore_cli.output.visible import json_safe, visible
from memcore_cli.parsing.words import COMMAND_ARGS

if TYPE_CHECKING:  # the codes live in the core, which ``--help`` does not import
    from memcore_cli.output.exit_codes import ExitCode

#: ``ctx.meta`` key: the root options ask for JSON (read before any option is processed, so
#: that the eager ``--version`` knows it).
WANTS_JSON = "memcore.wants_json"


def _one_line(text: str) -> str:
    """One line for the terminal: the value a message quotes may hold control characters."""
    return visible(" ".join(str(text).split()))


def report_error(exc: BaseException, *, as_json: bool, debug: bool) -> ExitCode:
    """Write the error to stderr (one line, or JSON with ``--json``) and return its exit code."""
    from memcore.errors import MemcoreError
    from memcore_cli.output.exit_codes import exit_code_for

    code = exit_code_for(exc)
    if debug:
        traceback.print_exception(type(exc), exc, exc.__traceback__, file=sys.stderr)
    if isinstance(exc, MemcoreError):
        payload: dict[str, object] = exc.to_dict()
        message = exc.message
    else:
        payload = {"type": type(exc).__name__, "code": "unexpected", "message": str(exc)}
        message = f"unexpected {type(exc).__name__}: {exc}"
        if not debug:
            message += " (run with --debug for details)"
    if as_json:
        _write_json_error(payload, int(code))
    else:
        sys.stderr.write(f"memcore: error: {_one_line(message)}\n")
    sys.stderr.flush()
    return code


def _write_json_error(payload: dict[str, object], code: int) -> None:
    payload["exit_code"] = code
    sys.stderr.write(json_safe(json.dumps({"error": payload}, ensure_ascii=False)) + "\n")


def _reads_as_text(exc: NoSuchOption) -> bool:
    """True when the unknown "option" looks like the start of a text ("-5 degrees", "- milk"),
    not a mistyped option name (``--limit``)."""
    name = exc.option_name
    return len(name) > 1 and (name[1].isdigit() or name[1].isspace())


def _takes_text(ctx: ClickContext) -> bool:
    """True when the command takes a positional argument (a text, a query, an id)."""
    return any(p.param_type_name == "argument" for p in ctx.command.params)


def report_parser_error(exc: ClickException, *, as_json: bool) -> int:
    """Write an error of the parser (an unknown command or option, a missing argument, a value
    of the wrong type) like any other: one line, or with ``--json`` the JSON error object, a
    usage error being ``invalid_input`` (exit 2) as the commands' own checks report it."""
    message = exc.format_message()
    if isinstance(exc, UsageError) and exc.ctx is not None:
        message += f" (see '{exc.ctx.command_path} --help')"
        if isinstance(exc, NoSuchOption) and _reads_as_text(exc) and _takes_text(exc.ctx):
            # `memcore search "-5 degrees"`: the text reads as options; say how to give it.
            message += (
                f"; a text that starts with '-' goes after '--': {exc.ctx.command_path} -- TEXT"
            )
    if not as_json:
        sys.stderr.write(f"memcore: error: {_one_line(message)}\n")
    elif isinstance(exc, UsageError):
        from memcore.errors import InvalidInput

        # The parameter's name when the parser knows it (``limit`` for ``--limit abc``).
        field = getattr(getattr(exc, "param", None), "name", None)
        _write_json_error(InvalidInput(message, field=field).to_dict(), exc.exit_code)
    else:
        payload: dict[str, object] = {"type": type(exc).__name__, "code": "unexpected"}
        _write_json_error({**payload, "message": message, "retryable": False}, exc.exit_code)
    sys.stderr.flush()
    return exc.exit_code


def _stdout_gone() -> int:
    """Point stdout at /dev/null, so that the interpreter's final flush of what could not be
    written cannot fail again (with a traceback), and return the exit code for it."""
    from memcore_cli.output.exit_codes import ExitCode

    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):  # no file descriptor (a test's in-memory stream)
        pass
    return int(ExitCode.UNEXPECTED)


#: Commands that change memories or settings before they print, and where to look at what
#: they changed: when their answer cannot be written, the change has still been made.
WRITES = {
    "add": "memcore list",
    "update": "memcore get ID",
    "forget": "memcore list",
    "import": "memcore list",
    "reindex": "memcore doctor",
    "dream create": "memcore dream list",
    "dream apply": "memcore dream actions TASK_ID",
    "dream undo": "memcore dream actions TASK_ID",
    "dream cancel": "memcore dream list",
    "stores create": "memcore stores list",
    "stores delete": "memcore stores list",
    "config set": "memcore config show",
}


def answer_lost_after_write(exc: Exception, words: Sequence[str]) -> Exception:
    """The error for a write command whose answer could not be written (a full disk): its
    write has landed, so the line says so, lest the command be run again as if it had failed.
    """
    from memcore.errors import Unavailable

    if not isinstance(exc, Unavailable) or exc.field != "stdout" or "--dry-run" in words:
        return exc
    name = (
        " ".join(words[:2])
        if words[:1] in (["dream"], ["stores"], ["config"])
        else " ".join(words[:1])
    )
    look = WRITES.get(name)
    if look is None:
        return exc
    lost = exc.message.replace(" (nothing was done)", "")
    return Unavailable(
        f"{lost}; memcore {name} was done before its answer was lost, so do not run it "
        f"again: see what it changed with {look}",
        field="stdout",
        retryable=False,
    )


def store_advice(exc: Exception, store_argv: Sequence[str], runtime: Any = None) -> Exception:
    """A missing memory store's error with the ``memcore ...`` commands it advises (create
    the store, run doctor) given the flags that chose the store (``--backend tablestore``):
    run as written without them, they reach the configured default, often the embedded
    store, and the read fails again. With the ``runtime`` whose store answered, the names
    close to the missing one follow when it is the configured store (a mistyped
    ``memory_store_name``), not one a command named itself."""
    from memcore.errors import StoreNotFound

    if not isinstance(exc, StoreNotFound):
        return exc
    advised = exc.advised_with(store_argv)
    opened = getattr(runtime, "opened_store", None)
    if opened is None:
        return advised
    from memcore.store_names import with_close_names

    return with_close_names(advised, opened, runtime.store_name)


def _stdout_failed() -> bool:
    return isinstance(sys.stdout, GuardedStdout) and sys.stdout.failed


def _not_confirmed(abort: typer.Abort, ctx: ClickContext) -> int:
    """The question before a delete (``forget``, ``stores delete``) was not answered yes:
    Ctrl-C there is an interrupt like any other (130); "no" or Ctrl-D a failure, in JSON with
    ``--json``. Either way nothing was deleted, and the line says so."""
    if isinstance(abort.__context__, KeyboardInterrupt):  # click re-raises Ctrl-C as Abort
        from memcore_cli.output.interrupts import report

        return report("nothing was deleted", as_json=_json_asked(ctx))
    from memcore.errors import not_confirmed

    return int(report_error(not_confirmed(), as_json=_json_asked(ctx), debug=False))


def _json_asked(ctx: ClickContext) -> bool:
    """Whether the command's failures answer in JSON: its options once parsed, else the
    global ones the group found before it (an interrupt may come before either)."""
    asked = getattr(ctx.obj, "json", None)
    return bool(ctx.meta.get(WANTS_JSON, False) if asked is None else asked)


class MemcoreGroup(TyperGroup):
    """A Typer group that owns error reporting for every subcommand below it."""

    def parse_args(self, ctx: ClickContext, args: list[str]) -> list[str]:
        from memcore_cli.parsing.argv import leading_json

        ctx.meta[WANTS_JSON] = leading_json(self, args)
        return super().parse_args(ctx, args)

    def invoke(self, ctx: ClickContext) -> Any:
        # The words after the global options; the group clears them before its callback runs,
        # which wants to know whether the command is about to run or only to show its help.
        ctx.meta[COMMAND_ARGS] = [*getattr(ctx, "_protected_args", ()), *ctx.args]
        try:
            return super().invoke(ctx)
        except typer.Abort as exc:
            raise typer.Exit(_not_confirmed(exc, ctx)) from None
        except (typer.Exit, ClickException):
            raise
        except KeyboardInterrupt as exc:
            from memcore_cli.output.interrupts import report

            raise typer.Exit(report(str(exc), as_json=_json_asked(ctx))) from None
        except BrokenPipeError as exc:
            # The reader went away (``memcore --json list --all | head``): stop quietly,
            # unless a write has landed, which must not be run again as if it had failed.
            plain = lost(exc)
            told = answer_lost_after_write(plain, ctx.meta.get(COMMAND_ARGS, []))
            code = _stdout_gone()
            if told is not plain:
                code = int(report_error(told, as_json=_json_asked(ctx), debug=False))
            raise typer.Exit(code) from None
        except Exception as exc:
            state = ctx.obj
            options = getattr(state, "options", None)
            argv = options.store_argv() if options is not None else ()
            exc = store_advice(exc, argv, getattr(state, "opened_runtime", None))
            if _stdout_failed():
                exc = answer_lost_after_write(exc, ctx.meta.get(COMMAND_ARGS, []))
            code = report_error(
                exc,
                as_json=bool(getattr(state, "json", False)),
                debug=bool(getattr(state, "debug", False)),
            )
            if _stdout_failed():  # a closed stdout or a full disk (see output.stdout)
                _stdout_gone()
            raise typer.Exit(int(code)) from None

    def main(  # type: ignore[override]
        self,
        args: Sequence[str] | None = None,
        prog_name: str | None = None,
        complete_var: str | None = None,
        standalone_mode: bool = True,
        **extra: Any,
    ) -> Any:
        from memcore_cli.output import interrupts
        from memcore_cli.parsing import coercion
        from memcore_cli.settings import completion

        interrupts.start()
        coercion.install(self)  # plain option values without pydantic (see the module)
        words = sys.argv[1:] if args is None else list(args)
        completion.guard(self, words)  # shell completion's failures reported like any other
        stderr = sys.stderr
        sys.stderr = ForgivingStderr(stderr)
        try:
            return self._main(words, prog_name, complete_var, standalone_mode, **extra)
        finally:
            sys.stderr = stderr

    def _main(
        self,
        words: list[str],
        prog_name: str | None,
        complete_var: str | None,
        standalone_mode: bool,
        **extra: Any,
    ) -> Any:
        """:meth:`main` with stderr forgiving: every failure one line and its exit code."""
        from memcore_cli.parsing.argv import (
            MissingValue,
            hoist_globals,
            leading_json,
            unknown_command_json,
        )
        from memcore_cli.settings import completion

        args = words
        if sys.stdout is None:  # started with stdout closed (``>&-``): do nothing
            from memcore_cli.output.stdout import closed

            code = int(report_error(closed(), as_json=leading_json(self, words), debug=False))
            if not standalone_mode:
                return code
            sys.exit(code)
        stdout = sys.stdout
        sys.stdout = GuardedStdout(stdout)
        try:
            try:
                args = hoist_globals(self, words)
                rv = super().main(
                    args=args,
                    prog_name=prog_name,
                    complete_var=complete_var,
                    standalone_mode=False,
                    **extra,
                )
            except NoArgsIsHelpError as exc:
                # A bare ``memcore`` (or ``memcore dream``) asks for help: show it, not an error.
                sys.stdout.write(exc.format_message() + "\n")
                sys.stdout.flush()
                rv = 0
        except completion.CompletionFailed as exc:
            code = int(report_error(exc.error, as_json=leading_json(self, args), debug=False))
        except BrokenPipeError:
            # Help or the version could not be written to a closed pipe; a command's own
            # output is handled in ``invoke``.
            code = _stdout_gone()
        except ClickException as exc:
            if isinstance(exc, MissingValue):  # the line was not rearranged: read what was
                args = exc.globals_before
            as_json = leading_json(self, args) or unknown_command_json(self, args)
            code = report_parser_error(exc, as_json=as_json)
        except typer.Abort:
            sys.stderr.write("memcore: aborted\n")
            from memcore_cli.output.exit_codes import ExitCode

            code = int(ExitCode.UNEXPECTED)
        except Exception as exc:  # help or the version could not be written (a full disk)
            if not _stdout_failed():  # caught by type only here: ``--help`` imports no core
                raise
            code = int(report_error(exc, as_json=leading_json(self, args), debug=False))
            _stdout_gone()
        else:
            code = rv if isinstance(rv, int) else 0
        finally:
            sys.stdout = stdout
        if not standalone_mode:
            return code
        sys.exit(code)
