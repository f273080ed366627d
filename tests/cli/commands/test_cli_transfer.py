"""``export`` then ``import``: the same memories arrive, and a second import adds nothing."""

from __future__ import annotations

import json
import stat

import pytest

import memcore.transfer.restoring


def _seed(cli) -> None:
    cli.ok("add", "--sync", "-m", "topic=style", "User prefers concise answers")
    cli.ok("add", "--sync", "User lives in Hangzhou")
    cli.ok(
        "--agent", "coder", "--run", "s1", "add", "--sync", "-m", "lang=py", "Prefers type hints"
    )
    cli.ok("--agent", "coder", "add", "--sync", "喜欢喝咖啡")


def _by_old_id(records, id_map):
    return {id_map.get(r["id"], r["id"]): (r["text"], r["scope"], r["metadata"]) for r in records}


@pytest.fixture
def fresh_cli(tmp_path, set_config, local_cli):
    other = tmp_path / "fresh-home"
    set_config(other, {"embedder": "none"})
    return type(local_cli)(other)


def test_round_trip_keeps_text_scope_metadata_and_ids(tmp_path, local_cli, fresh_cli):
    _seed(local_cli)
    out = tmp_path / "memories.jsonl"
    summary = local_cli.json("export", "--out", str(out))
    assert summary["exported"] == 4
    assert stat.S_IMODE(out.stat().st_mode) == 0o600
    exported = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(exported) == 4
    assert all({"id", "text", "scope", "metadata", "created_at"} <= r.keys() for r in exported)

    first = fresh_cli.json("import", str(out))
    assert (first["total"], first["added"], first["present"]) == (4, 4, 0)
    assert first["id_map"] == {}
    imported = fresh_cli.json_lines("export")
    assert {r["id"]: r["created_at"] for r in imported} == {
        r["id"]: r["created_at"] for r in exported
    }
    assert _by_old_id(imported, {}) == _by_old_id(exported, first["id_map"])

    second = fresh_cli.json("import", str(out))
    assert (second["total"], second["added"], second["present"]) == (4, 0, 4)
    assert len(fresh_cli.json_lines("export")) == 4
    assert "0 added, 4 already present" in fresh_cli.ok("import", str(out)).stdout


def test_export_to_stdout_is_json_lines_and_import_reads_stdin(local_cli, fresh_cli):
    _seed(local_cli)
    text = local_cli.ok("export").stdout
    assert len(text.splitlines()) == 4
    report = fresh_cli.json("import", "-", input=text)
    assert report["added"] == 4


def test_export_out_dash_writes_stdout_as_import_dash_reads_stdin(
    tmp_path, monkeypatch, local_cli, fresh_cli
):
    """``--out -`` made a file named ``-`` in the working folder and printed only its summary,
    where ``import -`` reads stdin: a pipe got nothing."""
    _seed(local_cli)
    monkeypatch.chdir(tmp_path)
    for args in (("export", "--out", "-"), ("--json", "export", "-o", "-")):
        result = local_cli.ok(*args)
        assert [json.loads(line)["text"] for line in result.stdout.splitlines()], args
        assert len(result.stdout.splitlines()) == 4, args
        assert not (tmp_path / "-").exists(), args
    report = fresh_cli.json("import", "-", input=local_cli.ok("export", "--out", "-").stdout)
    assert report["added"] == 4


def test_import_into_the_tablestore_emulator_then_again_adds_nothing(
    tmp_path, local_cli, emulator_cli
):
    _seed(local_cli)
    out = tmp_path / "m.jsonl"
    local_cli.ok("export", "--out", str(out))
    exported = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    first = emulator_cli.json("import", str(out))
    assert first["added"] == 4
    imported = emulator_cli.json_lines("export")
    assert _by_old_id(imported, {}) == _by_old_id(exported, first["id_map"])
    second = emulator_cli.json("import", str(out))
    assert (second["added"], second["present"]) == (0, 4)


def test_a_second_import_into_tablestore_adds_nothing_though_the_service_would_store_it_twice(
    tmp_path, monkeypatch, local_cli, emulator_fake_cli
):
    """Nothing documented says TableStore keeps a text once: a service that stores whatever
    it is sent got every record again from a second import (the file's ids are not the ones
    the service gave), though the README calls import idempotent."""
    import itertools

    import memcore.testing.fake.reading

    fresh = itertools.count()  # the service stores the same text twice when asked
    monkeypatch.setattr(
        memcore.testing.fake.reading, "content_key", lambda scope, text: next(fresh)
    )
    _seed(local_cli)
    out = tmp_path / "m.jsonl"
    local_cli.ok("export", "--out", str(out))
    first = emulator_fake_cli.json("import", str(out))
    assert (first["added"], first["present"]) == (4, 0)
    second = emulator_fake_cli.json("import", str(out))
    assert (second["added"], second["present"]) == (0, 4)
    assert second["id_map"] == first["id_map"]
    assert emulator_fake_cli.ok("count").stdout.strip() == "4"


