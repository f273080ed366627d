"""The database schema and its numbered migrations (``PRAGMA user_version`` holds the number).

Each migration runs once, inside the write transaction that checks the version, so several
processes opening a new file at once apply it exactly once.
"""

from __future__ import annotations

import contextlib
import os
import re
import sqlite3
import time
from collections.abc import Callable
from typing import Any

from memcore import speakers
from memcore.errors import Conflict, InvalidInput, PermissionDenied, ProtocolError
from memcore.wording import counted
from memcore_sqlite.lexical import analysis
from memcore_sqlite.storage import other_openers
from memcore_sqlite.storage import tenant_prefixes as prefixes
from memcore_sqlite.storage.rows import HASH_BYTES
from memcore_sqlite.vector import code_pages, stored

#: Bytes per database page of a new file. A memory's float vector row is about 1.57 KB: two
#: fit a 4096-byte page (476 bytes a memory unused), five an 8192-byte one (about 65).
PAGE_SIZE = 8192

#: The full-text index's tokenizer, as written inside a quoted SQL string; query terms are
#: tokenized with it too (query_tokens.py). Combining marks (Mn, Mc) are token characters
#: since schema 15, so Thai bigrams keep their vowels and tone marks; every other word reaches
#: FTS5 already split at its marks (:mod:`memcore_sqlite.lexical.analysis`).
FTS_TOKENIZE = "porter unicode61 remove_diacritics 2 categories ''L* N* Co Mn Mc''"
#: The tokenizer of schemas 1 to 14, which the migrations that made those tables keep.
_FTS_TOKENIZE_V1 = "porter unicode61 remove_diacritics 2"

_V1 = (
    """
CREATE TABLE stores (
    id INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    description TEXT NOT NULL DEFAULT '',
    created_at REAL NOT NULL,
    -- Bumped by every write that changes memories: vector caches compare against it.
    generation INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE memories (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    store_id INTEGER NOT NULL,
    app_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    text TEXT NOT NULL,
    content_hash BLOB NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    unit_type TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    version INTEGER NOT NULL DEFAULT 1
);
CREATE INDEX memories_scope ON memories (store_id, app_id, tenant_id, agent_id, run_id);
CREATE INDEX memories_hash ON memories (store_id, content_hash);
CREATE TABLE memory_vectors (
    seq INTEGER PRIMARY KEY,
    model TEXT NOT NULL,
    vector BLOB NOT NULL
);
CREATE VIRTUAL TABLE memory_fts USING fts5 (
    body, tbody, tags, tokenize = '"""
    + _FTS_TOKENIZE_V1
    + """'
);
CREATE TABLE messages (
    seq INTEGER PRIMARY KEY,
    store_id INTEGER NOT NULL,
    app_id TEXT NOT NULL,
    tenant_id TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    run_id TEXT NOT NULL,
    id TEXT NOT NULL,
    role TEXT NOT NULL,
    content TEXT NOT NULL,
    timestamp REAL NOT NULL,
    metadata TEXT NOT NULL DEFAULT '{}',
    memory_seq INTEGER
);
CREATE INDEX messages_scope ON messages (store_id, app_id, tenant_id, agent_id, run_id, seq);
CREATE INDEX messages_memory ON messages (memory_seq);
CREATE TABLE tasks (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    store_id INTEGER NOT NULL,
    status TEXT NOT NULL,
    operation TEXT NOT NULL,
    scope TEXT,
    created_at REAL NOT NULL,
    finished_at REAL,
    memory_ids TEXT NOT NULL DEFAULT '[]',
    error TEXT
);
CREATE INDEX tasks_store ON tasks (store_id, status, seq);
CREATE TABLE requests (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL,
    store_id INTEGER NOT NULL,
    operation TEXT NOT NULL,
    status TEXT NOT NULL,
    scope TEXT,
    target_id TEXT,
    latency_ms REAL,
    created_at REAL NOT NULL
);
CREATE INDEX requests_store ON requests (store_id, operation, seq);
"""
)

# Local dream (consolidation): tasks, their actions with an undo record each, and the
# supersession links that let recall prefer the current truth.
_V3 = """
ALTER TABLE memories ADD COLUMN superseded_by TEXT;
-- 'merged' (its text lives on in superseded_by) or 'updated' (a newer fact replaced it).
ALTER TABLE memories ADD COLUMN superseded_how TEXT;
ALTER TABLE memories ADD COLUMN supersedes TEXT NOT NULL DEFAULT '[]';
CREATE INDEX memories_superseded ON memories (superseded_by);
CREATE TABLE dream_tasks (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    store_id INTEGER NOT NULL,
    status TEXT NOT NULL,
    apply_mode TEXT NOT NULL,
    scope_output_mode TEXT NOT NULL,
    scopes TEXT NOT NULL,
    thresholds TEXT NOT NULL,
    instructions TEXT,
    memory_count INTEGER NOT NULL DEFAULT 0,
    error TEXT,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL,
    finished_at REAL
);
CREATE INDEX dream_tasks_store ON dream_tasks (store_id, seq);
CREATE TABLE dream_actions (
    seq INTEGER PRIMARY KEY,
    id TEXT NOT NULL UNIQUE,
    dream_seq INTEGER NOT NULL,
    action TEXT NOT NULL,
    status TEXT NOT NULL,
    target_scope TEXT NOT NULL,
    target_id TEXT,
    source_ids TEXT NOT NULL,
    versions TEXT NOT NULL,
    text TEXT,
    confidence REAL NOT NULL,
    reason TEXT NOT NULL,
    skipped_reason TEXT,
    result_id TEXT,
    undo TEXT,
    error TEXT,
    applied_at REAL,
    undone_at REAL,
    created_at REAL NOT NULL,
    updated_at REAL NOT NULL
);
CREATE INDEX dream_actions_task ON dream_actions (dream_seq, seq)
"""


