"""The ``memcore`` Typer application: global options, command registration and ``main``.

Only Typer and this package's light modules are imported here, so ``memcore --help`` starts
fast; each command imports the core, the backends and rich when it runs.
"""

from typing import Annotated

import typer

from memcore_cli.commands import (
    admin,
    configure,
    doctor,
    dream,
    emulator,
    memories,
    reindex,
    stores,
    transfer,
)
from memcore_cli.group import MemcoreGroup
from memcore_cli.state import CliState, GlobalOptions, Overrides, configure_logging

HELP = """Long-term memory for AI agents, from the terminal.

Works with no setup on an embedded store under $MEMCORE_HOME (or your user data
directory); select TableStore with --backend tablestore, MEMCORE_BACKEND, or the
"backend" key of the config file.

\b
Examples:
  memcore add "User prefers concise answers"
  memcore search "answer style"
  memcore --tenant alice --json list --all
  memcore --backend tablestore doctor

Exit codes: 0 ok, 1 unexpected, 2 usage or invalid input, 3 not found,
4 permission or auth, 5 backend unavailable or throttled.
"""

app = typer.Typer(
    name="memcore",
    cls=MemcoreGroup,
    help=HELP,
    no_args_is_help=True,
    rich_markup_mode=None,
    pretty_exceptions_enable=False,
    context_settings={"help_option_names": ["-h", "--help"]},
)


@app.callback()
def root(
    ctx: typer.Context,
    json_output: Annotated[
        bool, typer.Option("--json", help="Print JSON (JSON Lines for streams) for scripts.")
    ] = False,
    backend: Annotated[
        str | None,
        typer.Option(
            "--backend", help="local or tablestore (default: MEMCORE_BACKEND, config, local)."
        ),
    ] = None,
    config: Annotated[
        str | None,
        typer.Option(
            "--config",
            help="A config file (also a Hermes tablestore_memory.json); default $MEMCORE_HOME/config.json.",
        ),
    ] = None,
    app_id: Annotated[
        str | None, typer.Option("--app", help="The app id (default: config, hermes).")
    ] = None,
    tenant: Annotated[
        str | None,
        typer.Option("--tenant", help="The tenant (user) id (default: config, __default__)."),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option("--agent", help="The agent id; reads cover all agents when omitted."),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option("--run", help="The run (session) id; reads cover all runs when omitted."),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
) -> None:
    overrides = ctx.obj if isinstance(ctx.obj, Overrides) else None
    state = CliState(
        GlobalOptions(
            json=json_output,
            backend=backend,
            config=config,
            app=app_id,
            tenant=tenant,
            agent=agent,
            run=run,
            debug=debug,
        ),
        overrides,
    )
    ctx.obj = state
    ctx.call_on_close(state.close)
    configure_logging(debug)


app.command("add")(memories.add)
app.command("search")(memories.search)
app.command("list")(memories.list_memories)
app.command("get")(memories.get)
app.command("update")(memories.update)
app.command("forget")(memories.forget)
app.command("messages")(memories.messages)
app.command("requests")(admin.requests)
app.command("scopes")(admin.scopes)
app.add_typer(admin.tasks_app, name="tasks")
app.add_typer(dream.app, name="dream")
app.add_typer(stores.app, name="stores")
app.command("doctor")(doctor.doctor)
app.command("reindex")(reindex.reindex)
app.add_typer(configure.app, name="config")
app.command("provision")(configure.provision)
app.command("export")(transfer.export)
app.command("import")(transfer.import_)
app.add_typer(emulator.app, name="emulator")


def command_paths() -> list[list[str]]:
    """Every runnable command as its words (``["dream", "create"]``), read off the app itself,
    so that checks over all commands cannot miss one added later."""

    def walk(command: object, prefix: list[str]) -> list[list[str]]:
        subcommands = getattr(command, "commands", None)  # a group (Typer bundles its own click)
        if not isinstance(subcommands, dict):
            return [prefix]
        return [
            path for name, sub in sorted(subcommands.items()) for path in walk(sub, [*prefix, name])
        ]

    return walk(typer.main.get_command(app), [])


def main() -> None:
    """Console-script entry point."""
    app(prog_name="memcore")
