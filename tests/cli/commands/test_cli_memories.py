"""The memory commands against the embedded store and the TableStore emulator."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

STABLE_FIELDS = {"id", "text", "score", "scope", "metadata", "created_at"}
SCOPE_FIELDS = {"app_id", "tenant_id", "agent_id", "run_id"}


def _add(cli, text: str, *extra: str) -> str:
    doc = cli.json("add", *extra, "--sync", text)
    assert len(doc["memory_ids"]) == 1
    return doc["memory_ids"][0]


def test_add_then_search_finds_it_with_stable_json_fields(cli):
    memory_id = _add(cli, "User prefers concise answers")
    hits = cli.json("search", "concise answers")
    assert [h["id"] for h in hits] == [memory_id]
    hit = hits[0]
    assert hit.keys() >= STABLE_FIELDS
    assert set(hit["scope"]) == SCOPE_FIELDS
    assert hit["text"] == "User prefers concise answers"
    assert isinstance(hit["score"], float)
    assert hit["scope"] == {
        "app_id": "hermes",
        "tenant_id": "__default__",
        "agent_id": "hermes",
        "run_id": "__default__",
    }


def test_search_for_people_prints_a_table(cli):
    _add(cli, "The user drinks green tea every morning")
    result = cli.ok("--format", "table", "search", "green tea")
    assert "green tea" in result.stdout
    assert "score" in result.stdout


def test_metadata_is_stored_and_filters_search(cli):
    tagged = _add(cli, "Deploys happen on Fridays", "--metadata", "topic=ops", "-m", "team=infra")
    _add(cli, "Fridays are for retrospectives", "--metadata", "topic=process")
    memory = cli.json("get", tagged)
    assert memory["metadata"] == {"topic": "ops", "team": "infra"}
    hits = cli.json("search", "Fridays", "--filter", "topic=ops")
    assert [h["id"] for h in hits] == [tagged]


@pytest.mark.parametrize("command", [["search", "Fridays"], ["count"], ["forget", "--dry-run"]])
def test_a_filter_on_a_scope_key_is_refused(cli, command):
    """``--filter agent_id=ops`` matched nothing (no memory's metadata holds a scope key), so
    a search said "no memories", a count 0 and a forget forgot none, all exit 0."""
    _add(cli, "Deploys happen on Fridays", "--agent", "ops")
    result = cli(*command, "--filter", "agent_id=ops")
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert "filters key 'agent_id' is reserved" in result.stderr
    assert "--agent" in result.stderr
    assert len(cli.json("--agent", "ops", "search", "Fridays")) == 1


def test_add_reads_stdin_with_dash(cli):
    memory_id = cli.json("add", "--sync", "-", input="Lives in Hangzhou\n")["memory_ids"][0]
    assert cli.json("get", memory_id)["text"].strip() == "Lives in Hangzhou"


def test_search_reads_stdin_with_dash_as_add_does(cli):
    """The README says "-" alone reads the words from stdin for search and add; search
    looked for a literal "-" instead, exit 0."""
    memory_id = _add(cli, "The user likes coffee")
    _add(cli, "Trains leave at 9 - sharp")
    hits = cli.json("search", "-", input="what does the user like, coffee?\n")
    assert hits[0]["id"] == memory_id
    result = cli("search", "-", input="x" * 9000)
    assert result.exit_code == 2 and "query is 9000 characters" in result.stderr


def test_list_pages_and_list_all_returns_every_memory_once(cli):
    ids = {_add(cli, f"fact number {i} about the garden") for i in range(5)}
    page = cli.json("list", "--limit", "2")
    assert len(page["items"]) == 2
    assert page["next_token"]
    streamed = cli.json_lines("list", "--all", "--limit", "2")
    assert sorted(m["id"] for m in streamed) == sorted(ids)
    assert all(m.keys() >= STABLE_FIELDS for m in streamed)
    people = cli.ok("list", "--all", "--limit", "2").stdout
    assert all(i in people for i in ids)


def test_list_next_token_continues(cli):
    ids = {_add(cli, f"note {i} on the roadmap") for i in range(3)}
    first = cli.json("list", "--limit", "2")
    second = cli.json("list", "--limit", "2", "--next-token", first["next_token"])
    assert {m["id"] for m in first["items"] + second["items"]} == ids
    assert second["next_token"] is None


def test_update_text_and_metadata(cli):
    memory_id = _add(cli, "Prefers tabs", "--metadata", "topic=editor")
    cli.ok("update", memory_id, "--text", "Prefers spaces")
    assert cli.json("get", memory_id)["text"] == "Prefers spaces"
    updated = cli.json("update", memory_id, "--metadata", "topic=style", "--metadata", "v=2")
    assert updated["metadata"] == {"topic": "style", "v": "2"}
    assert cli.json("get", memory_id)["text"] == "Prefers spaces"


def test_forget_with_yes_deletes_and_get_then_exits_3(cli):
    memory_id = _add(cli, "A secret plan to delete")
    deleted = cli.json("forget", "--yes", memory_id)
    assert deleted == [{"id": memory_id, "scope": deleted[0]["scope"], "deleted": True}]
    result = cli("get", memory_id)
    assert result.exit_code == 3
    assert cli.json("search", "secret plan") == []


def test_forget_without_a_terminal_names_yes_and_keeps_the_memory(cli):
    memory_id = _add(cli, "Keep me around")
    result = cli("forget", memory_id, input="y\n")
    assert result.exit_code == 2
    first = result.stderr.splitlines()[0]
    assert "stdin is not a terminal" in first and "--yes" in first
    assert cli.json("get", memory_id)["text"] == "Keep me around"
    assert cli("forget", "--yes", memory_id).exit_code == 0
    assert cli("get", memory_id).exit_code == 3


def test_forget_several_ids(cli):
    first, second = _add(cli, "one thing"), _add(cli, "another thing")
    cli.ok("forget", "-y", first, second)
    assert cli.json("list")["items"] == []


def test_messages_file_is_stored_and_listed(cli, tmp_path: Path):
    turn = tmp_path / "turn.json"
    turn.write_text(
        json.dumps(
            [
                {"role": "user", "content": "I moved to Berlin last month"},
                {"role": "assistant", "content": "Noted, Berlin it is"},
            ]
        ),
        encoding="utf-8",
    )
    cli.ok("add", "--sync", "--messages-file", str(turn))
    listed = cli.json("messages")
    assert [(m["role"], m["content"]) for m in listed["items"]] == [
        ("user", "I moved to Berlin last month"),
        ("assistant", "Noted, Berlin it is"),
    ]
    assert "Berlin" in cli.ok("messages").stdout


def test_scope_flags_isolate_agents_and_tenants(cli):
    a1 = _add(
        cli,
        "coder agent likes rust",
    )
    cli.ok("--agent", "coder", "add", "--sync", "coder agent likes rust too")
    whole = cli.json("search", "agent likes rust")
    assert len(whole) == 2
    only_coder = cli.ok("--json", "--agent", "coder", "search", "agent likes rust").stdout
    hits = json.loads(only_coder)
    assert [h["scope"]["agent_id"] for h in hits] == ["coder"]
    other_tenant = json.loads(
        cli.ok("--json", "--tenant", "bob", "search", "agent likes rust").stdout
    )
    assert other_tenant == []
    assert cli("--tenant", "bob", "get", a1).exit_code == 3


def test_hostile_scope_strings_are_normalised_not_wildcards(cli):
    cli.ok("--tenant", "alice", "add", "--sync", "alice owns this")
    cli.ok("--tenant", "al*", "add", "--sync", "starred tenant owns this")
    doc = cli.json("--tenant", "al*", "list")
    assert [m["text"] for m in doc["items"]] == ["starred tenant owns this"]
    assert doc["items"][0]["scope"]["tenant_id"] != "al*"
    assert cli("--tenant", "*", "list").exit_code == 2
    assert cli("--agent", "*", "add", "no wildcard writes").exit_code == 2
    assert cli.json("--agent", "*", "search", "owns") == []


def test_scopes_and_requests_and_tasks(cli):
    receipt = cli.json("add", "--sync", "audited memory")
    cli.ok("--agent", "planner", "add", "--sync", "planner memory")
    scopes = cli.json("scopes")["items"]
    assert {s["agent_id"] for s in scopes} == {"hermes", "planner"}
    adds = cli.json("requests", "--operation", "AddMemories")["items"]
    assert adds and all(r["operation"] == "AddMemories" for r in adds)
    task_id = receipt["receipts"][0]["task_id"]
    assert task_id
    task = cli.json("tasks", "get", task_id)
    assert task["id"] == task_id
    listed = cli.json("tasks", "list", "--status", task["status"])["items"]
    assert task_id in {t["id"] for t in listed}
    assert cli("tasks", "list", "--status", "bogus").exit_code == 2
    assert cli("tasks", "get", "no-such-task").exit_code == 3
    assert "AddMemories" in cli.ok("requests").stdout


@pytest.mark.parametrize("operation", ["", " ", "Add Memories", "-x", "AddMemories\x1b", "\udcff"])
def test_requests_refuse_an_operation_that_is_no_api_name(cli, operation):
    """The embedded store answered "no requests recorded" (exit 0) where TableStore refused
    the same filter, and a name holding bytes that are not UTF-8 ended in an unexpected
    UnicodeEncodeError (exit 1): both stores now refuse it as invalid input."""
    cli.ok("add", "--sync", "audited memory")
    result = cli("requests", "--operation", operation)
    assert result.exit_code == 2, (result.exit_code, result.stdout, result.stderr)
    assert result.stdout == ""
    assert "operation must be an API name" in result.stderr
    assert len(result.stderr.splitlines()) == 1 and "unexpected" not in result.stderr


def test_requests_list_a_tenant_wide_search_with_its_wildcard_scope(emulator_cli):
    """The service audits a search over the tenant with its ``*`` levels (the embedded store
    audits no searches); the request log still reads, and shows the pattern."""
    cli = emulator_cli
    cli.ok("add", "--sync", "audited memory")
    cli.ok("search", "audited")
    (search, *_) = cli.json("requests", "--operation", "SearchMemories")["items"]
    assert search["operation"] == "SearchMemories"
    assert (search["scope"]["agent_id"], search["scope"]["run_id"]) == ("*", "*"), search
    assert "SearchMemories" in cli.ok("requests").stdout


def test_requests_help_says_the_embedded_store_lists_no_searches(local_cli):
    """The embedded store audits a tenant-wide search or listing under no scope, so no tenant's
    log shows it; the help's example filters on an operation that log does hold."""
    local_cli.ok("add", "audited memory")
    local_cli.ok("search", "audited")
    local_cli.ok("list")
    assert local_cli.json("requests", "--operation", "SearchMemories")["items"] == []
    assert local_cli.json("requests", "--operation", "AddMemories")["items"]
    usage = " ".join(local_cli.ok("requests", "--help").stdout.split())
    assert "memcore requests --operation SearchMemories" not in usage
    assert "memcore requests --operation AddMemories --limit 50" in usage
    assert "the embedded store lists writes and reads of one memory" in usage, usage


def test_stores_create_describe_list_delete(cli):
    cli.ok("stores", "create", "team_notes", "--description", "Shared notes")
    info = cli.json("stores", "describe", "team_notes")
    assert info["name"] == "team_notes"
    assert info["description"] == "Shared notes"
    assert "team_notes" in {s["name"] for s in cli.json("stores", "list")}
    assert cli("stores", "create", "team_notes").exit_code == 2  # already exists: final
    cli.ok("stores", "delete", "team_notes", "--yes")
    assert cli("stores", "describe", "team_notes").exit_code == 3
    assert cli("stores", "create", "bad-name!").exit_code == 2


def test_a_messages_file_under_the_home_folder_is_read_as_export_and_import_read_theirs(
    local_cli, tmp_path: Path, monkeypatch
):
    """``--messages-file '~/turn.json'`` was "cannot read ~/turn.json (No such file or
    directory)", while ``export --out '~/...'`` and ``import '~/...'`` take the home folder."""
    user = tmp_path / "user"
    user.mkdir()
    monkeypatch.setenv("HOME", str(user))
    (user / "turn.json").write_text(
        json.dumps([{"role": "user", "content": "I moved to Berlin last month"}]),
        encoding="utf-8",
    )
    local_cli.ok("add", "--sync", "--messages-file", "~/turn.json")
    assert [m["content"] for m in local_cli.json("messages")["items"]] == [
        "I moved to Berlin last month"
    ]
    unknown = local_cli("add", "--messages-file", "~memcore-no-such-user/turn.json")
    assert unknown.exit_code == 2
    assert unknown.stderr == (
        "memcore: error: ~memcore-no-such-user/turn.json names a home folder this system "
        "does not know\n"
    )


def test_a_messages_file_time_dates_the_memory(cli, tmp_path: Path):
    """A message's ``timestamp`` (ISO 8601, or seconds as ``messages --json`` prints them) is
    when it was said: its memory is dated then; a bad one is one line and exit 2."""
    turn = tmp_path / "turn.json"
    said = {"role": "user", "content": "I moved to Lisbon", "timestamp": "2023-03-12T09:30Z"}
    turn.write_text(json.dumps([said]), encoding="utf-8")
    cli.ok("add", "--sync", "--messages-file", str(turn))
    [memory] = cli.json("list")["items"]
    assert memory["created_at"] == 1678613400.0, memory
    [message] = cli.json("messages")["items"]
    assert message["timestamp"] == 1678613400.0
    turn.write_text(json.dumps([{**said, "timestamp": "next week"}]), encoding="utf-8")
    refused = cli("add", "--sync", "--messages-file", str(turn))
    assert refused.exit_code == 2 and "messages[0].timestamp" in refused.output, refused.output


def test_run_alone_reads_the_default_agent_s_run_as_the_help_says(cli):
    """``--agent``'s help said reads cover all agents when it is omitted; with ``--run`` they
    cover only the default agent's run (``--agent '*'`` with a run is refused)."""
    mine = _add(cli, "the default agent's run memory", "--run", "r9")
    cli.ok("--agent", "planner", "--run", "r9", "add", "--sync", "the planner's run memory")
    assert [m["id"] for m in cli.json("--run", "r9", "list")["items"]] == [mine]
    usage = " ".join(cli.ok("--help").stdout.split())
    assert "reads cover all agents when omitted" not in usage
    assert "--run alone reads the default agent's run" in usage, usage


def test_the_configured_store_assistant_decides_what_a_messages_file_keeps(
    local_cli, tmp_path: Path
):
    """``memcore config set store_assistant never`` was accepted and then ignored: a
    messages file's assistant reply was still stored as a memory."""
    turn = tmp_path / "turn.json"
    chat = [
        {"role": "user", "content": "My flight to Oslo leaves on Friday"},
        {"role": "assistant", "content": "Your Oslo flight is on Friday; I booked seat 14A."},
    ]
    turn.write_text(json.dumps(chat), encoding="utf-8")
    local_cli.ok("config", "set", "store_assistant", "never")
    local_cli.ok("add", "--sync", "--messages-file", str(turn))
    listed = local_cli.json("list")
    assert [m["text"] for m in listed["items"]] == [chat[0]["content"]]
    assert len(local_cli.json("messages")["items"]) == 2  # the log keeps the whole turn


def test_a_lookup_by_id_is_one_read_not_a_failed_one_per_scope(local_cli):
    """``get`` tried the id scope by scope, and each miss was a failed GetMemory in the
    request log: three scopes, three failures and no success for one ``get`` that worked."""
    added = local_cli.json("--agent", "a3", "--run", "r9", "add", "--sync", "fact three")
    kept = added["receipts"][0]["memory_ids"][0]
    local_cli.ok("--agent", "a2", "add", "--sync", "fact two")
    local_cli.ok("add", "--sync", "fact one")
    before = local_cli.json("requests", "--operation", "GetMemory")["items"]
    assert local_cli.json("get", kept[:8])["text"] == "fact three"
    assert local_cli.json("get", kept)["text"] == "fact three"
    local_cli.ok("update", kept, "--metadata", "k=w")
    after = local_cli.json("requests", "--operation", "GetMemory")["items"]
    fresh = after[: len(after) - len(before)]
    assert fresh and all(r["status"] != "failed" for r in fresh), fresh