def _v4(conn: sqlite3.Connection) -> None:
    """Vector code pages for two-stage search. Schema 9 builds them from the vectors stored
    (it rewrites every vector and its codes; building them here too would be work thrown away)."""
    _run(conn, code_pages.SCHEMA)


def _v5(conn: sqlite3.Connection) -> None:
    """Each memory's length in index tokens, for the lexical score's length discount.

    Rows written before get their count of space-separated words, which is close for most
    text. Numbered after 4 because 4 landed first: a file already at 4 must still get it.
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
    if "words" not in columns:
        conn.execute("ALTER TABLE memories ADD COLUMN words INTEGER")
    conn.execute(
        "UPDATE memories SET words = length(trim(text)) - length(replace(trim(text), ' ', ''))"
        " + 1 WHERE words IS NULL"
    )


def _v6(conn: sqlite3.Connection) -> None:
    """A covering index of each memory's length: the lexical score's length lookups then read
    a small index instead of the memories' rows (texts on random pages of a large file).

    Also version 3, for a file that reached 4 before 3 was released (3 was numbered below an
    already released 4, so the loop skipped it there and search failed on ``superseded_by``).
    """
    columns = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
    if "superseded_by" not in columns:
        _run(conn, _V3)
    conn.execute("CREATE INDEX IF NOT EXISTS memories_words ON memories (seq, words)")


def _v7(conn: sqlite3.Connection) -> None:
    """Each memory's length indexed by tenant too: a tenant's length lookups then read its own
    few index pages, not one page per row of an index ordered across every tenant."""
    conn.execute(
        "CREATE INDEX IF NOT EXISTS memories_tenant_words"
        " ON memories (store_id, app_id, tenant_id, seq, words)"
    )


#: ``tbody`` from a row's words and its tenant's prefix, as ``lexical.analysis.index_text``
#: writes it: the prefix before every word (tokens hold no spaces), nothing for no words.
_TBODY = (
    "CASE WHEN {0}body = '' THEN '' ELSE {0}prefix || replace({0}body, ' ', ' ' || {0}prefix) END"
)

_FTS_TEXT = (
    "CREATE TABLE memory_fts_text (seq INTEGER PRIMARY KEY, body TEXT NOT NULL,"
    " prefix TEXT NOT NULL, tags TEXT NOT NULL)",
    "CREATE VIEW memory_fts_rows AS SELECT seq, body, "
    + _TBODY.format("")
    + " AS tbody, tags FROM memory_fts_text",
    "CREATE VIRTUAL TABLE memory_fts USING fts5 (body, tbody, tags, tokenize = '"
    + _FTS_TOKENIZE_V1
    + "', content = 'memory_fts_rows', content_rowid = 'seq')",
    "CREATE TRIGGER memory_fts_text_delete AFTER DELETE ON memory_fts_text BEGIN"
    " INSERT INTO memory_fts (memory_fts, rowid, body, tbody, tags) VALUES"
    " ('delete', old.seq, old.body, " + _TBODY.format("old.") + ", old.tags); END",
)


def _left_as_it_was(problem: str) -> ProtocolError:
    """A migration that found what it cannot carry over: its transaction is rolled back."""
    return ProtocolError(
        f"{problem}; the file was left as it was", field="schema_version", retryable=False
    )


def _v8(conn: sqlite3.Connection) -> None:
    """The full-text index keeps no copy of its text: it was 1 KB a memory of 4.1 at 100k
    (the words twice, once with the tenant's twelve-digit prefix before each, and the tags).

    ``memory_fts`` becomes an external-content table over ``memory_fts_rows``, a view that
    rebuilds ``tbody`` from ``memory_fts_text`` (the words, the prefix once, the tags).
    A write inserts the row there and indexes the same values (``operations.writes``); a
    trigger takes a deleted row out of the index with the very values it was indexed with
    (FTS5 needs them; a changed row is deleted and inserted again, never updated). Indexing
    is not a trigger too: FTS5 writes its pending rows out as a segment at every statement
    savepoint, and a trigger's statement takes one per row, which doubled the cost of adding
    memories. The index itself is rebuilt once here, from the same values, so every search
    gives what it gave before.
    """
    if conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'memory_fts_text'").fetchone():
        return  # a file set back to an older version number after it had this one
    conn.execute(
        "CREATE TEMP TABLE fts_old AS SELECT rowid AS seq, c0 AS body, c1 AS tbody, c2 AS tags"
        " FROM memory_fts_content"
    )
    conn.execute("DROP TABLE memory_fts")
    for statement in _FTS_TEXT:
        if not statement.startswith("CREATE TRIGGER"):
            conn.execute(statement)
    conn.execute(
        "INSERT INTO memory_fts_text (seq, body, prefix, tags) SELECT seq, body,"
        # The prefix: what the first word of tbody has before the first word of body.
        " CASE WHEN body = '' THEN '' ELSE substr(tbody, 1,"
        " instr(tbody || ' ', ' ') - instr(body || ' ', ' ')) END,"
        " tags FROM temp.fts_old ORDER BY seq"
    )
    differ = conn.execute(
        "SELECT count(*) FROM temp.fts_old o JOIN memory_fts_rows r USING (seq)"
        " WHERE r.tbody IS NOT o.tbody"
    ).fetchone()[0]
    conn.execute("DROP TABLE temp.fts_old")
    if differ:
        raise _left_as_it_was(
            f"{counted(differ, 'row')} of the full-text index "
            f"{'does' if differ == 1 else 'do'} not have the form this release writes"
        )
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('usermerge', 2)")
    for statement in _FTS_TEXT:
        if statement.startswith("CREATE TRIGGER"):
            conn.execute(statement)


#: Schema 9's full-text rows: a scope's prefix and tags once in ``memory_fts_scopes`` (116 of
#: a row's 348 bytes at 100k memories were these, the same for every row of the scope), and
#: each row its words, its scope and its metadata tags. The view gives FTS5 the same values.
_FTS_SCOPES = (
    "CREATE TABLE memory_fts_scopes (id INTEGER PRIMARY KEY, prefix TEXT NOT NULL,"
    " tags TEXT NOT NULL, UNIQUE (prefix, tags))",
    "CREATE TABLE memory_fts_text (seq INTEGER PRIMARY KEY, body TEXT NOT NULL,"
    " scope INTEGER NOT NULL, tags TEXT NOT NULL)",
    "CREATE VIEW memory_fts_rows AS SELECT t.seq AS seq, t.body AS body, "
    + _TBODY.format("t.").replace("t.prefix", "s.prefix")
    + " AS tbody, s.tags || CASE WHEN t.tags = '' THEN '' ELSE ' ' || t.tags END AS tags"
    " FROM memory_fts_text t JOIN memory_fts_scopes s ON s.id = t.scope",
    "CREATE TRIGGER memory_fts_text_delete AFTER DELETE ON memory_fts_text BEGIN"
    " INSERT INTO memory_fts (memory_fts, rowid, body, tbody, tags) SELECT 'delete', old.seq,"
    " old.body, "
    + _TBODY.format("old.").replace("old.prefix", "s.prefix")
    + ", s.tags || CASE WHEN old.tags = '' THEN '' ELSE ' ' || old.tags END"
    " FROM memory_fts_scopes s WHERE s.id = old.scope; END",
)

#: How many of a row's tags are its scope's (:func:`memcore_sqlite.lexical.tags.scope_tags`).
SCOPE_TAGS = 5


def _shared_scope_tags(conn: sqlite3.Connection) -> None:
    """Each scope's prefix and tags kept once (:data:`_FTS_SCOPES`); every row's values, as
    FTS5 reads them through the view, are compared with those before, and on a difference
    nothing is kept. The index itself is not touched: it is given the same values."""
    if "scope" in {row[1] for row in conn.execute("PRAGMA table_info(memory_fts_text)")}:
        return  # a file set back to an older version number after it had this one
    conn.execute("DROP TABLE IF EXISTS memory_fts_scopes")  # no row refers to one left over
    conn.execute("CREATE TEMP TABLE fts_old AS SELECT seq, body, tbody, tags FROM memory_fts_rows")
    conn.execute("DROP TRIGGER memory_fts_text_delete")
    conn.execute("DROP VIEW memory_fts_rows")
    conn.execute("ALTER TABLE memory_fts_text RENAME TO memory_fts_text_v8")
    for statement in _FTS_SCOPES:
        if not statement.startswith("CREATE TRIGGER"):
            conn.execute(statement)
    scopes: dict[tuple[str, str], int] = {}
    rows = []
    for seq, body, prefix, row_tags in conn.execute(
        "SELECT seq, body, prefix, tags FROM memory_fts_text_v8"
    ).fetchall():
        parts = str(row_tags).split(" ")
        key = (prefix, " ".join(parts[:SCOPE_TAGS]))
        if key not in scopes:
            scopes[key] = len(scopes) + 1
        rows.append((seq, body, scopes[key], " ".join(parts[SCOPE_TAGS:])))
    conn.executemany(
        "INSERT INTO memory_fts_scopes (id, prefix, tags) VALUES (?, ?, ?)",
        [(i, prefix, scope) for (prefix, scope), i in scopes.items()],
    )
    conn.executemany(
        "INSERT INTO memory_fts_text (seq, body, scope, tags) VALUES (?, ?, ?, ?)", rows
    )
    differ = conn.execute(
        "SELECT (SELECT count(*) FROM temp.fts_old) - (SELECT count(*) FROM memory_fts_rows)"
        " + (SELECT count(*) FROM temp.fts_old o JOIN memory_fts_rows r USING (seq)"
        " WHERE r.body IS NOT o.body OR r.tbody IS NOT o.tbody OR r.tags IS NOT o.tags)"
    ).fetchone()[0]
    conn.execute("DROP TABLE temp.fts_old")
    if differ:
        raise _left_as_it_was(
            f"{counted(differ, 'row')} of the full-text index would change with "
            f"{'its' if differ == 1 else 'their'} scope's tags kept once"
        )
    conn.execute("DROP TABLE memory_fts_text_v8")
    conn.execute(_FTS_SCOPES[-1])


#: Float32's relative rounding to float16 (half its 10-bit step), and half the smallest step.
_HALF_STEP, _HALF_TINY = 2.0**-11, 2.0**-25


def _v9(conn: sqlite3.Connection) -> None:
    """Disk: float16 vectors, code pages without sign bits, a scope's tags kept once, and
    content digests of 16 bytes."""
    _float16_vectors(conn)
    _shared_scope_tags(conn)
    # Content digests of 16 bytes (``storage.rows.HASH_BYTES``): the first 16 of the 32 kept
    # so far, so every repeat is still found; the index is rebuilt packed.
    conn.execute(
        "UPDATE memories SET content_hash = substr(content_hash, 1, ?)"
        " WHERE length(content_hash) > ?",
        (HASH_BYTES, HASH_BYTES),
    )
    conn.execute("REINDEX memories_hash")


def _float16_vectors(conn: sqlite3.Connection, chunk: int = 4_096) -> None:
    """Vectors stored as float16 (:mod:`memcore_sqlite.vector.stored`), and code pages without
    sign bits: at 100k memories the vectors were 1,641 of 3,447 bytes a memory and become
    about 820, the bits 48 more (they ordered nothing; :mod:`memcore_sqlite.vector.quantize`).

    The vectors go into a new table, written in seq order so its pages are full (an update in
    place would leave each page half empty); every row is then read back and compared with its
    float32 original: the same seqs and models, each component within float16's rounding and
    finite where it was. On a mismatch nothing is kept. The code pages are made again from the
    stored vectors, so the search's bounds hold for exactly what it rescores. The old table's
    pages become free pages, reused by later writes until ``store.compact()``.
    """
    if conn.execute("SELECT 1 FROM vector_pages WHERE length(bits) = 0 LIMIT 1").fetchone():
        return  # a file set back to an older version number after it had this one
    conn.execute(
        "CREATE TABLE memory_vectors_f16 (seq INTEGER PRIMARY KEY, model TEXT NOT NULL,"
        " vector BLOB NOT NULL)"
    )
    last = None
    while True:
        rows = conn.execute(
            "SELECT seq, model, vector FROM memory_vectors WHERE seq > ? ORDER BY seq LIMIT ?",
            (-(2**63) if last is None else last, chunk),
        ).fetchall()
        if not rows:
            break
        last = rows[-1][0]
        conn.executemany(
            "INSERT INTO memory_vectors_f16 (seq, model, vector) VALUES (?, ?, ?)",
            [
                (seq, model, stored.to_blob(_float32(blob)))
                for seq, model, blob in rows
                if not len(blob) % 4
            ],
        )
    bad = 0
    pairs = conn.execute(
        "SELECT o.vector, n.vector, o.model IS n.model FROM memory_vectors o"
        " LEFT JOIN memory_vectors_f16 n USING (seq)"
    )
    for old, new, same_model in pairs:
        import numpy as np  # only for a file that holds vectors: a new one has none

        if len(old) % 4 or new is None or len(new) != stored.width(len(old) // 4):
            bad += 1
            continue
        before, after = _float32(old), stored.vector(new)
        if not same_model:
            bad += 1
            continue
        finite = np.isfinite(before)
        bad += not (
            np.array_equal(finite, np.isfinite(after))
            and bool(
                np.all(
                    np.abs(after[finite] - before[finite])
                    <= np.abs(before[finite]) * _HALF_STEP + _HALF_TINY
                )
            )
        )
    counts = conn.execute(
        "SELECT (SELECT count(*) FROM memory_vectors), (SELECT count(*) FROM memory_vectors_f16)"
    ).fetchone()
    if bad or counts[0] != counts[1]:
        raise _left_as_it_was(
            f"{counted(bad or abs(counts[0] - counts[1]), 'stored vector')} cannot be held as "
            "float16"
            " (too large, or not float32 vectors)"
        )
    conn.execute("DROP TABLE memory_vectors")
    conn.execute("ALTER TABLE memory_vectors_f16 RENAME TO memory_vectors")
    conn.execute("DELETE FROM vector_pages")
    code_pages.build_from_vectors(conn)


def _float32(blob: bytes) -> Any:
    """A float32 vector as schema 8 stored it (the caller skips a blob of another length)."""
    import numpy as np

    return np.frombuffer(blob, dtype="<f4")


def _v10(conn: sqlite3.Connection) -> None:
    """When a memory's text was last said (a message's own time, else when it was added) or
    last edited: what the recall block dates it by. ``updated_at`` stays the write time (what
    a session dream pass looks for), which a replayed repeat or a dream pass moves to the day
    it ran. Rows written before stay NULL and are dated as before."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(memories)")}
    if "said_at" not in columns:
        conn.execute("ALTER TABLE memories ADD COLUMN said_at REAL")


