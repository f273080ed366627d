"""The message log moved to another tenant: all pairs or none, and a moved message whose
memory stays behind no longer dies with it."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memcore.errors import MemcoreError
from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore

STORE = "mem"
OLD_1, OLD_2 = Scope("app", "12345", "hermes", "run1"), Scope("app", "12345", "hermes", "run2")
NEW_1, NEW_2 = (s.replace(tenant_id="telegram:12345") for s in (OLD_1, OLD_2))


def _contents(store: SqliteMemoryStore, scope: Scope) -> list[str]:
    return [m.content for m in store.list_messages(STORE, scope).items]


def test_a_move_that_fails_on_one_pair_moves_none(
    lexical_store: SqliteMemoryStore, db_path: Path
) -> None:
    for scope in (OLD_1, OLD_2):
        lexical_store.add_messages(STORE, scope, [Message("user", f"said in {scope.run_id}")])
    conn = sqlite3.connect(db_path)
    try:  # the second pair's rows cannot be written
        conn.execute(
            "CREATE TRIGGER refuse BEFORE UPDATE ON messages WHEN new.run_id = 'run2'"
            " BEGIN SELECT RAISE(ABORT, 'refused'); END"
        )
        conn.commit()
    finally:
        conn.close()
    with pytest.raises(MemcoreError):
        lexical_store.move_messages(STORE, [(OLD_1, NEW_1), (OLD_2, NEW_2)])
    assert _contents(lexical_store, OLD_1) == ["said in run1"]
    assert _contents(lexical_store, NEW_1) == []


def test_a_moved_message_whose_memory_stays_is_not_deleted_with_it(
    lexical_store: SqliteMemoryStore,
) -> None:
    receipt = lexical_store.add_messages(STORE, OLD_1, [Message("user", "I live in Lisbon")])
    (stays,) = receipt.memory_ids  # as a superseded memory stays with the old tenant
    assert lexical_store.move_messages(STORE, [(OLD_1, NEW_1)]) == 1
    lexical_store.delete_memory(STORE, OLD_1, stays)
    assert _contents(lexical_store, NEW_1) == ["I live in Lisbon"]
    counts = lexical_store.message_counts(STORE, NEW_1.tenant_pattern())
    assert counts == {NEW_1: 1}
