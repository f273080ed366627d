"""Local dream on SQLite: lifecycle, apply modes, atomic versioned apply, undo, current truth."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memcore.errors import Conflict, InvalidInput
from memcore.scope import Scope, ScopePattern
from memcore.testing import HashingEmbedder
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore

from ..deleting_reviewer import DeletingReviewer

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")
BOB = Scope("app", "bob", "agent", "run1")


def _turn(store: SqliteMemoryStore, scope: Scope, text: str, when: float) -> str:
    receipt = store.add_messages(STORE, scope, [Message("user", text, timestamp=when)])
    return receipt.memory_ids[0]


def test_proposal_mode_proposes_and_changes_nothing(hybrid_store: SqliteMemoryStore) -> None:
    a = _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    b = _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    task = hybrid_store.create_dream_task(STORE, ALICE.tenant_pattern())
    assert task.status == "completed" and task.apply_mode == "proposal"
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    assert (action.action, action.status, set(action.memory_ids)) == ("MERGE", "proposed", {a, b})
    assert action.confidence is not None and action.reason
    assert task.action_counts["proposed"] == 1
    listed = hybrid_store.list_memories(STORE, ALICE.pattern()).items
    assert len(listed) == 2 and not any("superseded_by" in m.extras for m in listed)


def test_safe_auto_merges_and_the_merged_memory_records_what_it_supersedes(
    hybrid_store: SqliteMemoryStore,
) -> None:
    a = _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    b = _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    task = hybrid_store.create_dream_task(STORE, [ALICE.tenant_pattern()], apply_mode="safe_auto")
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    assert action.status == "applied" and action.result_memory_id == b
    kept = hybrid_store.get_memory(STORE, ALICE, b)
    assert kept.version == 2
    current = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert [m.id for m in current] == [b] and current[0].extras["supersedes"] == [a]
    hits = hybrid_store.search(STORE, ALICE.pattern(), "green tea morning")
    assert [h.memory.id for h in hits] == [b]


def test_an_edit_of_a_merged_away_memory_makes_it_current(
    hybrid_store: SqliteMemoryStore,
) -> None:
    """An update of the id ``add`` gave, after a dream pass merged that memory into a newer
    wording, answered success and was shown nowhere: not listed, not found, its record
    claiming it current while ``get`` named its successor. A new text is the newest thing
    said: the memory is current again, and its old successor no longer lists it."""
    a = _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    b = _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    hybrid_store.create_dream_task(STORE, [ALICE.tenant_pattern()], apply_mode="safe_auto")
    assert hybrid_store.get_memory(STORE, ALICE, a).extras["superseded_by"] == b
    # Metadata alone changes nothing said: the old version stays behind its successor.
    hybrid_store.update_memory(STORE, ALICE, a, metadata={"topic": "drinks"})
    assert hybrid_store.get_memory(STORE, ALICE, a).extras["superseded_by"] == b
    edited = hybrid_store.update_memory(STORE, ALICE, a, text="The user adopted a parrot, Kiwi")
    assert "superseded_by" not in edited.extras
    assert "superseded_by" not in hybrid_store.get_memory(STORE, ALICE, a).extras
    current = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert sorted(m.id for m in current) == sorted([a, b])
    assert not hybrid_store.get_memory(STORE, ALICE, b).extras.get("supersedes")
    hits = hybrid_store.search(STORE, ALICE.pattern(), "parrot Kiwi")
    assert hits[0].memory.id == a


def _merged(store: SqliteMemoryStore, texts: list[str]) -> tuple[list[str], str]:
    """Alice says ``texts`` one after another, a dream folding each into the last: the ids
    written, and the one memory kept current."""
    ids = [_turn(store, ALICE, texts[0], 1.0)]
    for i, text in enumerate(texts[1:]):
        ids.append(_turn(store, ALICE, text, 2.0 + i))
        store.create_dream_task(STORE, [ALICE.tenant_pattern()], apply_mode="safe_auto")
    [kept] = store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    return ids, kept.id


@pytest.mark.parametrize("hops", [1, 2])
def test_a_forgotten_memory_s_replaced_versions_do_not_answer_for_it(
    hybrid_store: SqliteMemoryStore, hops: int
) -> None:
    """Forgetting the memory a merge kept left the merged-away copy hidden from listings
    but answering every search in its place: the forgotten fact was still recalled."""
    texts = [
        "The user likes green tea in the morning",
        "the user likes green TEA in the morning!",
        "The user likes green tea in the morning.",
    ]
    _, kept = _merged(hybrid_store, texts[: hops + 1])
    assert [h.memory.id for h in hybrid_store.search(STORE, ALICE.pattern(), "green tea")] == [kept]
    hybrid_store.delete_memory(STORE, ALICE, kept)
    assert hybrid_store.search(STORE, ALICE.pattern(), "green tea morning") == []
    assert hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items == ()
    _turn(hybrid_store, ALICE, "The user likes green tea after lunch", 9.0)
    hits = hybrid_store.search(STORE, ALICE.pattern(), "green tea")
    assert [h.memory.text for h in hits] == ["The user likes green tea after lunch"]


@pytest.mark.parametrize("hops", [1, 2])
@pytest.mark.parametrize("how", ["text", "message"])
def test_a_fact_said_again_after_its_merged_memory_was_forgotten_is_current(
    hybrid_store: SqliteMemoryStore, hops: int, how: str
) -> None:
    """Said again after the memory a merge kept was forgotten, a fact landed on its folded
    copy, which stayed hidden: the write answered with an id that no listing or search
    showed. It is current again; an older occurrence (a replayed history) leaves it hidden."""
    texts = [
        "The user lives in Berlin",
        "the user lives in BERLIN!",
        "The user lives in Berlin.",
    ]
    ids, kept = _merged(hybrid_store, texts[: hops + 1])
    hybrid_store.delete_memory(STORE, ALICE, kept)
    _turn(hybrid_store, ALICE, texts[0], 0.5)  # older than the fact: history, still forgotten
    assert hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items == ()
    if how == "text":
        [again] = hybrid_store.add_text(STORE, ALICE, texts[0], sync=True).memory_ids
    else:
        again = _turn(hybrid_store, ALICE, texts[0], 9.0)
    assert again == ids[0]
    current = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert [m.id for m in current] == [again]
    assert "superseded_by" not in hybrid_store.get_memory(STORE, ALICE, again).extras
    hits = hybrid_store.search(STORE, ALICE.pattern(), "where does the user live")
    assert [h.memory.id for h in hits] == [again]
    assert len(hybrid_store.list_memories(STORE, ALICE.pattern()).items) == hops


def test_delete_is_never_applied_by_itself_but_can_be_by_hand(
    lexical_store: SqliteMemoryStore, db_path: Path
) -> None:
    old = _turn(lexical_store, ALICE, "We have 30 dozen eggs stocked in the fridge", 1.0)
    new = _turn(lexical_store, ALICE, "We now have 20 dozen eggs stocked in the fridge", 2.0)
    deleting = _planning_deletes(db_path)
    task = deleting.create_dream_task(
        STORE, ALICE.pattern(), apply_mode="safe_auto", confidence_thresholds={"update": 0.0}
    )
    deleting.close()
    [action] = lexical_store.list_dream_actions(STORE, task.id).items
    assert (action.action, action.target_memory_id) == ("DELETE", old)
    assert (action.status, action.skipped_reason) == ("skipped", "delete_requires_manual_apply")
    assert task.action_counts["skippedByReason"] == {"delete_requires_manual_apply": 1}
    [done] = lexical_store.apply_dream_actions(STORE, task.id, [action.id])
    assert done.status == "applied"
    assert [m.id for m in lexical_store.list_memories(STORE, ALICE.pattern()).items] == [new]
    restored = lexical_store.undo_dream_action(STORE, task.id, action.id)
    assert restored.status == "proposed" and restored.extras["undone"]
    again = lexical_store.get_memory(STORE, ALICE, old)
    assert again.text == "We have 30 dozen eggs stocked in the fridge"


def test_superseded_memory_ranks_below_its_superseder(hybrid_store: SqliteMemoryStore) -> None:
    old = _turn(
        hybrid_store, ALICE, "My friend Rachel moved to Chicago last spring with her dog", 1.0
    )
    for i, filler in enumerate(["I play chess", "Lisbon trip in May", "new laptop arrived"]):
        _turn(hybrid_store, ALICE, filler, 1.5 + i / 10)
    new = _turn(hybrid_store, ALICE, "Rachel recently moved to the suburbs with her dog", 2.0)
    before = [
        h.memory.id for h in hybrid_store.search(STORE, ALICE.pattern(), "Rachel Chicago dog")
    ]
    assert before.index(old) < before.index(new)
    task = hybrid_store.create_dream_task(
        STORE, ALICE.pattern(), apply_mode="safe_auto", confidence_thresholds={"update": 0.0}
    )
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    assert (action.action, action.status, action.target_memory_id) == ("UPDATE", "applied", new)
    hits = hybrid_store.search(STORE, ALICE.pattern(), "Rachel Chicago dog")
    after = [h.memory.id for h in hits]
    assert after.index(new) < after.index(old)
    # The replaced memory still answers, naming its successor as get does; it read as current.
    by = {h.memory.id: h.memory.superseded_by for h in hits}
    assert (by[old], by[new]) == (new, None)
    assert hybrid_store.get_memory(STORE, ALICE, old).superseded_by == new
    listed = hybrid_store.list_memories(STORE, ALICE.pattern()).items
    assert {m.id: m.extras.get("superseded_by") for m in listed}[old] == new
    assert old not in [
        m.id for m in hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    ]
    hybrid_store.undo_dream_action(STORE, task.id, action.id)
    assert hybrid_store.get_memory(STORE, ALICE, new).version == 1
    undone = [
        h.memory.id for h in hybrid_store.search(STORE, ALICE.pattern(), "Rachel Chicago dog")
    ]
    assert undone == before


def test_an_action_whose_memory_changed_is_skipped_as_stale(
    hybrid_store: SqliteMemoryStore,
) -> None:
    _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    b = _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    task = hybrid_store.create_dream_task(STORE, ALICE.pattern())
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    hybrid_store.update_memory(STORE, ALICE, b, metadata={"k": "v"})
    [result] = hybrid_store.apply_dream_actions(STORE, task.id, [action.id])
    assert (result.status, result.skipped_reason) == ("skipped", "stale_target_memory")


def test_an_update_whose_newer_memory_was_reworded_since_is_skipped_as_stale(
    lexical_store: SqliteMemoryStore,
) -> None:
    """The newer memory an UPDATE keeps was edited to say something else: applying it
    anyway marked the older fact replaced by a memory that no longer states its new value."""
    old = _turn(lexical_store, ALICE, "We keep 30 dozen eggs in the fridge at the moment", 1.0)
    new = _turn(lexical_store, ALICE, "We now keep 20 dozen eggs in the fridge", 2.0)
    task = lexical_store.create_dream_task(STORE, ALICE.pattern())
    [action] = lexical_store.list_dream_actions(STORE, task.id).items
    assert (action.action, action.target_memory_id) == ("UPDATE", new)
    lexical_store.update_memory(STORE, ALICE, new, text="We keep chickens in the garden")
    [result] = lexical_store.apply_dream_actions(STORE, task.id, [action.id])
    assert (result.status, result.skipped_reason) == ("skipped", "stale_target_memory")
    current = lexical_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert {m.id for m in current} == {old, new}


def test_an_update_whose_newer_memory_only_gained_tags_still_applies(
    lexical_store: SqliteMemoryStore,
) -> None:
    old = _turn(lexical_store, ALICE, "We keep 30 dozen eggs in the fridge at the moment", 1.0)
    new = _turn(lexical_store, ALICE, "We now keep 20 dozen eggs in the fridge", 2.0)
    task = lexical_store.create_dream_task(STORE, ALICE.pattern())
    [action] = lexical_store.list_dream_actions(STORE, task.id).items
    lexical_store.update_memory(STORE, ALICE, new, metadata={"topic": "food"})
    [result] = lexical_store.apply_dream_actions(STORE, task.id, [action.id])
    assert result.status == "applied"
    current = lexical_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert [m.id for m in current] == [new] and old != new


def test_an_applied_action_whose_memory_was_edited_since_is_not_undone(
    hybrid_store: SqliteMemoryStore,
) -> None:
    a = _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    b = _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    task = hybrid_store.create_dream_task(STORE, ALICE.pattern())
    later = hybrid_store.create_dream_task(STORE, ALICE.pattern())  # planned on b version 1
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    [stale] = hybrid_store.list_dream_actions(STORE, later.id).items
    hybrid_store.apply_dream_actions(STORE, task.id, [action.id])
    edited = hybrid_store.update_memory(STORE, ALICE, b, text="The user drinks coffee at night")
    with pytest.raises(Conflict, match="changed since"):
        hybrid_store.undo_dream_action(STORE, task.id, action.id)
    # Nothing moved: the edit keeps its version, the merge stays applied.
    assert hybrid_store.get_memory(STORE, ALICE, b) == edited and edited.version == 3
    assert hybrid_store.get_memory(STORE, ALICE, a).extras["superseded_by"] == b
    [kept] = hybrid_store.list_dream_actions(STORE, task.id).items
    assert kept.status == "applied"
    # The plan made before the edit still finds its memory stale.
    [result] = hybrid_store.apply_dream_actions(STORE, later.id, [stale.id])
    assert result.status == "skipped"


def test_an_action_superseded_by_a_later_one_is_undone_after_it(
    hybrid_store: SqliteMemoryStore,
) -> None:
    _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    first = hybrid_store.create_dream_task(STORE, ALICE.pattern(), apply_mode="safe_auto")
    [merge] = hybrid_store.list_dream_actions(STORE, first.id).items
    _turn(hybrid_store, ALICE, "The user likes green tea in the morning!!", 3.0)
    second = hybrid_store.create_dream_task(STORE, ALICE.pattern(), apply_mode="safe_auto")
    [again] = hybrid_store.list_dream_actions(STORE, second.id).items
    assert again.status == "applied"
    before = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=False).items
    with pytest.raises(Conflict, match="changed since"):
        hybrid_store.undo_dream_action(STORE, first.id, merge.id)
    assert hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=False).items == before
    hybrid_store.undo_dream_action(STORE, second.id, again.id)
    hybrid_store.undo_dream_action(STORE, first.id, merge.id)
    current = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert len(current) == 3 and all(m.version == 1 for m in current)


def test_cancelled_task_skips_its_proposals(hybrid_store: SqliteMemoryStore) -> None:
    _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    task = hybrid_store.create_dream_task(STORE, ALICE.pattern())
    assert hybrid_store.cancel_dream_task(STORE, task.id).status == "completed"
    listed = hybrid_store.list_dream_tasks(STORE, status="completed", pattern=ALICE.pattern())
    assert task.id in [t.id for t in listed.items]


def test_bad_dream_arguments_are_typed_errors(hybrid_store: SqliteMemoryStore) -> None:
    for kwargs in (
        {"apply_mode": "plan"},
        {"confidence_thresholds": {"delete": 0.1}},
        {"scope_output_mode": "everywhere"},
        {"max_memories": -1},
    ):
        with pytest.raises(InvalidInput):
            hybrid_store.create_dream_task(STORE, ALICE.pattern(), **kwargs)  # type: ignore[arg-type]


_TEXTS = [
    "The user likes green tea",
    "the user likes green TEA",
    "We have 30 dozen eggs stocked in the fridge",
    "We now have 20 dozen eggs stocked in the fridge",
    "Rachel moved to Chicago with her dog",
    "Rachel recently moved to the suburbs with her dog",
]
_SCOPES = [ALICE, ALICE.replace(run_id="run2"), BOB, Scope("other", "alice", "agent", "run1")]
_PATTERNS = [
    ALICE.pattern(),
    ALICE.tenant_pattern(),
    BOB.tenant_pattern(),
    ScopePattern("app", "*", "*", "*"),
]


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    items=st.lists(
        st.tuples(st.sampled_from(_SCOPES), st.sampled_from(_TEXTS), st.integers(0, 3)),
        min_size=2,
        max_size=10,
    ),
    pattern=st.sampled_from(_PATTERNS),
    promote=st.booleans(),
)
def test_applied_dream_changes_nothing_outside_its_scopes(
    items: list[tuple[Scope, str, int]], pattern: ScopePattern, promote: bool
) -> None:
    with SqliteMemoryStore(":memory:", embedder=HashingEmbedder(64)) as store:
        store.ensure_store(STORE)
        for scope, text, when in items:
            _turn(store, scope, text, float(when))
        outside_before = _snapshot(store, pattern)
        task = store.create_dream_task(
            STORE,
            pattern,
            apply_mode="safe_auto",
            confidence_thresholds={"merge": 0.0, "update": 0.0},
            scope_output_mode="promote_scope" if promote else "preserve_scope",
        )
        actions = store.list_dream_actions(STORE, task.id, limit=100).items
        store.apply_dream_actions(STORE, task.id, [a.id for a in actions] or ["none"])
        for a in actions:
            assert a.scope is not None and pattern.matches(a.scope)
        assert _snapshot(store, pattern) == outside_before


def _snapshot(
    store: SqliteMemoryStore, inside: ScopePattern
) -> list[tuple[str, str, int | None, object]]:
    out = []
    for app in ("app", "other"):
        page = store.list_memories(STORE, ScopePattern(app, "*", "*", "*"), limit=100)
        for m in page.items:
            if not inside.matches(m.scope):
                out.append((m.id, m.text, m.version, dict(m.extras)))
    return sorted(out, key=lambda r: r[0])


def test_the_library_dreams_through_the_store(tmp_path: Path) -> None:
    from memcore import Memory
    from memcore.config import MemcoreConfig

    cfg = MemcoreConfig(local_path=str(tmp_path / "lib.db"), embedder="none")
    with Memory.open("local", config=cfg, user_id="ana") as mem:
        mem.add(text="Ana keeps 30 dozen eggs in the fridge at the moment")
        mem.add(text="Ana has two cats")
        mem.add(text="Ana now keeps 20 dozen eggs in the fridge")
        task = mem.dream()
        [action] = mem.dream_actions(task.id)
        assert (action.action, action.status) == ("UPDATE", "applied")
        current = [m.text for m in mem.list().items]
        assert len(current) == 2 and all("30 dozen" not in t for t in current)
        assert [m.text for m in mem.list(current_only=True).items] == current
        assert len(mem.list(all_versions=True).items) == 3


class _Reviewer:
    """A reviewer that acts during planning (a person cancelling, a model misbehaving)."""

    def __init__(self, act):  # type: ignore[no-untyped-def]
        self.act = act

    def review(self, candidates, actions, instructions):  # type: ignore[no-untyped-def]
        return self.act(candidates, actions)


def _reviewed(db_path: Path, act):  # type: ignore[no-untyped-def]
    """A second store on the same file, whose dream reviewer is ``act``."""
    return SqliteMemoryStore(db_path, embedder=HashingEmbedder(64), dream_reviewer=_Reviewer(act))


def _planning_deletes(db_path: Path) -> SqliteMemoryStore:
    """A store on the same file whose plans hold a DELETE where the planner puts an UPDATE."""
    return SqliteMemoryStore(
        db_path, embedder=HashingEmbedder(64), dream_reviewer=DeletingReviewer()
    )


def test_a_task_cancelled_while_planning_writes_no_action(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    seen: list[str] = []

    def cancel(candidates, actions):  # type: ignore[no-untyped-def]
        [task] = reviewed.list_dream_tasks(STORE).items
        seen.append(task.status)
        reviewed.cancel_dream_task(STORE, task.id)
        return actions

    reviewed = _reviewed(db_path, cancel)
    task = reviewed.create_dream_task(STORE, ALICE.pattern(), apply_mode="safe_auto")
    assert seen == ["planning"]
    assert task.status == "cancelled" and task.finished_at is not None
    assert reviewed.list_dream_actions(STORE, task.id).items == ()
    reviewed.close()


def test_actions_a_reviewer_aims_at_another_tenant_are_dropped(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    import attrs

    _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", 2.0)
    bob = _turn(hybrid_store, BOB, "Bob likes green tea in the morning", 1.0)

    def hijack(candidates, actions):  # type: ignore[no-untyped-def]
        return [attrs.evolve(a, source_ids=(*a.source_ids, bob)) for a in actions] + [
            attrs.evolve(actions[0], target_scope=BOB)
        ]

    reviewed = _reviewed(db_path, hijack)
    task = reviewed.create_dream_task(STORE, ALICE.pattern(), apply_mode="safe_auto")
    assert reviewed.list_dream_actions(STORE, task.id).items == ()
    reviewed.close()
    assert hybrid_store.get_memory(STORE, BOB, bob).version == 1


def _actions(store: SqliteMemoryStore, task_id: str) -> set[tuple[object, ...]]:
    got = store.list_dream_actions(STORE, task_id, limit=100)
    assert not got.next_token
    return {
        (a.action, a.target_memory_id, tuple(sorted(a.memory_ids)), a.text, a.confidence, a.reason)
        for a in got.items
    }


_PETS = ["cats", "dogs", "parrots", "rabbits", "turtles", "hamsters", "goldfish", "ferrets"]
_NAMES = ["Arvid", "Bodil", "Cyrus", "Dagny", "Eskil", "Freja", "Gorm", "Hilde"]
_TOWNS = ["Lisbon", "Oslo", "Denver", "Kyoto", "Austin", "Porto", "Dublin", "Quito"]
_LAKES = ["Tahoe", "Como", "Bled", "Garda", "Louise", "Ohrid", "Malawi", "Titicaca"]
_PLANTS = ["tomato", "orchid", "fennel", "quince", "saffron", "lavender", "kale", "fig"]
_STREETS = ["Elm", "Birch", "Cedar", "Maple", "Willow", "Aspen", "Rowan", "Hazel"]
_SHIPS = ["Endurance", "Bounty", "Beagle", "Victory", "Discovery", "Resolute", "Fram", "Terror"]


def _old_life(store: SqliteMemoryStore, scope: Scope) -> list[str]:
    """Forty memories of one person over forty days, one of them said twice."""
    ids = []
    for i in range(8):
        texts = [
            f"My cousin {_NAMES[i]} lives in {_TOWNS[i]} and teaches chemistry there",
            f"We keep {i + 2} {_PETS[i]} at the cabin on Lake {_LAKES[i]}",
            f"The budget for the {_PLANTS[i]} greenhouse on {_STREETS[i]} Road is {300 + 10 * i} dollars",
            f"I started reading a novel about the {_SHIPS[i]} crossing the northern sea",
            f"Our neighbour {_NAMES[7 - i]}son repairs vintage bicycles in {_TOWNS[7 - i]}",
        ]
        ids += [_turn(store, scope, t, 86400.0 * 5 * i + j) for j, t in enumerate(texts)]
    again = "I started reading a novel about the Victory crossing the northern sea!"
    ids.append(_turn(store, scope, again, 86400.0 * 41))
    return ids


def test_a_session_pass_finds_what_a_full_pass_finds_for_the_new_memories(
    hybrid_store: SqliteMemoryStore,
) -> None:
    store = hybrid_store
    old = set(_old_life(store, ALICE))
    _old_life(store, BOB)  # the same words in another tenant
    first = store.create_session_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="proposal")
    assert first.status == "completed"
    day = 86400.0 * 60
    new_texts = [
        "My cousin Cyrus lives in Denver and teaches chemistry there!",  # said again
        "We now keep 7 parrots at the cabin on Lake Bled",  # another number
        "The budget for the lavender greenhouse on Aspen Road is now 420 dollars",  # changed
        "Our neighbour Eskilson moved his vintage bicycles repair shop from Kyoto to Bergen",
        "I booked a dentist appointment for the second week of March",  # nothing old
    ]
    new = {_turn(store, ALICE, t, day + j) for j, t in enumerate(new_texts)}
    session = store.create_session_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="proposal")
    found = _actions(store, session.id)
    full = _actions(
        store, store.create_dream_task(STORE, ALICE.tenant_pattern(), max_memories=5000).id
    )
    involving_new = {a for a in full if new & set(a[2])}
    # The full pass finds merges and supersessions between new and old memories, and
    # some among old ones only, which the session pass leaves to it.
    kinds = sorted(a[0] for a in involving_new)
    assert "MERGE" in kinds and sum(k in ("UPDATE", "DELETE") for k in kinds) >= 2, kinds
    assert full - involving_new
    assert found == involving_new
    assert all(set(a[2]) <= old | new for a in found)
    # Nothing was written since: the next session pass has nothing to plan.
    again = store.create_session_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="proposal")
    assert again.action_counts.get("total", 0) == 0


def test_a_session_pass_plans_only_its_tenant_and_its_own_new_memories(
    hybrid_store: SqliteMemoryStore,
) -> None:
    store = hybrid_store
    bob = set(_old_life(store, BOB))
    store.create_session_dream_task(STORE, BOB.tenant_pattern(), apply_mode="proposal")
    a = _turn(store, ALICE, "My cousin Arvid2 lives in Denver and teaches chemistry there", 1e6)
    b = _turn(
        store, ALICE, "My cousin Arvid2 lives in Denver and teaches chemistry there!", 1e6 + 1
    )
    # Alice's first pass plans her memories; Bob's identical texts are not hers to pair.
    task = store.create_session_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="safe_auto")
    [action] = store.list_dream_actions(STORE, task.id).items
    assert set(action.memory_ids) == {a, b} and action.status == "applied"
    # Bob's tenant had its pass before Alice wrote: his next one has nothing new.
    quiet = store.create_session_dream_task(STORE, BOB.tenant_pattern(), apply_mode="proposal")
    assert quiet.action_counts.get("total", 0) == 0
    assert {m.id for m in store.list_memories(STORE, BOB.pattern(), limit=100).items} == bob


def test_bad_session_pass_arguments_are_typed_errors(hybrid_store: SqliteMemoryStore) -> None:
    for bad in (-1, True, "3"):
        with pytest.raises(InvalidInput) as err:
            hybrid_store.create_session_dream_task(STORE, ALICE.tenant_pattern(), max_new=bad)  # type: ignore[arg-type]
        assert err.value.field == "max_new"


def test_a_session_pass_finds_an_old_twin_past_the_newest_memories_it_reads(
    hybrid_store: SqliteMemoryStore,
) -> None:
    """The new memory's nearest come from the store's vector search over the whole scope."""
    store = hybrid_store
    old = _turn(store, ALICE, "The user likes green tea in the morning", 1.0)
    for i in range(8):
        _turn(
            store, ALICE, f"We keep {i + 2} {_PETS[i]} at the cabin on Lake {_LAKES[i]}", 10.0 + i
        )
    store.create_session_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="proposal")
    new = _turn(store, ALICE, "the user likes green TEA in the morning!", 100.0)
    task = store.create_session_dream_task(
        STORE, ALICE.tenant_pattern(), apply_mode="proposal", max_memories=5
    )
    [action] = store.list_dream_actions(STORE, task.id).items
    assert (action.action, set(action.memory_ids)) == ("MERGE", {old, new})
    window = store.create_dream_task(STORE, ALICE.tenant_pattern(), max_memories=5)
    assert not store.list_dream_actions(STORE, window.id).items


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("The user is vegetarian", "The user is not vegetarian"),
        ("The user can swim", "The user can't swim"),
        (
            "The user is allergic to penicillin and must avoid it",
            "The user is not allergic to penicillin and need not avoid it",
        ),
        (
            "The user likes green tea in the morning",
            "The user does not like green tea in the morning",
        ),
        (
            "My favourite restaurant is the Italian place on Main Street near the park, I go"
            " there every Friday with my wife and kids",
            "My favourite restaurant is the Italian place on Main Street near the park, I go"
            " there every Friday with my wife",
        ),
        (
            "My favourite restaurant is the Italian place on Main Street near the park, I go"
            " there every Friday with my wife",
            "My favourite restaurant is the Italian place on Main Street near the park, I go"
            " there every Friday with my kids",
        ),
        (
            "My sister has 2 kids and lives in Lisbon",
            "My brother now has 3 kids and lives in Lisbon",
        ),
        (
            "The user's mother is 60 years old and lives in Porto",
            "The user's father is now 62 years old and lives in Porto",
        ),
    ],
)
def test_the_session_pass_applies_nothing_that_hides_a_fact(
    tmp_path: Path, onnx_embedder: object, old: str, new: str
) -> None:
    """The pass Hermes runs at every session end (``safe_auto``), with the real embedder:
    two memories that state different facts both stay current."""
    store = SqliteMemoryStore(tmp_path / "m.db", embedder=onnx_embedder)  # type: ignore[arg-type]
    store.ensure_store(STORE)
    try:
        _turn(store, ALICE, old, 1.0)
        _turn(store, ALICE, new, 2.0)
        task = store.create_session_dream_task(STORE, ALICE.tenant_pattern())
        assert task.apply_mode == "safe_auto"
        current = store.list_memories(STORE, ALICE.pattern(), current_only=True).items
        assert sorted(m.text for m in current) == sorted([old, new])
    finally:
        store.close()


def test_undoing_a_delete_gives_the_memory_back_as_it_was(
    lexical_store: SqliteMemoryStore, db_path: Path
) -> None:
    """The undo put the row back with a new ``updated_at`` and ``said_at``, and without the
    turns it was made from (its context in recall was gone)."""
    old = _turn(lexical_store, ALICE, "We have 30 dozen eggs stocked in the fridge", 1.0)
    _turn(lexical_store, ALICE, "I play chess on Sundays", 2.0)
    assert _turn(lexical_store, ALICE, "We have 30 dozen eggs stocked in the fridge", 3.0) == old
    _turn(lexical_store, ALICE, "We now have 20 dozen eggs stocked in the fridge", 4.0)
    before = lexical_store.get_memory(STORE, ALICE, old)
    turns = lexical_store.neighbour_turns(STORE, ALICE, old, turns=1)
    assert before.said_at == 3.0 and before.version == 2 and turns.before
    deleting = _planning_deletes(db_path)
    task = deleting.create_dream_task(STORE, ALICE.pattern())
    deleting.close()
    [action] = lexical_store.list_dream_actions(STORE, task.id).items
    assert (action.action, action.target_memory_id) == ("DELETE", old)
    lexical_store.apply_dream_actions(STORE, task.id, [action.id])
    lexical_store.undo_dream_action(STORE, task.id, action.id)
    assert lexical_store.get_memory(STORE, ALICE, old) == before
    assert lexical_store.neighbour_turns(STORE, ALICE, old, turns=1) == turns


def test_a_merge_keeps_the_metadata_of_every_memory_it_folds(
    hybrid_store: SqliteMemoryStore,
) -> None:
    """A MERGE whose newest memory carried on kept only that memory's keys: a key only the
    older one had (where the fact came from) was gone from the current memory and its
    filters. Keys merge as a repeated text's do, and an undo gives the map back."""
    a = hybrid_store.add_text(
        STORE, ALICE, "The user likes green tea in the morning", metadata={"source": "email"}
    ).memory_ids[0]
    b = hybrid_store.add_text(
        STORE, ALICE, "the user likes green TEA in the morning!", metadata={"k": "2"}
    ).memory_ids[0]
    task = hybrid_store.create_dream_task(STORE, ALICE.pattern(), apply_mode="safe_auto")
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    assert (action.status, action.result_memory_id) == ("applied", b)
    assert hybrid_store.get_memory(STORE, ALICE, b).metadata == {"source": "email", "k": "2"}
    found = hybrid_store.search(STORE, ALICE.pattern(), "green tea", filters={"source": "email"})
    assert [h.memory.id for h in found] == [b]
    hybrid_store.undo_dream_action(STORE, task.id, action.id)
    assert hybrid_store.get_memory(STORE, ALICE, b).metadata == {"k": "2"}
    found = hybrid_store.search(STORE, ALICE.pattern(), "green tea", filters={"source": "email"})
    assert [h.memory.id for h in found] == [a]


