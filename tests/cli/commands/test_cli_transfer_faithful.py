"""A backup restored into a fresh home holds what the store held: every memory field by field
(its version, when it last changed and its kind included) and the same search order; a file
written before records carried a ``format`` imports exactly as it always did."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest

TURNS = [
    ("user", "We went hiking on the Dragon Well trail last weekend", 1_700_000_000),
    ("assistant", "That sounds lovely, how was the weather on the trail?", 1_700_000_010),
    ("user", "Sunny, and we saw a tea farm near the mountain hut", 1_700_000_020),
    ("assistant", "Tea farms near Hangzhou are famous for Longjing", 1_700_000_030),
]
QUERIES = ["tea farm hut", "trail weather", "green tea", "Hangzhou Longjing tea"]


def _claimed(memories: dict[str, Any], ids: Any = None) -> dict[str, Any]:
    """``memories`` (by id) as an import that found those of ``ids`` (default: all) present
    under their own ids leaves them: it claims each, moving its version by one and nothing
    else, so that another import's rollback keeps it."""
    return {
        i: {**m, "version": m["version"] + 1} if ids is None or i in ids else m
        for i, m in memories.items()
    }


def _exported(path: Path) -> dict[str, Any]:
    """An export's records by id."""
    return {r["id"]: r for r in map(json.loads, path.read_text("utf-8").splitlines())}


@pytest.fixture
def fresh_cli(tmp_path, set_config, local_cli):
    other = tmp_path / "fresh-home"
    set_config(other, {"embedder": "none"})
    return type(local_cli)(other)


def _seed(cli, tmp_path: Path) -> None:
    turns = tmp_path / "turns.json"
    turns.write_text(
        json.dumps([{"role": r, "content": c, "timestamp": t} for r, c, t in TURNS]), "utf-8"
    )
    cli.ok("--run", "s1", "add", "--sync", "--messages-file", str(turns))
    cli.ok("add", "--sync", "-m", "topic=tea", "User prefers green tea")
    cli.ok("--agent", "coder", "add", "--sync", "User drinks tea while coding")
    [first] = [m for m in cli.json_lines("list", "--all") if m["text"] == TURNS[0][1]]
    cli.ok("update", first["id"], "-m", "mood=happy")  # version 2, a later updated_at
    cli.ok("add", "--sync", "-m", "topic=tea", "User prefers green tea")  # a repeat: version 2


def _search(cli, query: str) -> list[str]:
    return [hit["id"] for hit in cli.json("search", "--top-k", "10", query)]


def test_a_restore_holds_every_field_and_searches_the_same(tmp_path, local_cli, fresh_cli):
    _seed(local_cli, tmp_path)
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))
    before = {m["id"]: m for m in local_cli.json_lines("list", "--all")}
    assert {m["version"] for m in before.values()} == {1, 2}
    assert {m["unit_type"] for m in before.values()} == {"message", "text"}

    report = fresh_cli.json("import", str(out))
    assert (report["added"], report["present"], report["id_map"]) == (len(before), 0, {})
    after = {m["id"]: m for m in fresh_cli.json_lines("list", "--all")}
    assert after.keys() == before.keys()
    for memory_id, memory in before.items():
        for field, value in memory.items():
            assert after[memory_id][field] == value, (memory["text"], field)
    for query in QUERIES:
        assert _search(fresh_cli, query) == _search(local_cli, query), query

    again = fresh_cli.json("import", str(out))
    assert (again["added"], again["present"]) == (0, len(before))
    assert {m["id"]: m for m in fresh_cli.json_lines("list", "--all")} == _claimed(after)


def test_a_file_without_a_format_imports_as_it_always_did(tmp_path, local_cli, fresh_cli):
    """Records written before ``format`` existed: the store stamps the write's time, version 1
    and kind ``text``, whatever the line says, as every release so far did."""
    _seed(local_cli, tmp_path)
    old = [{k: v for k, v in m.items() if k != "format"} for m in local_cli.json_lines("export")]
    assert any(m["version"] == 2 for m in old)
    path = tmp_path / "old.jsonl"
    path.write_text("".join(json.dumps(m) + "\n" for m in old if "kind" not in m), "utf-8")
    started = time.time()
    fresh_cli.json("import", str(path))
    for memory in fresh_cli.json_lines("list", "--all"):
        assert memory["version"] == 1
        assert memory["unit_type"] == "text"
        assert memory["updated_at"] >= started


