"""An import's rollback on the embedded store: every write that lands in a memory moves its
version by one, a repeat that changes nothing too, and ``delete_unclaimed`` deletes, in one
transaction, only the memories still at the version given."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.values import MemoryVersion, Message
from memcore_sqlite import SqliteMemoryStore, TextItem

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")
BOB = Scope("app", "bob", "agent", "run1")


def _version(store: SqliteMemoryStore, memory_id: str) -> int:
    return int(store.get_memory(STORE, ALICE, memory_id).version or 0)


def _imported(store: SqliteMemoryStore, *texts: str) -> dict[str, int]:
    versions: dict[str, int] = {}
    store.add_many(STORE, [TextItem(ALICE, t) for t in texts], versions=versions)
    return versions


def test_every_repeat_moves_the_version_by_one_even_one_that_changes_nothing(
    hybrid_store: SqliteMemoryStore,
) -> None:
    """A repeat with an older time changed nothing, not even the version: a rollback could
    not tell that a write had landed in the memory and been answered with its id."""
    store = hybrid_store
    [(mid, first)] = _imported(store, "Miso is a tabby cat").items()
    assert first == _version(store, mid) == 1
    before = store.get_memory(STORE, ALICE, mid)
    older = TextItem(ALICE, "Miso is a tabby cat", created_at=1.0e9)  # an older export
    assert store.add_many(STORE, [older]) == [mid]
    after = store.get_memory(STORE, ALICE, mid)
    assert (after.updated_at, after.metadata, after.said_at) == (
        before.updated_at,
        before.metadata,
        before.said_at,
    )
    assert after.version == 2
    said = Message("user", "Miso is a tabby cat", timestamp=1.0e9)  # a replayed old turn
    assert store.add_messages(STORE, ALICE, [said], sync=True).memory_ids == (mid,)
    assert _version(store, mid) == 3
    assert store.add_text(STORE, ALICE, "Miso is a tabby cat", sync=True).memory_ids == (mid,)
    assert _version(store, mid) == 4


def test_add_many_reports_the_versions_a_batch_left(lexical_store: SqliteMemoryStore) -> None:
    store = lexical_store
    kept = TextItem(ALICE, "restored at five", version=5)
    versions: dict[str, int] = {}
    ids = store.add_many(
        STORE, [kept, TextItem(ALICE, "plain"), TextItem(ALICE, "plain")], versions=versions
    )
    assert versions == {ids[0]: 5, ids[1]: 2}  # the batch's own repeat moved "plain" too
    assert ids[1] == ids[2]


def test_only_memories_no_write_landed_in_are_deleted(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    store = hybrid_store
    versions = _imported(store, "alpha fact", "beta fact", "gamma fact")
    alpha, beta, gamma = versions
    store.add_text(STORE, ALICE, "beta fact", sync=True)  # another writer, told it landed
    store.add_messages(STORE, ALICE, [Message("user", "gamma fact", timestamp=1.0)], sync=True)
    kept = store.delete_unclaimed(STORE, [MemoryVersion(ALICE, i, v) for i, v in versions.items()])
    assert sorted(kept) == sorted([beta, gamma])
    left = store.list_memories(STORE, ALICE.pattern()).items
    assert sorted(m.text for m in left) == ["beta fact", "gamma fact"]
    # The deleted one is gone from the words and the vectors too, not only from the list.
    assert alpha not in {h.memory.id for h in store.search(STORE, ALICE.pattern(), "alpha fact")}
    raw = sqlite3.connect(db_path)
    counts = raw.execute(
        "SELECT (SELECT count(*) FROM memory_vectors), (SELECT count(*) FROM memory_fts_text)"
    ).fetchone()
    raw.close()
    assert counts == (2, 2)
    # Asked again: gone ones are neither deleted nor kept; kept ones stay kept.
    again = [MemoryVersion(ALICE, i, v) for i, v in versions.items()]
    assert sorted(store.delete_unclaimed(STORE, again)) == sorted([beta, gamma])


def test_another_tenants_memory_answers_as_one_that_is_gone(
    lexical_store: SqliteMemoryStore,
) -> None:
    store = lexical_store
    bobs = store.add_text(STORE, BOB, "bob's secret", sync=True).memory_ids[0]
    assert store.delete_unclaimed(STORE, [MemoryVersion(ALICE, bobs, 1)]) == []
    assert store.get_memory(STORE, BOB, bobs).text == "bob's secret"


def test_a_bad_entry_deletes_nothing(lexical_store: SqliteMemoryStore) -> None:
    store = lexical_store
    [(mid, version)] = _imported(store, "kept whole").items()
    with pytest.raises(InvalidInput):
        store.delete_unclaimed(
            STORE,
            [MemoryVersion(ALICE, mid, version), MemoryVersion(ALICE, mid, "1")],  # type: ignore[arg-type]
        )
    with pytest.raises(InvalidInput):
        store.delete_unclaimed(STORE, [MemoryVersion(ALICE, mid, version), ("x", 1)])  # type: ignore[list-item]
    assert _version(store, mid) == version


def test_a_batch_is_one_transaction(lexical_store: SqliteMemoryStore, db_path: Path) -> None:
    """A failure midway (here the disk refusing the last delete) leaves every memory."""
    store = lexical_store
    versions = _imported(store, "one", "two", "three")
    ids = list(versions)
    raw = sqlite3.connect(db_path)
    raw.execute(
        "CREATE TRIGGER refuse BEFORE DELETE ON memories WHEN old.id = ? BEGIN"
        " SELECT RAISE(ABORT, 'disk refused'); END".replace("?", f"'{ids[-1]}'")
    )
    raw.commit()
    raw.close()
    with pytest.raises(Exception):  # noqa: B017 - whichever typed error the store maps it to
        store.delete_unclaimed(STORE, [MemoryVersion(ALICE, i, v) for i, v in versions.items()])
    assert len(store.list_memories(STORE, ALICE.pattern()).items) == 3


def test_a_claim_moves_only_the_version_and_a_bad_entry_claims_nothing(
    lexical_store: SqliteMemoryStore,
) -> None:
    """An import that counts a memory present claims it (``claim_memories``): its rollback
    peer then keeps it. Nothing else of the memory changes; one gone, or another tenant's,
    is answered and left alone; a bad entry refuses the whole claim."""
    store = lexical_store
    versions = _imported(store, "claimed fact", "gone fact")
    claimed, gone = versions
    bobs = store.add_text(STORE, BOB, "bob's fact", sync=True).memory_ids[0]
    store.delete_memory(STORE, ALICE, gone)
    before = store.get_memory(STORE, ALICE, claimed)
    assert store.claim_memories(STORE, [(ALICE, claimed), (ALICE, gone), (ALICE, bobs)]) == [
        gone,
        bobs,
    ]
    after = store.get_memory(STORE, ALICE, claimed)
    assert (after.version, after.updated_at, after.said_at, after.metadata) == (
        versions[claimed] + 1,
        before.updated_at,
        before.said_at,
        before.metadata,
    )
    assert store.get_memory(STORE, BOB, bobs).version == 1
    for bad in ([(ALICE, claimed), (ALICE, 7)], [(ALICE, claimed), ("x", claimed)], "x"):
        with pytest.raises(InvalidInput):
            store.claim_memories(STORE, bad)  # type: ignore[arg-type]
    assert _version(store, claimed) == versions[claimed] + 1
    assert store.delete_unclaimed(STORE, [MemoryVersion(ALICE, claimed, versions[claimed])]) == [
        claimed
    ]


def test_a_rollback_relinks_a_present_version_only_where_its_successor_went(
    lexical_store: SqliteMemoryStore,
) -> None:
    """A stopped import takes its links to what it deleted out of the present versions, so
    none names a memory it deleted; one whose successor was kept for another writer (claimed:
    that import found the history as it stood) keeps the link to it."""
    from memcore.service import MemoryService
    from memcore.transfer import take_back
    from memcore.values import VersionLink

    service = MemoryService(lexical_store, store_name=STORE, scope=ALICE)
    kept_old, gone_old = service.restore([TextItem(ALICE, "tea once"), TextItem(ALICE, "cat once")])
    assert kept_old is not None and gone_old is not None
    versions: dict[str, int] = {}  # the stopped import: two successors, each linked
    kept_new, gone_new = service.restore(
        [TextItem(ALICE, "tea now"), TextItem(ALICE, "cat now")], versions=versions
    )
    assert kept_new is not None and gone_new is not None
    linked = [
        VersionLink(ALICE, kept_new, supersedes=(kept_old,)),
        VersionLink(ALICE, gone_new, supersedes=(gone_old,)),
        VersionLink(ALICE, kept_old, kept_new, "updated"),
        VersionLink(ALICE, gone_old, gone_new, "updated"),
    ]
    service.logs.restore_links(linked)
    service.claim([(ALICE, kept_new)])  # another import found it present
    added = [(ALICE, kept_new), (ALICE, gone_new)]
    undone = take_back(service, added, versions, linked)
    assert (undone.added, undone.left, undone.claimed) == (2, 0, 1)
    assert service.get(kept_old).superseded_by == kept_new
    assert service.get(kept_new).supersedes == (kept_old,)
    assert service.get(gone_old).superseded_by is None
    assert sorted(m.id for m in service.every_memory()) == sorted([kept_old, kept_new, gone_old])


def test_a_rollback_links_the_memories_it_keeps_without_those_it_deleted(
    lexical_store: SqliteMemoryStore,
) -> None:
    """An import links its versions after its last batch: stopped before, it wrote none, and
    another import that found them present wrote none either. The rollback gives the ones it
    keeps the links the import gives them; one it wrote whose successor it deleted has none
    left, so it is not hidden behind a memory that is gone."""
    from memcore.service import MemoryService
    from memcore.transfer import take_back
    from memcore.values import VersionLink

    service = MemoryService(lexical_store, store_name=STORE, scope=ALICE)
    versions: dict[str, int] = {}
    old, new, cat_old, cat_new = service.restore(
        [TextItem(ALICE, t) for t in ("tea once", "tea now", "cat once", "cat now")],
        versions=versions,
    )
    assert old is not None and new is not None and cat_old is not None and cat_new is not None
    own = [
        VersionLink(ALICE, old, new, "updated"),
        VersionLink(ALICE, new, supersedes=(old,)),
        VersionLink(ALICE, cat_old, cat_new, "updated"),
        VersionLink(ALICE, cat_new, supersedes=(cat_old,)),
    ]
    cat_links = own[2:]  # written (stopped after its links); the tea versions' not yet
    service.logs.restore_links(cat_links)
    service.claim([(ALICE, old), (ALICE, new), (ALICE, cat_old)])  # another import's
    added = [(ALICE, i) for i in (old, new, cat_old, cat_new)]
    undone = take_back(service, added, versions, own)
    assert (undone.added, undone.left, undone.claimed) == (4, 0, 3)
    assert service.get(old).superseded_by == new
    assert service.get(new).supersedes == (old,)
    assert service.get(cat_old).superseded_by is None
    assert [h.memory.id for h in service.search("cat")] == [cat_old]


def test_a_rollback_takes_back_only_its_own_links_not_a_dream_s_since(
    lexical_store: SqliteMemoryStore,
) -> None:
    """A stopped import gave a present memory its links back as it had listed them, over a
    dream that folded that memory into a newer one since: the outdated fact was current
    again, beside the memory that said it replaced it."""
    from memcore.service import MemoryService
    from memcore.transfer import take_back
    from memcore.values import VersionLink

    service = MemoryService(lexical_store, store_name=STORE, scope=ALICE)
    present, newer = service.restore(
        [
            TextItem(ALICE, "User likes green tea a lot"),
            TextItem(ALICE, "User really likes green tea a lot"),
        ]
    )
    assert present is not None and newer is not None
    versions: dict[str, int] = {}  # the stopped import restores a version the present one replaced
    [old] = service.restore([TextItem(ALICE, "User likes green tea")], versions=versions)
    assert old is not None
    linked = [
        VersionLink(ALICE, old, present, "updated"),
        VersionLink(ALICE, present, supersedes=(old,)),
    ]
    service.logs.restore_links(linked)
    task = lexical_store.create_dream_task(STORE, [ALICE.tenant_pattern()], apply_mode="safe_auto")
    [action] = lexical_store.list_dream_actions(STORE, task.id).items
    assert action.status == "applied" and action.result_memory_id == newer
    undone = take_back(service, [(ALICE, old)], versions, linked)
    assert (undone.added, undone.left, undone.claimed) == (1, 0, 0)
    assert service.get(present).superseded_by == newer
    assert service.get(present).supersedes == ()
    assert service.get(newer).supersedes == (present,)
    assert [h.memory.id for h in service.search("green tea")] == [newer]


def test_a_rollback_links_a_kept_version_to_the_present_memory_both_ways(
    lexical_store: SqliteMemoryStore,
) -> None:
    """Stopped before its links, the import had restored a version that a present memory
    replaced; another import found both present and wrote no link. The rollback kept the
    version and gave it its successor, but the successor did not list it as replaced."""
    from memcore.service import MemoryService
    from memcore.transfer import take_back
    from memcore.values import VersionLink

    service = MemoryService(lexical_store, store_name=STORE, scope=ALICE)
    [present] = service.restore([TextItem(ALICE, "tea now")])
    versions: dict[str, int] = {}
    [old] = service.restore([TextItem(ALICE, "tea once")], versions=versions)
    assert present is not None and old is not None
    service.claim([(ALICE, old)])  # another import found it present
    links = [
        VersionLink(ALICE, old, present, "updated"),
        VersionLink(ALICE, present, supersedes=(old,)),
    ]
    undone = take_back(service, [(ALICE, old)], versions, links)
    assert (undone.added, undone.left, undone.claimed) == (1, 0, 1)
    assert service.get(old).superseded_by == present
    assert service.get(present).supersedes == (old,)


def test_links_are_added_to_and_taken_from_what_a_memory_has_now(
    lexical_store: SqliteMemoryStore,
) -> None:
    """What an import adds and its rollback takes back: another writer's links stay, a
    successor is set only where there is none and cleared only while it is the one given."""
    from memcore.values import VersionLink

    store = lexical_store
    a, b, c, d = store.add_many(STORE, [TextItem(ALICE, t) for t in ("a", "b", "c", "d")])
    assert a is not None and b is not None and c is not None and d is not None
    store.link_versions(STORE, [VersionLink(ALICE, a, b, "merged", (c,))])  # a dream's
    store.add_version_links(STORE, [VersionLink(ALICE, a, d, "updated", (d, c, d))])
    kept = store.get_memory(STORE, ALICE, a)
    assert (kept.extras["superseded_by"], kept.extras["supersedes"]) == (b, [c, d])
    store.drop_version_links(STORE, [VersionLink(ALICE, a, d, "updated", (d,))])
    kept = store.get_memory(STORE, ALICE, a)
    assert (kept.extras["superseded_by"], kept.extras["supersedes"]) == (b, [c])
    store.drop_version_links(STORE, [VersionLink(ALICE, a, b, None, (c,))])
    store.add_version_links(STORE, [VersionLink(BOB, a, d, "updated", (d,))])  # not Bob's
    kept = store.get_memory(STORE, ALICE, a)
    assert "superseded_by" not in kept.extras and "supersedes" not in kept.extras
