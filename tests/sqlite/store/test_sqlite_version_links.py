"""``VersionHistory`` on the embedded store, what a restore gives a dream's links back with:
every link in one transaction, only to memories of the same tenant, only on a memory of the
link's own scope, and through the service never into another tenant."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from memcore.errors import InvalidInput
from memcore.ports import VersionHistory
from memcore.scope import Scope
from memcore.service import MemoryService
from memcore.values import VersionLink
from memcore_sqlite import SqliteMemoryStore

ANA = Scope("hermes", "ana", "hermes", "s1")
ANA_2 = Scope("hermes", "ana", "coder", "s2")
BOB = Scope("hermes", "bob", "hermes", "s1")
STORE = "memories"


@pytest.fixture
def store(tmp_path: Path) -> Iterator[SqliteMemoryStore]:
    opened = SqliteMemoryStore(tmp_path / "m.db", embedder=None)
    opened.ensure_store(STORE)
    yield opened
    opened.close()


def _one(store: SqliteMemoryStore, scope: Scope, text: str) -> str:
    [memory_id] = MemoryService(store, store_name=STORE, scope=scope).remember(text).memory_ids
    return memory_id


def test_links_reach_only_memories_of_the_same_tenant(store: SqliteMemoryStore) -> None:
    assert isinstance(store, VersionHistory)
    ana = MemoryService(store, store_name=STORE, scope=ANA)
    old, new = _one(store, ANA, "30 eggs"), _one(store, ANA_2, "20 eggs")
    bobs = _one(store, BOB, "bob's fact")
    ana.logs.restore_links(
        [
            VersionLink(ANA, old, new, "updated"),
            VersionLink(ANA_2, new, None, None, (old, bobs)),
        ]
    )
    assert ana.get(old, agent_id="hermes", run_id="s1").superseded_by == new
    assert ana.locate(new).supersedes == (old,)
    assert [m.id for m in ana.history(old)] == [old, new]

    ana.logs.restore_links([VersionLink(ANA, old, bobs, "merged")])  # another tenant's id
    assert ana.locate(old).superseded_by is None
    ana.logs.restore_links([VersionLink(ANA, new, old, "merged")])  # not in that scope: unchanged
    assert ana.locate(new).superseded_by is None


def test_a_link_into_another_tenant_is_refused_whole(store: SqliteMemoryStore) -> None:
    ana = MemoryService(store, store_name=STORE, scope=ANA)
    old, new, bobs = _one(store, ANA, "a"), _one(store, ANA, "b"), _one(store, BOB, "c")
    with pytest.raises(InvalidInput, match=r"links\[1\]\.scope is outside"):
        ana.logs.restore_links([VersionLink(ANA, old, new, "merged"), VersionLink(BOB, bobs, None)])
    assert ana.locate(old).superseded_by is None
    with pytest.raises(InvalidInput, match="superseded_how"):
        ana.logs.restore_links([VersionLink(ANA, old, new, "replaced")])