#: Rows read at a time while looking for labelled texts (:func:`_v11`).
_LABEL_SCAN = 4_096
#: Bytes of a stale vector kept to know it again: its first components. A vector written
#: since (a rewrite, a re-embedding) differs in them; a row deleted has no vector at all.
STALE_HEAD = 16


def _v11(conn: sqlite3.Connection) -> None:
    """Vectors that read a speaker's label are stale. Releases before this schema embedded
    "Priya: Finally." whole, so the name was most of a short turn's vector; now the vector
    reads what was said (:mod:`memcore.speakers`). Those rows keep serving searches with
    their old vectors, listed in ``stale_vectors`` with their first bytes: a row is stale
    while its vector still starts with them, so no write path has to mind the list.
    ``missing_vectors`` counts them; ``backfill_vectors`` (``memcore reindex``, and the
    Hermes provider in the background) replaces each once."""
    conn.execute(
        "CREATE TABLE IF NOT EXISTS stale_vectors (seq INTEGER PRIMARY KEY, head BLOB NOT NULL)"
    )
    # A label starts the text: "[" for the bracket form, else a colon within its first
    # speakers.MAX_CHARS + 1 characters. Only those rows are parsed.
    last = -(2**63)
    while True:
        rows = conn.execute(
            "SELECT m.seq, m.text, substr(v.vector, 1, ?) FROM memory_vectors v"
            " JOIN memories m ON m.seq = v.seq WHERE v.seq > ?"
            " AND (m.text LIKE '[%' OR instr(substr(m.text, 1, ?), ':') > 0)"
            " ORDER BY v.seq LIMIT ?",
            (STALE_HEAD, last, speakers.MAX_CHARS + 1, _LABEL_SCAN),
        ).fetchall()
        if not rows:
            return
        last = rows[-1][0]
        conn.executemany(
            "INSERT OR IGNORE INTO stale_vectors (seq, head) VALUES (?, ?)",
            [(seq, head) for seq, text, head in rows if speakers.label(text) is not None],
        )


