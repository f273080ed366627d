"""A Hermes user's own memory: ``hermes tablestore-mem list|get|forget|export|import|stats``, and
the ``memcore`` CLI opening the very store a Hermes home uses; on the embedded store and on
the TableStore emulator (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

AK = "LTAI5tUserMemoryKeyId"
SK = "user-memory-secret-Hd62Wq"
SECRETS = (AK, SK)


@pytest.fixture(params=["local", "tablestore"])
def home(request: Any, hermes_home: Path, kit: Any) -> Iterator[Path]:
    """A Hermes home on the embedded store, or on the emulator with its keys in ``.env``."""
    if request.param == "local":
        kit.write_config(hermes_home, backend="local", embedder="none")
        yield hermes_home
        return
    from memcore_tablestore.testing import running_emulator

    with running_emulator(access_key_id=AK, access_key_secret=SK) as server:
        kit.emulator_home(
            hermes_home, server, keys={"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK}
        )
        yield hermes_home


def hermes(kit: Any, capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, Any]:
    code, answer = kit.run_cli(capsys, *args, secrets=SECRETS)
    return code, answer


def add(kit: Any, capsys: pytest.CaptureFixture[str], text: str, *extra: str) -> str:
    code, answer = hermes(kit, capsys, "add", text, "--sync", *extra)
    assert code == 0, answer
    [memory_id] = answer["memory_ids"]
    return str(memory_id)


def memcore(tmp_path: Path, *args: str) -> Any:
    """The ``memcore`` CLI in-process, with its own (empty) MEMCORE_HOME and no keys in the
    environment: whatever it reads of the Hermes home comes from the home itself."""
    from typer.testing import CliRunner

    from memcore_cli.app import app
    from memcore_cli.wiring.state import Overrides

    environ = {"MEMCORE_HOME": str(tmp_path / "memcore-home")}
    result = CliRunner().invoke(
        app, list(args), env=environ, obj=Overrides(environ=environ), catch_exceptions=False
    )
    for secret in SECRETS:
        assert secret not in result.stdout + result.stderr
    return result


def test_list_get_forget_export_import_stats(
    home: Path, kit: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    first = add(kit, capsys, "My sister is called Ines")
    second = add(kit, capsys, "I play the cello on Sundays")
    other = add(kit, capsys, "Bob's private note", "--user-id", "bob", "--platform", "telegram")

    code, listed = hermes(kit, capsys, "list")
    assert code == 0 and listed["scope"] == "hermes/__default__/*/*"
    assert sorted(m["id"] for m in listed["items"]) == sorted([first, second])
    code, page = hermes(kit, capsys, "list", "--limit", "1")
    assert code == 0 and len(page["items"]) == 1 and page["next_token"]

    code, got = hermes(kit, capsys, "get", first)
    assert code == 0 and got["text"] == "My sister is called Ines"
    # Another tenant's id answers exactly as an id that does not exist.
    code, foreign = hermes(kit, capsys, "get", other)
    code_missing, missing = hermes(kit, capsys, "get", "0" * len(other))
    assert code == code_missing == 3
    assert foreign["error"]["code"] == missing["error"]["code"] == "not_found"

    code, stats = hermes(kit, capsys, "stats")
    assert code == 0 and stats["memories"] == 2 and stats["by_agent"] == {"hermes": 2}
    assert stats["spool"]["depth"] == 0

    out = tmp_path / "export.jsonl"
    code, exported = hermes(kit, capsys, "export", "--out", str(out))
    assert code == 0 and exported["exported"] == 2
    assert out.stat().st_mode & 0o777 == 0o600
    records = [json.loads(line) for line in out.read_text().splitlines()]
    assert sorted(r["text"] for r in records) == [
        "I play the cello on Sundays",
        "My sister is called Ines",
    ]
    assert set(records[0]) >= {"id", "text", "scope", "metadata", "created_at"}

    code, refused = hermes(kit, capsys, "forget", first)  # no terminal, no --yes
    assert code == 2 and refused["error"]["field"] == "yes"
    code, forgotten = hermes(kit, capsys, "forget", first, "--yes")
    assert code == 0 and [f["id"] for f in forgotten["forgotten"]] == [first]
    code, _ = hermes(kit, capsys, "forget", other, "--yes")
    assert code == 3  # bob's memory is not this user's to delete
    code, listed = hermes(kit, capsys, "list", "--all")
    assert [m["id"] for m in listed["items"]] == [second]

    code, imported = hermes(kit, capsys, "import", str(out))
    assert code == 0 and imported["total"] == 2
    assert imported["added"] == 1 and imported["present"] == 1
    code, listed = hermes(kit, capsys, "list", "--all")
    assert sorted(m["text"] for m in listed["items"]) == [
        "I play the cello on Sundays",
        "My sister is called Ines",
    ]
    code, bob = hermes(kit, capsys, "list", "--user-id", "bob", "--platform", "telegram")
    assert [m["id"] for m in bob["items"]] == [other]


def test_import_refuses_another_tenants_records_and_writes_nothing(
    home: Path, kit: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    add(kit, capsys, "Carol's note", "--user-id", "carol", "--platform", "telegram")
    out = tmp_path / "carol.jsonl"
    code, _ = hermes(
        kit, capsys, "export", "--out", str(out), "--user-id", "carol", "--platform", "telegram"
    )
    assert code == 0
    code, refused = hermes(kit, capsys, "import", str(out))
    assert code == 2 and refused["error"]["field"] == "scope"
    # The advice names this command's options (it has no --tenant or --app).
    message = refused["error"]["message"]
    assert "--tenant" not in message and "--app" not in message
    assert "--user-id" in message and "--platform" in message
    code, listed = hermes(kit, capsys, "list")
    assert listed["items"] == []


def test_memcore_opens_the_store_of_a_hermes_home(
    home: Path, kit: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mine = add(kit, capsys, "The boiler code is 4471")
    alices = add(kit, capsys, "Alice keeps bees", "--user-id", "alice", "--platform", "telegram")

    for flags in (["--hermes-home", str(home)], ["--config", str(home / "tablestore_memory.json")]):
        result = memcore(tmp_path, *flags, "--json", "list")
        assert result.exit_code == 0, (result.stdout, result.stderr)
        assert [m["id"] for m in json.loads(result.stdout)["items"]] == [mine]
        result = memcore(tmp_path, *flags, "--tenant", "telegram:alice", "--json", "get", alices)
        assert result.exit_code == 0, result.stderr
        assert json.loads(result.stdout)["text"] == "Alice keeps bees"
    # Nothing was created in memcore's own home: the Hermes home's store was read.
    assert not (tmp_path / "memcore-home").exists()

    # A write through memcore is seen by Hermes, in the same tenant.
    result = memcore(tmp_path, "--hermes-home", str(home), "--json", "add", "Written by memcore")
    assert result.exit_code == 0, result.stderr
    code, listed = hermes(kit, capsys, "list", "--all")
    assert sorted(m["text"] for m in listed["items"]) == [
        "The boiler code is 4471",
        "Written by memcore",
    ]
    # An export from memcore imports into Hermes (one format): everything already present.
    out = tmp_path / "from-memcore.jsonl"
    result = memcore(tmp_path, "--hermes-home", str(home), "export", "--out", str(out))
    assert result.exit_code == 0, result.stderr
    code, imported = hermes(kit, capsys, "import", str(out))
    assert code == 0 and imported == {
        "total": 2,
        "added": 0,
        "present": 2,
        "superseded": 0,
        "id_map": {},
    }

    shown = json.loads(
        memcore(tmp_path, "--hermes-home", str(home), "--json", "config", "show").stdout
    )
    assert shown["backend"] == json.loads((home / "tablestore_memory.json").read_text())["backend"]
    if shown["backend"] == "local":
        assert shown["database"] == str(home / "tablestore_memory_local.sqlite3")


def test_memcore_follows_the_hermes_backend_rule(
    hermes_home: Path, kit: Any, tmp_path: Path
) -> None:
    """No ``backend`` key: TableStore when the home's ``.env`` has keys, else an error (as
    Hermes says it), never a silent local database."""
    kit.write_config(hermes_home, endpoint="http://127.0.0.1:9", instance_name="inst")
    result = memcore(tmp_path, "--hermes-home", str(hermes_home), "list")
    assert result.exit_code == 2
    assert "TABLESTORE_MEMORY_AK" in result.stderr and len(result.stderr.splitlines()) == 1
    kit.write_env(hermes_home, {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK})
    shown = memcore(tmp_path, "--hermes-home", str(hermes_home), "--json", "config", "show")
    assert json.loads(shown.stdout)["backend"] == "tablestore"
    missing = memcore(tmp_path, "--hermes-home", str(tmp_path / "nowhere"), "list")
    assert missing.exit_code == 2 and "is not a directory" in missing.stderr
    assert not (tmp_path / "memcore-home").exists()


def test_the_new_commands_through_the_real_hermes_cli(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none")
    added = kit.run_hermes(hermes_home, "tablestore-mem", "add", "Tea, no sugar", "--sync")
    assert added.returncode == 0, added.stderr[-2000:]
    listed = kit.run_hermes(hermes_home, "tablestore-mem", "list")
    assert listed.returncode == 0, listed.stderr[-2000:]
    assert [m["text"] for m in json.loads(listed.stdout)["items"]] == ["Tea, no sugar"]
    exported = kit.run_hermes(hermes_home, "tablestore-mem", "export")
    assert exported.returncode == 0
    assert [json.loads(line)["text"] for line in exported.stdout.splitlines()] == ["Tea, no sugar"]
    stats = kit.run_hermes(hermes_home, "tablestore-mem", "stats")
    assert stats.returncode == 0 and json.loads(stats.stdout)["memories"] == 1
    missing = kit.run_hermes(hermes_home, "tablestore-mem", "get", "nope")
    assert missing.returncode == 3
    assert missing.stderr.count("tablestore-mem: error:") == 1 and "Traceback" not in missing.stderr


def test_an_import_with_a_bad_record_writes_nothing(
    home: Path, kit: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Every record is checked before anything is written: a text that is only a recall block
    (which a write cuts out, leaving nothing) on line 3 stops the import with nothing added."""
    kept = add(kit, capsys, "Already here before the import")
    exported = tmp_path / "out.jsonl"
    assert hermes(kit, capsys, "export", "--out", str(exported))[0] == 0
    scope = json.loads(exported.read_text(encoding="utf-8"))["scope"]
    texts = [
        "The user's dog is called Rex",
        "The user works at a bakery",
        "<recalled-memory>\nsomething recalled\n</recalled-memory>",
    ]
    records = [{"text": text, "scope": scope, "metadata": {}} for text in texts]
    path = tmp_path / "in.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    code, answer = hermes(kit, capsys, "import", str(path))
    assert code == 2, answer
    assert "line 3" in answer["error"]["message"]
    code, listed = hermes(kit, capsys, "list")
    assert [m["id"] for m in listed["items"]] == [kept]


