"""A dream pass that stops half way (an unexpected error, a killed process) is reported
failed, blocks nothing after it, and leaves no action half applied."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore

STORE = "mem"
ALICE = Scope("app", "alice", "agent", "run1")
TWINS = (
    ("The user likes green tea in the morning", 1.0),
    ("the user likes green TEA in the morning!", 2.0),
    ("The user drives a red bicycle to work", 3.0),
    ("the user drives a RED bicycle to work!", 4.0),
)


def _seed(store: SqliteMemoryStore) -> list[str]:
    ids = []
    for text, when in TWINS:
        receipt = store.add_messages(STORE, ALICE, [Message("user", text, timestamp=when)])
        ids.append(receipt.memory_ids[0])
    return ids


class _Raising:
    """A reviewer whose model client fails with an error that is not a memcore error."""

    def review(self, candidates, actions, instructions):  # type: ignore[no-untyped-def]
        raise RuntimeError("the reviewer broke")


def test_a_pass_stopped_by_an_unexpected_error_is_failed_not_left_running(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    _seed(hybrid_store)
    broken = SqliteMemoryStore(db_path, embedder=HashingEmbedder(64), dream_reviewer=_Raising())
    try:
        with pytest.raises(RuntimeError):
            broken.create_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="safe_auto")
    finally:
        broken.close()
    [task] = hybrid_store.list_dream_tasks(STORE).items
    assert task.status == "failed" and task.finished_at is not None
    assert task.error is not None and "RuntimeError" in task.error
    assert "the reviewer broke" not in task.error  # an arbitrary message may hold anything
    assert hybrid_store.list_dream_actions(STORE, task.id).items == ()
    again = hybrid_store.create_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="safe_auto")
    assert again.status == "completed" and again.action_counts["applied"] == 2


class _Interrupted:
    """Ctrl-C while the plan is reviewed."""

    def review(self, candidates, actions, instructions):  # type: ignore[no-untyped-def]
        raise KeyboardInterrupt


def test_a_pass_interrupted_by_ctrl_c_is_failed_as_interrupted(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    _seed(hybrid_store)
    broken = SqliteMemoryStore(db_path, embedder=HashingEmbedder(64), dream_reviewer=_Interrupted())
    try:
        with pytest.raises(KeyboardInterrupt):
            broken.create_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="safe_auto")
    finally:
        broken.close()
    [task] = hybrid_store.list_dream_tasks(STORE).items
    assert task.status == "failed" and task.error is not None and "interrupted" in task.error


_KILLED = """
import os, signal, sys
from memcore.scope import Scope
from memcore.testing import HashingEmbedder
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.dream import apply as dream_apply

stage = sys.argv[2]
real = dream_apply.DreamApplier.apply_action
done = []

def apply_then_die(self, *args, **kwargs):
    if done:  # the first action landed inside the transaction; die before the second
        os.kill(os.getpid(), signal.SIGKILL)
    done.append(1)
    return real(self, *args, **kwargs)

class Reviewer:
    def review(self, candidates, actions, instructions):
        if stage == "planning":
            os.kill(os.getpid(), signal.SIGKILL)
        return actions

dream_apply.DreamApplier.apply_action = apply_then_die
store = SqliteMemoryStore(sys.argv[1], embedder=HashingEmbedder(64), dream_reviewer=Reviewer())
store.create_dream_task("mem", Scope("app", "alice", "agent", "run1").tenant_pattern(),
                        apply_mode="safe_auto")