def test_a_bad_line_stops_the_import_before_anything_is_written(tmp_path, local_cli, fresh_cli):
    _seed(local_cli)
    out = tmp_path / "m.jsonl"
    local_cli.ok("export", "--out", str(out))
    lines = out.read_text(encoding="utf-8").splitlines()
    lines.insert(2, json.dumps({"text": "", "scope": json.loads(lines[0])["scope"]}))
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = fresh_cli("import", str(out))
    assert result.exit_code == 2
    assert "line 3" in result.stderr
    assert fresh_cli.json("list")["items"] == []


def test_a_line_nested_too_deep_is_a_bad_line_not_a_crash(tmp_path, fresh_cli):
    path = tmp_path / "deep.jsonl"
    path.write_text("[" * 100_000 + "\n", encoding="utf-8")
    result = fresh_cli("import", str(path))
    assert result.exit_code == 2, result.stderr
    assert result.stderr.splitlines() == [
        "memcore: error: line 1: not valid JSON (nested too deeply)"
    ]


def test_import_refuses_records_of_another_tenant(tmp_path, local_cli, fresh_cli):
    local_cli.ok("--tenant", "alice", "add", "--sync", "alice's memory")
    out = tmp_path / "alice.jsonl"
    local_cli.ok("--tenant", "alice", "export", "--out", str(out))
    result = fresh_cli("import", str(out))
    assert result.exit_code == 2
    assert "outside the current tenant" in result.stderr
    assert fresh_cli.json("--tenant", "alice", "import", str(out))["added"] == 1


def test_the_note_on_changed_ids_gives_the_embedded_store_its_true_reason(
    tmp_path, local_cli, fresh_cli
):
    """The embedded store keeps every free id: ids change only for records moved into
    another tenant or whose text was stored already, never because it "assigns its own"."""
    local_cli.ok("--tenant", "alice", "add", "--sync", "alice's memory")
    out = tmp_path / "alice.jsonl"
    local_cli.ok("--tenant", "alice", "export", "--out", str(out))
    moved = fresh_cli.ok("--tenant", "bob", "import", str(out))
    assert "1 record has a different id here than in the file" in moved.stderr
    assert "assigns its own ids" not in moved.stderr
    assert "moved into this tenant" in moved.stderr


def test_import_of_a_missing_file_exits_2(tmp_path, fresh_cli):
    result = fresh_cli("import", str(tmp_path / "nope.jsonl"))
    assert result.exit_code == 2
    assert "does not exist" in result.stderr


@pytest.mark.parametrize("command", ["import", "add --messages-file"])
def test_a_file_this_user_cannot_read_exits_4_naming_it(tmp_path, fresh_cli, monkeypatch, command):
    """A file that cannot be read exits 4 and names it, as an unreadable config does (README,
    "When something is wrong"): it exited 2, as if the file were malformed. Mode bits do not
    stop root, so the refusal is the operating system's own error."""
    from pathlib import Path

    path = tmp_path / "locked.jsonl"
    path.write_text("[]", encoding="utf-8")

    def refusing(real):  # the file is read as text (import) or as bytes (a messages file)
        def refuse(self: Path, *args, **kwargs):
            if self == path:
                raise PermissionError(13, "Permission denied", str(self))
            return real(self, *args, **kwargs)

        return refuse

    monkeypatch.setattr(Path, "read_text", refusing(Path.read_text))
    monkeypatch.setattr(Path, "open", refusing(Path.open))
    result = fresh_cli(*command.split(), str(path))
    assert result.exit_code == 4, result.stderr
    assert result.stderr == f"memcore: error: cannot read {path} (permission denied)\n"


