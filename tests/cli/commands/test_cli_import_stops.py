"""An import stopped by Ctrl-C or a failure takes back what it added, says so in one line,
and counts as added only what this process created."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from importlib.metadata import entry_points

import pytest

import memcore.transfer.restoring
from memcore.service import MemoryService
from memcore.service.logs import Logs


def _lines(path, n):
    path.write_text("".join(f"bulk line {i}\n" for i in range(n)), encoding="utf-8")
    return path


def test_ctrl_c_right_after_a_batch_is_stored_and_again_during_the_rollback_leaves_nothing(
    tmp_path, monkeypatch, local_cli
):
    """SIGINT landing after a batch was committed but before it was counted left that batch
    behind ("deleted again" while 256 remained); a second SIGINT (``timeout`` signals the
    process and its group) abandoned the rollback and printed only "memcore: interrupted"."""
    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 3)
    restore, forget = MemoryService.restore, MemoryService.forget_unclaimed
    calls = {"restore": 0, "forget": 0}

    def interrupted_restore(self, items, **kwargs):
        ids = restore(self, items, **kwargs)
        calls["restore"] += 1
        if calls["restore"] == 2:  # the batch is stored: the interrupt comes now
            signal.raise_signal(signal.SIGINT)
        return ids

    def interrupted_forget(self, memories):
        calls["forget"] += 1
        if calls["forget"] == 1:
            signal.raise_signal(signal.SIGINT)
        return forget(self, memories)

    monkeypatch.setattr(MemoryService, "restore", interrupted_restore)
    monkeypatch.setattr(MemoryService, "forget_unclaimed", interrupted_forget)
    result = local_cli("import", "--lines", str(_lines(tmp_path / "big.txt", 20)))
    monkeypatch.undo()
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1] == (
        "memcore: interrupted (import stopped; the 6 memories it had added were deleted again)"
    )
    assert [line for line in result.stderr.splitlines() if "first run" not in line] == [
        result.stderr.splitlines()[-1]
    ]
    assert calls["forget"] == 2  # two batches of the rollback, the second Ctrl-C held
    assert local_cli.ok("count").stdout.strip() == "0"


def test_an_interrupted_import_is_a_json_error_with_json(tmp_path, monkeypatch, local_cli):
    """With --json every failure is one JSON object on stderr; an interrupt was plain text."""
    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 3)
    restore = MemoryService.restore

    def interrupted(self, items, **kwargs):
        ids = restore(self, items, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return ids

    monkeypatch.setattr(MemoryService, "restore", interrupted)
    result = local_cli("--json", "import", "--lines", str(_lines(tmp_path / "big.txt", 20)))
    monkeypatch.undo()
    assert result.exit_code == 130
    error = json.loads(result.stderr.splitlines()[-1])["error"]
    assert (error["code"], error["exit_code"]) == ("interrupted", 130)
    assert error["message"] == (
        "interrupted (import stopped; the 3 memories it had added were deleted again)"
    )
    assert local_cli.ok("count").stdout.strip() == "0"


def test_a_failure_is_one_line_saying_what_was_undone(tmp_path, monkeypatch, local_cli):
    from memcore.errors import Unavailable

    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 4)
    restore = MemoryService.restore
    calls = []

    def failing(self, items, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise Unavailable("the disk went away")
        return restore(self, items, **kwargs)

    monkeypatch.setattr(MemoryService, "restore", failing)
    local_cli.ok("count")  # the first-run note
    result = local_cli("import", "--lines", str(_lines(tmp_path / "l.txt", 20)))
    assert (result.exit_code, result.stderr) == (
        5,
        "memcore: error: line 9: the disk went away (import stopped; the 8 memories it had added "
        "were deleted again)\n",
    )
    assert local_cli.ok("count").stdout.strip() == "0"


def test_a_text_another_writer_stored_meanwhile_is_present_and_survives_a_rollback(
    tmp_path, monkeypatch, local_cli
):
    """Three imports of one file at once reported 800, 544 and 800 added for 800 memories:
    a text another process stored after this one listed the tenant counted as added (and
    a rollback would have deleted the other writer's memory)."""
    from memcore.errors import Unavailable

    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 4)
    restore = MemoryService.restore
    calls = []

    def racing(self, items, **kwargs):
        calls.append(1)
        if len(calls) == 1:  # another writer stores line 2 first
            self.store.add_text(self.store_name, items[1].scope, items[1].text, sync=True)
        if fail and len(calls) == 3:
            raise Unavailable("the disk went away")
        return restore(self, items, **kwargs)

    monkeypatch.setattr(MemoryService, "restore", racing)
    fail = False
    report = local_cli.json("import", "--lines", str(_lines(tmp_path / "l.txt", 10)))
    assert (report["total"], report["added"], report["present"]) == (10, 9, 1)

    local_cli.ok("forget", "--all", "--yes")
    calls.clear()
    fail = True
    result = local_cli("import", "--lines", str(_lines(tmp_path / "l.txt", 10)))
    assert result.exit_code == 5
    assert "the 7 memories it had added were deleted again" in result.stderr
    assert local_cli.ok("--format", "plain", "list").stdout.count("bulk line 1") == 1


