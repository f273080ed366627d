"""The in-memory fake store: what it holds (``state``), how it reads a text (``reading``),
scores a hit (``ranking``) and dreams (``dreaming``), and the store itself (``store``)."""

from memcore.testing.fake.reading import tokens
from memcore.testing.fake.store import InMemoryMemoryStore

__all__ = ["InMemoryMemoryStore", "tokens"]