def test_a_record_of_a_newer_format_stops_the_import_with_one_line(tmp_path, fresh_cli):
    scope = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes", "run_id": "r"}
    path = tmp_path / "new.jsonl"
    good = {"format": 2, "text": "kept", "scope": scope, "version": 3, "unit_type": "text"}
    path.write_text(
        json.dumps(good) + "\n" + json.dumps({**good, "text": "later", "format": 99}) + "\n",
        "utf-8",
    )
    result = fresh_cli("import", str(path))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "memcore: error: line 2: record format 99 is newer than this memcore reads (up to 2);"
        " upgrade memcore to import this file"
    ]
    assert fresh_cli.json_lines("export") == []


@pytest.mark.parametrize(
    ("field", "value"),
    [("version", 0), ("version", "2"), ("version", True), ("unit_type", ""), ("unit_type", 7)],
)
def test_a_bad_version_or_kind_is_refused_with_its_line(tmp_path, fresh_cli, field, value):
    scope = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes", "run_id": "r"}
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"format": 2, "text": "t", "scope": scope, field: value}) + "\n")
    result = fresh_cli("import", str(path))
    assert result.exit_code == 2
    assert result.stderr.startswith(f"memcore: error: line 1: {field} ")
    assert fresh_cli.json_lines("export") == []


def _around(cli, query: str) -> list[Any]:
    """Each hit's id and the turns shown around it (role, text, time)."""
    return [
        (
            hit["id"],
            [
                (m["role"], m["content"], m["timestamp"])
                for side in ("before", "after")
                for m in hit["neighbours"][side]
            ],
        )
        for hit in cli.json("search", "--top-k", "10", "--neighbours", "2", query)
    ]


def _log(cli, *scope: str) -> list[Any]:
    return cli.json(*scope, "messages", "--limit", "100")["items"]


def test_a_restore_brings_back_the_turns_shown_around_each_memory(tmp_path, local_cli, fresh_cli):
    _seed(local_cli, tmp_path)
    log_only = tmp_path / "aside.json"
    log_only.write_text(json.dumps([{"role": "system", "content": "(session resumed)"}]), "utf-8")
    local_cli.ok("--agent", "hermes", "--run", "s1", "add", "--messages-file", str(log_only))
    out = tmp_path / "backup.jsonl"
    summary = local_cli.json("export", "--out", str(out))
    assert summary["messages"] == len(TURNS) + 1

    report = fresh_cli.json("import", str(out))
    assert (report["messages_added"], report["messages_present"]) == (len(TURNS) + 1, 0)
    for query in QUERIES:
        assert _around(fresh_cli, query) == _around(local_cli, query), query
    assert any(turns for _, turns in _around(fresh_cli, "tea farm hut"))
    s1 = ("--agent", "hermes", "--run", "s1")
    assert _log(fresh_cli, *s1) == _log(local_cli, *s1)

    again = fresh_cli.json("import", str(out))
    assert (again["messages_added"], again["messages_present"]) == (0, len(TURNS) + 1)
    assert _log(fresh_cli, *s1) == _log(local_cli, *s1)


def test_the_turns_follow_their_memories_into_the_importing_tenant_only(
    tmp_path, local_cli, fresh_cli
):
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"role": "user", "content": c} for c in ("one", "two")]), "utf-8")
    local_cli.ok("--tenant", "alice", "--run", "s1", "add", "--sync", "--messages-file", str(turns))
    out = tmp_path / "alice.jsonl"
    local_cli.ok("--tenant", "alice", "export", "--out", str(out))

    refused = fresh_cli("import", str(out))
    assert refused.exit_code == 2 and "outside the current tenant" in refused.stderr
    report = fresh_cli.json("--tenant", "bob", "import", str(out))
    assert report["messages_added"] == 2
    bob = ("--tenant", "bob", "--agent", "hermes", "--run", "s1")
    assert [m["content"] for m in _log(fresh_cli, *bob)] == ["one", "two"]
    assert _log(fresh_cli, "--tenant", "alice", "--agent", "hermes", "--run", "s1") == []
    [hit] = fresh_cli.json("--tenant", "bob", "search", "--neighbours", "1", "two")
    assert [m["content"] for m in hit["neighbours"]["before"]] == ["one"]