def test_an_import_failing_midway_leaves_nothing_and_a_rerun_adds_everything(tmp_path, monkeypatch):
    """Batches of 3, the next embedding while one is written: the third batch's embedding
    fails after two batches were stored; the import deletes them again (all or nothing), and
    an import of the repaired file adds every record once."""
    from memcore.testing import HashingEmbedder
    from memcore_sqlite import SqliteMemoryStore
    from tests.cli.conftest import Cli

    class Poisoned(HashingEmbedder):
        poison = "memory number 7"

        def embed(self, texts):
            if self.poison in texts:
                raise RuntimeError("boom")
            return super().embed(texts)

    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 3)
    db = tmp_path / "home" / "memcore.db"
    db.parent.mkdir()
    cli = Cli(db.parent, store_factory=lambda settings: SqliteMemoryStore(db, embedder=Poisoned()))
    scope = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes", "run_id": "r"}
    records = [
        {"id": f"{i:032x}", "text": f"memory number {i}", "scope": scope, "metadata": {}}
        for i in range(11)
    ]
    data = tmp_path / "memories.jsonl"
    data.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    failed = cli("import", str(data))
    assert failed.exit_code == 5  # unavailable: retry once the embedder works
    assert failed.stderr.splitlines()[-1] == (
        "memcore: error: line 7: the embedder failed: RuntimeError (import stopped; the 6 "
        "memories it had added were deleted again)"
    )
    assert "import stopped" not in failed.stderr.splitlines()[-2]
    assert cli.json_lines("export") == []

    Poisoned.poison = "none of these"
    report = cli.json("import", str(data))
    assert (report["added"], report["present"]) == (11, 0)
    after = cli.json_lines("export")
    assert {r["id"]: r["text"] for r in after} == {r["id"]: r["text"] for r in records}


def _records(scope, n, start=0):
    return [
        {"id": f"{i:032x}", "text": f"imported memory {i}", "scope": scope, "metadata": {}}
        for i in range(start, start + n)
    ]


def _write(path, records):
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def test_a_clash_past_the_first_batch_leaves_nothing_imported(tmp_path, fresh_cli):
    """Issue 28: an id clash at record 401 left the first 256 records committed."""
    fresh_cli.ok("add", "--sync", "already here")
    [held] = fresh_cli.json_lines("export")
    records = _records(held["scope"], 450)
    records[400]["id"] = held["id"]  # this tenant's memory, with another text
    result = fresh_cli("import", str(_write(tmp_path / "m.jsonl", records)))
    assert result.exit_code == 2
    assert "line 401" in result.stderr
    assert "nothing was imported" in result.stderr
    assert [r["id"] for r in fresh_cli.json_lines("export")] == [held["id"]]


def test_one_id_given_to_two_texts_in_a_file_is_refused_before_writing(tmp_path, fresh_cli):
    scope = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes", "run_id": "r"}
    records = _records(scope, 300)
    records[299]["id"] = records[3]["id"]
    result = fresh_cli("import", str(_write(tmp_path / "m.jsonl", records)))
    assert result.exit_code == 2
    assert "line 300" in result.stderr and "line 4" in result.stderr
    assert fresh_cli.json_lines("export") == []


def test_an_id_of_another_tenant_answers_as_a_free_id(tmp_path, fresh_cli):
    """Issue 28: a record carrying another tenant's memory id answered "Conflict: already used
    by another memory", telling the importer that the id exists elsewhere. Then such a record
    got a new id where a free one was kept, which told the same by the id the importer's own
    memory had. Ids are unique per tenant: both are kept, and each tenant's get, update,
    search, list and forget of that id reach only its own memory."""
    alice = fresh_cli.json("--tenant", "alice", "add", "--sync", "alice's secret walrus")
    [victim] = alice["memory_ids"]
    scope = {"app_id": "hermes", "tenant_id": "bob", "agent_id": "hermes", "run_id": "r"}
    taken = {"id": victim, "text": "bob's note on otters", "scope": scope, "metadata": {}}
    free = {"id": "f" * 32, "text": "bob's other note", "scope": scope, "metadata": {}}
    answers = []
    for name, record in (("taken", taken), ("free", free)):
        result = fresh_cli("--tenant", "bob", "import", str(_write(tmp_path / name, [record])))
        answers.append((result.exit_code, result.stdout, result.stderr))
    assert answers[0] == answers[1] == (0, "imported 1 record: 1 added, 0 already present\n", "")
    bob = {r["text"]: r["id"] for r in fresh_cli.json_lines("--tenant", "bob", "export")}
    assert bob == {"bob's note on otters": victim, "bob's other note": "f" * 32}

    def text_of(tenant):
        return fresh_cli.json("--tenant", tenant, "get", victim)["text"]

    assert (text_of("alice"), text_of("bob")) == ("alice's secret walrus", "bob's note on otters")
    fresh_cli.ok("--tenant", "bob", "update", victim, "--metadata", "by=bob")
    assert fresh_cli.json("--tenant", "alice", "get", victim)["metadata"] == {}
    for tenant, word, text in (("alice", "walrus", "alice's"), ("bob", "otters", "bob's")):
        hits = [h["text"] for h in fresh_cli.json("--tenant", tenant, "search", word)]
        assert hits and all(h.startswith(text) for h in hits)
        other = "otters" if word == "walrus" else "walrus"
        assert fresh_cli.json("--tenant", tenant, "search", other) == []
    listed = [r["id"] for r in fresh_cli.json_lines("--tenant", "alice", "list", "--all")]
    assert listed == [victim]
    fresh_cli.ok("--tenant", "bob", "forget", "--yes", victim)
    assert text_of("alice") == "alice's secret walrus"
    gone = fresh_cli("--tenant", "bob", "get", victim)
    missing = fresh_cli("--tenant", "bob", "get", "e" * 32)
    assert gone.exit_code == missing.exit_code == 3
    assert gone.stderr.replace(victim, "e" * 32) == missing.stderr


