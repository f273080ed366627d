"""Content digests of 16 bytes (schema 9): a repeat is still found by its digest, a version 8
file's 32-byte digests are cut to the same 16, and two texts that share a digest stay two
memories (the text decides, not the digest alone)."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.operations import writes
from memcore_sqlite.storage.rows import HASH_BYTES

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")


def _texts(path: Path) -> list[str]:
    conn = sqlite3.connect(path)
    try:
        return [r[0] for r in conn.execute("SELECT text FROM memories ORDER BY seq")]
    finally:
        conn.close()


def test_a_version_8_files_digests_are_cut_and_repeats_still_found(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(ALICE, f"fact {i}") for i in range(50)])
    conn = sqlite3.connect(path)
    # Version 8 kept the whole SHA-256 digest; its first 16 bytes are this release's.
    rows = conn.execute("SELECT seq, content_hash FROM memories").fetchall()
    conn.executemany(
        "UPDATE memories SET content_hash = ? WHERE seq = ?",
        [(bytes(digest) + bytes(range(16)), seq) for seq, digest in rows],
    )
    conn.commit()
    conn.execute("PRAGMA user_version = 8")
    conn.close()
    with SqliteMemoryStore(path) as store:
        store.add_many(STORE, [TextItem(ALICE, f"fact {i}") for i in range(40, 60)])
    conn = sqlite3.connect(path)
    lengths = {r[0] for r in conn.execute("SELECT length(content_hash) FROM memories")}
    conn.close()
    assert lengths == {HASH_BYTES}
    assert _texts(path) == [f"fact {i}" for i in range(60)]  # 40-49 were repeats


def test_two_texts_sharing_a_digest_stay_two_memories(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writes, "content_hash", lambda scope, text: b"\x00" * HASH_BYTES)
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path) as store:
        store.ensure_store(STORE)
        store.add_text(STORE, ALICE, "the first fact", sync=True)
        store.add_text(STORE, ALICE, "a second, different fact", sync=True)
        store.add_text(STORE, ALICE, "the first fact", sync=True)  # a true repeat
    assert _texts(path) == ["the first fact", "a second, different fact"]
