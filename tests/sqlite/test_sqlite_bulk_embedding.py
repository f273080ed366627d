"""A batch is embedded once per distinct text, shortest first, and each memory keeps its own vector."""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem

ALICE = Scope("app", "alice", "agent", "run")
BOB = Scope("app", "bob", "agent", "run")


class RecordingEmbedder(HashingEmbedder):
    """The hashing embedder, keeping every batch it was asked for."""

    def __init__(self) -> None:
        super().__init__()
        self.calls: list[list[str]] = []

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        return super().embed(texts)


def test_add_many_embeds_each_distinct_text_once_and_keeps_each_memorys_vector(
    tmp_path: Path,
) -> None:
    embedder = RecordingEmbedder()
    texts = [
        "a rather long memory about the user's trip to the mountains last winter",
        "tea",
        "the user prefers green tea in the morning",
        "tea",  # the same text in another scope: one embedding, two memories
    ]
    scopes = [ALICE, ALICE, ALICE, BOB]
    with SqliteMemoryStore(tmp_path / "s.db", embedder=embedder) as store:
        store.ensure_store("mem")
        ids = store.add_many("mem", [TextItem(s, t) for s, t in zip(scopes, texts, strict=True)])
    assert embedder.calls == [sorted(dict.fromkeys(texts), key=len)]
    assert len(set(ids)) == 4
    conn = sqlite3.connect(tmp_path / "s.db")
    stored = dict(
        conn.execute(
            "SELECT m.id, v.vector FROM memories m JOIN memory_vectors v ON v.seq = m.seq"
        ).fetchall()
    )
    conn.close()
    for mid, text in zip(ids, texts, strict=True):
        expected = np.asarray(HashingEmbedder().embed([text])[0], dtype="<f4")
        assert np.array_equal(np.frombuffer(stored[mid], dtype="<f4"), expected), text
