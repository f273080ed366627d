"""``reindex``: give every memory a vector from the current embedder (after it changed)."""

import typer

from memcore_cli.wiring.state import state_of


def reindex(ctx: typer.Context) -> None:
    """Embed the memories that lack a vector from the current embedder, with a progress bar.

    Needed after switching the embedded store from lexical to hybrid search (installing
    memcore-sqlite[semantic]) or to another model; TableStore embeds on the server.

    \b
    Examples:
      memcore reindex
      memcore --json reindex
    """
    from memcore.errors import Unsupported
    from memcore.wording import counted

    state = state_of(ctx)
    runtime = state.runtime()
    # Asked of the settings before the store is opened: opening it reaches the service, or
    # creates the embedded database, only for the command to be refused.
    settings = runtime.settings
    if settings.backend != "local":
        raise Unsupported("reindex applies to the local store; TableStore embeds on the server")
    if settings.config.embedder == "none":
        raise Unsupported(
            "no embedder: the config sets embedder none (lexical search only), so there is "
            "nothing to compute vectors with; set embedder to auto (or a model) first"
        )
    # It reads the store: a missing one (a mistyped name) is reported, not made empty.
    store = runtime.ready_store(create=False)
    missing = getattr(store, "missing_vectors", None)
    backfill = getattr(store, "backfill_vectors", None)
    if missing is None or backfill is None:
        raise Unsupported("reindex applies to the local store; TableStore embeds on the server")
    embedder = getattr(store, "embedder", None)
    if embedder is None:
        raise Unsupported(
            "the local store has no embedder (install memcore-sqlite[semantic]), so there is "
            "nothing to compute vectors with"
        )
    total = int(missing(runtime.store_name))
    done = 0
    with state.output.progress("re-embedding", total=total) as advance:

        def step(count: int) -> None:
            nonlocal done
            advance(count - done)
            done = count

        embedded = backfill(runtime.store_name, progress=step)
    if state.json:
        state.output.json({"embedded": embedded, "model": embedder.name})
    else:
        state.output.line(f"re-embedded {counted(embedded, 'memory')} with {embedder.name}")
