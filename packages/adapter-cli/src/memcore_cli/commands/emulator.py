"""``emulator serve``: the TableStore wire protocol on 127.0.0.1, backed by the embedded store.

It lets you develop against ``--backend tablestore`` offline: the unmodified TableStore SDK
talks to it, and search is the embedded store's real search.
"""

from typing import Annotated

import typer

from memcore_cli.wiring.state import state_of

app = typer.Typer(
    help=(
        "A local TableStore emulator for offline development.\n\n"
        "\b\nExample:\n  memcore emulator serve --port 8765"
    ),
    no_args_is_help=True,
)


@app.command("serve")
def serve(
    ctx: typer.Context,
    port: Annotated[
        int, typer.Option("--port", help="Port on 127.0.0.1 (0 picks a free one).")
    ] = 8765,
    latency_ms: Annotated[
        float, typer.Option("--latency-ms", help="Latency added to every request, in ms.")
    ] = 0.0,
    fail_rate: Annotated[
        float,
        typer.Option("--fail-rate", help="Share of requests answered 503 OTSServerBusy (0 to 1)."),
    ] = 0.0,
    database: Annotated[
        str | None,
        typer.Option(
            "--database",
            help="SQLite file to serve (default: $MEMCORE_HOME/emulator.db, not the local store's; "
            "':memory:' for a scratch one).",
        ),
    ] = None,
) -> None:
    """Serve the TableStore Memory Store API on 127.0.0.1 until interrupted.

    \b
    Examples:
      memcore emulator serve --port 8765
      memcore emulator serve --port 8765 --latency-ms 20 --fail-rate 0.05
    \b
    Then, in another shell:
      export TABLESTORE_MEMORY_AK=memcore-emulator TABLESTORE_MEMORY_SK=memcore-emulator-secret
      memcore config set endpoint http://127.0.0.1:8765
      memcore config set instance_name emulator
      memcore --backend tablestore add "hello from the emulator"
    """
    from memcore_cli.operations.emulation import serve_forever

    state = state_of(ctx)
    serve_forever(state, port=port, latency_ms=latency_ms, fail_rate=fail_rate, database=database)
