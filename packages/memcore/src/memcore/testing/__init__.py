"""Test support for memcore and its adapters: a realistic fake store, a deterministic embedder,
and the contract suite every ``MemoryStore`` adapter must pass (``memcore.testing.contract``).

The top of the core: it may import any core module (the suite drives the facades), and no
other core module imports it."""

from memcore.testing.embedder import CountingEmbedder, HashingEmbedder
from memcore.testing.fake import InMemoryMemoryStore
from memcore.testing.faults import FaultPlan

__all__ = ["CountingEmbedder", "FaultPlan", "HashingEmbedder", "InMemoryMemoryStore"]
