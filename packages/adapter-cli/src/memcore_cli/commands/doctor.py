"""``doctor``: read-only checks of the setup, one pass/fail line each."""

import typer

from memcore_cli.state import state_of


def doctor(ctx: typer.Context) -> None:
    """Check the configuration, credentials, store and search mode (changes nothing).

    Exits 0 when every check passes, otherwise with the exit code of the first failure.

    \b
    Examples:
      memcore doctor
      memcore --backend tablestore --json doctor
    """
    from memcore_cli.diagnosis import run_checks

    state = state_of(ctx)
    checks, code = run_checks(state)
    out = state.output
    if state.json:
        out.json({"ok": code == 0, "checks": [c.as_dict() for c in checks]})
    else:
        width = max(len(c.name) for c in checks)
        for check in checks:
            out.line(f"{'PASS' if check.ok else 'FAIL'}  {check.name.ljust(width)}  {check.detail}")
    if code:
        raise typer.Exit(code)
