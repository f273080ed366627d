"""The ports: what the core needs from the outside world, as ``typing.Protocol``, one module
per family. Adapters implement these; the core and its fake never import an adapter.

- :mod:`~memcore.ports.store`: the Memory Store surface (``MemoryStore``, ``BulkAdd``,
  ``DreamUndo``, ``KeyRemoval``, ``MemoryLookup``, ``MessageLog``, ``MessageMove``,
  ``NeighbourTurns``, ``SearchWarmup``, ``UnclaimedDelete``, ``VersionHistory``,
  ``ProgressCallback``)
- :mod:`~memcore.ports.backends`: reaching a backend (``BackendFactory``, ``Provisioner``,
  ``InstanceFacts``)
- :mod:`~memcore.ports.embedding`: ``Embedder``
- :mod:`~memcore.ports.models`: the user's model and what a store asks of it (``ChatModel``,
  ``FactExtractor``, ``DreamReviewer``)

Ports import only values, errors, scopes, the configuration and the dream planner's value
types (the last two for their signatures only, so a host that opens a store and searches it
loads neither); services and facades import ports, never the other way round.
"""

from memcore.ports.backends import BackendFactory, InstanceFacts, Provisioner
from memcore.ports.embedding import Embedder
from memcore.ports.models import ChatModel, DreamReviewer, FactExtractor
from memcore.ports.store import (
    BulkAdd,
    DreamUndo,
    KeyRemoval,
    MemoryLookup,
    MemoryStore,
    MessageLog,
    MessageMove,
    NeighbourTurns,
    ProgressCallback,
    SearchWarmup,
    UnclaimedDelete,
    VersionHistory,
)

__all__ = [
    "BackendFactory",
    "BulkAdd",
    "ChatModel",
    "DreamReviewer",
    "DreamUndo",
    "Embedder",
    "FactExtractor",
    "InstanceFacts",
    "KeyRemoval",
    "MemoryLookup",
    "MemoryStore",
    "MessageLog",
    "MessageMove",
    "NeighbourTurns",
    "ProgressCallback",
    "Provisioner",
    "SearchWarmup",
    "UnclaimedDelete",
    "VersionHistory",
]