def _v12(conn: sqlite3.Connection) -> None:
    """The key that seals page tokens (:mod:`memcore_sqlite.storage.page_tokens`), made once
    per file from the system's randomness, so tokens stay valid across processes."""
    conn.execute("CREATE TABLE IF NOT EXISTS secrets (name TEXT PRIMARY KEY, value BLOB NOT NULL)")
    conn.execute(
        "INSERT OR IGNORE INTO secrets (name, value) VALUES ('page_tokens', ?)",
        (os.urandom(16),),
    )


def page_token_key(conn: sqlite3.Connection) -> bytes:
    """The file's page-token key (made by :func:`_v12`)."""
    row = conn.execute("SELECT value FROM secrets WHERE name = 'page_tokens'").fetchone()
    if row is None or not isinstance(row[0], bytes) or len(row[0]) != 16:
        raise ProtocolError(
            "the database has no page-token key; it is damaged", field="schema_version"
        )
    return bytes(row[0])


def _v13(conn: sqlite3.Connection) -> None:
    """Which process runs each dream task (:mod:`memcore_sqlite.dream.owners`): a task left
    unfinished by a process that is gone is reported failed, not running for ever. Tasks
    from before have none; one still unfinished was left so."""
    columns = {row[1] for row in conn.execute("PRAGMA table_info(dream_tasks)")}
    if "owner" not in columns:
        conn.execute("ALTER TABLE dream_tasks ADD COLUMN owner TEXT")