def test_a_failed_restore_of_the_turns_takes_the_memories_back(tmp_path, local_cli, monkeypatch):
    from memcore_sqlite import SqliteMemoryStore
    from tests.cli.conftest import Cli

    _seed(local_cli, tmp_path)
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))

    def broken(self, store, messages):
        raise OSError("disk full")

    monkeypatch.setattr(SqliteMemoryStore, "restore_messages", broken)
    db = tmp_path / "other" / "memcore.db"
    db.parent.mkdir()
    cli = Cli(db.parent, store_factory=lambda settings: SqliteMemoryStore(db))
    result = cli("import", str(out))
    assert result.exit_code != 0
    assert "were deleted again" in result.stderr.splitlines()[-1]
    assert cli.json_lines("export") == []


def test_a_store_without_a_message_log_imports_the_memories_and_counts_the_turns(
    tmp_path, local_cli, emulator_cli
):
    _seed(local_cli, tmp_path)
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))
    memories = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    memories = [m for m in memories if m.get("kind") != "message"]
    report = emulator_cli.json("import", str(out))
    assert (report["added"], report["messages_left_out"]) == (len(memories), len(TURNS))
    assert sorted(m["text"] for m in emulator_cli.json_lines("export")) == sorted(
        m["text"] for m in memories
    )


def test_a_tablestore_export_restores_into_the_embedded_store(tmp_path, emulator_cli, fresh_cli):
    emulator_cli.ok("add", "--sync", "-m", "topic=tea", "User prefers green tea")
    emulator_cli.ok("--agent", "coder", "add", "--sync", "User drinks tea while coding")
    out = tmp_path / "cloud.jsonl"
    emulator_cli.ok("export", "--out", str(out))
    before = {m["id"]: m for m in emulator_cli.json_lines("list", "--all")}

    report = fresh_cli.json("import", str(out))
    assert (report["added"], "messages_added" in report) == (len(before), False)
    after = {m["id"]: m for m in fresh_cli.json_lines("list", "--all")}
    assert after.keys() == before.keys()
    for memory_id, memory in before.items():
        for field in ("text", "scope", "metadata", "created_at", "updated_at", "version"):
            if memory[field] is not None:  # what TableStore does not report, the store stamps
                assert after[memory_id][field] == memory[field], (memory["text"], field)


def test_a_line_without_a_format_is_a_memory_whatever_else_it_holds(tmp_path, fresh_cli):
    """``kind`` means something from format 2 on; an older line holding one is read as
    every release read it, as a memory."""
    scope = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes", "run_id": "r"}
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps({"kind": "message", "text": "kept", "scope": scope}) + "\n")
    assert fresh_cli.json("import", str(path))["added"] == 1
    path.write_text(json.dumps({"kind": "note", "format": 2, "text": "t", "scope": scope}) + "\n")
    result = fresh_cli("import", str(path))
    assert result.exit_code == 2
    assert result.stderr.splitlines() == ["memcore: error: line 1: unknown record kind 'note'"]


def _dreamed(cli) -> None:
    """Facts a dream pass then replaces: one updated (it still answers, after its
    successor), one merged."""
    for text in (
        "We keep 30 dozen eggs in the fridge at the moment",
        "We now keep 20 dozen eggs in the fridge",
        "User likes green tea",
        "User likes green tea a lot",
        "User plays the cello on Sundays",
    ):
        cli.ok("add", "--sync", text)
    cli.json("dream", "create", "--apply-mode", "safe_auto")


def test_a_restore_after_a_dream_recalls_and_ranks_as_the_original(tmp_path, local_cli, fresh_cli):
    _dreamed(local_cli)
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))
    every = ("list", "--all", "--all-versions")
    before = {m["id"]: m for m in local_cli.json_lines(*every)}
    assert {m["superseded_by"] is not None for m in before.values()} == {True, False}

    report = fresh_cli.json("import", str(out))
    assert (report["added"], report["superseded"]) == (len(before), 0)
    assert {m["id"]: m for m in fresh_cli.json_lines(*every)} == before
    assert fresh_cli.json_lines("list", "--all") == local_cli.json_lines("list", "--all")
    for query in ("eggs fridge", "green tea", "cello", "how many eggs do we keep"):
        hits = [(h["id"], h["score"]) for h in local_cli.json("search", "--top-k", "10", query)]
        again = [(h["id"], h["score"]) for h in fresh_cli.json("search", "--top-k", "10", query)]
        assert again == hits, query
    for memory_id in before:
        assert fresh_cli.json("get", memory_id) == local_cli.json("get", memory_id)
    assert fresh_cli.json("import", str(out))["added"] == 0


