"""Lexical search's lookups: schema versions 6 and 7's length indexes on old files, 8's rows
without the index's text copy and 9's scope tags kept once, rare terms read once, and scores
that do not depend on the process's hash seed."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from memcore.errors import ProtocolError
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.storage.schema import FTS_TOKENIZE, SCHEMA_VERSION

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")
BOB = Scope("app", "bob", "agent", "run1")
WORDS = ["garden", "tomato", "basil", "river", "kayak", "paddle", "violin", "concert"]


def _fill(path: Path) -> None:
    """Many rows with the same share of a query's terms, and rare and common terms."""
    with SqliteMemoryStore(path) as store:
        store.ensure_store(STORE)
        items = [
            TextItem(ALICE, f"{WORDS[i % 8]} {WORDS[(i * 3) % 8]} note {i} {WORDS[(i * 5) % 8]}")
            for i in range(700)
        ]
        items += [TextItem(ALICE, f"rare zephyr {i} {WORDS[i % 8]}") for i in range(5)]
        long_text = " ".join(["kayak"] + [f"filler{i}" for i in range(400)])
        items.append(TextItem(ALICE, long_text))
        items += [TextItem(BOB, f"zephyr kayak basil bob {i}") for i in range(50)]
        store.add_many(STORE, items)


QUERIES = ("garden basil kayak", "zephyr kayak violin", "tomato concert paddle note river")


def _results(path: Path) -> list[list[tuple[str, str, float]]]:
    with SqliteMemoryStore(path) as store:
        return [
            [
                (h.memory.id, h.memory.text, h.score)
                for h in store.search(STORE, ALICE.tenant_pattern(), q, top_k=50)
            ]
            for q in QUERIES
        ]


def _set_back(path: Path, script: str) -> list[list[tuple[str, str, float]]]:
    """Fills a file, then makes it an older release's with ``script``; the hits from before."""
    _fill(path)
    expected = _results(path)
    conn = sqlite3.connect(path)
    conn.executescript(script)
    conn.close()
    return expected


