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
        expected = np.asarray(HashingEmbedder().embed([text])[0], dtype="<f2")  # as stored
        assert np.array_equal(np.frombuffer(stored[mid], dtype="<f2"), expected), text


def _stored_vectors(path: Path) -> dict[str, bytes]:
    conn = sqlite3.connect(path)
    try:
        return dict(
            conn.execute(
                "SELECT m.text, v.vector FROM memories m JOIN memory_vectors v ON v.seq = m.seq"
            ).fetchall()
        )
    finally:
        conn.close()


class FailingEmbedder(RecordingEmbedder):
    """Fails on any batch holding ``poison``."""

    def __init__(self, poison: str) -> None:
        super().__init__()
        self.poison = poison

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if self.poison in texts:
            raise RuntimeError("boom")
        return super().embed(texts)


def test_the_next_batch_embeds_while_this_one_is_written_and_lands_only_when_added(
    tmp_path: Path,
) -> None:
    first = [TextItem(ALICE, t) for t in ("one", "two", "three")]
    second = [TextItem(ALICE, t) for t in ("four", "five")]
    embedder = RecordingEmbedder()
    with SqliteMemoryStore(tmp_path / "s.db", embedder=embedder) as store:
        store.ensure_store("mem")
        store.add_many("mem", first, ahead=second)
        assert set(_stored_vectors(tmp_path / "s.db")) == {"one", "two", "three"}
        store.add_many("mem", second)
    # The second batch was embedded once, ahead, and used as it was.
    assert embedder.calls == [["one", "two", "three"], ["four", "five"]]
    with SqliteMemoryStore(tmp_path / "plain.db", embedder=HashingEmbedder()) as plain:
        plain.ensure_store("mem")
        plain.add_many("mem", first)
        plain.add_many("mem", second)
    assert _stored_vectors(tmp_path / "s.db") == _stored_vectors(tmp_path / "plain.db")


def test_a_batch_other_than_the_one_announced_is_embedded_as_usual(tmp_path: Path) -> None:
    embedder = RecordingEmbedder()
    with SqliteMemoryStore(tmp_path / "s.db", embedder=embedder) as store:
        store.ensure_store("mem")
        store.add_many("mem", [TextItem(ALICE, "one")], ahead=[TextItem(ALICE, "guess")])
        store.add_many("mem", [TextItem(ALICE, "actual")])
    assert embedder.calls == [["one"], ["guess"], ["actual"]]
    assert set(_stored_vectors(tmp_path / "s.db")) == {"one", "actual"}


def test_a_failure_embedding_ahead_is_raised_by_the_add_of_that_batch(tmp_path: Path) -> None:
    from memcore.errors import Unavailable

    embedder = FailingEmbedder("poison")
    with SqliteMemoryStore(tmp_path / "s.db", embedder=embedder) as store:
        store.ensure_store("mem")
        store.add_many("mem", [TextItem(ALICE, "fine")], ahead=[TextItem(ALICE, "poison")])
        try:
            store.add_many("mem", [TextItem(ALICE, "poison")])
        except Unavailable as exc:  # retryable: the embedder failed, not the text
            assert exc.message == "the embedder failed: RuntimeError"
        else:  # pragma: no cover - the test fails here
            raise AssertionError("the failed batch was added")
    assert set(_stored_vectors(tmp_path / "s.db")) == {"fine"}
