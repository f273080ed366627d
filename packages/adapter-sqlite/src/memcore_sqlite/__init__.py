"""memcore-sqlite: the embedded memory store on one SQLite file, lexical or hybrid search.

numpy and onnxruntime are imported only when a store actually embeds or scores vectors.
"""

from memcore_sqlite.backend import choose_embedder, default_path, open_backend
from memcore_sqlite.store import SqliteMemoryStore, TextItem

__all__ = ["SqliteMemoryStore", "TextItem", "choose_embedder", "default_path", "open_backend"]
