"""What a user sees at the edges: version, flags that would silently mean something else,
output that scales and pipes, id prefixes, paging hints, and the many-memory verbs."""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import pytest


def _add(cli, text: str, *extra: str) -> str:
    return cli.json("add", *extra, text)["memory_ids"][0]


def _first_line(result) -> str:
    return result.stderr.splitlines()[0]


def test_version(local_cli):
    result = local_cli.ok("--version")
    assert result.stdout.strip() == "memcore 0.1.0"


@pytest.mark.parametrize("flags", [["--json"], ["--format", "json"], ["--format=json"]])
def test_version_is_a_json_document_with_json(local_cli, flags):
    """``--json`` prints one JSON document; ``--json --version`` printed the plain line."""
    result = local_cli.ok(*flags, "--version")
    assert json.loads(result.stdout) == {"version": "0.1.0"}


@pytest.mark.parametrize("flag", ["--tenant", "--app", "--agent", "--run"])
@pytest.mark.parametrize("value", ["", "   "])
def test_an_empty_scope_flag_is_refused(local_cli, flag, value):
    result = local_cli(flag, value, "list")
    assert result.exit_code == 2
    assert _first_line(result).startswith(f"memcore: error: {flag} is empty")
    assert not (local_cli.home / "memcore.db").exists()


@pytest.mark.parametrize("value", ["", "   "])
@pytest.mark.parametrize("command", [["config", "set", "tenant_id", "alice"], ["list"]])
def test_an_empty_config_flag_is_refused_not_read_as_the_default_file(local_cli, value, command):
    config = local_cli.home / "config.json"
    before = config.read_bytes()
    result = local_cli("--config", value, *command)
    assert result.exit_code == 2
    assert result.stderr.splitlines() == [
        "memcore: error: --config is empty (an unset shell variable?); give a file or leave it out"
    ]
    assert config.read_bytes() == before  # the default config file is not written


