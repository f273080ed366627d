"""A store written before the speaker's label left the vector (schema 10) gets its labelled
rows' vectors replaced: counted as missing, re-embedded by the backfill, served meanwhile by
their old vectors, and never re-embedded twice."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

import memcore.speakers
from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.storage.schema import SCHEMA_VERSION

STORE = "mem"
CHAT = Scope("dlg", "c1", "agent", "run")
LABELLED = ["Priya: Finally.", "[Sam] band practice at eight", "Note: buy milk"]
PLAIN = ["plain text about tea", "10:30 standup", "http://example.com: a link", "note: lower case"]


def _older_release(path: Path, older: Any, stores: tuple[str, ...] = (STORE,)) -> dict[str, str]:
    """A schema-10 file as the last release wrote it: every text embedded whole, label and
    all. Returns text -> id (of the first store)."""
    texts = LABELLED + PLAIN
    with older.writing(), _opened(path) as store:
        for name in stores:
            store.ensure_store(name)
        ids = [store.add_many(n, [TextItem(CHAT, t) for t in texts]) for n in stores]
    older.leave(path)
    return dict(zip(texts, ids[0]))


def _opened(path: Path) -> SqliteMemoryStore:
    return SqliteMemoryStore(path, embedder=HashingEmbedder(64))


def _rows(path: Path, sql: str) -> list[Any]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _vectors(path: Path) -> dict[str, bytes]:
    return dict(
        _rows(path, "SELECT m.text, v.vector FROM memories m JOIN memory_vectors v USING (seq)")
    )


def _stale(path: Path) -> list[str]:
    return [
        r[0] for r in _rows(path, "SELECT m.text FROM stale_vectors JOIN memories m USING (seq)")
    ]


@pytest.fixture
def upgraded(tmp_path: Path, older_release: Any) -> tuple[Path, dict[str, str]]:
    path = tmp_path / "m.db"
    return path, _older_release(path, older_release)


def _as_stored(store: SqliteMemoryStore, text: str) -> bytes:
    assert store._tx.vectors is not None
    vec = store._tx.embed([text])
    assert vec is not None
    return bytes(store._tx.vectors.to_blob(vec[0]))


def test_the_upgrade_lists_exactly_the_labelled_rows(
    upgraded: tuple[Path, dict[str, str]],
) -> None:
    path, _ = upgraded
    with _opened(path) as store:
        assert store.missing_vectors(STORE) == len(LABELLED)
    assert _rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    assert sorted(_stale(path)) == sorted(LABELLED)


def test_the_backfill_re_embeds_what_was_said_once_and_leaves_the_rest(
    upgraded: tuple[Path, dict[str, str]],
) -> None:
    path, _ = upgraded
    before = _vectors(path)
    with _opened(path) as store:
        counts: list[int] = []
        assert store.backfill_vectors(STORE, progress=counts.append) == len(LABELLED)
        assert counts == [len(LABELLED)]
        assert store.missing_vectors(STORE) == 0
        assert store.backfill_vectors(STORE) == 0  # never twice
        after = _vectors(path)
        for text in LABELLED:
            assert after[text] != before[text]
            assert after[text] == _as_stored(store, memcore.speakers.spoken(text))
        for text in PLAIN:
            assert after[text] == before[text]
    assert _stale(path) == []


def test_stale_vectors_serve_searches_until_replaced(
    upgraded: tuple[Path, dict[str, str]],
) -> None:
    path, _ = upgraded
    with _opened(path) as store:
        hits = store.search(STORE, CHAT.tenant_pattern(), "Priya: Finally.", mode="vector")
        assert store.missing_vectors(STORE) == len(LABELLED)
    # The old vector of the same text, label and all: the exact match comes first.
    assert hits[0].memory.text == "Priya: Finally."


def test_a_rewrite_or_a_delete_takes_a_row_off_the_list(
    upgraded: tuple[Path, dict[str, str]],
) -> None:
    path, ids = upgraded
    with _opened(path) as store:
        store.update_memory(STORE, CHAT, ids["Priya: Finally."], text="Priya: At last.")
        store.delete_memory(STORE, CHAT, ids["Note: buy milk"])
        store.add_text(STORE, CHAT, "Tom: new since the upgrade", sync=True)
        assert store.missing_vectors(STORE) == 1
        assert store.backfill_vectors(STORE) == 1
        assert _stale(path) == []  # the rewritten row's entry went with the backfill
        assert _vectors(path)["[Sam] band practice at eight"] == _as_stored(
            store, "band practice at eight"
        )


def test_a_rewrite_during_the_backfill_keeps_its_own_vector(
    upgraded: tuple[Path, dict[str, str]],
) -> None:
    """The backfill embeds outside its write; a memory rewritten meanwhile (a session writing
    while the Hermes provider re-embeds in the background) keeps its new text's vector."""
    path, ids = upgraded
    with _opened(path) as store:
        embed = store._tx.embed

        def rewritten_meanwhile(texts: Any, ahead: Any = ()) -> Any:
            vectors = embed(texts, ahead)
            if "Priya: Finally." in texts:
                store.update_memory(STORE, CHAT, ids["Priya: Finally."], text="Priya: At last.")
            return vectors

        store._tx.embed = rewritten_meanwhile  # type: ignore[method-assign]
        assert store.backfill_vectors(STORE) == len(LABELLED)  # embedded, one of them in vain
        store._tx.embed = embed  # type: ignore[method-assign]
        assert _vectors(path)["Priya: At last."] == _as_stored(store, "At last.")
        assert store.missing_vectors(STORE) == 0


def test_a_new_store_has_nothing_stale(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with _opened(path) as store:
        store.ensure_store(STORE)
        store.add_many(STORE, [TextItem(CHAT, t) for t in LABELLED + PLAIN])
        assert store.missing_vectors(STORE) == 0
        assert store.backfill_vectors(STORE) == 0


def test_the_backfill_leaves_other_stores_alone(tmp_path: Path, older_release: Any) -> None:
    path = tmp_path / "m.db"
    _older_release(path, older_release, (STORE, "other"))
    with _opened(path) as store:
        assert store.missing_vectors("other") == len(LABELLED)
        assert store.backfill_vectors(STORE) == len(LABELLED)
        assert store.missing_vectors(STORE) == 0
        assert store.missing_vectors("other") == len(LABELLED)