def test_replaced_versions_follow_into_the_importing_tenant_and_not_into_tablestore(
    tmp_path, local_cli, fresh_cli, emulator_cli
):
    _dreamed(local_cli)
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))
    every = ("list", "--all", "--all-versions")
    records = local_cli.json_lines(*every)
    replaced = [m for m in records if m["superseded_by"]]
    current = sorted(m["text"] for m in records if not m["superseded_by"])

    moved = fresh_cli.json("--tenant", "bob", "import", str(out))
    assert (moved["added"], moved["superseded"]) == (len(records), 0)
    bob = {m["id"]: m for m in fresh_cli.json_lines("--tenant", "bob", *every)}
    texts = {m["id"]: m["text"] for m in bob.values()}
    for old in replaced:
        [copy] = [m for m in bob.values() if m["text"] == old["text"]]
        successor = next(m["text"] for m in records if m["id"] == old["superseded_by"])
        assert texts[copy["superseded_by"]] == successor
    assert sorted(m["text"] for m in fresh_cli.json_lines("--tenant", "bob", "list", "--all")) == (
        current
    )

    cloud = emulator_cli.json("import", str(out))
    assert (cloud["added"], cloud["superseded"]) == (len(current), len(replaced))
    assert sorted(m["text"] for m in emulator_cli.json_lines("list", "--all")) == current


def test_a_current_memory_edited_back_to_a_replaced_text_stays_current(
    tmp_path, local_cli, fresh_cli
):
    """A scope holds a text once: a replaced version whose text the current memory was
    edited back to is left out, so the current one is restored as it is."""
    _dreamed(local_cli)
    every = ("list", "--all", "--all-versions")
    [old] = [m for m in local_cli.json_lines(*every) if m["text"].startswith("We keep 30")]
    local_cli.ok("update", old["superseded_by"], "--text", old["text"])
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))

    report = fresh_cli.json("import", str(out))
    assert report["superseded"] == 1
    assert fresh_cli.json_lines("list", "--all") == local_cli.json_lines("list", "--all")


def test_a_replaced_version_restored_after_its_successor_is_linked_both_ways(
    tmp_path, local_cli, fresh_cli
):
    """The memory that replaced a version was present (restored before, from a copy of the
    backup without its history): the version was restored with ``superseded_by``, but the
    present memory's ``supersedes`` stayed empty, so its history and a later export
    lacked the version it replaced."""
    _dreamed(local_cli)
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))
    every = ("list", "--all", "--all-versions")
    before = {m["id"]: m for m in local_cli.json_lines(*every)}
    current = tmp_path / "current.jsonl"
    current.write_text(
        "".join(
            line + "\n"
            for line in out.read_text("utf-8").splitlines()
            if not json.loads(line).get("superseded_by")
        ),
        "utf-8",
    )
    assert fresh_cli.json("import", str(current))["superseded"] == 0

    report = fresh_cli.json("import", str(out))
    replaced = [m for m in before.values() if m["superseded_by"]]
    assert (report["added"], report["present"]) == (len(replaced), len(before) - len(replaced))
    present = {i for i, m in before.items() if not m["superseded_by"]}
    assert {m["id"]: m for m in fresh_cli.json_lines(*every)} == _claimed(before, present)
    again = tmp_path / "again.jsonl"
    fresh_cli.ok("export", "--out", str(again))
    assert _exported(again) == _claimed(_exported(out), present)