"""


@pytest.mark.parametrize("stage", ["planning", "applying"])
def test_a_pass_whose_process_was_killed_is_failed_and_nothing_of_it_half_applied(
    hybrid_store: SqliteMemoryStore, db_path: Path, stage: str
) -> None:
    ids = _seed(hybrid_store)
    proc = subprocess.run([sys.executable, "-c", _KILLED, str(db_path), stage], check=False)
    assert proc.returncode == -signal.SIGKILL
    [task] = hybrid_store.list_dream_tasks(STORE).items
    assert task.status == "failed" and task.finished_at is not None
    assert task.error is not None and "ended before" in task.error
    assert hybrid_store.get_dream_task(STORE, task.id).status == "failed"
    # Nothing of the killed pass landed: every memory is current, at its first version.
    current = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert sorted(m.id for m in current) == sorted(ids)
    assert {m.version for m in current} == {1}
    actions = hybrid_store.list_dream_actions(STORE, task.id).items
    if stage == "applying":  # planned and kept: a person may still apply them
        assert [a.status for a in actions] == ["proposed", "proposed"]
        applied = hybrid_store.apply_dream_actions(STORE, task.id, [a.id for a in actions])
        assert [a.status for a in applied] == ["applied", "applied"]
    else:
        assert actions == ()
        again = hybrid_store.create_dream_task(
            STORE, ALICE.tenant_pattern(), apply_mode="safe_auto"
        )
        assert again.status == "completed" and again.action_counts["applied"] == 2


def test_a_pass_running_in_a_live_process_is_not_taken_for_abandoned(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    _seed(hybrid_store)
    seen: list[str] = []

    class Looking:
        def review(self, candidates, actions, instructions):  # type: ignore[no-untyped-def]
            other = SqliteMemoryStore(db_path, embedder=HashingEmbedder(64))
            try:
                [task] = other.list_dream_tasks(STORE).items
                seen.append(task.status)
                seen.append(other.get_dream_task(STORE, task.id).status)
            finally:
                other.close()
            return actions

    looking = SqliteMemoryStore(db_path, embedder=HashingEmbedder(64), dream_reviewer=Looking())
    try:
        task = looking.create_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="safe_auto")
    finally:
        looking.close()
    assert seen == ["planning", "planning"]
    assert task.status == "completed"


def test_a_task_a_release_before_owners_left_unfinished_is_failed_after_the_upgrade(
    db_path: Path,
) -> None:
    import sqlite3

    store = SqliteMemoryStore(db_path, embedder=HashingEmbedder(64))
    store.ensure_store(STORE)
    _seed(store)
    task = store.create_dream_task(STORE, ALICE.tenant_pattern())
    store.close()
    conn = sqlite3.connect(db_path)
    with conn:  # as schema 12 left a pass that never finished
        conn.execute("UPDATE dream_tasks SET status = 'running', finished_at = NULL")
        conn.executescript("ALTER TABLE dream_tasks DROP COLUMN owner; PRAGMA user_version = 12;")
    conn.close()
    store = SqliteMemoryStore(db_path, embedder=HashingEmbedder(64))
    try:
        back = store.get_dream_task(STORE, task.id)
        assert back.status == "failed" and back.error is not None and "ended before" in back.error
    finally:
        store.close()


def test_only_a_look_at_its_own_scopes_reports_an_abandoned_task(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    """Another tenant's calls leave the task as it is: what changes it is a call that
    reads it (its id, or a listing or pass over scopes it reads)."""
    import sqlite3

    _seed(hybrid_store)
    proc = subprocess.run([sys.executable, "-c", _KILLED, str(db_path), "planning"], check=False)
    assert proc.returncode == -signal.SIGKILL
    bob = Scope("app", "bob", "agent", "run1")
    assert hybrid_store.list_dream_tasks(STORE, pattern=bob.tenant_pattern()).items == ()
    hybrid_store.create_dream_task(STORE, bob.tenant_pattern())
    with sqlite3.connect(db_path) as conn:
        [(status,)] = conn.execute("SELECT status FROM dream_tasks WHERE scopes LIKE '%alice%'")
    assert status == "planning"
    [task] = hybrid_store.list_dream_tasks(STORE, pattern=ALICE.tenant_pattern()).items
    assert task.status == "failed"


def test_a_look_at_an_abandoned_task_does_not_wait_behind_another_writer(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    import sqlite3
    import time

    _seed(hybrid_store)
    proc = subprocess.run([sys.executable, "-c", _KILLED, str(db_path), "planning"], check=False)
    assert proc.returncode == -signal.SIGKILL
    writer = sqlite3.connect(db_path, isolation_level=None)
    writer.execute("BEGIN IMMEDIATE")  # another process in a long write
    try:
        started = time.monotonic()
        [task] = hybrid_store.list_dream_tasks(STORE).items
        assert time.monotonic() - started < 1.0
        assert task.status == "planning"  # reported once the write lock is free
    finally:
        writer.execute("ROLLBACK")
        writer.close()
    assert hybrid_store.get_dream_task(STORE, task.id).status == "failed"


def test_a_task_of_another_containers_process_is_not_judged(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    """Containers on one kernel share its boot and may share a host name, but count process
    ids apart: another one's live pid may be free here, and its running task was taken for
    abandoned."""
    import json
    import sqlite3

    from memcore_sqlite.dream import owners

    _seed(hybrid_store)
    task = hybrid_store.create_dream_task(STORE, ALICE.tenant_pattern())
    mine = json.loads(owners.this_process())
    ours = os.readlink("/proc/self/ns/pid")
    elsewhere = {**mine, "pid": 2**22 + 7, "pids": "pid:[1]", "start": "1"}  # free here
    with sqlite3.connect(db_path) as conn:
        conn.execute(
            "UPDATE dream_tasks SET status = 'planning', finished_at = NULL, owner = ?"
            " WHERE id = ?",
            (json.dumps(elsewhere), task.id),
        )
    assert hybrid_store.get_dream_task(STORE, task.id).status == "planning"
    with sqlite3.connect(db_path) as conn:  # the same dead pid in our own pid space: judged
        conn.execute(
            "UPDATE dream_tasks SET owner = ? WHERE id = ?",
            (json.dumps({**elsewhere, "pids": ours}), task.id),
        )
    assert hybrid_store.get_dream_task(STORE, task.id).status == "failed"


#: The same death before the second action, in ``apply_dream_actions`` (argv: file, task, ids).
_KILLED_BY_HAND = (
    _KILLED.split("class Reviewer:")[0]
    + """
