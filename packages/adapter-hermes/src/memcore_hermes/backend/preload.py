"""The local embedding model, loaded in a thread from the moment Hermes starts a command that
embeds (``search``, ``reindex``, ``add --sync``).

Hermes imports our ``cli`` to build its argument tree, then loads its bundled plugins and
parses the command line before it calls the handler: a few hundred milliseconds of its own.
The model (numpy, onnxruntime, tokenizers and the ONNX session) loads meanwhile; onnxruntime
releases the GIL while it builds the session, so that part runs on the other core. The store
opened later gets this very embedder, whose first ``embed`` waits for the load to end.

Only the third-party model modules load in the thread: the config is read and the embedder
chosen on the calling thread, and nothing else imports numpy before the load is over (two
threads importing numpy at once can leave it half-initialised).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memcore.config import MemcoreConfig
    from memcore.ports import Embedder
    from memcore_hermes.config.home import HermesHome

logger = logging.getLogger(__name__)

_lock = threading.Lock()
_current: ModelPreload | None = None


class ModelPreload:
    """One embedder being loaded by a (non-daemon) thread, for the config it was chosen for."""

    def __init__(self, setting: str, embedder: Embedder) -> None:
        self.setting = setting
        self.embedder = embedder
        self._thread = threading.Thread(
            target=self._load, name="tablestore-mem-model-load", daemon=False
        )
        self._thread.start()

    def _load(self) -> None:
        warm_up = getattr(self.embedder, "warm_up", None)
        try:
            if warm_up is not None:
                warm_up()
        except Exception as exc:  # the first embed loads again and reports it
            logger.debug("tablestore-mem: early model load failed (%s)", type(exc).__name__)

    def wait(self) -> None:
        """Block until the load is over (a process must not exit while the session builds)."""
        self._thread.join()

    def embedder_for(self, config: MemcoreConfig) -> Embedder | None:
        """The embedder for a local store of ``config``; None when it would choose another."""
        if config.backend != "local" or config.embedder != self.setting:
            return None
        return _Loading(self)


class _Loading:
    """The preloaded embedder; ``embed`` waits for the load (from whichever thread calls it)."""

    def __init__(self, preload: ModelPreload) -> None:
        self._preload = preload
        self._embedder = preload.embedder

    @property
    def dimension(self) -> int:
        return self._embedder.dimension

    @property
    def name(self) -> str:
        return self._embedder.name

    @property
    def scripts(self) -> frozenset[str] | None:
        """The scripts the model covers, which weigh its vector signal in a search."""
        return getattr(self._embedder, "scripts", None)

    def warm_up(self) -> None:
        self._preload.wait()

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self._preload.wait()
        return self._embedder.embed(texts)

    def __repr__(self) -> str:
        return f"preloaded {self._embedder.name}"


def start(home: HermesHome | None = None) -> ModelPreload | None:
    """Start loading the model the configured local store would use; None when it has none
    (another backend, ``embedder: none``, the semantic packages missing, a broken config:
    the command itself then reports what it must)."""
    global _current
    with _lock:
        if _current is not None:
            return _current
        try:
            _current = for_home(home)
        except Exception as exc:  # never let an early start break the command
            logger.debug("tablestore-mem: no early model load (%s)", type(exc).__name__)
        return _current


def for_home(home: HermesHome | None = None) -> ModelPreload | None:
    """A load of the model the local store in ``home`` would use (None when it has none)."""
    from memcore_hermes.config.home import HermesHome

    config = (home or HermesHome()).load_config()
    if config.backend != "local" or config.embedder == "none":
        return None
    from memcore_sqlite.backend import choose_embedder

    embedder = choose_embedder(config.embedder)
    if embedder is None:
        return None
    return ModelPreload(config.embedder, embedder)


def current() -> ModelPreload | None:
    """The load started in this process, if any."""
    return _current


def finish() -> None:
    """Wait for a load still running (called before the command returns to Hermes)."""
    preload = _current
    if preload is not None:
        preload.wait()


__all__ = ["ModelPreload", "current", "finish", "for_home", "start"]
