"""Memory store administration: list, create, describe, delete (the store port)."""

from typing import Annotated, Any

import typer

from memcore_cli.wiring.state import state_of

app = typer.Typer(
    help=(
        "Manage memory stores (named collections inside one backend).\n\n"
        "\b\nExamples:\n  memcore stores list\n"
        '  memcore stores create team_notes --description "Shared notes"'
    ),
    no_args_is_help=True,
)
NameArg = Annotated[str, typer.Argument(metavar="NAME", help="Store name: [A-Za-z0-9_]{1,32}.")]


def _store_record(info: Any) -> dict[str, Any]:
    from memcore_cli.output.records import to_record

    record: dict[str, Any] = to_record(info)
    return record


def _show(state: Any, info: Any) -> None:
    from memcore_cli.output.render import when

    if state.json:
        state.output.json(_store_record(info))
        return
    state.output.fields(
        [
            ("name", info.name),
            ("description", info.description),
            ("status", info.status),
            ("created", when(info.created_at)),
        ],
        title="memory store",
    )


@app.command("list")
def list_stores(ctx: typer.Context) -> None:
    """List the memory stores of the backend.

    \b
    Example:
      memcore stores list
    """
    from memcore_cli.output.render import when

    state = state_of(ctx)
    runtime = state.runtime()
    stores = runtime.store.list_stores()
    if state.json:
        state.output.json([_store_record(s) for s in stores])
        return
    current = runtime.store_name
    state.output.table(
        ("name", "status", "description", "created", "in use"),
        (
            (
                s.name,
                s.status,
                s.description,
                when(s.created_at),
                "yes" if s.name == current else "",
            )
            for s in stores
        ),
        empty="no memory stores yet",
    )


@app.command("create")
def create(
    ctx: typer.Context,
    name: NameArg,
    description: Annotated[
        str | None,
        typer.Option(
            "--description",
            help="A note on what it holds (default: the config's description, for the "
            "configured store).",
        ),
    ] = None,
) -> None:
    """Create a memory store (fails if it exists). The configured store (the one the error
    for a missing store says to create) gets the config's description and extraction
    instructions, as a first write that creates it does.

    \b
    Example:
      memcore stores create team_notes --description "Shared notes"
    """
    from memcore import limits

    state = state_of(ctx)
    limits.check_store_name(name)
    runtime = state.runtime()
    config = runtime.settings.config
    configured = name == runtime.store_name
    if description is None:
        description = config.description if configured else ""
    instructions = config.extract_instructions if configured else None
    _show(
        state,
        runtime.store.create_store(
            name, description=description, extract_instructions=instructions
        ),
    )


@app.command("describe")
def describe(
    ctx: typer.Context,
    name: Annotated[
        str | None, typer.Argument(metavar="[NAME]", help="Default: the configured store.")
    ] = None,
) -> None:
    """Describe a memory store.

    \b
    Examples:
      memcore stores describe
      memcore stores describe team_notes
    """
    from memcore import limits

    state = state_of(ctx)
    runtime = state.runtime()
    target = limits.check_store_name(name if name is not None else runtime.store_name)
    _show(state, runtime.store.describe_store(target))


@app.command("delete")
def delete(
    ctx: typer.Context,
    name: NameArg,
    yes: Annotated[bool, typer.Option("--yes", "-y", help="Do not ask for confirmation.")] = False,
) -> None:
    """Delete a memory store and every memory in it, of every tenant.

    Asks first on a terminal; without one (a script, a pipe) it needs --yes (exit 2
    without it, 1 when the question is answered no), as forget does.

    \b
    Example:
      memcore stores delete team_notes --yes
    """
    from memcore import limits

    state = state_of(ctx)
    limits.check_store_name(name)
    runtime = state.runtime()
    runtime.store.describe_store(name)
    if not yes:
        _confirm_delete(name)
    runtime.store.delete_store(name)
    if state.json:
        state.output.json({"name": name, "deleted": True})
    else:
        state.output.line(f"deleted the memory store {name}")


def _confirm_delete(name: str) -> None:
    """Ask on a terminal; elsewhere refuse as ``forget`` does (exit 2), since a prompt nobody
    can answer is a usage error, not an abort."""
    from memcore_cli.output.asking import confirm_delete

    confirm_delete(f"the memory store {name!r} (every memory in it, of every tenant)")
