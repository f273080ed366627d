"""The embedded store's page tokens show a tenant nothing of other tenants' writes.

A listing resumes after the file-wide row sequence number of its last item. Tokens used to
carry it in plain JSON, so a tenant could read, between two of its own pages, how many
memories, messages or tasks every other tenant had written. Now the number is sealed under a
key the file keeps: tokens are the same length whatever the file holds, open only in the file
that issued them, and keep working across processes and restarts.
"""

from __future__ import annotations

import base64
import json
import sqlite3
from pathlib import Path

import pytest

from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore, TextItem
from memcore_sqlite.storage.page_tokens import PageTokens
from memcore_sqlite.storage.schema import SCHEMA_VERSION

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run")
BOB = Scope("app", "bob", "agent", "run")


def _first_token(store: SqliteMemoryStore) -> str:
    page = store.list_memories(STORE, ALICE.tenant_pattern(), limit=1)
    assert page.next_token is not None
    return page.next_token


def _store(path: Path) -> SqliteMemoryStore:
    store = SqliteMemoryStore(path)
    store.ensure_store(STORE)
    return store


@pytest.mark.parametrize("others", [0, 1, 5_000])
def test_a_token_neither_shows_nor_sizes_the_row_sequence(tmp_path: Path, others: int) -> None:
    with _store(tmp_path / "m.db") as store:
        store.add_many(STORE, [TextItem(BOB, f"bob's note {i}") for i in range(others)])
        store.add_many(STORE, [TextItem(ALICE, f"alice's note {i}") for i in range(3)])
        token = _first_token(store)
        seq = store._tx.conn.execute(
            "SELECT seq FROM memories WHERE tenant_id = 'alice' ORDER BY seq LIMIT 1"
        ).fetchone()[0]
        assert seq == others + 1
        assert len(token) == 22  # whatever the file holds
        raw = base64.urlsafe_b64decode(token + "==")
        # Neither as JSON nor as the 8 bytes a block would hold it in (ciphertext bytes are
        # random, so a digit may occur in them by chance: that says nothing).
        assert seq.to_bytes(8, "big") not in raw and seq.to_bytes(8, "little") not in raw
        with pytest.raises(ValueError):
            json.loads(raw)
        rest = store.list_memories(STORE, ALICE.tenant_pattern(), limit=10, next_token=token)
        assert [m.text for m in rest.items] == ["alice's note 1", "alice's note 2"]


def test_every_listing_seals_its_tokens(tmp_path: Path) -> None:
    with _store(tmp_path / "m.db") as store:
        store.add_messages(STORE, ALICE, [Message("user", f"turn {i}") for i in range(3)])
        store.add_many(STORE, [TextItem(ALICE, "a note"), TextItem(BOB, "a note")])
        tokens = [
            store.list_messages(STORE, ALICE, limit=1).next_token,
            store.list_scopes(STORE, limit=1).next_token,
            store.list_requests(STORE, limit=1).next_token,
        ]
        for token in tokens:
            assert token is not None and len(token) == 22
            with pytest.raises(ValueError):
                json.loads(base64.urlsafe_b64decode(token + "=="))


def test_a_token_opens_after_a_restart_but_not_in_another_file(tmp_path: Path) -> None:
    with _store(tmp_path / "a.db") as store:
        store.add_many(STORE, [TextItem(ALICE, f"note {i}") for i in range(3)])
        token = _first_token(store)
    with _store(tmp_path / "a.db") as again:  # the key is the file's, not the process's
        page = again.list_memories(STORE, ALICE.tenant_pattern(), limit=10, next_token=token)
        assert [m.text for m in page.items] == ["note 1", "note 2"]
    with _store(tmp_path / "b.db") as other:
        other.add_many(STORE, [TextItem(ALICE, f"note {i}") for i in range(3)])
        with pytest.raises(InvalidInput) as refused:
            other.list_memories(STORE, ALICE.tenant_pattern(), limit=10, next_token=token)
        assert refused.value.field == "next_token"


@pytest.mark.parametrize(
    "forged",
    [
        base64.urlsafe_b64encode(b'{"after": 0}').decode().rstrip("="),  # an old plain token
        "A" * 22,
        "A" * 21 + "!",
        "",
        "x" * 500,
    ],
)
def test_a_token_the_file_did_not_seal_is_refused(tmp_path: Path, forged: str) -> None:
    with _store(tmp_path / "m.db") as store:
        store.add_many(STORE, [TextItem(ALICE, f"note {i}") for i in range(3)])
        with pytest.raises(InvalidInput) as refused:
            store.list_memories(STORE, ALICE.tenant_pattern(), next_token=forged)
        assert refused.value.message == "next_token is not a token this store issued"


def test_seal_and_open_are_inverse_over_the_whole_range() -> None:
    tokens = PageTokens(bytes(range(16)))
    cursor = tokens.listing("memories", "mem", ALICE.tenant_pattern(), False)
    for after in (-1, 0, 1, 2**31, 2**63 - 2):
        assert cursor.open(cursor.seal(after)) == after
    assert cursor.open(None) == -1
    assert "key" not in repr(tokens) and bytes(range(16)).hex() not in repr(tokens)


def test_a_token_opens_only_in_the_listing_that_issued_it(tmp_path: Path) -> None:
    with _store(tmp_path / "m.db") as store:
        store.add_many(
            STORE, [TextItem(scope, f"note {i}") for scope in (ALICE, BOB) for i in range(3)]
        )
        store.add_messages(STORE, ALICE, [Message("user", f"turn {i}") for i in range(3)])
        alices = _first_token(store)
        messages = store.list_messages(STORE, ALICE, limit=1).next_token
        elsewhere = [
            lambda t: store.list_memories(STORE, BOB.tenant_pattern(), next_token=t),
            lambda t: store.list_memories(STORE, ALICE.pattern(), next_token=t),
            lambda t: store.list_memories(
                STORE, ALICE.tenant_pattern(), next_token=t, current_only=True
            ),
            lambda t: store.list_scopes(STORE, next_token=t),
        ]
        for listing in elsewhere:  # another tenant's, another pattern's, another kind's
            with pytest.raises(InvalidInput) as refused:
                listing(alices)
            assert refused.value.message == "next_token is not a token this store issued"
        with pytest.raises(InvalidInput):
            store.list_memories(STORE, ALICE.tenant_pattern(), next_token=messages)
        page = store.list_memories(STORE, ALICE.tenant_pattern(), next_token=alices)
        every = store.list_memories(STORE, ALICE.tenant_pattern(), limit=100)
        assert page.items == every.items[1:]  # its own listing resumes where it was


def test_a_file_of_the_schema_before_gets_its_key_once(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with _store(path) as store:
        store.add_many(STORE, [TextItem(ALICE, f"note {i}") for i in range(3)])
    conn = sqlite3.connect(path)
    try:  # as schema 11 left it
        conn.executescript("DROP TABLE secrets; PRAGMA user_version = 11;")
    finally:
        conn.close()
    with _store(path) as store:
        token = _first_token(store)
        key = store._tx.conn.execute("SELECT value FROM secrets").fetchall()
    with _store(path) as store:
        assert store._tx.conn.execute("SELECT value FROM secrets").fetchall() == key
        assert store._tx.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
        page = store.list_memories(STORE, ALICE.tenant_pattern(), limit=10, next_token=token)
        assert len(page.items) == 2