#: Rows read at a time while indexing texts again in one form (:func:`_v14`).
_FOLD_SCAN = 4_096


def _v14(conn: sqlite3.Connection) -> None:
    """Texts indexed in one form (:func:`memcore_sqlite.lexical.analysis.fold`): fullwidth
    "ｉＰｈｏｎｅ" and "２０２３", halfwidth kana, ligatures and "ß" were indexed as typed, so
    only the same form found them. Each row whose text is not ASCII is indexed again with the
    words it now gives, and its length in words follows; the index is told the old values
    (its delete trigger) and given the new ones through ``memory_fts_rows``, so it holds what
    the view says. ASCII rows give the words they gave and are not touched. A store with a
    changed row gets a new generation, so no process keeps postings read before."""
    last, stores = -(2**63), set()
    while True:
        # GLOB reads characters: the class is any character outside ASCII.
        rows = conn.execute(
            "SELECT m.seq, m.text, m.store_id, t.body, t.scope, t.tags FROM memories m"
            " JOIN memory_fts_text t ON t.seq = m.seq WHERE m.seq > ?"
            " AND m.text GLOB ? ORDER BY m.seq LIMIT ?",
            (last, "*[^\x01-\x7f]*", _FOLD_SCAN),
        ).fetchall()
        if not rows:
            break
        last = rows[-1][0]
        for seq, text, store_id, body, scope, tags in rows:
            words = analysis.tokens(text)
            if analysis.index_text(words) == body:
                continue
            conn.execute("DELETE FROM memory_fts_text WHERE seq = ?", (seq,))
            conn.execute(
                "INSERT INTO memory_fts_text (seq, body, scope, tags) VALUES (?, ?, ?, ?)",
                (seq, analysis.index_text(words), scope, tags),
            )
            conn.execute(
                "INSERT INTO memory_fts (rowid, body, tbody, tags)"
                " SELECT seq, body, tbody, tags FROM memory_fts_rows WHERE seq = ?",
                (seq,),
            )
            conn.execute("UPDATE memories SET words = ? WHERE seq = ?", (len(words), seq))
            stores.add(store_id)
    conn.executemany(
        "UPDATE stores SET generation = generation + 1 WHERE id = ?", [(i,) for i in stores]
    )