def test_a_text_the_import_repeats_in_a_later_batch_is_still_its_own_to_take_back(
    tmp_path, monkeypatch, local_cli
):
    """The rollback keeps a memory another write landed in since the import wrote it; the
    import's own repeat of a text (a line given twice, in two batches) moves the memory's
    version too, and must not count as another writer's: all is deleted, nothing kept."""
    from memcore.errors import Unavailable

    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 3)
    restore = MemoryService.restore
    calls = []

    def failing(self, items, **kwargs):
        calls.append(1)
        if len(calls) == 3:
            raise Unavailable("the disk went away")
        return restore(self, items, **kwargs)

    monkeypatch.setattr(MemoryService, "restore", failing)
    path = tmp_path / "twice.txt"
    path.write_text("alpha\nbeta\ngamma\nbeta\nalpha\ndelta\nmore\n", encoding="utf-8")
    result = local_cli("import", "--lines", str(path))
    assert (result.exit_code, result.stderr.splitlines()[-1]) == (
        5,
        "memcore: error: line 7: the disk went away (import stopped; the 4 memories it had "
        "added were deleted again)",
    )
    assert local_cli.ok("count").stdout.strip() == "0"


def test_a_memory_another_writer_added_to_between_two_batches_is_kept(
    tmp_path, monkeypatch, local_cli
):
    """Another writer stores a text the import created in its first batch; the import's
    second batch repeats that text as well. The rollback keeps that memory (the other writer
    was answered with its id) and deletes the rest."""
    from memcore.errors import Unavailable

    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 3)
    restore = MemoryService.restore
    calls = []

    def racing(self, items, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # between the batches, another writer says "beta" again
            self.store.add_text(self.store_name, items[0].scope, "beta", sync=True)
        if len(calls) == 3:
            raise Unavailable("the disk went away")
        return restore(self, items, **kwargs)

    monkeypatch.setattr(MemoryService, "restore", racing)
    path = tmp_path / "twice.txt"
    path.write_text("alpha\nbeta\ngamma\nbeta\nepsilon\ndelta\nmore\n", encoding="utf-8")
    result = local_cli("import", "--lines", str(path))
    assert (result.exit_code, result.stderr.splitlines()[-1]) == (
        5,
        "memcore: error: line 7: the disk went away (import stopped; of the 5 memories it had "
        "added, 4 were deleted again and 1 was kept because another write landed in it "
        "meanwhile)",
    )
    assert local_cli.ok("--format", "plain", "list").stdout.count("beta") == 1
    assert local_cli.ok("count").stdout.strip() == "1"


def test_id_map_lists_every_record_moved_to_another_tenant(tmp_path, local_cli):
    """--tenant gives every record a new id, yet --json showed "id_map": {}."""
    local_cli.ok("--tenant", "alice", "add", "--sync", "alice's first memory")
    local_cli.ok("--tenant", "alice", "add", "--sync", "alice's second memory")
    out = tmp_path / "alice.jsonl"
    local_cli.ok("--tenant", "alice", "export", "--out", str(out))
    old = {
        r["text"]: r["id"] for r in map(json.loads, out.read_text(encoding="utf-8").splitlines())
    }
    report = local_cli.json("--tenant", "bob", "import", str(out))
    new = {r["text"]: r["id"] for r in local_cli.json_lines("--tenant", "bob", "export")}
    assert report["id_map"] == {old[text]: new[text] for text in old}
    moved = local_cli.ok("--tenant", "carol", "import", str(out))
    assert "2 records have a different id here" in moved.stderr


_EARLY = """
import os, signal, sys
from importlib.metadata import entry_points

class InterruptOnTyper:  # Ctrl-C while the app is still being imported
    def find_spec(self, name, path=None, target=None):
        if name == "typer":
            os.kill(os.getpid(), signal.SIGINT)
        return None

# The key pressed at a terminal, where Ctrl-C is live even if this run inherited it ignored.
signal.signal(signal.SIGINT, signal.default_int_handler)
sys.argv = ["memcore", "--help"]
script = entry_points(group="console_scripts")["memcore"]
sys.meta_path.insert(0, InterruptOnTyper())
script.load()()
"""


def _launched_with(disposition):
    """Start the child with SIGINT set to ``disposition``: a background job (``&``, nohup,
    some CI runners) starts with it ignored, and a child inherits that."""
    return lambda: signal.signal(signal.SIGINT, disposition)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
@pytest.mark.parametrize("launched", ["from a terminal", "from a background job"])
def test_ctrl_c_during_start_up_is_one_line_and_exit_130(tmp_path, launched):
    assert "memcore" in entry_points(group="console_scripts").names
    env = {**os.environ, "MEMCORE_HOME": str(tmp_path)}
    ignored = launched == "from a background job"
    done = subprocess.run(
        [sys.executable, "-c", _EARLY],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        preexec_fn=_launched_with(signal.SIG_IGN if ignored else signal.SIG_DFL),
    )
    assert (done.returncode, done.stderr) == (130, "memcore: interrupted\n"), done.stdout


_TERMINATED = """
import os, signal, sys
from importlib.metadata import entry_points

import memcore.transfer.restoring
from memcore.service import MemoryService

memcore.transfer.restoring.IMPORT_BATCH = 3
restore = MemoryService.restore
calls = []

def terminated_restore(self, items, **kwargs):
    ids = restore(self, items, **kwargs)
    calls.append(1)
    if len(calls) == 2:  # two batches stored: ``kill`` (or ``timeout``) stops the import now
        os.kill(os.getpid(), signal.SIGTERM)
    return ids

MemoryService.restore = terminated_restore
sys.argv = ["memcore", "import", "--lines", sys.argv[1]]
entry_points(group="console_scripts")["memcore"].load()()
"""


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_sigterm_during_an_import_takes_back_what_it_added(tmp_path, local_cli):
    """SIGTERM (``kill PID``, ``timeout``, a service manager) ended an import at once: the
    batches stored so far stayed (6 of 20 lines), with no line saying so, although an
    import is all or nothing."""
    local_cli.ok("count")  # the first-run note
    env = {**os.environ, "MEMCORE_HOME": str(local_cli.home)}
    done = subprocess.run(
        [sys.executable, "-c", _TERMINATED, str(_lines(tmp_path / "l.txt", 20))],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert (done.returncode, done.stderr) == (
        130,
        "memcore: interrupted (import stopped; the 6 memories it had added were deleted again)\n",
    )
    assert local_cli.ok("count").stdout.strip() == "0"


def test_an_import_to_tablestore_stopped_mid_batch_takes_back_every_memory_it_added(
    tmp_path, monkeypatch, emulator_fake_cli
):
    """TableStore has no bulk write: a batch is written one memory at a time, and a refusal
    of the fourth left the first three stored while the line said "it had added nothing"
    (and named line 1, not the line the service refused)."""
    from memcore.errors import InvalidInput
    from memcore.testing import InMemoryMemoryStore

    add_text = InMemoryMemoryStore.add_text
    calls = []

    def refusing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) == 4:  # the service refuses line 4
            raise InvalidInput("refused", field="text")
        return add_text(self, *args, **kwargs)

    monkeypatch.setattr(InMemoryMemoryStore, "add_text", refusing)
    result = emulator_fake_cli("import", "--lines", str(_lines(tmp_path / "l.txt", 10)))
    monkeypatch.undo()
    assert result.exit_code == 2
    assert result.stderr.startswith("memcore: error: line 4: AddMemories failed: HTTP 400")
    assert result.stderr.endswith(
        "(import stopped; the 3 memories it had added were deleted again)\n"
    )
    assert emulator_fake_cli.ok("count").stdout.strip() == "0"


def test_an_import_whose_write_answer_was_lost_says_that_line_may_be_stored(
    tmp_path, monkeypatch, emulator_fake_cli
):
    """The service stored line 4 and then answered 500: the line said the import was undone
    ("the 3 memories it had added were deleted again") while line 4 stayed stored, and
    importing the file again would store it twice. The line now says it may be stored."""
    from memcore.testing import InMemoryMemoryStore

    add_text = InMemoryMemoryStore.add_text
    calls = []

    def lost_answer(self, *args, **kwargs):
        receipt = add_text(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 4:  # applied; the answer is a 500
            raise RuntimeError("the node went down before answering")
        return receipt

    monkeypatch.setattr(InMemoryMemoryStore, "add_text", lost_answer)
    result = emulator_fake_cli("import", "--lines", str(_lines(tmp_path / "l.txt", 10)))
    monkeypatch.undo()
    assert result.exit_code == 5
    line = result.stderr
    assert line.startswith("memcore: error: line 4: AddMemories failed: HTTP 500")
    assert "the 3 memories it had added were deleted again" in line
    assert "line 4 may be stored" in line and "before importing again" in line
    listed = emulator_fake_cli.ok("--format", "plain", "list").stdout
    assert "bulk line 3" in listed and "bulk line 0" not in listed


def _backup_with_links_and_log(tmp_path, set_config, cli_type):
    """An export holding replaced versions (restored with their links) and a message log."""
    source = tmp_path / "source"
    set_config(source, {"embedder": "none"})
    cli = cli_type(source)
    turns = tmp_path / "turns.json"
    turns.write_text(
        json.dumps(
            [
                {"role": "user", "content": "We went hiking on the Dragon Well trail"},
                {"role": "assistant", "content": "How was the weather on the trail?"},
            ]
        ),
        "utf-8",
    )
    cli.ok("--run", "s1", "add", "--sync", "--messages-file", str(turns))
    for text in ("User likes green tea", "User likes green tea a lot"):
        cli.ok("add", "--sync", text)
    cli.json("dream", "create", "--apply-mode", "safe_auto")
    out = tmp_path / "backup.jsonl"
    cli.ok("export", "--out", str(out))
    kinds = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert any(r.get("superseded_by") for r in kinds)
    assert any(r.get("kind") == "message" for r in kinds)
    return out


@pytest.mark.parametrize("step", ["restore_links", "restore_messages"])
def test_ctrl_c_during_the_last_steps_is_reported_and_leaves_nothing_half_done(
    tmp_path, monkeypatch, local_cli, set_config, step
):
    """Ctrl-C while the version links or the message log were written was held and then
    forgotten: the import answered as if never interrupted, exit 0. During the links it
    now stops and takes back what it added; during the log (one transaction, the last
    step) the import had finished, which the line says, with exit 130 all the same."""
    backup = _backup_with_links_and_log(tmp_path, set_config, type(local_cli))
    original = getattr(Logs, step)

    def interrupted(self, *args, **kwargs):
        answer = original(self, *args, **kwargs)
        signal.raise_signal(signal.SIGINT)
        return answer

    monkeypatch.setattr(Logs, step, interrupted)
    result = local_cli("import", str(backup))
    monkeypatch.undo()
    assert result.exit_code == 130, result.stdout
    [line] = [line for line in result.stderr.splitlines() if "first run" not in line]
    kept = local_cli.json_lines("list", "--all", "--all-versions")
    exported = tmp_path / "again.jsonl"
    local_cli.ok("export", "--out", str(exported))
    if step == "restore_links":
        assert line == (
            "memcore: interrupted (import stopped; the 4 memories it had added were deleted again)"
        )
        assert kept == [] and exported.read_text("utf-8") == ""
    else:
        assert line == (
            "memcore: interrupted (import finished before it could stop; the 4 memories and "
            "2 messages it added are kept)"
        )
        assert exported.read_text("utf-8") == backup.read_text("utf-8")


def test_a_memory_deleted_after_the_import_listed_it_is_written_again_not_reported_present(
    tmp_path, monkeypatch, local_cli
):
    """An import of an export file counted a record whose id it had listed as present; when
    that memory was deleted before the import ended (another import's rollback), the
    answer said present for a memory the store no longer held."""
    local_cli.ok("import", "--lines", str(_lines(tmp_path / "l.txt", 3)))
    backup = tmp_path / "b.jsonl"
    local_cli.ok("export", "--out", str(backup))
    gone = json.loads(backup.read_text(encoding="utf-8").splitlines()[1])["id"]
    claim = MemoryService.claim

    def rolled_back_first(self, memories):
        self.forget(gone)  # the rollback of another import that had created it
        return claim(self, memories)

    monkeypatch.setattr(MemoryService, "claim", rolled_back_first)
    report = local_cli.json("import", str(backup))
    assert (report["total"], report["added"], report["present"]) == (3, 1, 2)
    assert report["id_map"] == {}
    assert local_cli.json("get", gone)["text"] == "bulk line 1"


def test_a_memory_a_dream_folded_while_the_import_ran_is_kept_and_the_dream_undoes(
    tmp_path, monkeypatch, local_cli
):
    """A dream pass merged two memories the import had written in its first batch; the
    import then failed. Its rollback deleted the one the merge folded away (a fold did not
    move its version), the merged memory still named it in ``supersedes``, and ``dream
    undo`` failed with "was deleted since". The fold is a write that landed: the rollback
    keeps both memories, and the dream's action undoes, every memory current again."""
    from memcore.errors import Unavailable

    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 2)
    restore = MemoryService.restore
    calls = []

    def racing(self, items, **kwargs):
        calls.append(1)
        if len(calls) == 2:  # between the batches, a dream pass merges the first two lines
            self.store.create_dream_task(
                self.store_name, [items[0].scope.tenant_pattern()], apply_mode="safe_auto"
            )
        if len(calls) == 3:
            raise Unavailable("the disk went away")
        return restore(self, items, **kwargs)

    monkeypatch.setattr(MemoryService, "restore", racing)
    path = tmp_path / "tea.txt"
    path.write_text(
        "The user likes green tea in the morning\n"
        "the user likes green TEA in the morning!\n"
        "Rachel moved to Chicago\nWe keep two cats\nthe bike is blue\n",
        encoding="utf-8",
    )
    result = local_cli("import", "--lines", str(path))
    monkeypatch.undo()
    assert (result.exit_code, result.stderr.splitlines()[-1]) == (
        5,
        "memcore: error: line 5: the disk went away (import stopped; of the 4 memories it had "
        "added, 2 were deleted again and 2 were kept because another write landed in them "
        "meanwhile)",
    )
    versions = local_cli.json("list", "--all-versions")["items"]
    assert len(versions) == 2
    ids = {m["id"] for m in versions}
    for m in versions:  # every link names a memory that is there
        assert set(m.get("supersedes") or []) <= ids
        assert m.get("superseded_by") in (None, *ids)
    assert len(local_cli.json("list")["items"]) == 1
    [task] = local_cli.json("dream", "list")["items"]
    [action] = local_cli.json("dream", "actions", task["id"])["items"]
    assert action["status"] == "applied"
    undone = local_cli.json("dream", "undo", task["id"], action["id"])
    assert undone["status"] == "proposed"
    current = local_cli.json("list")["items"]
    assert sorted(m["text"] for m in current) == [
        "The user likes green tea in the morning",
        "the user likes green TEA in the morning!",
    ]
    assert all(not m.get("supersedes") and not m.get("superseded_by") for m in current)


@pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")
def test_an_import_killed_with_sigkill_keeps_whole_batches_and_a_rerun_adds_no_duplicate(
    tmp_path, local_cli
):
    """``kill -9`` gives the import no chance to take back what it added: the batches it
    stored stay, each whole and searchable, and running it again adds the rest, once."""
    local_cli.ok("count")  # the first-run note
    lines = _lines(tmp_path / "l.txt", 20)
    env = {**os.environ, "MEMCORE_HOME": str(local_cli.home)}
    killed = _TERMINATED.replace("signal.SIGTERM", "signal.SIGKILL")
    done = subprocess.run(
        [sys.executable, "-c", killed, str(lines)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert done.returncode == -signal.SIGKILL, done.stderr
    assert local_cli.ok("count").stdout.strip() == "6"
    checks = {c["name"]: c for c in local_cli.json("doctor")["checks"]}
    assert checks["integrity"]["ok"] and checks["search"]["ok"]
    again = local_cli.ok("import", "--lines", str(lines))
    assert again.stdout.strip() == "imported 20 records: 14 added, 6 already present"
    texts = local_cli.ok("--format", "plain", "list", "--all").stdout.splitlines()
    assert len(texts) == 20
    assert len({line.split("\t")[1] for line in texts}) == 20
