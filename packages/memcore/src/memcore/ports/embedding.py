"""The embedding port: text to vectors, for a local store's semantic search."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class Embedder(Protocol):
    """Turns text into unit-length vectors; used by local stores for semantic search."""

    @property
    def dimension(self) -> int: ...

    @property
    def name(self) -> str: ...

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, each of length :attr:`dimension`."""
        ...