def _v15(conn: sqlite3.Connection) -> None:
    """Thai runs indexed as bigrams with their marks (:mod:`memcore_sqlite.lexical.analysis`):
    a Thai word inside a sentence was never found. The rows holding Thai get the words and
    lengths they now give; the index is made again with combining marks among its token
    characters (:data:`FTS_TOKENIZE`; a table's tokenizer cannot change) and rebuilt from
    ``memory_fts_rows``, which holds the same values for every other row, so their ranking
    does not change. Every store gets a new generation: no process keeps postings read
    before. Rows holding emoji are looked at too: the first schema 14 indexed them before
    emoji were words, and a file it upgraded does not run schema 14 again."""
    last = -(2**63)
    while True:
        rows = conn.execute(
            "SELECT m.seq, m.text, t.body FROM memories m JOIN memory_fts_text t ON t.seq = m.seq"
            " WHERE m.seq > ? AND m.text GLOB ? ORDER BY m.seq LIMIT ?",
            (last, "*[\u0e01-\u0e4e\u2600-\u27bf\U0001f000-\U0001ffff]*", _FOLD_SCAN),
        ).fetchall()
        if not rows:
            break
        last = rows[-1][0]
        for seq, text, body in rows:
            words = analysis.tokens(text)
            if analysis.index_text(words) != body:
                conn.execute(
                    "UPDATE memory_fts_text SET body = ? WHERE seq = ?",
                    (analysis.index_text(words), seq),
                )
                conn.execute("UPDATE memories SET words = ? WHERE seq = ?", (len(words), seq))
    conn.execute("DROP TRIGGER IF EXISTS memory_fts_text_delete")
    conn.execute("DROP TABLE memory_fts")
    conn.execute(
        "CREATE VIRTUAL TABLE memory_fts USING fts5 (body, tbody, tags, tokenize = '"
        + FTS_TOKENIZE
        + "', content = 'memory_fts_rows', content_rowid = 'seq')"
    )
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('usermerge', 2)")
    conn.execute(_FTS_SCOPES[-1])
    conn.execute("UPDATE stores SET generation = generation + 1")


#: A memory's id is unique within its tenant (schema 16), not across the file: an import
#: keeps a file's id whatever other tenants hold, so it cannot tell whether one of them holds
#: it. The id leads, so a lookup by id alone still seeks.
_TENANT_IDS = (
    "CREATE UNIQUE INDEX IF NOT EXISTS memories_tenant_id"
    " ON memories (id, store_id, app_id, tenant_id)"
)