def test_a_successor_restored_after_the_version_it_replaced_is_linked_both_ways(
    tmp_path, local_cli, fresh_cli
):
    """The version a dream replaced was present (restored before as a current memory) and
    the import restored what replaced it: the successor listed it in ``supersedes``, but it
    kept no ``superseded_by``, so recall still answered with the replaced fact."""
    _dreamed(local_cli)
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    replaced = [r for r in records if r["superseded_by"]]
    older = tmp_path / "older.jsonl"
    older.write_text(
        "".join(
            json.dumps({**r, "superseded_by": None, "superseded_how": None}) + "\n"
            for r in replaced
        ),
        "utf-8",
    )
    assert fresh_cli.json("import", str(older))["added"] == len(replaced)

    report = fresh_cli.json("import", str(out))
    assert (report["added"], report["present"]) == (len(records) - len(replaced), len(replaced))
    again = tmp_path / "again.jsonl"
    fresh_cli.ok("export", "--out", str(again))
    assert _exported(again) == _claimed(_exported(out), {r["id"] for r in replaced})
    assert fresh_cli.json_lines("list", "--all") == local_cli.json_lines("list", "--all")
    for query in ("eggs fridge", "green tea"):
        assert _search(fresh_cli, query) == _search(local_cli, query), query


def test_a_stopped_import_gives_a_present_version_its_links_back(
    tmp_path, monkeypatch, local_cli, fresh_cli
):
    """An import stopped after it linked a present version to the memory that replaced it
    deleted that memory and left the link: the version, replaced by nothing, was no longer
    listed or recalled."""
    import signal

    from memcore.service.logs import Logs

    _dreamed(local_cli)
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    older = tmp_path / "older.jsonl"
    older.write_text(
        "".join(
            json.dumps({**r, "superseded_by": None, "superseded_how": None}) + "\n"
            for r in records
            if r["superseded_by"]
        ),
        "utf-8",
    )
    fresh_cli.ok("import", str(older))
    before = fresh_cli.json_lines("list", "--all", "--all-versions")
    restore_links = Logs.restore_links
    calls = []

    def interrupted(self, links, **kwargs):
        restore_links(self, links, **kwargs)
        calls.append(1)
        if len(calls) == 1:  # the import's links: Ctrl-C now
            signal.raise_signal(signal.SIGINT)

    monkeypatch.setattr(Logs, "restore_links", interrupted)
    result = fresh_cli("import", str(out))
    assert result.exit_code == 130, result.stdout
    after = fresh_cli.json_lines("list", "--all", "--all-versions")
    claimed = _claimed({m["id"]: m for m in before})  # each was present: each was claimed
    assert after == [claimed[m["id"]] for m in before]
    assert sorted(m["text"] for m in fresh_cli.json_lines("list", "--all")) == sorted(
        m["text"] for m in before
    )


def test_an_import_adds_its_links_to_a_dream_s_written_since_it_listed(
    tmp_path, monkeypatch, local_cli, fresh_cli
):
    """An import links the present memories as it listed them at its start: a dream that
    folded one of them into a newer memory meanwhile lost its link, and the outdated fact
    was current again beside the memory that said it replaced it."""
    from memcore.service import MemoryService

    _dreamed(local_cli)
    out = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(out))
    records = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    current = tmp_path / "current.jsonl"
    current.write_text(
        "".join(
            json.dumps({**r, "supersedes": []}) + "\n" for r in records if not r["superseded_by"]
        ),
        "utf-8",
    )
    fresh_cli.ok("import", str(current))
    fresh_cli.ok("add", "--sync", "User really likes green tea a lot")
    restore = MemoryService.restore

    def dream_first(self, items, **kwargs):
        task = self.store.create_dream_task(
            self.store_name, [self.scope.tenant_pattern()], apply_mode="safe_auto"
        )
        assert task.action_counts["applied"] == 1
        return restore(self, items, **kwargs)

    monkeypatch.setattr(MemoryService, "restore", dream_first)
    fresh_cli.ok("import", str(out))
    monkeypatch.undo()
    every = {m["text"]: m for m in fresh_cli.json_lines("list", "--all", "--all-versions")}
    newer, folded = every["User really likes green tea a lot"], every["User likes green tea a lot"]
    assert folded["superseded_by"] == newer["id"]
    assert every["User likes green tea"]["superseded_by"] == folded["id"]
    assert [m["text"] for m in fresh_cli.json_lines("list", "--all") if "tea" in m["text"]] == [
        "User really likes green tea a lot"
    ]