def test_a_version_4_file_without_lengths_gets_them_and_the_same_hits(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    # A file written by a release that had the code pages (4) but no lengths yet.
    expected = _set_back(
        path,
        "DROP INDEX memories_words; DROP INDEX memories_tenant_words;"
        " ALTER TABLE memories DROP COLUMN words;"
        " PRAGMA user_version = 4;",
    )
    assert _results(path) == expected
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM memories WHERE words IS NULL").fetchone()[0] == 0
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "memories_words" in names
    conn.close()


def test_a_version_4_file_with_lengths_gets_the_index_only(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    expected = _set_back(
        path,
        "DROP INDEX memories_words; DROP INDEX memories_tenant_words; PRAGMA user_version = 5;",
    )
    assert _results(path) == expected


def test_a_version_6_file_gets_the_tenant_length_index_and_the_same_hits(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    expected = _set_back(path, "DROP INDEX memories_tenant_words; PRAGMA user_version = 6;")
    assert _results(path) == expected
    conn = sqlite3.connect(path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'index'")}
    assert "memories_tenant_words" in names
    conn.close()


def test_rare_and_common_terms_rank_as_their_share_and_stay_in_the_tenant(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    _fill(path)
    hits = _results(path)[1]  # "zephyr kayak violin": zephyr is rare, kayak common
    texts = [text for _, text, _ in hits]
    assert all("bob" not in t for t in texts)
    # The rows holding the rare term and a common one come first; a long memory holding
    # only "kayak" scores below a short one holding it.
    holding_two = [t for t in texts[:5] if t.startswith("rare zephyr")]
    assert len(holding_two) >= 1
    scores = {text: score for _, text, score in hits}
    short_kayak = [s for t, s in scores.items() if t.startswith("kayak") and "violin" not in t]
    long_kayak = [s for t, s in scores.items() if t.startswith("kayak filler0")]
    if short_kayak and long_kayak:
        assert max(long_kayak) < min(short_kayak)


_SCRIPT = """
import json, sys
from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore
scope = Scope("app", "alice", "agent", "run1")
with SqliteMemoryStore(sys.argv[1]) as store:
    out = [[(h.memory.id, repr(h.score)) for h in store.search("mem", scope.tenant_pattern(), q,
           top_k=50, mode="lexical")] for q in sys.argv[2:]]
print(json.dumps(out))
"""


def test_lexical_hits_and_scores_do_not_depend_on_the_hash_seed(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _fill(path)
    runs = []
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT, str(path), *QUERIES],
            env=env,
            capture_output=True,
            text=True,
            check=True,
        )
        runs.append(json.loads(done.stdout))
    assert runs[0] == runs[1] == runs[2]
    assert all(runs[0])


def test_a_version_4_file_without_version_3_gets_it(tmp_path: Path) -> None:
    """A file written when the releases had versions 1 and 4 only (no dream tables yet)."""
    path = tmp_path / "m.db"
    expected = _set_back(
        path,
        "DROP INDEX memories_words; DROP INDEX memories_tenant_words;"
        " DROP INDEX memories_superseded;"
        " ALTER TABLE memories DROP COLUMN superseded_by;"
        " ALTER TABLE memories DROP COLUMN superseded_how;"
        " ALTER TABLE memories DROP COLUMN supersedes;"
        " DROP TABLE dream_actions; DROP TABLE dream_tasks; PRAGMA user_version = 4;",
    )
    assert _results(path) == expected
    conn = sqlite3.connect(path)
    columns = {r[1] for r in conn.execute("PRAGMA table_info(memories)")}
    assert {"superseded_by", "superseded_how", "supersedes", "words"} <= columns
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
    assert {"dream_tasks", "dream_actions"} <= tables
    conn.close()


#: The full-text index as versions 1 to 7 made it: a copy of every row's text in the index.
_V7_FTS = f"""
CREATE TEMP TABLE rows AS SELECT seq, body, tbody, tags FROM memory_fts_rows;
DROP TABLE memory_fts;
DROP TRIGGER memory_fts_text_delete;
DROP VIEW memory_fts_rows;
DROP TABLE memory_fts_text;
DROP TABLE memory_fts_scopes;
CREATE VIRTUAL TABLE memory_fts USING fts5 (body, tbody, tags, tokenize = '{FTS_TOKENIZE}');
INSERT INTO memory_fts (rowid, body, tbody, tags) SELECT seq, body, tbody, tags FROM temp.rows;
PRAGMA user_version = 7;
"""


def test_a_version_7_file_loses_the_index_copy_of_its_text_and_keeps_its_hits(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    expected = _set_back(path, _V7_FTS)
    conn = sqlite3.connect(path)
    assert conn.execute("SELECT count(*) FROM memory_fts_content").fetchone()[0] == 756
    conn.close()
    assert _results(path) == expected
    conn = sqlite3.connect(path)
    names = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
    assert "memory_fts_content" not in names
    assert conn.execute("SELECT count(*) FROM memory_fts_text").fetchone()[0] == 756
    # The index holds exactly what the rows hold (FTS5 compares the two).
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()
    # Writes after the move keep index and rows in step: an update, a delete, an add.
    with SqliteMemoryStore(path) as store:
        hits = store.search(STORE, ALICE.tenant_pattern(), "zephyr", top_k=50)
        store.update_memory(STORE, ALICE, hits[0].memory.id, text="zephyr lighthouse keeper")
        store.delete_memory(STORE, ALICE, hits[1].memory.id)
        store.add_many(STORE, [TextItem(ALICE, "a second lighthouse")])
        found = store.search(STORE, ALICE.tenant_pattern(), "lighthouse", top_k=50)
        assert sorted(h.memory.text for h in found) == [
            "a second lighthouse",
            "zephyr lighthouse keeper",
        ]
        assert len(store.search(STORE, ALICE.tenant_pattern(), "zephyr", top_k=50)) == 4
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()


#: The full-text rows as version 8 made them: each row with its prefix and all its tags.
_V8_FTS = """
CREATE TEMP TABLE rows AS SELECT r.seq, r.body, s.prefix, r.tags
    FROM memory_fts_rows r JOIN memory_fts_text t USING (seq) JOIN memory_fts_scopes s
    ON s.id = t.scope;
DROP TRIGGER memory_fts_text_delete;
DROP VIEW memory_fts_rows;
DROP TABLE memory_fts_text;
DROP TABLE memory_fts_scopes;
CREATE TABLE memory_fts_text (seq INTEGER PRIMARY KEY, body TEXT NOT NULL,
    prefix TEXT NOT NULL, tags TEXT NOT NULL);
CREATE VIEW memory_fts_rows AS SELECT seq, body, CASE WHEN body = '' THEN ''
    ELSE prefix || replace(body, ' ', ' ' || prefix) END AS tbody, tags FROM memory_fts_text;
CREATE TRIGGER memory_fts_text_delete AFTER DELETE ON memory_fts_text BEGIN
    INSERT INTO memory_fts (memory_fts, rowid, body, tbody, tags) VALUES ('delete', old.seq,
    old.body, CASE WHEN old.body = '' THEN '' ELSE old.prefix || replace(old.body, ' ',
    ' ' || old.prefix) END, old.tags); END;
INSERT INTO memory_fts_text (seq, body, prefix, tags) SELECT seq, body, prefix, tags
    FROM temp.rows;
PRAGMA user_version = 8;
"""


def _fill_with_metadata(path: Path) -> None:
    _fill(path)
    with SqliteMemoryStore(path) as store:
        store.add_many(
            STORE,
            [TextItem(BOB, f"kayak river {i}", metadata={"kind": f"k{i % 3}"}) for i in range(30)],
        )


def test_a_version_8_file_keeps_each_scopes_tags_once_and_the_same_hits(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    _fill_with_metadata(path)
    expected = _results(path)
    conn = sqlite3.connect(path)
    conn.executescript(_V8_FTS)
    conn.close()
    with SqliteMemoryStore(path) as store:
        filtered = store.search(
            STORE, BOB.tenant_pattern(), "kayak", filters={"kind": "k1"}, top_k=50
        )
    assert _results(path) == expected
    assert {h.memory.text for h in filtered} == {f"kayak river {i}" for i in range(1, 30, 3)}
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    assert conn.execute("SELECT count(*) FROM memory_fts_scopes").fetchone()[0] == 2
    assert conn.execute("SELECT count(*) FROM memory_fts_text").fetchone()[0] == 786
    assert "prefix" not in {r[1] for r in conn.execute("PRAGMA table_info(memory_fts_text)")}
    # The index holds exactly what the rows give it (FTS5 compares the two).
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    conn.close()
    with SqliteMemoryStore(path) as store:
        hits = store.search(STORE, BOB.tenant_pattern(), "kayak", top_k=50)
        store.update_memory(STORE, BOB, hits[0].memory.id, metadata={"kind": "other"})
        store.delete_memory(STORE, BOB, hits[1].memory.id)
        store.add_many(STORE, [TextItem(Scope("app", "carol", "a", "r"), "kayak lighthouse")])
    conn = sqlite3.connect(path)
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('integrity-check', 1)")
    assert conn.execute("SELECT count(*) FROM memory_fts_scopes").fetchone()[0] == 3
    conn.close()


def test_a_version_8_row_the_shared_tags_would_change_leaves_the_file_as_it_was(
    tmp_path: Path,
) -> None:
    path = tmp_path / "m.db"
    _set_back(path, _V8_FTS)
    conn = sqlite3.connect(path)
    # A trailing space: kept by the row, lost when its tags are split into scope and own.
    conn.execute("UPDATE memory_fts_text SET tags = tags || ' ' WHERE seq = 3")
    conn.commit()
    before = (
        conn.execute("SELECT * FROM memory_fts_text ORDER BY seq").fetchall(),
        sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master")),
    )
    conn.close()
    with pytest.raises(ProtocolError, match="left as it was"):
        SqliteMemoryStore(path)
    conn = sqlite3.connect(path)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == 8
    after = (
        conn.execute("SELECT * FROM memory_fts_text ORDER BY seq").fetchall(),
        sorted(r[0] for r in conn.execute("SELECT name FROM sqlite_master")),
    )
    conn.close()
    assert after == before
