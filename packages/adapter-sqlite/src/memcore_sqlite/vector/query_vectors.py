"""The vectors of the last few queries, so a query asked again is not embedded again.

A query's embedding is most of a hybrid search's time on a busy machine (the model runs on
the searching thread, on a core it shares with the write lane and every other process): in
an agent's loop the same message is searched more than once (a retried turn, the recall
and the model's own search tool, a question asked again), and each repeat paid it in full.
The vector depends only on the text and the store's embedder, which never changes, so a
repeat gets the same vector and the same hits.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Sequence
from typing import Any

#: Queries kept (a 384-dimension vector is 1.5 KB).
SIZE = 128


class QueryVectors:
    """A thread-safe LRU of query text to its (read-only) vector."""

    def __init__(self, size: int = SIZE) -> None:
        self.size = size
        self._vectors: OrderedDict[str, Any] = OrderedDict()
        self._lock = threading.Lock()

    def vector(self, query: str, embed: Callable[[Sequence[str]], list[Any] | None]) -> Any:
        """The vector of ``query``, embedded with ``embed`` when not kept (None without one)."""
        with self._lock:
            kept = self._vectors.get(query)
            if kept is not None:
                self._vectors.move_to_end(query)
                return kept
        vectors = embed([query])
        if not vectors:
            return None
        vector = vectors[0]
        vector.flags.writeable = False  # shared by every search of this text
        with self._lock:
            self._vectors[query] = vector
            while len(self._vectors) > self.size:
                self._vectors.popitem(last=False)
        return vector