def test_repeats_keep_metadata_within_the_limit_so_the_export_imports(
    tmp_path, local_cli, fresh_cli
):
    """Issue 28: the same text twice with 16 different keys each held 32 keys (33 after an
    update), and the export of that store was refused whole by import."""
    text = "The user repeats this fact"
    first = [a for i in range(16) for a in ("-m", f"a{i:02d}=old")]
    second = [a for i in range(16) for a in ("-m", f"b{i:02d}=new")]
    local_cli.ok("add", "--sync", *first, text)
    mid = local_cli.json("add", "--sync", *second, text)["memory_ids"][0]
    [memory] = local_cli.json_lines("export")
    assert memory["metadata"] == {f"b{i:02d}": "new" for i in range(16)}
    refused = local_cli("update", mid, "--metadata", "extra=1")
    assert refused.exit_code == 2
    assert "the limit is 16" in refused.stderr
    out = tmp_path / "m.jsonl"
    local_cli.ok("export", "--out", str(out))
    assert fresh_cli.json("import", str(out))["added"] == 1
    assert fresh_cli.json_lines("export")[0]["metadata"] == memory["metadata"]


def test_a_text_holding_unicode_line_separators_round_trips(tmp_path, local_cli, fresh_cli):
    """Found by the round-trip property: import split records at U+0085 / U+2028 / U+2029
    (str.splitlines), so a memory holding one made its export unreadable."""
    text = "one\x85two\u2028three\u2029four"
    local_cli.ok("add", "--sync", "-m", "k=\u2028", text)
    out = tmp_path / "m.jsonl"
    local_cli.ok("export", "--out", str(out))
    assert len(out.read_text(encoding="utf-8").splitlines()) == 1
    assert fresh_cli.json("import", str(out))["added"] == 1
    [memory] = fresh_cli.json_lines("export")
    assert (memory["text"], memory["metadata"]) == (text, {"k": "\u2028"})


def test_an_import_keeps_the_day_a_memory_was_last_said(tmp_path, local_cli, fresh_cli):
    """A text said in March and again in April is recalled with April's date; an export and
    an import must not turn that back into March (``said_at`` travels with the record)."""
    said = tmp_path / "said.json"
    for day in ("2023-03-12T09:30:00", "2023-04-12T09:30:00"):
        said.write_text(
            json.dumps(
                [{"role": "user", "content": "I adopted a cat named Miso", "timestamp": day}]
            )
        )
        local_cli.ok("add", "--sync", "--messages-file", str(said))
    out = tmp_path / "memories.jsonl"
    local_cli.ok("export", "--out", str(out))
    [exported, *turns] = [json.loads(line) for line in out.read_text("utf-8").splitlines()]
    assert exported["said_at"] > exported["created_at"]
    assert [t["kind"] for t in turns] == ["message", "message"]  # the log follows the memories

    fresh_cli.ok("import", str(out))
    [imported] = fresh_cli.json_lines("list", "--all")
    assert (imported["created_at"], imported["said_at"]) == (
        exported["created_at"],
        exported["said_at"],
    )


DEFAULT_SCOPE = {
    "app_id": "hermes",
    "tenant_id": "__default__",
    "agent_id": "hermes",
    "run_id": "__default__",
}


def test_an_older_export_without_said_at_is_dated_by_its_creation(tmp_path, fresh_cli):
    record = {
        "id": "a" * 32,
        "text": "User lives in Hangzhou",
        "scope": DEFAULT_SCOPE,
        "metadata": {},
        "created_at": 1_700_000_000.0,
    }
    path = tmp_path / "old.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    fresh_cli.ok("import", str(path))
    [imported] = fresh_cli.json_lines("export")
    assert imported["created_at"] == imported["said_at"] == 1_700_000_000.0