def _v16(conn: sqlite3.Connection) -> None:
    """Ids unique per tenant (:data:`_TENANT_IDS`). Schema 1 made ``memories.id`` UNIQUE
    across the file, so an import of a record whose id another tenant held had to give it
    a new id, which told the importer that someone held it. A column constraint cannot be
    dropped: the table is made again from its own SQL without it, every row copied with its
    seq (the full-text rows, vectors and messages refer to it), and its indexes made again."""
    table = conn.execute(
        "SELECT sql FROM sqlite_master WHERE type = 'table' AND name = 'memories'"
    ).fetchone()[0]
    if _FILE_WIDE_ID not in table:  # set back to an older version number after it had this
        conn.execute(_TENANT_IDS)
        return
    indexes = [
        sql
        for (sql,) in conn.execute(
            "SELECT sql FROM sqlite_master WHERE type = 'index' AND tbl_name = 'memories'"
            " AND sql IS NOT NULL ORDER BY name"
        )
    ]
    names = ", ".join(row[1] for row in conn.execute("PRAGMA table_info(memories)"))
    # A table renamed once (by this migration) reads CREATE TABLE "memories".
    made, named = re.subn(
        r'^CREATE TABLE\s+"?memories"?\s*\(', "CREATE TABLE memories_v16 (", table
    )
    if named != 1:
        raise _left_as_it_was("the memories table is not in a form this release knows")
    conn.execute(made.replace(_FILE_WIDE_ID, "id TEXT NOT NULL,", 1))
    conn.execute(f"INSERT INTO memories_v16 ({names}) SELECT {names} FROM memories ORDER BY seq")
    differ = conn.execute(
        "SELECT (SELECT count(*) FROM memories) - (SELECT count(*) FROM memories_v16)"
    ).fetchone()[0]
    if differ:
        raise _left_as_it_was(f"{counted(differ, 'memory')} could not be copied")
    conn.execute("DROP TABLE memories")
    conn.execute("ALTER TABLE memories_v16 RENAME TO memories")
    for sql in indexes:
        conn.execute(sql)
    conn.execute(_TENANT_IDS)


#: How schema 1 declared the id, unique across the file.
_FILE_WIDE_ID = "id TEXT NOT NULL UNIQUE,"


def _v17(conn: sqlite3.Connection) -> None:
    """Tenant prefixes that no two tenants share (:mod:`memcore_sqlite.storage.tenant_prefixes`):
    until now they were digests, and two tenants with the same one lost hits to each other.
    Every tenant that holds memories is numbered, first written first; each scope's row in
    ``memory_fts_scopes`` takes its tenant's number as its prefix (a row two tenants shared,
    their prefixes and tags alike, is split), full-text rows of memories that are gone are
    dropped, and the index is rebuilt from ``memory_fts_rows``. Only the digits before each
    term change, so a tenant that shared its prefix with no other ranks as before. Every
    store gets a new generation: no process keeps postings read with the old prefixes."""
    conn.execute(prefixes.TABLE)
    conn.execute(
        "INSERT OR IGNORE INTO tenant_prefixes (store_id, app_id, tenant_id)"
        " SELECT store_id, app_id, tenant_id FROM memories"
        " GROUP BY store_id, app_id, tenant_id ORDER BY MIN(seq)"
    )
    conn.execute("DROP TRIGGER IF EXISTS memory_fts_text_delete")  # the index is rebuilt
    conn.execute("DELETE FROM memory_fts_text WHERE seq NOT IN (SELECT seq FROM memories)")
    scope_tags = dict(conn.execute("SELECT id, tags FROM memory_fts_scopes").fetchall())
    pairs = conn.execute(
        "SELECT DISTINCT t.scope, p.number FROM memory_fts_text t"
        " JOIN memories m ON m.seq = t.seq JOIN tenant_prefixes p ON p.store_id = m.store_id"
        " AND p.app_id = m.app_id AND p.tenant_id = m.tenant_id ORDER BY t.scope, p.number"
    ).fetchall()
    # Out of the way first: a row's new prefix may be another's old one.
    conn.execute("UPDATE memory_fts_scopes SET prefix = 'v17 ' || id")
    made: dict[tuple[str, str], int] = {}
    kept: set[int] = set()
    for old, number in pairs:
        key = (prefixes.written(int(number)), str(scope_tags[old]))
        if key not in made and old not in kept:
            conn.execute("UPDATE memory_fts_scopes SET prefix = ? WHERE id = ?", (key[0], old))
            made[key] = old
            kept.add(old)
            continue
        if key not in made:  # another tenant's rows in this scope row: a row of their own
            added = conn.execute("INSERT INTO memory_fts_scopes (prefix, tags) VALUES (?, ?)", key)
            made[key] = int(added.lastrowid or 0)
        if made[key] != old:
            conn.execute(
                "UPDATE memory_fts_text SET scope = ? WHERE scope = ? AND seq IN (SELECT m.seq"
                " FROM memories m JOIN tenant_prefixes p ON p.store_id = m.store_id"
                " AND p.app_id = m.app_id AND p.tenant_id = m.tenant_id WHERE p.number = ?)",
                (made[key], old, number),
            )
    conn.execute(
        "DELETE FROM memory_fts_scopes WHERE id NOT IN (SELECT scope FROM memory_fts_text)"
    )
    left = conn.execute(
        "SELECT count(*) FROM memory_fts_scopes WHERE prefix LIKE 'v17 %'"
    ).fetchone()[0]
    if left:
        raise _left_as_it_was(
            f"{counted(left, 'scope')} of the full-text index {'has' if left == 1 else 'have'} "
            "no tenant"
        )
    conn.execute("INSERT INTO memory_fts (memory_fts) VALUES ('rebuild')")
    conn.execute("INSERT INTO memory_fts (memory_fts, rank) VALUES ('usermerge', 2)")
    conn.execute(_FTS_SCOPES[-1])
    conn.execute("UPDATE stores SET generation = generation + 1")


