"""``--install-completion`` and ``--show-completion``: Typer's scripts, memcore's errors.

Typer's own callbacks printed a traceback when a file could not be written (``~/.bashrc`` a
folder, a read-only home), reported an unsupported shell on stdout with exit 1, did not say
that they had edited the shell's start-up file, and for PowerShell set the user's execution
policy to Unrestricted before appending to a profile wherever ``$PROFILE`` points. Here every
failure is one line and a documented exit code, every file written is named, and a
PowerShell profile is left to the user. A shell named after the option (``--show-completion
fish``, as older Typer releases took it) is the one used; it was ignored, and bash's script
shown or installed.
"""

from __future__ import annotations

import errno
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, NoReturn

import typer

#: Shells whose completion ``--install-completion`` writes, and the start-up file it edits.
INSTALLED = {"bash": ".bashrc", "zsh": ".zshrc", "fish": None}
#: Shells ``--show-completion`` has a script for.
SHOWN = ("bash", "zsh", "fish", "powershell", "pwsh")


class CompletionFailed(Exception):
    """Carries the typed error of a completion option to the group, which reports it."""

    def __init__(self, error: Exception) -> None:
        super().__init__(str(error))
        self.error = error


def detect_shell() -> str | None:
    """The shell memcore runs under, as Typer detects it (None when none is found)."""
    from typer._completion_shared import _get_shell_name

    return _get_shell_name()


def guard(group: Any, words: Sequence[str] = ()) -> None:
    """Give the group's completion options the callbacks below instead of Typer's; ``words``
    is the command line, for a shell named after an option."""
    callbacks: dict[str, tuple[str, Callable[..., Any], str]] = {
        "install_completion": (
            "--install-completion",
            _install,
            f"Install completion for the current shell, or the one named after it "
            f"({', '.join(INSTALLED)}).",
        ),
        "show_completion": (
            "--show-completion",
            _show,
            f"Show completion for the current shell, or the one named after it "
            f"({', '.join(SHOWN)}), to copy it or customize the installation.",
        ),
    }
    for param in group.params:
        if param.name in callbacks:
            flag, callback, help_text = callbacks[param.name]
            param.callback = partial(callback, named=_named(words, flag))
            param.help = help_text


def _named(words: Sequence[str], flag: str) -> str | None:
    """The word right after ``flag`` when it is no option: the shell asked for. Click takes
    it for a command name, which the option's eager callback never reaches."""
    if flag not in words:
        return None
    rest = list(words)[list(words).index(flag) + 1 :]
    return rest[0] if rest and not rest[0].startswith("-") else None


def _fail(error: Exception) -> NoReturn:
    raise CompletionFailed(error)


def _shell(supported: tuple[str, ...], verb: str, named: str | None) -> str:
    from memcore.errors import InvalidInput

    shell = detect_shell() if named is None else named
    if shell not in supported:
        what = "no shell was detected" if shell is None else f"shell {shell!r} is not supported"
        if shell in SHOWN:  # PowerShell: its profile (and execution policy) are the user's
            what += f"; add the output of 'memcore --show-completion {shell}' to your $PROFILE"
        _fail(
            InvalidInput(
                f"cannot {verb} completion: {what} (supported: {', '.join(supported)})",
                field="shell",
            )
        )
    return shell


def _script(shell: str, ctx: Any) -> tuple[str, str]:
    from typer._completion_shared import get_completion_script

    prog_name = ctx.find_root().info_name or "memcore"
    complete_var = "_{}_COMPLETE".format(prog_name.replace("-", "_").upper())
    return prog_name, get_completion_script(
        prog_name=prog_name, complete_var=complete_var, shell=shell
    )


def _show(ctx: Any, param: Any, value: Any, *, named: str | None = None) -> Any:
    if not value or ctx.resilient_parsing:
        return value
    _, script = _script(_shell(SHOWN, "show", named), ctx)
    typer.echo(script)
    raise typer.Exit(0)


def _install(ctx: Any, param: Any, value: Any, *, named: str | None = None) -> Any:
    if not value or ctx.resilient_parsing:
        return value
    from typer._completion_shared import install

    shell = _shell(tuple(INSTALLED), "install", named)
    prog_name = ctx.find_root().info_name or "memcore"
    try:
        path = install(shell=shell, prog_name=prog_name)[1]
    except OSError as exc:
        _fail(_write_error(exc, shell))
    from pathlib import Path

    rc_file = INSTALLED[shell]
    also = f"; {Path.home() / rc_file} now loads it" if rc_file else ""
    typer.echo(f"{shell} completion installed in {path}{also}")
    typer.echo("Completion will take effect once you restart the terminal")
    raise typer.Exit(0)


def _write_error(exc: OSError, shell: str) -> Exception:
    """A permission problem or a read-only file system exits 4; any other, 2. Both name the
    file."""
    from memcore.errors import InvalidInput, PermissionDenied

    where = exc.filename or "the home folder"
    why = exc.strerror or type(exc).__name__
    message = f"cannot install {shell} completion: {where}: {why}"
    if isinstance(exc, PermissionError) or exc.errno == errno.EROFS:
        return PermissionDenied(message, field="completion")
    return InvalidInput(message, field="completion")
