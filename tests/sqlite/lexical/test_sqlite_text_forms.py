"""One form of each letter in the lexical index: what a CJK input method types (fullwidth
"ｉＰｈｏｎｅ", "２０２３", halfwidth "ﾗｰﾒﾝ"), ligatures and "ß" find the plain form and the
plain form finds them; schema 14 indexes the rows of older files so; ASCII text is untouched."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.lexical import analysis
from memcore_sqlite.storage.schema import SCHEMA_VERSION

STORE = "mem"  # the store the conftest fixtures create
ALICE = Scope("app", "alice", "agent", "run1")

#: (as written, as searched): each must find the other, with nothing else in common.
FORMS = [
    ("我买了一部ｉＰｈｏｎｅ手机", "iPhone"),
    ("我在２０２３年去了上海", "2023"),
    ("电话：１３８００１３８０００", "13800138000"),
    ("The oﬃce party is on Friday", "office"),
    ("Ich wohne in der Hauptstraße 5", "Hauptstrasse"),
    ("私はﾗｰﾒﾝが大好きです", "ラーメン"),
    ("㈱ソニー", "(株)"),
    ("The flat is 70 m² large", "m2"),
    ("İSTANBUL trip in May", "Istanbul"),
]


def _add(store: SqliteMemoryStore, text: str) -> str:
    return store.add_text(STORE, ALICE, text, sync=True).memory_ids[0]


def _found(store: SqliteMemoryStore, query: str) -> list[str]:
    return [h.memory.id for h in store.search(STORE, ALICE.tenant_pattern(), query)]


@pytest.mark.parametrize("mode", ["lexical_store", "hybrid_store"])
@pytest.mark.parametrize(("written", "searched"), FORMS)
def test_each_form_finds_the_other(
    written: str, searched: str, mode: str, request: pytest.FixtureRequest
) -> None:
    store: SqliteMemoryStore = request.getfixturevalue(mode)
    other = _add(store, "unrelated words about the weather")
    mid = _add(store, written)
    assert _found(store, searched)[:1] == [mid]
    # And the other way round: the plain form stored, the typed form asked.
    plain = _add(store, f"note {searched} kept")
    assert plain in _found(store, written)
    if mode == "lexical_store":
        assert other not in _found(store, searched)


def test_emoji_are_words(lexical_store: SqliteMemoryStore) -> None:
    """Emoji were no words at all: a memory of only emoji was never found lexically."""
    both = _add(lexical_store, "🍕🍺")
    said = _add(lexical_store, "My favourite food is 🍕!")
    dog = _add(lexical_store, "🐶")
    assert sorted(_found(lexical_store, "🍕")) == sorted([both, said])
    assert _found(lexical_store, "🐶") == [dog]
    assert _found(lexical_store, "🍔") == []


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.characters(max_codepoint=127), max_size=60))
def test_ascii_text_gives_the_tokens_it_gave(text: str) -> None:
    # What ASCII text was split into before: its lower-cased alphanumeric runs.
    words = "".join(c if c.isalnum() else " " for c in text.lower()).split()
    assert analysis.tokens(text) == words


def _old_fold(text: str) -> str:
    """How releases before schema 14 read text: lower-cased only."""
    return text.lower()


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def test_schema_14_indexes_older_rows_in_one_form(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    with monkeypatch.context() as patch:
        patch.setattr(analysis, "fold", _old_fold)
        with SqliteMemoryStore(path) as store:
            store.ensure_store(STORE)
            wide = _add(store, "我买了一部ｉＰｈｏｎｅ手机")
            plain = _add(store, "the office party is on friday")
            kana = _add(store, "私はﾗｰﾒﾝが大好きです")
            food = _add(store, "🍕🍺")
            assert _found(store, "iphone") == []
        before = dict(_rows(path, "SELECT seq, body FROM memory_fts_text"))
        words = dict(_rows(path, "SELECT id, words FROM memories"))
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 13")
    conn.close()

    with SqliteMemoryStore(path) as store:
        assert _found(store, "iPhone") == [wide]
        assert _found(store, "ラーメン") == [kana]
        assert _found(store, "office") == [plain]
        assert _found(store, "🍕") == [food]
    assert _rows(path, "PRAGMA user_version") == [(SCHEMA_VERSION,)]
    after = dict(_rows(path, "SELECT seq, body FROM memory_fts_text"))
    changed = {seq for seq in after if after[seq] != before[seq]}
    assert len(changed) == 3  # the ASCII row is indexed exactly as it was
    # Each row's length is the count of the words it is now indexed with.
    for mid, count in _rows(path, "SELECT id, words FROM memories"):
        text = _rows(path, f"SELECT text FROM memories WHERE id = '{mid}'")[0][0]
        assert count == len(analysis.tokens(str(text)))
    assert words[plain] == dict(_rows(path, "SELECT id, words FROM memories"))[plain]
    # The index holds exactly what its rows say (FTS5 compares the two).
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_a_file_left_as_it_was_when_schema_14_fails(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "m.db"
    with monkeypatch.context() as patch:
        patch.setattr(analysis, "fold", _old_fold)
        with SqliteMemoryStore(path) as store:
            store.ensure_store(STORE)
            _add(store, "我买了一部ｉＰｈｏｎｅ手机")
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA user_version = 13")
    conn.close()
    before = _rows(path, "SELECT seq, body FROM memory_fts_text")

    def broken(text: str) -> str:
        raise RuntimeError("interrupted")

    with monkeypatch.context() as patch:
        patch.setattr(analysis, "fold", broken)
        with pytest.raises(RuntimeError):
            SqliteMemoryStore(path)
    assert _rows(path, "PRAGMA user_version") == [(13,)]
    assert _rows(path, "SELECT seq, body FROM memory_fts_text") == before
