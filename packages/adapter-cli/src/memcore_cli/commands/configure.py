"""``config show``, ``config set`` and ``provision``: the settings the CLI runs with."""

from pathlib import Path
from typing import Annotated, Any

import typer

from memcore_cli.wiring.state import state_of

app = typer.Typer(
    help=(
        "Show or change the configuration.\n\n"
        "\b\nExamples:\n  memcore config show\n  memcore config set tenant_id alice"
    ),
    no_args_is_help=True,
)

CREDENTIAL_VARS = (
    "TABLESTORE_MEMORY_API_KEY",
    "TABLESTORE_MEMORY_AK",
    "TABLESTORE_MEMORY_SK",
    "TABLESTORE_MEMORY_STS_TOKEN",
    "ALIBABA_CLOUD_ACCESS_KEY_ID",
    "ALIBABA_CLOUD_ACCESS_KEY_SECRET",
    "ALIBABA_CLOUD_SECURITY_TOKEN",
)


@app.command("show")
def show(ctx: typer.Context) -> None:
    """Show the effective settings and where each comes from (secrets are never shown).

    \b
    Examples:
      memcore config show
      memcore --config ~/.hermes/tablestore_memory.json --json config show
    """
    from memcore.config import shown_config
    from memcore_cli.settings.config_values import redact
    from memcore_cli.wiring.runtime import credential_environ

    state = state_of(ctx)
    runtime = state.runtime()
    settings = runtime.settings
    choice = settings.scope
    environ = credential_environ(settings, state.environ)  # a Hermes home's .env too
    credentials = {
        name: ("set (hidden)" if environ.get(name) else "not set") for name in CREDENTIAL_VARS
    }
    document: dict[str, Any] = {
        "backend": settings.backend,
        "backend_source": settings.backend_source,
        "config_file": str(settings.config_path),
        "config_file_exists": settings.config_path.exists(),
        "home": str(settings.home),
        "database": str(settings.db_path) if settings.backend == "local" else None,
        "write_scope": choice.scope.as_dict(),
        "read_pattern": choice.read_pattern.as_dict(),
        "config": redact(shown_config(settings.config)),
        "credentials": credentials,
    }
    if state.json:
        state.output.json(document)
        return
    rows: list[tuple[str, Any]] = [
        ("active backend", f"{settings.backend} (from {settings.backend_source})"),
        (
            "config file",
            f"{settings.config_path}{'' if document['config_file_exists'] else ' (not created yet)'}",
        ),
        ("home", document["home"]),
    ]
    if document["database"]:
        rows.append(("database", document["database"]))
    rows.append(("write scope", str(choice.scope)))
    rows.append(("read scope", str(choice.read_pattern)))
    rows.extend((key, "-" if value is None else value) for key, value in document["config"].items())
    rows.extend((name, value) for name, value in credentials.items())
    state.output.fields(rows, title="memcore configuration")


# A negative number ('config set timeout -1') is the value, not an unknown option: the
# value check then answers what the key accepts.
@app.command("set", context_settings={"ignore_unknown_options": True})
def set_value(
    ctx: typer.Context,
    key: Annotated[str, typer.Argument(help="A config key, e.g. tenant_id or backend.")],
    value: Annotated[
        str,
        typer.Argument(help="The value; 'null' unsets an optional key (others refuse it)."),
    ],
) -> None:
    """Change one setting in the config file (validated; written atomically, mode 0600).

    \b
    Examples:
      memcore config set tenant_id alice
      memcore config set backend tablestore
      memcore config set top_k 8
    """

    from memcore.config import MemcoreConfig, merge_config, without_userinfo
    from memcore_cli.settings.config_file import change_config
    from memcore_cli.settings.config_values import parse_value, redact
    from memcore_cli.settings.resolve import config_file

    state = state_of(ctx)
    # The file config show reads: --config, a --hermes-home's, else the data home's.
    path = config_file(state.options, state.environ)
    source = str(path)
    parsed = parse_value(key, value, source=source)

    before: list[MemcoreConfig] = []

    def change(base: MemcoreConfig) -> MemcoreConfig:
        before.append(base)
        updated = merge_config(base, {key: parsed}, source=source)
        if key == "local_path" and updated.local_path is not None:
            _check_length(state, path, updated.local_path, source=source)
        return updated

    updated = change_config(path, change, mends=key)
    # As config show shows it: an endpoint's user:password@ is written, never printed.
    shown = redact({key: without_userinfo(getattr(updated, key))})[key]
    if key == "embedder" and isinstance(parsed, str):
        _warn_unavailable(state, parsed)
    if key == "embedder" and before and before[0].embedder != updated.embedder and _stored(state):
        # The CLI re-embeds nothing in the background (the MCP server and Hermes do).
        state.output.note(
            "memcore: note: stored memories keep their old vectors; until 'memcore reindex' "
            "re-embeds them, searches here find them by their words only"
        )
    if state.json:
        state.output.json({"key": key, "value": shown, "config_file": source})
    elif parsed is None:  # 'null': back to the default, which config show gives
        state.output.line(f"unset {key} in {source} (back to its default)")
    else:
        state.output.line(f"set {key} = {shown!r} in {source}")


