"""Vectors are stored as float16 (schema 9): a version 8 file's float32 vectors move over,
verified, or the file is left as it was; the search is exact against what is stored."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from memcore.errors import InvalidInput, ProtocolError
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.storage.schema import SCHEMA_VERSION
from memcore_sqlite.vector import code_pages
from memcore_sqlite.vector.quantize import encode

from .test_sqlite_exact_search import corpus, stored_rows
from .test_sqlite_two_stage import DIM, TableEmbedder

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")


def _filled(path: Path, n: int = 700) -> tuple[list[str], Any, Any]:
    texts, rows, query, _ = corpus("templated", n, 11)
    with SqliteMemoryStore(path, embedder=TableEmbedder(dict(zip(texts, rows)))) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(ALICE, t) for t in texts])
    return texts, rows, query


def _as_version_8(path: Path, texts: list[str], rows: Any) -> None:
    """What version 8 wrote: each vector as float32 (the embedder's values, not rounded), and
    code pages with sign bits."""
    conn = sqlite3.connect(path)
    by_text = dict(zip(texts, rows))
    conn.executemany(
        "UPDATE memory_vectors SET vector = ? WHERE seq = ?",
        [
            (np.asarray(by_text[text], dtype="<f4").tobytes(), seq)
            for seq, text in conn.execute("SELECT seq, text FROM memories").fetchall()
        ],
    )
    conn.execute("UPDATE vector_pages SET bits = zeroblob(length(seqs))")
    conn.commit()
    conn.execute("PRAGMA user_version = 8")
    conn.close()


def _snapshot(path: Path) -> tuple[Any, ...]:
    conn = sqlite3.connect(path)
    try:
        return (
            conn.execute("PRAGMA user_version").fetchone()[0],
            conn.execute("SELECT seq, model, vector FROM memory_vectors ORDER BY seq").fetchall(),
            conn.execute("SELECT * FROM vector_pages ORDER BY id").fetchall(),
            sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master")),
        )
    finally:
        conn.close()


def _two_stage(path: Path, texts: list[str], rows: Any) -> SqliteMemoryStore:
    store = SqliteMemoryStore(path, embedder=TableEmbedder(dict(zip(texts, rows))))
    assert store._tx.vectors is not None
    store._tx.vectors.exact_rows = 0
    return store


def _exact_texts(texts: list[str], matrix: Any, query: Any, k: int) -> list[str]:
    scores = matrix @ query
    return [texts[i] for i in np.lexsort((-np.arange(len(texts)), -scores))[:k]]


def test_new_vectors_are_stored_as_float16_and_searched_exactly(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    texts, rows, query = _filled(path)
    stored = stored_rows(path, texts)
    assert np.array_equal(stored, np.asarray(rows, dtype="<f2").astype(np.float32))
    with _two_stage(path, texts, rows) as store:
        hits = store.search_vector(STORE, ALICE.tenant_pattern(), "q", query, mode="vector")
    assert [h.memory.text for h in hits] == _exact_texts(texts, stored, query, 10)


def test_a_version_8_file_gets_float16_vectors_and_codes_made_from_them(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    texts, rows, query = _filled(path)
    _as_version_8(path, texts, rows)
    conn = sqlite3.connect(path)
    assert {len(r[0]) for r in conn.execute("SELECT vector FROM memory_vectors")} == {4 * DIM}
    conn.close()
    with _two_stage(path, texts, rows) as store:
        hits = store.search_vector(
            STORE, ALICE.tenant_pattern(), "q", query, mode="vector", top_k=30
        )
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        assert {len(r[0]) for r in conn.execute("SELECT vector FROM memory_vectors")} == {2 * DIM}
        assert {r[0] for r in conn.execute("SELECT length(bits) FROM vector_pages")} == {0}
        names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        assert "memory_vectors_f16" not in names
        sid = conn.execute("SELECT id FROM stores WHERE name = ?", (STORE,)).fetchone()[0]
        codes = code_pages.load(
            conn, sid, TableEmbedder.name, ("app", "alice", "agent", "run"), DIM
        )
        seqs = [r[0] for r in conn.execute("SELECT seq FROM memories ORDER BY seq")]
    finally:
        conn.close()
    stored = stored_rows(path, texts)
    assert np.array_equal(stored, np.asarray(rows, dtype="<f2").astype(np.float32))
    # The bounds are those of the stored vectors: their codes, not the float32 originals'.
    want = encode(np.asarray(seqs, dtype=np.int64), stored)
    assert codes.seqs.tolist() == seqs
    assert np.array_equal(codes.q8, want.q8) and np.array_equal(codes.scales, want.scales)
    assert [h.memory.text for h in hits] == _exact_texts(texts, stored, query, 30)


def test_a_vector_float16_cannot_hold_leaves_a_version_8_file_as_it_was(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    texts, rows, _ = _filled(path, 300)
    rows = np.array(rows)
    rows[7, 3] = 1e6  # beyond float16's largest value
    _as_version_8(path, texts, rows)
    before = _snapshot(path)
    with pytest.raises(ProtocolError, match="left as it was"):
        SqliteMemoryStore(path, embedder=TableEmbedder(dict(zip(texts, rows))))
    assert _snapshot(path) == before


def test_a_file_set_back_to_version_8_after_9_is_not_converted_twice(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    texts, rows, query = _filled(path)
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 8")
    conn.close()
    with _two_stage(path, texts, rows) as store:
        hits = store.search_vector(STORE, ALICE.tenant_pattern(), "q", query, mode="vector")
    stored = stored_rows(path, texts)
    assert np.array_equal(stored, np.asarray(rows, dtype="<f2").astype(np.float32))
    assert [h.memory.text for h in hits] == _exact_texts(texts, stored, query, 10)


def test_a_vector_too_large_for_float16_is_refused_and_nothing_is_written(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    big = np.zeros(DIM, dtype=np.float32)
    big[0] = 1e6
    small = np.eye(1, DIM, dtype=np.float32)[0]
    with SqliteMemoryStore(path, embedder=TableEmbedder({"big": big, "small": small})) as store:
        store.ensure_store(STORE)
        with pytest.raises(InvalidInput, match="65504"):
            store.add_many(STORE, [TextItem(ALICE, "small"), TextItem(ALICE, "big")])
        assert not store.list_memories(STORE, ALICE.tenant_pattern(), limit=10).items
