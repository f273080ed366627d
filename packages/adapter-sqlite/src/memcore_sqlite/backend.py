"""``open_backend``: how the ``local`` entry point turns a config into a store.

The store module loads in ``open_backend`` only: a host that just picks the embedder early
(to load its model in a thread) does not wait for it.
"""

from __future__ import annotations

import numbers
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memcore import limits
from memcore.config import EMBEDDERS, MemcoreConfig
from memcore.errors import ConfigError, InvalidInput
from memcore.ports import Embedder
from memcore_sqlite.embedders import missing_onnx_requirements
from memcore_sqlite.storage.home_paths import expand_home

if TYPE_CHECKING:
    from memcore_sqlite.store import SqliteMemoryStore

DB_FILE = "memcore.db"
_UNSET: Any = object()


def default_path() -> Path:
    """``$MEMCORE_HOME/memcore.db``, else the platform's user data directory;
    :class:`ConfigError` for a ``MEMCORE_HOME`` in the home of a user this system lacks.
    Spaces around the variable's value are not part of it, as for ``memcore``: kept, the
    library opened another folder (or one under the working directory) than the CLI."""
    home = (os.environ.get("MEMCORE_HOME") or "").strip()
    if home:
        folder = expand_home(home)
        if folder is None:  # ~name of a user this system does not know
            raise ConfigError(
                f"MEMCORE_HOME {home!r} starts with a home folder that does not exist here",
                field="MEMCORE_HOME",
            )
        return folder / DB_FILE
    import platformdirs

    return Path(platformdirs.user_data_dir("memcore", appauthor=False)) / DB_FILE


#: ``local_path`` (as ``path=``) for a database in memory, gone when the store closes: the
#: config's was taken for a file named ``:memory:`` under the data home, which kept every
#: "ephemeral" test's memories for the next run.
IN_MEMORY = ":memory:"


def resolve_path(config: MemcoreConfig, path: Any = None) -> Path:
    """``path`` (the caller's, as Python reads a path), else the config's ``local_path`` (a
    relative one under the data home, as ``memcore`` reads it), else :func:`default_path`."""
    chosen = path if path is not None else config.local_path
    if chosen is None:
        return default_path()
    if not isinstance(chosen, (str, os.PathLike)) or not str(chosen).strip():
        raise ConfigError("local_path must be a file path", field="local_path")
    if str(chosen) == IN_MEMORY:  # SQLite's name for a scratch database: never a file
        return Path(IN_MEMORY)
    problem = limits.path_problem(str(chosen))
    if problem is not None:
        raise ConfigError(f"local_path must be a file path: {problem}", field="local_path")
    expanded = expand_home(chosen)
    if expanded is None:  # ~name of a user this system does not know
        raise ConfigError(
            f"local_path {str(chosen)!r} starts with a home folder that does not exist here",
            field="local_path",
        )
    if path is None and not expanded.is_absolute():
        return default_path().parent / expanded
    return expanded


def choose_embedder(setting: str, *, model_dir: Any = None) -> Embedder | None:
    """``auto``: ONNX when its extra is installed, else lexical-only; ``onnx``: required;
    ``multilingual``: the multilingual extra's model (e5), ``multilingual-use``: the
    multilingual-use extra's (the Universal Sentence Encoder), each required."""
    if setting not in EMBEDDERS:
        raise ConfigError(
            f"unknown embedder {setting!r}; use {', '.join(EMBEDDERS)}", field="embedder"
        )
    if setting == "none":
        return None
    if setting == "multilingual":
        from memcore_sqlite.embedders.e5 import E5Embedder

        return E5Embedder()
    if setting == "multilingual-use":
        from memcore_sqlite.embedders.multilingual import MultilingualEmbedder

        return MultilingualEmbedder()
    if setting == "auto" and model_dir is None and missing_onnx_requirements():
        return None
    from memcore_sqlite.embedders.onnx import OnnxEmbedder

    return OnnxEmbedder(model_dir)


def open_backend(config: MemcoreConfig, **options: Any) -> SqliteMemoryStore:
    """Open the embedded store: ``path=``, ``embedder=`` (an Embedder or None), ``model_dir=``,
    and :class:`SqliteMemoryStore` keywords (``location_advice`` among them) override the
    config. ``model=`` (a :class:`~memcore_sqlite.chat_model.client.ModelSettings`) overrides
    ``MEMCORE_MODEL_*`` from the environment: the user's own model for fact extraction and
    dream review."""
    _check_options(options)
    explicit = options.pop("path", None)
    path = resolve_path(config, explicit)
    if explicit is None and config.local_path is not None:
        # Placed by the config: MEMCORE_HOME would not move it.
        options.setdefault("location_advice", "set local_path to a file in a writable folder")
    model_dir = options.pop("model_dir", None)
    embedder = options.pop("embedder", _UNSET)
    model = options.pop("model", _UNSET)
    if embedder is _UNSET:
        embedder = choose_embedder(config.embedder, model_dir=model_dir)
    allowed = {
        "busy_timeout",
        "synchronous",
        "vector_cache_rows",
        "defer_vectors",
        "location_advice",
    }
    unknown = sorted(set(options) - allowed)
    if unknown:
        raise ConfigError(f"unknown option for the local backend: {unknown[0]}", field=unknown[0])
    from memcore_sqlite.chat_model.client import ModelSettings, model_strategies
    from memcore_sqlite.store import SqliteMemoryStore

    extractor, reviewer = model_strategies(ModelSettings.from_env() if model is _UNSET else model)
    return SqliteMemoryStore(
        path, embedder=embedder, extractor=extractor, dream_reviewer=reviewer, **options
    )


def _check_options(options: dict[str, Any]) -> None:
    """Refuse an option of the wrong kind here, naming it: as given, it would fail deep in
    the store as a TypeError, some only at the first write or search."""

    def wrong(name: str, what: str) -> InvalidInput:
        value = options[name]
        return InvalidInput(f"{name} must be {what}, not {type(value).__name__}", field=name)

    def number(value: Any) -> bool:  # numpy's numbers too: the store works with them
        return isinstance(value, numbers.Real) and not isinstance(value, bool)

    if "busy_timeout" in options and not number(options["busy_timeout"]):
        raise wrong("busy_timeout", "a number of seconds")
    if "vector_cache_rows" in options:
        rows = options["vector_cache_rows"]
        if not isinstance(rows, numbers.Integral) or isinstance(rows, bool) or rows < 0:
            raise wrong("vector_cache_rows", "a whole number of rows, 0 or more")
    if "defer_vectors" in options and not isinstance(options["defer_vectors"], bool):
        raise wrong("defer_vectors", "True or False")
    if "location_advice" in options and not isinstance(options["location_advice"], str):
        raise wrong("location_advice", "a string")
    embedder = options.get("embedder")
    # The store reads the dimension at once anyway; a wrapper that loads lazily keeps doing so.
    if embedder is not None and not (
        callable(getattr(embedder, "embed", None)) and number(getattr(embedder, "dimension", None))
    ):
        raise wrong("embedder", "an Embedder (embed, dimension) or None")
    model_dir = options.get("model_dir")
    if model_dir is not None and not isinstance(model_dir, (str, os.PathLike)):
        raise wrong("model_dir", "a folder path")
    model = options.get("model")
    if model is not None:
        from memcore_sqlite.chat_model.client import ModelSettings

        if not isinstance(model, ModelSettings):
            raise wrong("model", "a ModelSettings or None")
