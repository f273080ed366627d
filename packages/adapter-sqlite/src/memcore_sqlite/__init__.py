"""memcore-sqlite: the embedded memory store on one SQLite file, lexical or hybrid search.

numpy and onnxruntime are imported only when a store actually embeds or scores vectors, and
the store itself only on first use of these names: hosts that need only
:mod:`memcore_sqlite.storage.file_modes` (the Hermes plugin at start-up) stay import-light.

The folders, from the top down (each may import only those below it; the import contract in
the repository's pyproject.toml checks it): ``backend`` (the entry point), ``chat_model`` and
``embedders`` (strategies handed to the store), ``store``, ``dream``, ``operations`` (writes
and reads, each write one transaction), ``search`` (pipeline, ranking, fusion), ``lexical``
and ``vector`` (the two signals), ``storage`` (the SQLite file), ``emoji`` (which characters
both signals take for emoji).
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcore_sqlite.backend import choose_embedder, default_path, open_backend
    from memcore_sqlite.store import SqliteMemoryStore, TextItem

_EXPORTS = {
    "SqliteMemoryStore": "memcore_sqlite.store",
    "TextItem": "memcore_sqlite.store",
    "choose_embedder": "memcore_sqlite.backend",
    "default_path": "memcore_sqlite.backend",
    "open_backend": "memcore_sqlite.backend",
}

__all__ = ["SqliteMemoryStore", "TextItem", "choose_embedder", "default_path", "open_backend"]


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'memcore_sqlite' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value
