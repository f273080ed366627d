"""The question a delete asks before it runs: on a terminal only, and any answer but yes is no.

click's ``confirm`` asks again after an answer it cannot read ("oui", "nope"): a user who
meant no was held at the question, where the README promises that any answer but yes deletes
nothing and says so (exit 1). A command started without a terminal, or with stdin closed
(``<&-``, where ``sys.stdin`` is None), is refused before anything is asked (exit 2).
"""

from __future__ import annotations

import sys

import typer

from memcore.errors import no_terminal_to_confirm

YES = ("y", "yes")


def confirm_delete(what: str, detail: str = "", *, instead: str = "") -> None:
    """Ask whether to delete ``what`` (``detail`` shown after it); raise ``typer.Abort`` on
    any answer but yes (Ctrl-C and end of input too), and
    :func:`~memcore.errors.no_terminal_to_confirm` without a terminal. ``instead`` ends that refusal ("(or --dry-run ...)")."""
    if sys.stdin is None or not sys.stdin.isatty():
        raise no_terminal_to_confirm(what, instead)
    question = f"Delete {what}{f' ({detail})' if detail else ''}? [y/N]"
    answer = typer.prompt(question, default="", show_default=False, err=True)
    if answer.strip().lower() not in YES:
        raise typer.Abort()
