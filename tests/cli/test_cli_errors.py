"""Bad input: each case exits with its code and says what was wrong in one stderr line."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from tests.cli.conftest import Cli


def _one_line_error(result, code: int, *needles: str) -> str:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    assert "Traceback" not in result.stderr
    line = lines[0]
    assert line.startswith("memcore: error: ")
    for needle in needles:
        assert needle in line, line
    return line


@pytest.mark.parametrize(
    ("args", "needles"),
    [
        (["add", ""], ["text must not be empty"]),
        (["add", "   "], ["text must not be empty"]),
        (["add", "x" * 32_001], ["32001", "32000"]),
        (["add", "--metadata", "topic", "hello"], ["key=value"]),
        (["add", *[a for i in range(17) for a in ("-m", f"k{i}=v")], "hello"], ["17 keys", "16"]),
        (["search", "--top-k", "0", "hello"], ["top_k", "1 to 50"]),
        (["search", "--top-k", "51", "hello"], ["top_k", "1 to 50"]),
        (["search", "--filter", "nokey", "hello"], ["key=value"]),
        (["search", "--at", "last Tuesday", "hello"], ["--at must be an ISO 8601", "2026-05-01"]),
        (["search", "--at", "2023-02-30", "hello"], ["--at must be an ISO 8601"]),
        (["search", "--at", "0001-01-01", "hello"], ["--at must be a date from year 1000"]),
        (["--backend", "nosuch", "list"], ["unknown backend 'nosuch'", "local", "tablestore"]),
        (["list", "--limit", "0"], ["limit"]),
        (["update", "abc"], ["update needs --text, --metadata or --unset"]),
        (["add", "--metadata", "app_id=evil", "hello"], ["reserved"]),
    ],
)
def test_bad_input_exits_2_with_one_line(local_cli, args, needles):
    _one_line_error(local_cli(*args), 2, *needles)


def test_text_over_the_limit_in_multibyte_characters_exits_2(local_cli):
    _one_line_error(local_cli("add", "咖" * 10_667), 2, "UTF-8 bytes")


def test_malformed_config_file_exits_2_naming_the_file(home, local_cli):
    path = home / "config.json"
    path.write_text("{not json", encoding="utf-8")
    _one_line_error(local_cli("list"), 2, "not valid JSON", str(path))


def test_config_with_a_bad_value_names_the_key(home, local_cli, set_config):
    set_config(home, {"top_k": 99})
    _one_line_error(local_cli("list"), 2, "top_k")


def test_missing_config_given_with_flag_exits_2(tmp_path, local_cli):
    missing = tmp_path / "nope.json"
    _one_line_error(local_cli("--config", str(missing), "list"), 2, "does not exist")


def test_unknown_backend_in_environment_exits_2(local_cli):
    result = local_cli("list", env={"MEMCORE_BACKEND": "redis"})
    _one_line_error(result, 2, "unknown backend 'redis'", "MEMCORE_BACKEND")


def test_missing_tablestore_credentials_exit_4(home, local_cli, set_config):
    set_config(home, {"endpoint": "http://127.0.0.1:9", "instance_name": "emulator"})
    result = local_cli("--backend", "tablestore", "search", "anything")
    _one_line_error(result, 4, "TABLESTORE_MEMORY_AK")


def test_get_of_an_unknown_id_exits_3(local_cli):
    local_cli.ok("add", "something to make the store exist")
    _one_line_error(local_cli("get", "no-such-id"), 3, "no-such-id")


def test_the_readme_shows_the_line_an_unknown_id_gets(local_cli):
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    shown = readme.split("$ uv run memcore get no-such-id\n", 1)[1].splitlines()[0]
    local_cli.ok("add", "something to make the store exist")
    assert local_cli("get", "no-such-id").stderr.splitlines() == [shown]


def test_forget_of_an_unknown_id_exits_3_and_deletes_nothing(local_cli):
    kept = local_cli.json("add", "--sync", "keep")["memory_ids"][0]
    _one_line_error(local_cli("forget", "--yes", kept, "missing-id"), 3, "missing-id")
    assert local_cli.json("get", kept)["id"] == kept


def _search_unreachable_tablestore(home, local_cli, set_config):
    """A search on a TableStore endpoint where nothing listens (port 9 on loopback)."""
    set_config(
        home, {"endpoint": "http://127.0.0.1:9", "instance_name": "emulator", "timeout": 2.0}
    )
    return local_cli(
        "--backend",
        "tablestore",
        "search",
        "anything",
        env={"TABLESTORE_MEMORY_AK": "ak", "TABLESTORE_MEMORY_SK": "sk"},
    )


def test_unreachable_tablestore_exits_5(home, local_cli, set_config):
    result = _search_unreachable_tablestore(home, local_cli, set_config)
    assert result.exit_code == 5, (result.stdout, result.stderr)
    assert len(result.stderr.strip().splitlines()) == 1


def test_dream_errors_on_the_embedded_store_are_one_line(local_cli):
    local_cli.ok("add", "the store exists now")
    _one_line_error(local_cli("dream", "create", "--apply-mode", "plan"), 2, "apply_mode")
    _one_line_error(local_cli("dream", "undo", "no-such-task", "no-such-action"), 3, "dream task")


def test_usage_errors_from_the_parser_are_one_line_too(local_cli):
    _one_line_error(local_cli("get"), 2, "Missing argument", "memcore get --help")
    _one_line_error(local_cli("search", "--top-k", "many", "x"), 2, "--top-k")
    _one_line_error(local_cli("nosuchcommand"), 2, "nosuchcommand")


def test_debug_shows_the_traceback(local_cli):
    result = local_cli("--debug", "add", "")
    assert result.exit_code == 2
    assert "Traceback" in result.stderr
    assert result.stderr.strip().splitlines()[-1].startswith("memcore: error: ")


def test_json_errors_are_one_json_line_on_stderr(local_cli):
    result = local_cli("--json", "search", "--top-k", "0", "x")
    assert result.exit_code == 2
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    error = json.loads(line)["error"]
    assert error["type"] == "InvalidInput"
    assert error["field"] == "top_k"
    assert error["exit_code"] == 2


def _json_error(result, code: int) -> dict:
    assert result.exit_code == code, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    (line,) = result.stderr.strip().splitlines()
    error = json.loads(line)["error"]
    assert set(error) <= {"type", "code", "message", "field", "retryable", "exit_code"}
    assert error["exit_code"] == code and error["retryable"] is False
    return error


@pytest.mark.parametrize(
    ("args", "field", "needle"),
    [
        (["--json", "list", "--limit", "abc"], "limit", "--limit"),
        (["list", "--limit", "abc", "--json"], "limit", "--limit"),
        (["--format", "json", "list", "--limit", "abc"], "limit", "--limit"),
        (["--format=json", "get"], "memory_id", "Missing argument"),
        (["--json", "nosuchcommand"], None, "nosuchcommand"),
        (["nosuchcommand", "--json"], None, "nosuchcommand"),
        (["nosuchcommand", "--format", "json"], None, "nosuchcommand"),
        (["dream", "nosuchcommand", "--json"], None, "memcore dream --help"),
        (["--json", "get"], "memory_id", "memcore get --help"),
        (["--json", "--no-such-option", "list"], None, "--no-such-option"),
    ],
)
def test_usage_errors_from_the_parser_are_json_with_json(local_cli, args, field, needle):
    error = _json_error(local_cli(*args), 2)
    assert (error["type"], error["code"]) == ("InvalidInput", "invalid_input")
    assert error.get("field") == field
    assert needle in error["message"]


def test_an_unknown_command_stays_plain_without_json(local_cli):
    for args in (["nosuchcommand"], ["nosuchcommand", "--", "--json"]):
        result = local_cli(*args)
        assert result.exit_code == 2
        assert result.stderr.startswith("memcore: error: No such command 'nosuchcommand'")


@pytest.mark.parametrize("fmt", ["table", "plain"])
def test_json_with_another_format_is_refused(local_cli, fmt):
    error = _json_error(local_cli("--json", "--format", fmt, "count"), 2)
    assert error["field"] == "format"
    assert "--json" in error["message"] and fmt in error["message"]
    assert _json_error(local_cli("count", "--format", fmt, "--json"), 2)["field"] == "format"


def test_json_with_format_json_is_fine(local_cli):
    assert local_cli.json("--format", "json", "count")["count"] == 0


@pytest.mark.parametrize(
    ("payload", "needle"),
    [
        ("{not json", "not valid JSON"),
        ("[]", "non-empty list"),
        ('["just text"]', "must be an object"),
        ('[{"role": "user"}]', "string 'role' and 'content'"),
        ('[{"role": "robot", "content": "hi"}]', "role must be one of"),
        ('[{"role": "user", "content": "  "}]', "content is empty"),
        ("[" * 100_000, "not valid JSON"),
    ],
)
def test_bad_messages_file_exits_2_and_writes_nothing(local_cli, tmp_path, payload, needle):
    path = tmp_path / "turn.json"
    path.write_text(payload, encoding="utf-8")
    _one_line_error(local_cli("add", "--messages-file", str(path)), 2, needle)
    assert not (local_cli.home / "memcore.db").exists()


def test_long_messages_are_split_not_dropped(local_cli, tmp_path):
    turn = [{"role": "user", "content": f"message {i} about gardening"} for i in range(25)]
    path = tmp_path / "turn.json"
    path.write_text(json.dumps(turn), encoding="utf-8")
    receipts = local_cli.json("add", "--sync", "--messages-file", str(path))["receipts"]
    assert len(receipts) == 2  # 25 messages exceed the 20-per-write limit
    listed = local_cli.json("messages", "--limit", "100")["items"]
    assert [m["content"] for m in listed] == [t["content"] for t in turn]


def test_an_earlier_debug_run_leaves_no_handler_on_a_closed_stream(home, local_cli, set_config):
    """A ``--debug`` run in the same process (a test runner, a library calling the CLI) must
    not leave its stderr handler behind: the next run's log lines would go to a closed stream
    and print 'Logging error' tracebacks around its one-line error."""
    assert local_cli("--debug", "add", "").exit_code == 2
    result = _search_unreachable_tablestore(home, local_cli, set_config)
    assert result.exit_code == 5, (result.stdout, result.stderr)
    assert "Logging error" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_forged_next_token_with_a_huge_number_is_a_bad_token(local_cli):
    """It reached SQLite and failed there: "unexpected OverflowError", exit 1."""
    import base64

    forged = base64.b64encode(b'{"after": 99999999999999999999999}').decode()
    local_cli.ok("add", "--sync", "one memory")
    result = local_cli("list", "--next-token", forged)
    assert result.exit_code == 2
    assert result.stderr == "memcore: error: next_token is not a token this store issued\n"


@pytest.mark.parametrize(
    "args", [["list"], ["search", "cello"], ["get", "0123456789abcdef"], ["count"], ["messages"]]
)
def test_a_deleted_tablestore_store_exits_3_saying_so(emulator_fake_cli, args):
    """Not an empty list, no "no such memory id": the store is gone, and the line says how to
    create it (auto_create_store off, so nothing creates it behind the user's back)."""
    emulator_fake_cli.ok("config", "set", "auto_create_store", "false")
    emulator_fake_cli.ok("stores", "create", "hermes_mem")
    emulator_fake_cli.ok("add", "--sync", "Erin plays the cello")
    emulator_fake_cli.ok("stores", "delete", "hermes_mem", "--yes")
    line = _one_line_error(emulator_fake_cli(*args), 3, "memory store 'hermes_mem' does not exist")
    assert "memcore --backend tablestore stores create hermes_mem" in line
    error = json.loads(emulator_fake_cli("--json", *args).stderr)["error"]
    assert (error["code"], error["exit_code"]) == ("store_not_found", 3)


def test_a_read_never_creates_a_deleted_or_mistyped_tablestore_store(emulator_fake_cli):
    """With auto_create_store on (the default) the first write creates the store; a read of a
    store that is not there says so (exit 3) instead of creating it empty and listing nothing."""
    cli = emulator_fake_cli
    cli.ok("add", "--sync", "Erin plays the cello")
    cli.ok("stores", "delete", "hermes_mem", "--yes")
    for args in (["list"], ["search", "cello"], ["count"], ["export", "--out", "-"]):
        _one_line_error(cli(*args), 3, "memory store 'hermes_mem' does not exist")
    cli.ok("config", "set", "memory_store_name", "hermes_mme")
    _one_line_error(cli("search", "cello"), 3, "memory store 'hermes_mme' does not exist")
    assert cli.json("stores", "list") == []  # neither was created by a read
    cli.ok("add", "--sync", "Erin plays the viola")  # the first write creates it
    assert [s["name"] for s in cli.json("stores", "list")] == ["hermes_mme"]
    assert [m["text"] for m in cli.json("list")["items"]] == ["Erin plays the viola"]


def test_the_way_to_create_a_missing_store_names_the_backend_it_was_read_on(emulator_fake_cli):
    """The README selects TableStore with ``--backend tablestore``: the line's "create it with
    'memcore stores create ...'" run as given went to the embedded store, and the read failed
    again. The commands it names carry the flags that chose the store, and do what they say."""
    cli = emulator_fake_cli
    cli.ok("config", "set", "memory_store_name", "fresh_notes")
    line = _one_line_error(cli("list"), 3, "memory store 'fresh_notes' does not exist")
    told = "'memcore --backend tablestore stores create fresh_notes'"
    assert told in line and "'memcore --backend tablestore doctor'" in line
    error = json.loads(cli("--json", "search", "cello").stderr)["error"]
    assert told in error["message"]
    # Run exactly as told, with no flag of its own: the read then finds the store.
    hinted = shlex.split(line.split("create it with '", 1)[1].split("'", 1)[0])
    assert hinted[0] == "memcore"
    Cli(cli.home, env=cli.env).ok(*hinted[1:])
    assert cli.json("list")["items"] == []
