"""``memcore mcp``: serve the memory tools to MCP clients (Claude Code, Claude Desktop, Cursor).

The server lives in the ``memcore-mcp`` package; it is imported only when this command runs,
so the rest of the CLI never pays for the MCP SDK.
"""

from typing import Annotated, TypeVar

import typer
from typer._click.core import ParameterSource

from memcore_cli.wiring.state import state_of

T = TypeVar("T")


def mcp(
    ctx: typer.Context,
    transport: Annotated[
        str,
        typer.Option("--transport", help="stdio (the client starts the server) or http."),
    ] = "stdio",
    host: Annotated[
        str, typer.Option("--host", help="Address to listen on (http only; loopback by default).")
    ] = "127.0.0.1",
    port: Annotated[
        int, typer.Option("--port", help="Port (http only; 0 picks a free one).")
    ] = 8787,
    path: Annotated[str, typer.Option("--path", help="Endpoint path (http only).")] = "/mcp",
    tokens: Annotated[
        str | None,
        typer.Option(
            "--tokens",
            help="JSON file of tenant to bearer token(s) (http only; or MEMCORE_MCP_TOKENS_FILE, "
            "MEMCORE_MCP_TOKENS). Required for http.",
        ),
    ] = None,
    busy_timeout: Annotated[
        float | None,
        typer.Option(
            "--busy-timeout",
            help="Seconds a call waits while another process holds the embedded store's "
            "write lock, then answers a retryable busy error (0 to 600; default 30).",
        ),
    ] = None,
) -> None:
    """Run an MCP server over your memories until the client disconnects or you stop it.

    On stdio it serves the configured tenant (--tenant, MEMCORE_TENANT, the config file)
    and refuses --host, --port, --path and --tokens; on http each bearer token opens its own
    tenant, and requests without one get 401.

    \b
    Examples:
      memcore --tenant alice mcp
      memcore mcp --transport http --port 8787 --tokens ~/.config/memcore/mcp-tokens.json
      claude mcp add memcore -- memcore --tenant alice mcp
    """
    try:
        from memcore_mcp.serve import serve
    except ImportError as exc:
        from memcore.errors import ConfigError

        raise ConfigError(
            f"the MCP server is not installed ({exc.name} is missing): install memcore-mcp "
            "beside the CLI's packages; from a memcore clone, pip install ./packages/adapter-mcp",
            field="mcp",
        ) from None

    state = state_of(ctx)
    serve(
        state.options,
        state.environ,
        store_factory=state.overrides.store_factory,
        explicit_environ=state.overrides.environ is not None,
        transport=transport,
        host=_given(ctx, "host", host),
        port=_given(ctx, "port", port),
        path=_given(ctx, "path", path),
        tokens_file=tokens,
        busy_timeout=busy_timeout,
    )


def _given(ctx: typer.Context, name: str, value: T) -> T | None:
    """``value`` if the option was on the command line, else None: stdio refuses an HTTP
    option that was given, even with its default value, and serves when none was."""
    source = ctx.get_parameter_source(name)
    return None if source in (None, ParameterSource.DEFAULT, ParameterSource.DEFAULT_MAP) else value