def test_a_merged_memory_holds_no_more_metadata_keys_than_the_limit(
    hybrid_store: SqliteMemoryStore,
) -> None:
    from memcore.limits import MAX_METADATA_KEYS

    run2 = ALICE.replace(run_id="run2")
    for scope, prefix in ((ALICE, "a"), (run2, "b")):
        keys = {f"{prefix}{i:02d}": "v" for i in range(MAX_METADATA_KEYS)}
        hybrid_store.add_text(STORE, scope, "The user likes green tea", metadata=keys)
    task = hybrid_store.create_dream_task(
        STORE, ALICE.tenant_pattern(), scope_output_mode="promote_scope"
    )
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    [done] = hybrid_store.apply_dream_actions(STORE, task.id, [action.id])
    assert done.status == "applied" and done.result_memory_id is not None
    merged = hybrid_store.find_memory(STORE, ALICE.tenant_pattern(), done.result_memory_id)
    assert len(merged.metadata) == MAX_METADATA_KEYS
    assert all(merged.metadata.get(f"b{i:02d}") == "v" for i in range(MAX_METADATA_KEYS))


def test_a_merge_into_new_wording_is_said_when_its_newest_source_was(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    """A MERGE whose text no source holds made a memory dated the day the pass ran, so
    recall showed a fact said in 2023 as said today."""
    import attrs

    said = [1_680_000_000.0, 1_690_000_000.0]  # 2023
    _turn(hybrid_store, ALICE, "The user likes green tea in the morning", said[0])
    _turn(hybrid_store, ALICE, "the user likes green TEA in the morning!", said[1])

    def reword(candidates, actions):  # type: ignore[no-untyped-def]
        return [attrs.evolve(a, text="The user drinks green tea every morning") for a in actions]

    reviewed = _reviewed(db_path, reword)
    task = reviewed.create_dream_task(STORE, ALICE.pattern())
    [action] = reviewed.list_dream_actions(STORE, task.id).items
    reviewed.apply_dream_actions(STORE, task.id, [action.id])
    reviewed.close()
    [merged] = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert merged.text == "The user drinks green tea every morning"
    assert merged.said_at == said[1]
    assert merged.created_at == said[1]


def test_an_add_with_no_source_applies_as_a_new_memory_said_now(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    """A reviewer may make a plan: an ADD of a new fact reads no memory. Dating a new
    wording by its newest source took the newest of none, and the apply raised ValueError."""
    import time

    from memcore.dream.planner import PlannedAction

    _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1_680_000_000.0)

    def add(candidates, actions):  # type: ignore[no-untyped-def]
        return [PlannedAction("ADD", ALICE, None, (), "The user owns a kayak", 0.99, "new fact")]

    reviewed = _reviewed(db_path, add)
    task = reviewed.create_dream_task(STORE, ALICE.pattern())
    [action] = reviewed.list_dream_actions(STORE, task.id).items
    before = time.time()
    [done] = reviewed.apply_dream_actions(STORE, task.id, [action.id])
    reviewed.close()
    assert done.status == "applied"
    added = hybrid_store.find_memory(STORE, ALICE.tenant_pattern(), done.result_memory_id)
    assert added.text == "The user owns a kayak"
    assert added.said_at is not None and added.said_at >= before


def test_a_fold_moves_the_version_so_an_import_rollback_keeps_it_and_undo_runs(
    hybrid_store: SqliteMemoryStore,
) -> None:
    """A fold set ``superseded_by`` and left the version: the rollback of the import that
    wrote the memory deleted it under the merged memory's ``supersedes``, and undoing the
    merge failed with "was deleted since"."""
    from memcore.values import MemoryVersion
    from memcore_sqlite import TextItem

    versions: dict[str, int] = {}
    a, b = hybrid_store.add_many(
        STORE,
        [
            TextItem(ALICE, "The user likes green tea in the morning", created_at=1.0),
            TextItem(ALICE, "the user likes green TEA in the morning!", created_at=2.0),
        ],
        versions=versions,
    )
    task = hybrid_store.create_dream_task(STORE, [ALICE.tenant_pattern()], apply_mode="safe_auto")
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    assert (action.status, action.result_memory_id) == ("applied", b)
    assert hybrid_store.get_memory(STORE, ALICE, a).version == versions[a] + 1
    kept = hybrid_store.delete_unclaimed(
        STORE, [MemoryVersion(ALICE, i, v) for i, v in versions.items()]
    )
    assert sorted(kept) == sorted([a, b])
    hybrid_store.undo_dream_action(STORE, task.id, action.id)
    current = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert sorted(m.id for m in current) == sorted([a, b])
    assert [hybrid_store.get_memory(STORE, ALICE, i).version for i in (a, b)] == [1, 1]


def test_a_merge_whose_new_memory_was_forgotten_is_not_undone(
    hybrid_store: SqliteMemoryStore,
) -> None:
    """Undoing a merge into a new memory that was forgotten since answered "proposed" and
    made the folded copies current again: the forgotten fact was recalled twice over. As for
    a merge into a memory that was there, the undo is refused and changes nothing."""
    run2 = ALICE.replace(run_id="run2")
    for scope in (ALICE, run2):
        hybrid_store.add_text(STORE, scope, "The user likes green tea", sync=True)
    task = hybrid_store.create_dream_task(
        STORE, ALICE.tenant_pattern(), scope_output_mode="promote_scope"
    )
    [action] = hybrid_store.list_dream_actions(STORE, task.id).items
    [done] = hybrid_store.apply_dream_actions(STORE, task.id, [action.id])
    assert done.result_memory_id is not None
    merged = hybrid_store.find_memory(STORE, ALICE.tenant_pattern(), done.result_memory_id)
    hybrid_store.delete_memory(STORE, merged.scope, merged.id)
    with pytest.raises(Conflict, match="deleted since"):
        hybrid_store.undo_dream_action(STORE, task.id, action.id)
    assert hybrid_store.list_memories(STORE, ALICE.tenant_pattern(), current_only=True).items == ()
    assert hybrid_store.search(STORE, ALICE.tenant_pattern(), "green tea") == []
    [still] = hybrid_store.list_dream_actions(STORE, task.id).items
    assert still.status == "applied"


def test_an_add_whose_memory_was_forgotten_undoes_as_nothing_to_take_back(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    from memcore.dream.planner import PlannedAction

    def add(candidates, actions):  # type: ignore[no-untyped-def]
        return [PlannedAction("ADD", ALICE, None, (), "The user owns a kayak", 0.99, "new fact")]

    _turn(hybrid_store, ALICE, "The user likes green tea in the morning", 1.0)
    reviewed = _reviewed(db_path, add)
    task = reviewed.create_dream_task(STORE, ALICE.pattern())
    [action] = reviewed.list_dream_actions(STORE, task.id).items
    [done] = reviewed.apply_dream_actions(STORE, task.id, [action.id])
    reviewed.close()
    assert done.result_memory_id is not None
    hybrid_store.delete_memory(STORE, ALICE, done.result_memory_id)
    assert hybrid_store.undo_dream_action(STORE, task.id, action.id).status == "proposed"


def test_a_delete_whose_memory_an_import_stored_again_is_not_undone(
    lexical_store: SqliteMemoryStore, db_path: Path
) -> None:
    """A backup restored the memory a DELETE had taken, under its id, while that import was
    still under way. Undoing the DELETE answered "proposed" and set the version back to the
    deleted one's: the import's rollback found it where it had left it and deleted it, so the
    fact the undo said it gave back was gone. The undo is refused, as for the same text
    stored again under another id, and the memory stays as the import wrote it."""
    from memcore.values import MemoryVersion
    from memcore_sqlite import TextItem

    text = "We have 30 dozen eggs stocked in the fridge"
    old = _turn(lexical_store, ALICE, text, 1.0)
    _turn(lexical_store, ALICE, "We now have 20 dozen eggs stocked in the fridge", 2.0)
    deleting = _planning_deletes(db_path)
    task = deleting.create_dream_task(STORE, ALICE.pattern(), confidence_thresholds={"update": 0.0})
    deleting.close()
    [action] = lexical_store.list_dream_actions(STORE, task.id).items
    assert (action.action, action.target_memory_id) == ("DELETE", old)
    lexical_store.apply_dream_actions(STORE, task.id, [action.id])
    versions: dict[str, int] = {}
    assert lexical_store.add_many(
        STORE, [TextItem(ALICE, text, id=old, version=4)], versions=versions
    ) == [old]
    with pytest.raises(Conflict, match="stored again since"):
        lexical_store.undo_dream_action(STORE, task.id, action.id)
    assert lexical_store.get_memory(STORE, ALICE, old).version == 4
    [still] = lexical_store.list_dream_actions(STORE, task.id).items
    assert still.status == "applied"
    lexical_store.delete_unclaimed(STORE, [MemoryVersion(ALICE, old, versions[old])])
    lexical_store.undo_dream_action(STORE, task.id, action.id)  # the import's copy is gone
    assert lexical_store.get_memory(STORE, ALICE, old).text == text


def test_the_librarys_dream_narrowed_to_a_run_leaves_the_other_runs_alone(
    lexical_store: SqliteMemoryStore,
) -> None:
    """``Memory.dream(run_id=...)`` covered the whole user: it merged another run's memories."""
    import memcore

    mem = memcore.Memory(lexical_store, scope=ALICE, store_name=STORE)
    for run in ("run1", "run2"):
        for text in ("User lives in Berlin", "User lives in Berlin."):
            mem.add(text=text, run_id=run)
    task = mem.dream(run_id="run2")
    [action] = mem.dream_actions(task.id)
    assert (action.action, action.status) == ("MERGE", "applied")
    current = {(m.scope.run_id, m.text) for m in mem.list().items}
    assert {text for run, text in current if run == "run1"} == {
        "User lives in Berlin",
        "User lives in Berlin.",
    }


def test_an_update_said_in_a_later_run_applies_by_itself(tmp_path: Path) -> None:
    """A fact changed in a later conversation supersedes the earlier one's on a ``safe_auto``
    pass: the newer memory stays in its run, so nothing is promoted."""
    from memcore import Memory
    from memcore.config import MemcoreConfig

    cfg = MemcoreConfig(local_path=str(tmp_path / "runs.db"), embedder="none")
    with Memory.open("local", config=cfg, user_id="ana") as mem:
        [old] = mem.add(text="Ana keeps 30 dozen eggs in the fridge at the moment", run_id="s1")
        [new] = mem.add(text="Ana now keeps 20 dozen eggs in the fridge", run_id="s2")
        task = mem.dream()
        [action] = mem.dream_actions(task.id)
        assert (action.action, action.status) == ("UPDATE", "applied")
        assert mem.get(old, run_id="s1").superseded_by == new
        assert mem.get(new, run_id="s2").scope.run_id == "s2"


def test_an_update_answers_the_links_a_get_answers(tmp_path: Path) -> None:
    """``update`` returns the memory as stored after: a superseded memory whose metadata
    changed is still superseded, and its successor still supersedes it."""
    from memcore import Memory
    from memcore.config import MemcoreConfig

    cfg = MemcoreConfig(local_path=str(tmp_path / "links.db"), embedder="none")
    with Memory.open("local", config=cfg, user_id="ana") as mem:
        [old] = mem.add(text="Ana keeps 30 dozen eggs in the fridge at the moment")
        [new] = mem.add(text="Ana now keeps 20 dozen eggs in the fridge")
        mem.dream()
        assert mem.get(old).superseded_by == new
        assert mem.update(old, metadata={"k": "v"}).superseded_by == new
        assert mem.update(new, metadata={"k": "v"}).supersedes == mem.get(new).supersedes
        assert old in mem.get(new).supersedes


def test_a_replaced_fact_said_again_since_is_current_again(tmp_path: Path) -> None:
    """ "We keep 30 dozen eggs" said again after "now 20 dozen" replaced it is true again: it
    stayed hidden behind its successor, and went from view when the successor was forgotten.
    Said again with a time before the successor's, it stays replaced."""
    from memcore import Memory
    from memcore.config import MemcoreConfig

    cfg = MemcoreConfig(local_path=str(tmp_path / "again.db"), embedder="none")
    old_text = "Ana keeps 30 dozen eggs in the fridge at the moment"
    with Memory.open("local", config=cfg, user_id="ana") as mem:
        [old] = mem.add(messages=[{"role": "user", "content": old_text, "timestamp": 1_000.0}])
        [new] = mem.add(
            messages=[
                {
                    "role": "user",
                    "content": "Ana now keeps 20 dozen eggs in the fridge",
                    "timestamp": 2_000.0,
                }
            ]
        )
        mem.dream()
        assert mem.get(old).superseded_by == new
        earlier = {"role": "user", "content": old_text, "timestamp": 1_500.0}
        assert mem.add(messages=[earlier]) == [old]
        assert mem.get(old).superseded_by == new
        assert mem.add(text=old_text) == [old]
        assert mem.get(old).superseded_by is None
        assert old not in mem.get(new).supersedes
        assert {m.id for m in mem.list().items} == {old, new}
        mem.delete(new)
        assert [m.text for m in mem.list().items] == [old_text]
