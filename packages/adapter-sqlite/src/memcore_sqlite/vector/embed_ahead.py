"""Embedding the next batch of a bulk write while the current one is written.

A bulk import alternates embedding (both cores) and its SQLite write (one core); with the
next batch embedding in the background, the write no longer leaves a core idle. Only an exact
guess is used: the batch the caller announced, asked for as announced. Anything else waits
for the guess to finish and is embedded as usual, so the embedder never runs twice at once.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any

Embed = Callable[[list[str]], list[Any]]


class EmbedAhead:
    """At most one batch embedding in a background thread, for the next call to pick up."""

    def __init__(self) -> None:
        self._pool: ThreadPoolExecutor | None = None
        self._pending: tuple[list[str], Future[list[Any]]] | None = None

    def start(self, texts: list[str], embed: Embed) -> None:
        """Begin embedding ``texts`` (the next batch) in the background."""
        self.settle()
        if self._pool is None:
            self._pool = ThreadPoolExecutor(1, thread_name_prefix="memcore-embed-ahead")
        self._pending = (texts, self._pool.submit(embed, texts))

    def take(self, texts: list[str]) -> list[Any] | None:
        """The vectors of ``texts`` when they are the batch begun ahead (its error, if it
        failed, is raised here, where the caller would have embedded); else ``None``."""
        if self._pending is None:
            return None
        guessed, future = self._pending
        if guessed != texts:
            self.settle()
            return None
        self._pending = None
        return future.result()

    def settle(self) -> None:
        """Let a batch begun ahead finish, unused (its error too)."""
        pending, self._pending = self._pending, None
        if pending is not None:
            with contextlib.suppress(Exception):
                pending[1].result()

    def close(self) -> None:
        """Wait for the background thread: onnxruntime must not be mid-run at exit."""
        self.settle()
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None