def _stored(state: Any) -> bool:
    """Whether the embedded store's file exists here (it may hold memories to re-embed)."""
    try:
        return bool(state.runtime().settings.db_path.is_file())
    except Exception:  # a setting the next command reports: no note
        return False


def _warn_unavailable(state: Any, embedder: str) -> None:
    """Set all the same (the config may be for another Python, as a Hermes home's is for
    Hermes' own), but say now what every command that opens the store here would fail on."""
    from memcore_sqlite.embedders import unavailable

    problem = unavailable(embedder)
    if problem is not None:
        state.output.note(f"memcore: warning: {problem}; until it is installed, commands here fail")


def _check_length(state: Any, config_path: Path, local_path: str, *, source: str) -> None:
    """Refuse a ``local_path`` the file system cannot hold, or a folder (every command would
    then fail on it), as the home it is relative to would place it (the data home, or a
    Hermes home's folder)."""
    from memcore.errors import ConfigError
    from memcore_cli.settings.home import data_home, database_path, too_long

    hermes = state.options.hermes_home is not None or config_path.name == "tablestore_memory.json"
    home = config_path.parent if hermes else data_home(state.environ)
    database = database_path(home, local_path, source=source)
    problem = too_long(database)
    if problem is None and database.is_dir():
        problem = f"{database} is a folder; give the database file's path in it"
    if problem is not None:
        raise ConfigError(f"local_path will not do: {problem}", field="local_path", source=source)


def provision(
    ctx: typer.Context,
    control_endpoint: Annotated[
        str | None,
        typer.Option("--control-endpoint", help="Control-plane host:port (default: the region's)."),
    ] = None,
    control_protocol: Annotated[
        str, typer.Option("--control-protocol", help="https, or http for the local emulator.")
    ] = "https",
    endpoint_template: Annotated[
        str | None,
        typer.Option(
            "--endpoint-template",
            help="Data endpoint template (default https://{instance}.{region}.ots.aliyuncs.com).",
        ),
    ] = None,
    dns_timeout: Annotated[
        float, typer.Option("--dns-timeout", help="Seconds to wait for the new host to resolve.")
    ] = 300.0,
) -> None:
    """Create a TableStore instance on first use and save it to the config file.

    Safe to re-run: an instance already named in the config is reused, and a bootstrap that
    was interrupted is resumed rather than buying a second instance.

    \b
    Examples:
      memcore provision
      memcore --config ~/.hermes/tablestore_memory.json provision
      memcore provision --control-endpoint 127.0.0.1:8765 --control-protocol http \\
        --endpoint-template http://127.0.0.1:8765    # against 'memcore emulator serve'
    """
    from memcore.config import without_userinfo
    from memcore_cli.output.records import to_record
    from memcore_tablestore.credentials import resolve_credentials
    from memcore_tablestore.provisioning.provisioner import (
        DATA_ENDPOINT_TEMPLATE,
        TableStoreProvisioner,
    )

    state = state_of(ctx)
    settings = state.runtime().settings
    env = None if state.overrides.environ is None else state.environ
    provisioner = TableStoreProvisioner(
        settings.config,
        settings.config_path,
        credentials=resolve_credentials(env),
        control_endpoint=control_endpoint,
        control_protocol=control_protocol,
        # An empty template is refused as such, not taken for the real data host.
        endpoint_template=DATA_ENDPOINT_TEMPLATE
        if endpoint_template is None
        else endpoint_template,
        dns_timeout=dns_timeout,
    )
    out = state.output
    with out.progress("provisioning TableStore") as advance:
        facts = provisioner.ensure_instance(progress=lambda message: advance(1, note=message))
    # A configured endpoint's user:password@ (a hand-written one loads) is used, never shown.
    endpoint = without_userinfo(facts.endpoint)
    if state.json:
        record = {**to_record(facts), "endpoint": endpoint}
        out.json({**record, "config_file": str(settings.config_path)})
        return
    verb = "created" if facts.created else "using"
    out.line(f"{verb} instance {facts.instance_name} at {endpoint} ({facts.region})")
    out.line(f"saved to {settings.config_path}; next: memcore --backend tablestore doctor")