#: (version, script or function) in order; append, never edit a released one. Numbers may
#: skip: each runs once when the file is older than it.
MIGRATIONS: tuple[tuple[int, str | Callable[[sqlite3.Connection], None]], ...] = (
    (1, _V1),
    (3, _V3),
    (4, _v4),
    (5, _v5),
    (6, _v6),
    (7, _v7),
    (8, _v8),
    (9, _v9),
    (10, _v10),
    (11, _v11),
    (12, _v12),
    (13, _v13),
    (14, _v14),
    (15, _v15),
    (16, _v16),
    (17, _v17),
)
SCHEMA_VERSION = MIGRATIONS[-1][0]


def _run(conn: sqlite3.Connection, script: str) -> None:
    for statement in script.split(";"):
        if statement.strip():
            conn.execute(statement)


def migrate(conn: sqlite3.Connection, *, read_only: bool = False) -> int:
    """Bring the file up to :data:`SCHEMA_VERSION`; refuse a file from a newer release.

    A file already at the version is only read (no write lock on every open); a read-only
    one must already be at it.
    """
    current = int(conn.execute("PRAGMA user_version").fetchone()[0])
    if current == SCHEMA_VERSION:
        return SCHEMA_VERSION
    if current == 0:
        refuse_another_programs(conn)
    if read_only and current < SCHEMA_VERSION:
        raise PermissionDenied(
            f"the database schema is version {current} and the file is read-only, so it "
            f"cannot be upgraded to {SCHEMA_VERSION}; open it once where it is writable",
            field="schema_version",
        )
    path = _file_of(conn)
    with other_openers.upgrading(path) if path else contextlib.nullcontext():
        return _migrate(conn, path)


#: How long an upgrade waits for another process to close the file before it is refused (a
#: current memcore about to upgrade it too is seen as one in a few milliseconds).
OTHERS_WAIT = 1.0


def _migrate(conn: sqlite3.Connection, path: str) -> int:
    conn.execute("BEGIN IMMEDIATE")
    try:
        current = int(conn.execute("PRAGMA user_version").fetchone()[0])
        if current > SCHEMA_VERSION:
            raise ProtocolError(
                f"the database schema is version {current}, newer than this memcore-sqlite "
                f"understands ({SCHEMA_VERSION}); upgrade memcore-sqlite",
                field="schema_version",
                retryable=False,
            )
        if 0 < current < SCHEMA_VERSION and path:  # a new file has no older writer
            _refuse_other_openers(path, current)
        for version, script in MIGRATIONS:
            if version > current:
                if callable(script):
                    script(conn)
                else:
                    _run(conn, script)
                conn.execute(f"PRAGMA user_version = {int(version)}")
        conn.execute("COMMIT")
        return SCHEMA_VERSION
    except BaseException:
        conn.execute("ROLLBACK")
        raise


def refuse_another_programs(conn: sqlite3.Connection) -> None:
    """A file at version 0 holding tables is another program's database: every release
    sets the version in the transaction that makes its tables. Taken for a new file, a
    ``local_path`` mistyped onto one (``notes.sqlite``) got memcore's twenty tables and WAL
    mode beside its own, on a mere ``list``; one with a ``memories`` table failed as
    "table memories already exists"."""
    names = [
        str(row[0])
        for row in conn.execute(
            "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite%' "
            "ORDER BY name LIMIT 4"
        )
    ]
    if names:
        path = _file_of(conn) or "the memory database"
        shown = ", ".join(names[:3]) + (", ..." if len(names) > 3 else "")
        raise InvalidInput(
            f"{path} is not a memcore database: it holds another program's tables "
            f"({shown}); point the memory database at a new file",
            field=path,
        )


def _file_of(conn: sqlite3.Connection) -> str:
    """The main database's file ('' for one in memory)."""
    for _, name, file in conn.execute("PRAGMA database_list"):
        if name == "main":
            return str(file or "")
    return ""


def _refuse_other_openers(path: str, current: int) -> None:
    """An older file that another process has open is not upgraded: if that process runs an
    older memcore it would go on writing the old format into the new one
    (:mod:`memcore_sqlite.storage.other_openers`)."""
    deadline = time.monotonic() + OTHERS_WAIT
    while others := other_openers.others(path):
        if time.monotonic() >= deadline:
            pids = ", ".join(str(pid) for pid in sorted(others))
            raise Conflict(
                f"{path} is at schema version {current} and open in another process (pid "
                f"{pids}), which may run an older memcore that would keep writing the old "
                f"format into it; stop that process (a Hermes gateway, an MCP server, another "
                f"memcore) and open it again to upgrade it to {SCHEMA_VERSION}; the file was "
                "left as it was",
                field="schema_version",
                retryable=True,
            )
        time.sleep(0.02)
