"""The ``memcore`` Typer application: global options, command registration and ``main``.

Only Typer and this package's light modules are imported here, so ``memcore --help`` starts
fast; each command imports the core, the backends and rich when it runs.
"""

import os
import sys
from typing import Annotated

import typer

from memcore_cli import __version__
from memcore_cli.commands import (
    admin,
    configure,
    doctor,
    dream,
    emulator,
    listing,
    mcp,
    memories,
    reindex,
    stores,
    transfer,
)
from memcore_cli.group import WANTS_JSON, MemcoreGroup
from memcore_cli.parsing.words import COMMAND_ARGS
from memcore_cli.settings.options import FORMATS, GlobalOptions
from memcore_cli.wiring.overrides import Overrides
from memcore_cli.wiring.state import CliState, configure_logging

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
  memcore list | cut -f1            # piped output is tab-separated

Exit codes: 0 ok, 1 unexpected, 2 usage or invalid input, 3 not found,
4 permission or auth, 5 backend unavailable or throttled or output not writable,
130 interrupted (Ctrl-C).
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


def _print_version(ctx: typer.Context, value: bool) -> None:
    """``memcore 0.1.0``; with ``--json``, one JSON document as every command prints."""
    if value:
        if ctx.meta.get(WANTS_JSON, False):
            import json

            sys.stdout.write(json.dumps({"version": __version__}) + "\n")
        else:
            sys.stdout.write(f"memcore {__version__}\n")
        raise typer.Exit()


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
            help="A config file (default $MEMCORE_HOME/config.json); a Hermes home's "
            "tablestore_memory.json opens that home, as --hermes-home does.",
        ),
    ] = None,
    hermes_home: Annotated[
        str | None,
        typer.Option(
            "--hermes-home",
            help="Open the store a Hermes home's tablestore-mem uses (its config, .env keys, "
            "database and scope); --tenant is then a Hermes user's tenant (telegram:12345; the "
            "user id alone with tenant_scope: user).",
        ),
    ] = None,
    app_id: Annotated[
        str | None, typer.Option("--app", help="The app id (default: config, hermes).")
    ] = None,
    tenant: Annotated[
        str | None,
        typer.Option(
            "--tenant",
            help="The tenant (user) id, exactly as given, never trimmed (default: the config's "
            "tenant_id, else the shared default tenant, which no --tenant value names: "
            "'--tenant __default__' is a tenant of its own).",
        ),
    ] = None,
    agent: Annotated[
        str | None,
        typer.Option(
            "--agent",
            help="The agent id (default hermes); reads cover all agents when --agent and --run "
            "are both omitted (--run alone reads the default agent's run).",
        ),
    ] = None,
    run: Annotated[
        str | None,
        typer.Option("--run", help="The run (session) id; reads cover all runs when omitted."),
    ] = None,
    output_format: Annotated[
        str | None,
        typer.Option(
            "--format",
            help="table, plain (tab-separated) or json (default: table on a terminal, else plain).",
        ),
    ] = None,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks on errors.")] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version",
            help="Print the version and exit.",
            callback=_print_version,
            is_eager=True,
        ),
    ] = False,
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
            format=output_format,
            hermes_home=hermes_home,
        ),
        overrides,
    )
    ctx.obj = state
    ctx.call_on_close(state.close)
    configure_logging(debug)
    _check_globals(state.options)
    state.prepare(ctx.invoked_subcommand, ctx.meta.get(COMMAND_ARGS, []))


def _check_globals(options: GlobalOptions) -> None:
    """Refuse what would silently mean something else: an empty ``--tenant`` (an unset shell
    variable) would otherwise read and write the shared default tenant, an empty ``--config``
    the default config file, an id holding bytes
    that are not UTF-8 would name a tenant no other host can type, and ``--json`` with
    another ``--format`` would ignore one of the two. The core is imported
    only on a refusal, so that ``COMMAND --help`` stays light."""
    if options.format is not None and options.format not in FORMATS:
        from memcore.errors import InvalidInput

        raise InvalidInput(
            f"--format must be one of {', '.join(FORMATS)}, not {options.format!r}",
            field="format",
        )
    if options.json and options.format not in (None, "json"):
        from memcore.errors import InvalidInput

        raise InvalidInput(
            f"--json and --format {options.format} ask for two formats; give one of them",
            field="format",
        )
    if options.config is not None and not options.config.strip():
        # Else `config set` wrote the default file, and reads named it as missing.
        from memcore.errors import InvalidInput

        raise InvalidInput(
            "--config is empty (an unset shell variable?); give a file or leave it out",
            field="config",
        )
    for flag in ("--app", "--tenant", "--agent", "--run"):
        value = getattr(options, flag[2:])
        if value is not None and not value.strip():
            from memcore.errors import InvalidInput

            raise InvalidInput(
                f"{flag} is empty (an unset shell variable?); give a value or leave it out",
                field=flag[2:] + "_id",
            )
        if value is not None and not _utf8(value):
            # Bytes that are not UTF-8 reach argv as surrogates, which the scope mapping
            # would take as an id of their own; a text holding them is refused alike.
            from memcore.limits import check_unicode

            check_unicode(value, field=flag[2:] + "_id", label=flag)


def _utf8(value: str) -> bool:
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


app.command("add")(memories.add)
app.command("search")(memories.search)
app.command("list")(listing.list_memories)
app.command("count")(listing.count)
app.command("get")(memories.get)
app.command("update")(memories.update)
app.command("forget")(listing.forget)
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
app.command("mcp")(mcp.mcp)


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
    # Typer parses options through pydantic, whose plugin loader scans every installed
    # distribution's entry points on first use; memcore uses no pydantic plugin.
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")
    app(prog_name="memcore")