@pytest.mark.parametrize(
    "args",
    [
        ("--tenant", "alice", "--tenant", "bob", "add", "whose is this"),
        ("--tenant", "alice", "add", "whose is this", "--tenant", "bob"),
        ("--tenant=alice", "list", "--tenant", "bob"),
        ("--format", "json", "--format", "plain", "count"),
        ("scopes", "--limit", "1", "--limit", "2"),
        ("export", "-o", "-", "--out", os.devnull),
        ("requests", "--operation", "AddMemories", "--operation", "GetMemory"),
    ],
)
def test_a_one_value_option_given_twice_with_two_values_is_refused(local_cli, args):
    """The parser kept the last value without a word: a wrapper's ``--tenant alice`` followed
    by the user's ``--tenant bob`` wrote to (and read) bob's memories."""
    result = local_cli(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "is given twice" in result.stderr and len(result.stderr.splitlines()) == 1
    assert result.stdout == ""
    assert local_cli.json("--tenant", "bob", "count")["count"] == 0
    assert local_cli.json("--tenant", "alice", "count")["count"] == 0


def test_a_one_value_option_repeated_with_the_same_value_still_runs(local_cli):
    local_cli.ok("--tenant", "alice", "add", "mine", "--tenant", "alice")
    assert local_cli.json("--tenant", "alice", "count")["count"] == 1


@pytest.mark.parametrize("flag", ["--tenant", "--app", "--agent", "--run"])
def test_a_scope_flag_with_bytes_that_are_not_utf8_is_refused(local_cli, flag):
    # argv arrives decoded with surrogateescape: the byte 0xff is U+DCFF.
    result = local_cli(flag, "al\udcffce", "add", "hello")
    assert result.exit_code == 2
    assert _first_line(result) == (
        f"memcore: error: {flag} is not valid UTF-8 (byte 0xff at character 2)"
    )
    assert not (local_cli.home / "memcore.db").exists()


_MAIN = [sys.executable, "-c", "from memcore_cli.app import main; main()"]


def test_text_with_bytes_that_are_not_utf8_names_the_byte(tmp_path):
    """The real command line: bytes in argv, not a str handed to the runner."""
    env = {**os.environ, "MEMCORE_HOME": str(tmp_path), "HOME": str(tmp_path)}
    done = subprocess.run([*_MAIN, b"add", b"caf\xe9"], capture_output=True, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr == b"memcore: error: text is not valid UTF-8 (byte 0xe9 at character 3)\n"
    done = subprocess.run([*_MAIN, b"--tenant", b"\xff", b"list"], capture_output=True, env=env)
    assert done.returncode == 2, done.stderr
    assert b"--tenant is not valid UTF-8 (byte 0xff at character 0)" in done.stderr


def test_add_from_stdin_with_bytes_that_are_not_utf8_names_the_byte(tmp_path):
    # A UTF-8 locale decodes stdin strictly (argv always with surrogateescape).
    env = {**os.environ, "MEMCORE_HOME": str(tmp_path), "PYTHONIOENCODING": "utf-8:strict"}
    done = subprocess.run([*_MAIN, "add", "-"], input=b"caf\xe9\n", capture_output=True, env=env)
    assert done.returncode == 2, done.stderr
    assert done.stderr == b"memcore: error: text is not valid UTF-8 (byte 0xe9 at character 3)\n"
    done = subprocess.run(
        [*_MAIN, "add", "-"], input=b"caf\xc3\xa9\r\n", capture_output=True, env=env
    )
    assert done.returncode == 0, done.stderr
    done = subprocess.run([*_MAIN, "--json", "list"], capture_output=True, env=env)
    assert [m["text"] for m in json.loads(done.stdout)["items"]] == ["café"]


def test_an_unknown_format_is_refused(local_cli):
    result = local_cli("--format", "yaml", "list")
    assert result.exit_code == 2
    assert "--format must be one of table, plain, json" in _first_line(result)


def test_piped_output_is_tab_separated_and_whole(local_cli):
    long_text = "word " * 1600 + "line\tbreak\nend"
    memory_id = _add(local_cli, long_text)
    out = local_cli.ok("list").stdout
    [row] = out.splitlines()
    fields = row.split("\t")
    assert fields[0] == memory_id
    assert fields[1].endswith("line\\tbreak\\nend") and len(fields[1]) > 8000
    assert "┃" not in out and "│" not in out


def test_tables_cut_long_text_and_get_and_json_keep_it(local_cli):
    long_text = "A long memory about many things. " * 250  # about 8 KB
    memory_id = _add(local_cli, long_text)
    table = local_cli.ok("--format", "table", "list").stdout
    assert len(table.splitlines()) < 12  # one short row, not ~150
    assert "…" in table
    shown = local_cli.ok("--format", "table", "get", memory_id).stdout
    assert shown.count("many") == 250  # whole, wrapped over lines
    plain = dict(line.split("\t", 1) for line in local_cli.ok("get", memory_id).stdout.splitlines())
    assert plain["text"] == long_text
    assert local_cli.json("get", memory_id)["text"] == long_text
    assert local_cli.json("list")["items"][0]["text"] == long_text


def test_search_is_plain_when_piped(local_cli):
    memory_id = _add(local_cli, "The user drinks green tea")
    [row] = local_cli.ok("search", "green tea").stdout.splitlines()
    score, found, text, _scope = row.split("\t")
    assert found == memory_id and text == "The user drinks green tea" and float(score) > 0


def _import(cli, records):
    lines = "".join(json.dumps(r) + "\n" for r in records)
    return cli.ok("import", "-", input=lines)


def _record(memory_id, text, tenant="__default__"):
    scope = {"app_id": "hermes", "tenant_id": tenant, "agent_id": "hermes", "run_id": "r"}
    return {"id": memory_id, "text": text, "scope": scope, "metadata": {}}


def test_a_unique_id_prefix_works_wherever_an_id_does(local_cli):
    _import(local_cli, [_record("abcd1111" + "0" * 24, "one"), _record("ef" + "1" * 30, "two")])
    assert local_cli.json("get", "abcd1111")["text"] == "one"
    local_cli.ok("update", "abcd", "--text", "uno")
    assert local_cli.json("get", "abcd1111")["text"] == "uno"
    local_cli.ok("forget", "--yes", "abcd")
    assert local_cli("get", "abcd1111" + "0" * 24).exit_code == 3


def test_an_ambiguous_prefix_is_refused_with_the_candidates(local_cli):
    first, second = "abcd1111" + "0" * 24, "abcd2222" + "0" * 24
    _import(local_cli, [_record(first, "one"), _record(second, "two")])
    result = local_cli("get", "abcd")
    assert result.exit_code == 2
    line = _first_line(result)
    assert "matches 2 memories" in line and first in line and second in line
    assert local_cli("forget", "--yes", "abcd").exit_code == 2
    assert local_cli.json("count")["count"] == 2


def test_a_prefix_that_matches_nothing_is_not_found(local_cli):
    _add(local_cli, "something")
    result = local_cli("get", "ffffffff")
    assert result.exit_code == 3
    assert "no memory id is or starts with 'ffffffff'" in _first_line(result)


def test_paging_hints_keep_every_scope_flag(local_cli):
    for text in ("first memory", "second memory", "third memory"):
        local_cli.ok("--tenant", "alice", "--agent", "coder", "add", text)
    _add(local_cli, "default tenant memory")
    result = local_cli.ok("--tenant", "alice", "--agent", "coder", "list", "--limit", "2")
    hint = result.stderr.strip().splitlines()[-1]
    assert hint.startswith("more: memcore --tenant alice --agent coder list --limit 2 --next-token")
    argv = shlex.split(hint.removeprefix("more: "))[1:]
    rest = local_cli.ok(*argv).stdout.splitlines()
    assert [r.split("\t")[1] for r in rest] == ["third memory"]


def test_count_list_since_and_newest_first(local_cli):
    old = _record("0" * 32, "an old memory")
    old["created_at"] = 1_000_000.0
    _import(local_cli, [old])
    _add(local_cli, "a new memory", "--metadata", "topic=new")
    _add(local_cli, "a newer memory")
    assert local_cli.ok("count").stdout.strip() == "3"
    assert local_cli.json("count", "--since", "1d")["count"] == 2
    assert local_cli.json("count", "--filter", "topic=new")["count"] == 1
    newest = [m["text"] for m in local_cli.json("list", "--newest")["items"]]
    assert newest == ["a newer memory", "a new memory", "an old memory"]
    since = [m["text"] for m in local_cli.json("list", "--since", "2026-01-01")["items"]]
    assert sorted(since) == ["a new memory", "a newer memory"]
    bad = local_cli("list", "--since", "last tuesday")
    assert bad.exit_code == 2 and "--since must be an age" in _first_line(bad)
    # A "Z" time, as --at takes it: Python 3.10's fromisoformat refused it.
    for given in ("2026-01-01T00:00Z", "2026-01-01T00:00:00z", "2026-01-01T01:00+01:00"):
        zoned = [m["text"] for m in local_cli.json("list", "--since", given)["items"]]
        assert sorted(zoned) == ["a new memory", "a newer memory"], given


def test_a_selection_cut_by_the_limit_says_how_many_more_in_json(local_cli):
    """``list --since/--newest`` is one selection, not pages: cut to ``--limit``, its JSON
    said ``next_token: null``, "the listing ends here", and a script paging on it stopped
    with the first 20 of 25."""
    for i in range(5):
        _add(local_cli, f"note number {i}")
    for how in (["--newest"], ["--since", "7d"]):
        cut = local_cli.json("list", *how, "--limit", "3")
        assert (len(cut["items"]), cut["next_token"], cut["more"]) == (3, None, 2)
        whole = local_cli.json("list", *how)
        assert (len(whole["items"]), whole["next_token"], whole["more"]) == (5, None, 0)


def test_forget_by_filter_with_a_dry_run_first(local_cli):
    _add(local_cli, "Deploys happen on Fridays", "--metadata", "topic=ops")
    _add(local_cli, "Rollbacks need a ticket", "--metadata", "topic=ops")
    kept = _add(local_cli, "The user likes tea", "--metadata", "topic=drinks")
    dry = local_cli.ok("forget", "--filter", "topic=ops", "--dry-run")
    assert len(dry.stdout.splitlines()) == 2 and "would forget 2 memories" in dry.stderr
    assert local_cli.json("count")["count"] == 3
    refused = local_cli("forget", "--filter", "topic=ops")
    assert refused.exit_code == 2 and "--yes" in _first_line(refused)
    local_cli.ok("forget", "--filter", "topic=ops", "--yes")
    assert [m["id"] for m in local_cli.json("list")["items"]] == [kept]


def test_forget_by_a_filter_that_selects_nothing_answers_json_too(local_cli):
    _add(local_cli, "The user likes tea", "--metadata", "topic=drinks")
    for selection in (["--filter", "topic=ops"], ["--since", "0d"]):
        result = local_cli.ok("--json", "forget", *selection, "--yes")
        assert json.loads(result.stdout) == [], result.stdout  # what it deleted: nothing
    assert local_cli.json("count")["count"] == 1


def test_forget_needs_ids_or_a_filter_not_both(local_cli):
    memory_id = _add(local_cli, "something")
    for argv in (["forget", "--yes"], ["forget", "--yes", memory_id, "--filter", "a=b"]):
        result = local_cli(*argv)
        assert result.exit_code == 2 and "give memory ids, --filter/--since" in _first_line(result)


def test_import_goes_to_the_tenant_the_flags_name(local_cli):
    local_cli.ok("--tenant", "alice", "add", "alice likes tea")
    exported = local_cli.ok("--tenant", "alice", "export").stdout
    refused = local_cli("import", "-", input=exported)
    assert refused.exit_code == 2
    assert "outside the current tenant" in _first_line(refused) and "--tenant" in _first_line(
        refused
    )
    moved = local_cli.json("--tenant", "bob", "import", "-", input=exported)
    assert moved["added"] == 1
    [memory] = local_cli.json("--tenant", "bob", "list")["items"]
    assert memory["text"] == "alice likes tea" and memory["scope"]["tenant_id"] == "bob"
    assert local_cli.json("--tenant", "alice", "count")["count"] == 1
    again = local_cli.json("--tenant", "bob", "import", "-", input=exported)
    assert again["added"] == 0 and again["present"] == 1


def test_an_agent_or_run_given_to_a_json_lines_import_is_said_to_be_unused(local_cli):
    """Each record keeps its own agent and run, so --agent and --run changed nothing, and
    nothing said so: the memories were not where the user looked for them."""
    local_cli.ok("--agent", "a1", "add", "--sync", "alice likes tea")
    exported = local_cli.ok("export").stdout
    moved = local_cli("--tenant", "bob", "--agent", "zed", "import", "-", input=exported)
    assert moved.exit_code == 0, moved.stderr
    assert "--agent not used: each record of a JSON Lines import keeps its own" in moved.stderr
    [memory] = local_cli.json("--tenant", "bob", "list")["items"]
    assert memory["scope"]["agent_id"] == "a1"
    plain = local_cli("--tenant", "bob", "import", "-", input=exported)
    assert "not used" not in plain.stderr
    # A failed import is one line, the error's (the note came first, a second line).
    failed = local_cli("--agent", "zed", "import", "k=v")
    assert failed.exit_code == 2 and failed.stderr.count("\n") == 1, failed.stderr
    assert "not used" not in failed.stderr


def test_import_plain_text_lines(local_cli, tmp_path):
    notes = tmp_path / "notes.txt"
    # A line of a zero-width space alone stopped the whole file ("text must not be empty")
    # where a line of spaces is skipped.
    notes.write_text(
        "The user lives in Hangzhou\n\n\u200b\n \ufeff \n  Prefers tea  \n", encoding="utf-8"
    )
    report = local_cli.json("--agent", "notes", "import", "--lines", str(notes))
    assert report["added"] == 2
    texts = sorted(m["text"] for m in local_cli.json("--agent", "notes", "list")["items"])
    assert texts == ["Prefers tea", "The user lives in Hangzhou"]
    assert local_cli.json("--agent", "notes", "import", "--lines", str(notes))["added"] == 0


def test_config_set_embedder_none_and_doctor_says_so(local_cli):
    local_cli.ok("config", "set", "embedder", "none")
    assert json.loads((local_cli.home / "config.json").read_text())["embedder"] == "none"
    checks = {c["name"]: c for c in local_cli.json("doctor")["checks"]}
    assert "embedder none" in checks["search mode"]["detail"]
    assert "install" not in checks["search mode"]["detail"]
