"""``doctor``: read-only checks of the setup, one pass/fail line each."""

from typing import Annotated

import typer

from memcore_cli.wiring.state import state_of


def doctor(
    ctx: typer.Context,
    live: Annotated[
        bool,
        typer.Option(
            "--live", help="Also call each read-only API and check its answer's documented shape."
        ),
    ] = False,
    record: Annotated[
        str | None,
        typer.Option(
            "--record",
            metavar="DIR",
            help=(
                "Save the live check's answers in DIR (implies --live; ids, scopes and "
                "texts redacted)."
            ),
        ),
    ] = None,
) -> None:
    """Check the configuration, credentials, store and search mode (changes no memory or setting).

    Exits 0 when every check passes, otherwise with the exit code of the first failure. A
    local file an older memcore wrote is read without being upgraded; the checks that need
    the upgraded file show SKIP.

    \b
    Examples:
      memcore doctor
      memcore --backend tablestore --json doctor
      memcore doctor --live --record ./memcore-answers
    """
    from memcore_cli.operations.diagnosis import run_checks
    from memcore_cli.parsing.paths import given_path

    folder = None
    if record is not None:
        instead = "give a folder or leave it out"
        folder = given_path(record, name="--record", field="record", instead=instead)
    state = state_of(ctx)
    checks, code = run_checks(state, live=live or folder is not None, record=folder)
    out = state.output
    if state.json:
        out.json({"ok": code == 0, "checks": [c.as_dict() for c in checks]})
    else:
        width = max(len(c.name) for c in checks)
        for check in checks:
            word = "SKIP" if check.skipped else "PASS" if check.ok else "FAIL"
            # One line a check: a detail quoting several lines (quick_check's) is joined.
            detail = " ".join(str(check.detail).splitlines())
            out.line(f"{word}  {check.name.ljust(width)}  {detail}")
    if code:
        raise typer.Exit(code)
