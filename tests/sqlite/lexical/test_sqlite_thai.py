"""Thai is written without spaces, and its vowels and tone marks are combining marks: a word
inside a sentence ("ข้าวผัด" in "ฉันชอบกินข้าวผัดมาก") was never found, as the sentence was
split at every mark into pieces no query gives. Thai runs are now indexed as bigrams, as CJK
runs are, marks kept; schema 15 indexes older files so."""

from __future__ import annotations

import re
import sqlite3
from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.lexical import analysis
from memcore_sqlite.storage.schema import SCHEMA_VERSION

STORE = "mem"  # the store the conftest fixtures create
ALICE = Scope("app", "alice", "agent", "run1")
RICE = "ฉันชอบกินข้าวผัดมาก"  # I like eating fried rice a lot
SEA = "พรุ่งนี้เราจะไปทะเล"  # tomorrow we go to the sea


def _add(store: SqliteMemoryStore, text: str) -> str:
    return store.add_text(STORE, ALICE, text, sync=True).memory_ids[0]


def _found(store: SqliteMemoryStore, query: str) -> list[str]:
    return [h.memory.id for h in store.search(STORE, ALICE.tenant_pattern(), query)]


def test_a_thai_run_becomes_bigrams_with_its_marks() -> None:
    assert analysis.tokens("ข้าวผัด") == ["ข้", "้า", "าว", "วผ", "ผั", "ัด", "ด"]
    assert analysis.tokens("I ate ข้าว today") == ["i", "ate", "ข้", "้า", "าว", "ว", "today"]


@pytest.mark.parametrize("mode", ["lexical_store", "hybrid_store"])
@pytest.mark.parametrize("word", ["ข้าวผัด", "ชอบ", "กิน"])
def test_a_thai_word_is_found_inside_a_sentence(
    word: str, mode: str, request: pytest.FixtureRequest
) -> None:
    store: SqliteMemoryStore = request.getfixturevalue(mode)
    rice = _add(store, RICE)
    _add(store, SEA)
    assert _found(store, word)[:1] == [rice]


def test_a_thai_word_finds_no_other_sentence(lexical_store: SqliteMemoryStore) -> None:
    _add(lexical_store, RICE)
    sea = _add(lexical_store, SEA)
    assert _found(lexical_store, "ทะเล") == [sea]


#: How releases before schema 15 indexed a text without CJK: its words, split at every mark,
#: by FTS5 without marks among its token characters.
_OLD_TOKENIZE = "porter unicode61 remove_diacritics 2"


def test_schema_15_indexes_older_thai_rows_again(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path) as store:
        store.ensure_store(STORE)
        rice = _add(store, RICE)
        plain = _add(store, "the office party is on friday")
    old = " ".join(re.findall(r"[^\W_]+", RICE))
    conn = sqlite3.connect(path)
    trigger = conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'memory_fts_text_delete'"
    ).fetchone()[0]
    conn.executescript(
        f"""
        DROP TRIGGER memory_fts_text_delete;
        DROP TABLE memory_fts;
        UPDATE memory_fts_text SET body = '{old}' WHERE seq = 1;
        UPDATE memories SET words = {len(old.split())} WHERE seq = 1;
        CREATE VIRTUAL TABLE memory_fts USING fts5 (body, tbody, tags,
            tokenize = '{_OLD_TOKENIZE}', content = 'memory_fts_rows', content_rowid = 'seq');
        INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');
        {trigger};
        PRAGMA user_version = 14;
        """
    )
    conn.close()

    with SqliteMemoryStore(path) as store:
        assert _found(store, "ข้าวผัด") == [rice]
        assert _found(store, "ชอบ") == [rice]
        assert _found(store, "office") == [plain]
        store.delete_memory(STORE, ALICE, plain)  # the trigger takes it out of the index
        assert _found(store, "office") == []
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT words FROM memories WHERE seq = 1").fetchone()[0] == len(
        analysis.tokens(RICE)
    )
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


def test_schema_15_indexes_emoji_rows_a_first_schema_14_left_without_them(
    tmp_path: Path,
) -> None:
    """Schema 14 came out before emoji were words: a file it upgraded holds "🍕" rows
    indexed without them, which schema 14 (run once) never looks at again."""
    pizza_text = "I love 🍕 on fridays"
    path = tmp_path / "m.db"
    with SqliteMemoryStore(path) as store:
        store.ensure_store(STORE)
        pizza = _add(store, pizza_text)
    old = " ".join(re.findall(r"[^\W_]+", pizza_text.lower()))
    conn = sqlite3.connect(path)
    trigger = conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'memory_fts_text_delete'"
    ).fetchone()[0]
    conn.executescript(
        f"""
        DROP TRIGGER memory_fts_text_delete;
        DROP TABLE memory_fts;
        UPDATE memory_fts_text SET body = '{old}' WHERE seq = 1;
        UPDATE memories SET words = {len(old.split())} WHERE seq = 1;
        CREATE VIRTUAL TABLE memory_fts USING fts5 (body, tbody, tags,
            tokenize = '{_OLD_TOKENIZE}', content = 'memory_fts_rows', content_rowid = 'seq');
        INSERT INTO memory_fts (memory_fts) VALUES ('rebuild');
        {trigger};
        PRAGMA user_version = 14;
        """
    )
    conn.close()

    with SqliteMemoryStore(path) as store:
        assert _found(store, "🍕") == [pizza]
        assert _found(store, "fridays") == [pizza]
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT words FROM memories WHERE seq = 1").fetchone()[0] == len(
        analysis.tokens(pizza_text)
    )
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()