def test_an_import_failing_midway_takes_back_what_landed(
    home: Path,
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Import is all or nothing: when the store fails on the third write (one record at a
    time here), the two that landed are deleted again."""
    import memcore.transfer.restoring
    from memcore.errors import Unavailable
    from memcore.service import MemoryService

    kept = add(kit, capsys, "Already here before the import")
    exported = tmp_path / "out.jsonl"
    assert hermes(kit, capsys, "export", "--out", str(exported))[0] == 0
    scope = json.loads(exported.read_text(encoding="utf-8"))["scope"]
    texts = ["The user's dog is called Rex", "The user works at a bakery", "The user owns a kayak"]
    path = tmp_path / "in.jsonl"
    path.write_text(
        "".join(json.dumps({"text": t, "scope": scope, "metadata": {}}) + "\n" for t in texts),
        encoding="utf-8",
    )
    original = MemoryService.restore
    calls: list[int] = []

    def failing_third(self: MemoryService, items: Any, **kw: Any) -> Any:
        calls.append(len(items))
        if len(calls) == 3:
            raise Unavailable("the store went away")
        return original(self, items, **kw)

    monkeypatch.setattr(memcore.transfer.restoring, "IMPORT_BATCH", 1)
    monkeypatch.setattr(MemoryService, "restore", failing_third)
    code, answer = hermes(kit, capsys, "import", str(path))
    assert code != 0 and "line 3" in answer["error"]["message"], answer
    assert calls == [1, 1, 1]
    code, listed = hermes(kit, capsys, "list", "--all")
    assert [m["id"] for m in listed["items"]] == [kept]


def test_an_import_keeps_ids_and_the_day_a_memory_was_said(
    home: Path, kit: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An export imported into an empty home: on the local store the ids, ``created_at`` and
    ``said_at`` are the exported ones (recall dates the memory as before); TableStore assigns
    its own ids and times and the answer maps the ids."""
    scope = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes", "run_id": "r1"}
    record = {
        "id": "5" * 32,
        "text": "I adopted a cat named Miso",
        "scope": scope,
        "metadata": {"topic": "pets"},
        "created_at": 1_678_613_400.0,  # 2023-03-12
        "said_at": 1_681_291_800.0,  # 2023-04-12
    }
    path = tmp_path / "in.jsonl"
    path.write_text(json.dumps(record) + "\n", encoding="utf-8")
    code, imported = hermes(kit, capsys, "import", str(path))
    assert code == 0 and (imported["added"], imported["present"]) == (1, 0), imported
    code, listed = hermes(kit, capsys, "list", "--all")
    [memory] = listed["items"]
    assert memory["scope"] == scope and memory["metadata"] == {"topic": "pets"}
    local = json.loads((home / "tablestore_memory.json").read_text())["backend"] == "local"
    if local:
        assert imported["id_map"] == {}
        assert (memory["id"], memory["created_at"], memory["said_at"]) == (
            record["id"],
            record["created_at"],
            record["said_at"],
        )
    else:
        assert imported["id_map"] == {record["id"]: memory["id"]}
    code, again = hermes(kit, capsys, "import", str(path))
    assert code == 0 and (again["added"], again["present"]) == (0, 1), again


def raw_output(capsys: pytest.CaptureFixture[str], *args: str) -> str:
    """What ``hermes tablestore-mem ARGS`` writes to stdout, as written."""
    import argparse

    from memcore_hermes.commands.cli import register_cli, tablestore_mem_command

    parser = argparse.ArgumentParser(prog="hermes tablestore-mem")
    register_cli(parser)
    try:
        tablestore_mem_command(parser.parse_args(list(args)))
    except SystemExit as exc:
        assert not exc.code, capsys.readouterr()
    out = capsys.readouterr().out
    assert not any(secret in out for secret in SECRETS)
    return out


def test_output_and_export_show_no_control_a_terminal_acts_on(
    home: Path, kit: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Stored text may come from an untrusted chat: its C1 controls (0x9b starts an escape
    sequence), DEL and bidi overrides were written raw by every command and by the export."""
    text = "pay \x9b31m Bob \u202eevil\u202c \x7f end"
    memory_id = add(kit, capsys, text)
    out = tmp_path / "export.jsonl"
    written = {
        "get": raw_output(capsys, "get", memory_id),
        "list": raw_output(capsys, "list"),
        "search": raw_output(capsys, "search", "pay Bob"),
        "export": raw_output(capsys, "export"),
        "export --out": (raw_output(capsys, "export", "--out", str(out)), out.read_text())[1],
    }
    for command, shown in written.items():
        assert not any(raw in shown for raw in ("\x9b", "\u202e", "\x7f")), command
    assert json.loads(written["get"])["text"] == text
    assert json.loads(written["export"].splitlines()[0])["text"] == text


def test_an_import_leaves_out_the_versions_a_later_one_replaced(
    home: Path, kit: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """An export holds a dream's replaced versions too (``superseded_by``): imported as
    current, the outdated fact came back into recall."""
    scope = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes", "run_id": "r1"}
    old = {"id": "6" * 32, "text": "We keep 30 dozen eggs", "scope": scope, "metadata": {}}
    new = {"id": "7" * 32, "text": "We keep 20 dozen eggs", "scope": scope, "metadata": {}}
    path = tmp_path / "in.jsonl"
    lines = [{**old, "superseded_by": new["id"]}, {**new, "superseded_by": None}]
    path.write_text("".join(json.dumps(r) + "\n" for r in lines), encoding="utf-8")
    code, imported = hermes(kit, capsys, "import", str(path))
    assert code == 0 and (imported["total"], imported["added"]) == (2, 1), imported
    assert imported["superseded"] == 1
    code, listed = hermes(kit, capsys, "list", "--all")
    assert [m["text"] for m in listed["items"]] == ["We keep 20 dozen eggs"]
    path.write_text(json.dumps({**old, "superseded_by": 5}) + "\n", encoding="utf-8")
    code, refused = hermes(kit, capsys, "import", str(path))
    assert code == 2 and refused["error"]["field"] == "superseded_by", refused


class _Terminal:
    """A terminal on stdin that answers ``reply`` to the first question."""

    def __init__(self, reply: str) -> None:
        self.reply = reply

    def isatty(self) -> bool:
        return True

    def readline(self, *args: Any) -> str:
        return self.reply

    def fileno(self) -> int:
        raise OSError("not a real terminal")


@pytest.mark.parametrize(("reply", "kept"), [("y\n", False), ("n\n", True)])
def test_forget_asks_on_stderr_so_stdout_stays_one_json_document(
    hermes_home: Path,
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reply: str,
    kept: bool,
) -> None:
    # stdin is the user's terminal, stdout a pipe (`... forget ID | jq`).
    kit.write_config(hermes_home, backend="local", embedder="none")
    memory_id = add(kit, capsys, "The spare key is under the blue pot")
    monkeypatch.setattr("sys.stdin", _Terminal(reply))

    code, answer, err = kit.run_cli_full(capsys, "forget", memory_id, secrets=SECRETS)

    assert "Delete 1 memory (The spare key is under the blue pot)? [y/N]" in err
    assert code == (1 if kept else 0), answer  # as `memcore forget` answers a no
    assert ("error" in answer) is kept
    if kept:
        assert answer["error"]["message"] == "not confirmed; nothing was deleted", answer
    code, found = hermes(kit, capsys, "get", memory_id)
    assert (code == 0) is kept, found


def test_forget_with_stdin_closed_is_the_no_terminal_refusal(
    home: Path, kit: Any, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Started with stdin closed (``<&-``, ``sys.stdin`` None) it failed as an unexpected
    ``AttributeError``; it is refused as without a terminal (exit 2, pass --yes)."""
    import sys

    first = add(kit, capsys, "My sister is called Ines")
    monkeypatch.setattr(sys, "stdin", None)
    code, refused = hermes(kit, capsys, "forget", first)
    assert code == 2 and refused["error"]["field"] == "yes"
    # The CLI's line word for word (one wording in the core serves both).
    assert refused["error"]["message"] == (
        "not deleting 1 memory without confirmation: stdin is not a terminal; pass --yes"
    )
    code, listed = hermes(kit, capsys, "list", "--all")
    assert [m["id"] for m in listed["items"]] == [first]