dream_apply.DreamApplier.apply_action = apply_then_die
store = SqliteMemoryStore(sys.argv[1], embedder=HashingEmbedder(64))
store.apply_dream_actions("mem", sys.argv[2], sys.argv[3:])
"""
)


def test_an_apply_by_hand_killed_between_actions_applied_none_and_applies_once_again(
    hybrid_store: SqliteMemoryStore, db_path: Path
) -> None:
    """``memcore dream apply TASK A B`` killed with SIGKILL after A: none of them landed, the
    task still proposes both, and applying them again applies each once."""
    ids = _seed(hybrid_store)
    task = hybrid_store.create_dream_task(STORE, ALICE.tenant_pattern(), apply_mode="proposal")
    wanted = [a.id for a in hybrid_store.list_dream_actions(STORE, task.id).items]
    assert len(wanted) == 2
    proc = subprocess.run(
        [sys.executable, "-c", _KILLED_BY_HAND, str(db_path), task.id, *wanted], check=False
    )
    assert proc.returncode == -signal.SIGKILL
    current = hybrid_store.list_memories(STORE, ALICE.pattern(), current_only=True).items
    assert sorted(m.id for m in current) == sorted(ids)
    assert {m.version for m in current} == {1}
    actions = hybrid_store.list_dream_actions(STORE, task.id).items
    assert [a.status for a in actions] == ["proposed", "proposed"]
    applied = hybrid_store.apply_dream_actions(STORE, task.id, wanted)
    assert [a.status for a in applied] == ["applied", "applied"]
    after = hybrid_store.list_memories(STORE, ALICE.pattern()).items
    again = hybrid_store.apply_dream_actions(STORE, task.id, wanted)
    assert [a.status for a in again] == ["applied", "applied"]
    assert hybrid_store.list_memories(STORE, ALICE.pattern()).items == after
    assert hybrid_store.check_integrity().ok
