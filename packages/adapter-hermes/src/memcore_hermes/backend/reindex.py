"""Re-embedding after the embedder changed (lexical to hybrid, or another model).

Only the local store keeps vectors of its own; TableStore embeds on the server. On start the
provider re-embeds in the background; ``hermes tablestore-mem reindex`` does it in the
foreground with a progress bar.
"""

from __future__ import annotations

import logging
import os
import threading
from collections.abc import Callable
from typing import Any

from memcore.errors import MemcoreError, Unsupported
from memcore.wording import counted

logger = logging.getLogger(__name__)


def missing_vectors(store: Any, store_name: str) -> int | None:
    """Memories lacking a vector from the current embedder; None when not applicable."""
    count = getattr(store, "missing_vectors", None)
    if count is None or getattr(store, "embedder", None) is None:
        return None
    try:
        return int(count(store_name))
    except MemcoreError:
        return None


def check_reindexable(store: Any) -> None:
    """:class:`Unsupported` where a re-embedding means nothing (TableStore, or no embedder)."""
    if getattr(store, "backfill_vectors", None) is None:
        raise Unsupported("reindex applies to the local store; TableStore embeds on the server")
    if getattr(store, "embedder", None) is None:
        from memcore_sqlite.embedders import ONNX_REQUIREMENTS

        packages = " ".join(module.replace("_", "-") for module in ONNX_REQUIREMENTS)
        raise Unsupported(
            f"the local store has no embedder: install {packages} "
            "(see `hermes tablestore-mem doctor`)"
        )


def reindex(store: Any, store_name: str, progress: Callable[[int], None] | None = None) -> int:
    """Embed every memory that lacks a vector; :class:`Unsupported` where that means nothing."""
    check_reindexable(store)
    return int(store.backfill_vectors(store_name, progress=progress))


#: The background re-embeddings running in this process, by database file and store: a
#: gateway opens a store per session on one file, and each session's start would otherwise
#: embed every memory again beside the others.
_running: dict[tuple[str, str], threading.Thread] = {}
_running_lock = threading.Lock()


def _file_key(store: Any, store_name: str) -> tuple[str, str]:
    path = getattr(store, "path", None)
    where = os.path.realpath(path) if isinstance(path, str) and path != ":memory:" else None
    return (where or f"store:{id(store)}", store_name)


def start_background_reindex(store: Any, store_name: str) -> threading.Thread | None:
    """Re-embed in a daemon thread when some memories lack a vector; None when none do, or
    when another session of this process is re-embedding the same file already."""
    key = _file_key(store, store_name)
    with _running_lock:
        running = _running.get(key)
        if running is not None and running.is_alive():
            return None
    if not missing_vectors(store, store_name):
        return None

    def run() -> None:
        try:
            done = reindex(store, store_name)
            logger.info("tablestore-mem: re-embedded %s", counted(done, "memory"))
        except MemcoreError as exc:  # the store closed under us, or the model failed
            logger.info("tablestore-mem: background re-embedding stopped (%s)", exc)
        except Exception as exc:  # a foreign error must not kill the process's thread silently
            logger.warning(
                "tablestore-mem: background re-embedding failed (%s)", type(exc).__name__
            )
        finally:
            with _running_lock:
                if _running.get(key) is threading.current_thread():
                    del _running[key]

    thread = threading.Thread(target=run, name="tablestore-mem-reindex", daemon=True)
    with _running_lock:
        running = _running.get(key)
        if running is not None and running.is_alive():
            return None
        _running[key] = thread
        thread.start()
    return thread