@pytest.mark.parametrize("value", ["yesterday", -40_000_000_000, True, "NaN"])  # year 702
def test_a_bad_said_at_stops_the_import_with_one_line(tmp_path, fresh_cli, value):
    line = {
        "text": "User lives in Hangzhou",
        "scope": DEFAULT_SCOPE,
        "said_at": float("nan") if value == "NaN" else value,
    }
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(line) + "\n", encoding="utf-8")
    result = fresh_cli("import", str(path))
    assert result.exit_code == 2
    assert "line 1: said_at must be a timestamp in seconds" in result.stderr
    assert fresh_cli.json_lines("export") == []


def test_a_version_a_dream_replaced_is_exported_as_such_and_not_restored_as_current(
    tmp_path, local_cli, fresh_cli
):
    """A backup and restore put the outdated fact back into recall: the replaced version was
    exported like any memory and imported as current. Now it is restored as the replaced
    version it is, and a file of an earlier release (no ``format``) leaves it out."""
    stale = "We keep 30 dozen eggs in the fridge at the moment"
    local_cli.ok("add", "--sync", stale)
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    local_cli.json("dream", "create", "--apply-mode", "safe_auto")
    current = sorted(m["text"] for m in local_cli.json("list")["items"])
    assert stale not in current

    out = tmp_path / "backup.jsonl"
    local_cli.json("export", "--out", str(out))
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    [old] = [r for r in records if r["text"] == stale]
    assert old["superseded_by"]
    assert all(r["superseded_by"] is None for r in records if r is not old)

    report = fresh_cli.json("import", str(out))
    assert (report["total"], report["superseded"]) == (len(records), 0)
    assert report["added"] == len(records)
    assert sorted(m["text"] for m in fresh_cli.json("list")["items"]) == current
    [restored] = [
        m for m in fresh_cli.json_lines("list", "--all", "--all-versions") if m["text"] == stale
    ]
    assert restored["superseded_by"] == old["superseded_by"]

    older = tmp_path / "older.jsonl"
    older.write_text(
        "".join(json.dumps({k: v for k, v in r.items() if k != "format"}) + "\n" for r in records),
        encoding="utf-8",
    )
    other = tmp_path / "other-home"
    (other / "config.json").parent.mkdir()
    (other / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
    older_cli = type(fresh_cli)(other)
    report = older_cli.json("import", str(older))
    assert (report["added"], report["superseded"]) == (len(records) - 1, 1)
    assert sorted(m["text"] for m in older_cli.json("list")["items"]) == current
    assert "1 replaced version left out" in older_cli.ok("import", str(older)).stdout


def test_an_export_read_across_a_merge_restores_the_merged_away_memory_as_replaced(
    tmp_path, local_cli, fresh_cli
):
    """An export reads page by page while others write: one taken while a dream pass merged
    two memories held the older as current (read before the merge) and the newer naming it
    in ``supersedes`` (read after). The restore brought the merged-away memory back into
    recall; the successor's link now says what it was."""
    stale = "We keep 30 dozen eggs in the fridge at the moment"
    local_cli.ok("add", "--sync", stale)
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    local_cli.json("dream", "create", "--apply-mode", "safe_auto")
    current = sorted(m["text"] for m in local_cli.json("list")["items"])
    out = tmp_path / "backup.jsonl"
    local_cli.json("export", "--out", str(out))
    records = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    [old] = [r for r in records if r["text"] == stale]
    successor = old["superseded_by"]
    assert [r["supersedes"] for r in records if r["id"] == successor] == [[old["id"]]]
    torn = tmp_path / "torn.jsonl"  # the older row as read before the merge
    old.update(superseded_by=None, superseded_how=None)
    torn.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")

    fresh_cli.json("import", str(torn))
    assert sorted(m["text"] for m in fresh_cli.json("list")["items"]) == current
    [restored] = [
        m for m in fresh_cli.json_lines("list", "--all", "--all-versions") if m["text"] == stale
    ]
    assert restored["superseded_by"] == successor


def test_a_byte_order_mark_on_stdin_is_read_as_in_a_file(tmp_path, local_cli, fresh_cli):
    """A file with a UTF-8 byte order mark (Windows editors write one) imported by name,
    but piped into ``import -`` it was refused ("Unexpected UTF-8 BOM"), and with
    ``--lines`` the mark was stored at the start of the first memory's text."""
    _seed(local_cli)
    text = local_cli.ok("export").stdout
    assert fresh_cli.json("import", "-", input="\ufeff" + text)["added"] == 4
    report = fresh_cli.json("--agent", "notes", "import", "--lines", "-", input="\ufeffA note\r\n")
    assert report["added"] == 1
    assert [m["text"] for m in fresh_cli.json_lines("--agent", "notes", "list", "--all")] == [
        "A note"
    ]
