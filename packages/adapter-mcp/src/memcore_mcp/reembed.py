"""Vectors the server's store lacks, computed in the background after a start.

The embedded store keeps its own vectors: after the embedder changed, or on a store an older
release wrote (which embedded each text's speaker label too), some memories have none from the
current model or a stale one. ``memcore reindex`` gives them theirs in the foreground; a
long-lived server does it on its own, as the Hermes provider does, so nobody has to stop it.
Store-wide maintenance: it returns no memory to anyone, so it is not a tenant's use case.
"""

from __future__ import annotations

import logging
import threading

from memcore.wording import counted
from memcore_cli.wiring.runtime import Runtime

logger = logging.getLogger(__name__)


def start(runtime: Runtime) -> threading.Thread | None:
    """Re-embed in a daemon thread when some memories need it; None when none do, or when the
    store embeds on its own side (TableStore) or has no embedder."""
    store = runtime.store
    missing = getattr(store, "missing_vectors", None)
    backfill = getattr(store, "backfill_vectors", None)
    if missing is None or backfill is None or getattr(store, "embedder", None) is None:
        return None
    name = runtime.store_name
    if not missing(name):
        return None

    def run() -> None:
        try:
            done = backfill(name)
            logger.info("memcore mcp: re-embedded %s", counted(done, "memory"))
        except Exception as exc:  # the store closed under it (a server stopping), a file error
            logger.info("memcore mcp: background re-embedding stopped (%s)", type(exc).__name__)

    thread = threading.Thread(target=run, name="memcore-mcp-reembed", daemon=True)
    thread.start()
    return thread
