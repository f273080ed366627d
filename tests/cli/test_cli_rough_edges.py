"""Rough edges a new user hits: short task and dream ids, global options after the command,
forget --all, removing a metadata key, text piped from stdin."""

from __future__ import annotations

import itertools
import shlex
import types
import uuid

import pytest


def _error(result) -> str:
    return result.stderr.splitlines()[0]


@pytest.fixture
def counted_ids(monkeypatch):
    """The fake's new ids share their first eight characters, so a short prefix is ambiguous."""
    from memcore.testing.fake import dreaming, store

    numbers = itertools.count(1)
    counted = types.SimpleNamespace(uuid4=lambda: uuid.UUID(int=next(numbers)))
    for module in (store, dreaming):  # memory, task and dream ids; dream action ids
        monkeypatch.setattr(module, "uuid", counted)


# -- id prefixes ---------------------------------------------------------------------------
def test_dream_commands_take_a_unique_prefix(fake_cli):
    fake_cli.ok("add", "--sync", "The cat sleeps on the sofa")
    task = fake_cli.json("dream", "create")
    prefix = task["id"][:4]
    assert fake_cli.json("dream", "status", prefix)["id"] == task["id"]
    assert fake_cli.json("dream", "actions", prefix)["items"] == []
    assert fake_cli.json("dream", "cancel", prefix)["id"] == task["id"]


def test_dream_apply_and_undo_take_prefixes_of_task_and_action_ids(local_cli):
    local_cli.ok("add", "--sync", "We keep 30 dozen eggs in the fridge at the moment")
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    task = local_cli.json("dream", "create")
    [action] = local_cli.json("dream", "actions", task["id"][:6])["items"]
    [applied] = local_cli.json("dream", "apply", task["id"][:6], action["id"][:6])
    assert (applied["id"], applied["status"]) == (action["id"], "applied")
    undone = local_cli.json("dream", "undo", task["id"][:6], action["id"][:6])
    assert (undone["id"], undone["status"]) == (action["id"], "proposed")
    unknown = local_cli("dream", "apply", task["id"][:6], "ffffffffff")
    assert unknown.exit_code == 3


def test_task_get_takes_a_unique_prefix(fake_cli):
    receipt = fake_cli.json("add", "The cat sleeps on the sofa")["receipts"][0]
    assert fake_cli.json("tasks", "get", receipt["task_id"][:8])["id"] == receipt["task_id"]


def test_an_ambiguous_task_prefix_names_the_count(fake_cli, counted_ids):
    fake_cli.ok("add", "--sync", "The cat sleeps on the sofa")
    ids = [fake_cli.json("dream", "create")["id"] for _ in range(3)]
    assert len({i[:8] for i in ids}) == 1
    result = fake_cli("dream", "status", ids[0][:8])
    assert result.exit_code == 2
    assert "matches 3 dream tasks" in _error(result)
    assert fake_cli.json("dream", "status", ids[2])["id"] == ids[2]


def test_another_tenants_task_never_matches_a_prefix(fake_cli):
    fake_cli.ok("--tenant", "bob", "add", "--sync", "Bob's secret")
    theirs = fake_cli.json("--tenant", "bob", "dream", "create")["id"]
    their_write = fake_cli.json("--tenant", "bob", "add", "Bob again")["receipts"][0]["task_id"]
    for command, task_id in (("dream status", theirs), ("tasks get", their_write)):
        words = command.split()
        prefix = task_id[:6]
        foreign = fake_cli("--tenant", "alice", *words, prefix)
        missing = fake_cli("--tenant", "alice", *words, "zzzzzz")
        assert foreign.exit_code == missing.exit_code == 3
        assert _error(foreign) == _error(missing).replace("zzzzzz", prefix)
        assert fake_cli.json("--tenant", "bob", *words, prefix)["id"] == task_id


# -- global options after the command -----------------------------------------------------
def test_global_options_work_after_the_command(local_cli):
    import json

    local_cli.ok("--tenant", "alice", "add", "--sync", "Alice drinks coffee")
    hits = json.loads(local_cli.ok("search", "coffee", "--json", "--tenant", "alice").stdout)
    assert [h["text"] for h in hits] == ["Alice drinks coffee"]
    listed = json.loads(local_cli.ok("list", "--tenant=alice", "--limit", "5", "--json").stdout)
    assert [m["text"] for m in listed["items"]] == ["Alice drinks coffee"]
    assert json.loads(local_cli.ok("list", "--json").stdout)["items"] == []  # the default tenant
    dreams = json.loads(local_cli.ok("dream", "list", "--json").stdout)
    assert dreams["items"] == []
    assert json.loads(local_cli.ok("dream", "--json", "list").stdout)["items"] == []


@pytest.mark.parametrize(
    "argv",
    [
        ["dream", "list", "--tenant"],
        ["tasks", "list", "--tenant"],
        ["tasks", "get", "abcd1234", "--agent"],
        ["count", "--tenant"],
        ["config", "show", "--config"],
        ["dream", "--tenant"],
    ],
)
def test_a_global_option_missing_its_value_at_the_end_is_a_usage_error(local_cli, argv):
    # Moved in front of the command, it took the command's first word as its value, so
    # `dream list --tenant` listed the memories of a tenant named "dream".
    local_cli.ok("--tenant", "dream", "add", "a memory of the tenant named dream")
    result = local_cli(*argv)
    assert result.exit_code == 2, result.stdout
    assert result.stdout == ""
    assert result.stderr.splitlines() == [
        f"memcore: error: Option '{argv[-1]}' requires an argument."
    ]


def test_that_usage_error_is_the_json_error_object_with_json(local_cli):
    import json

    result = local_cli("list", "--json", "--tenant")
    assert result.exit_code == 2
    [line] = result.stderr.splitlines()
    error = json.loads(line)["error"]
    assert (error["code"], error["exit_code"]) == ("invalid_input", 2)
    assert error["message"] == "Option '--tenant' requires an argument."


def test_option_values_and_words_after_the_double_dash_stay(local_cli):
    import json

    added = json.loads(
        local_cli.ok("add", "--metadata", "k=--json", "--json", "--", "--tenant").stdout
    )
    memory = local_cli.json("get", added["memory_ids"][0])
    assert (memory["text"], memory["metadata"]) == ("--tenant", {"k": "--json"})
    assert memory["scope"]["tenant_id"] == "__default__"


# -- forget --all --------------------------------------------------------------------------
def test_forget_all_stays_in_the_tenant_and_needs_yes(cli):
    for text in ("Alice drinks coffee", "Alice walks to work"):
        cli.ok("--tenant", "alice", "add", "--sync", text)
    cli.ok("--tenant", "alice", "--agent", "coder", "add", "--sync", "Alice codes in Rust")
    cli.ok("--tenant", "bob", "add", "--sync", "Bob drinks tea")
    refused = cli("--tenant", "alice", "forget", "--all")
    assert refused.exit_code == 2 and "pass --yes" in _error(refused)
    preview = cli.json("--tenant", "alice", "forget", "--all", "--dry-run")
    assert preview["count"] == 3
    assert cli("--tenant", "alice", "forget", "--all", "--filter", "a=b", "--yes").exit_code == 2
    assert (
        cli.json("--tenant", "alice", "--agent", "coder", "forget", "--all", "--yes")["forgot"] == 1
    )
    done = cli.json("--tenant", "alice", "forget", "--all", "--yes")
    assert done["forgot"] == 2 and done["scope"]["tenant_id"] == "alice"
    assert cli.json("--tenant", "alice", "list")["items"] == []
    assert [m["text"] for m in cli.json("--tenant", "bob", "list")["items"]] == ["Bob drinks tea"]
    again = cli("--tenant", "alice", "forget", "--all", "--yes")
    assert again.exit_code == 0 and "nothing to forget" in again.stderr


# -- update --unset, stdin -----------------------------------------------------------------
def test_update_merges_metadata_and_unset_removes_keys(cli):
    memory_id = cli.json("add", "--sync", "-m", "topic=food", "-m", "source=chat", "Tea")[
        "memory_ids"
    ][0]
    merged = cli.json("update", memory_id, "--metadata", "mood=calm")
    assert merged["metadata"] == {"topic": "food", "source": "chat", "mood": "calm"}
    removed = cli.json("update", memory_id[:8], "--unset", "source", "--unset", "mood")
    assert removed["metadata"] == {"topic": "food"}
    assert cli.json("get", memory_id)["metadata"] == {"topic": "food"}
    both = cli.json("update", memory_id, "--unset", "topic", "-m", "k=v", "--text", "Green tea")
    assert (both["text"], both["metadata"]) == ("Green tea", {"k": "v"})
    assert cli.json("update", memory_id, "--unset", "k")["metadata"] == {}
    assert cli("update", memory_id, "--unset", "k", "-m", "k=v").exit_code == 2


def test_unset_whose_write_back_fails_says_what_was_cleared_and_how_to_restore(
    fake_cli, monkeypatch
):
    """Removing a key is a clear and then the kept keys written back (stores merge metadata).
    When the second write fails, the memory has lost its other keys: the error must say so
    and give the command that restores them, and that command must restore them."""
    from memcore.errors import Unavailable

    store = fake_cli.store
    meta = ("-m", "topic=food", "-m", "source=chat", "-m", "note=it's hot tea")
    memory_id = fake_cli.json("add", "--sync", *meta, "Tea")["memory_ids"][0]
    update = store.update_memory

    def write_back_fails(*args, metadata=None, **kwargs):
        if metadata:
            raise Unavailable("backend unavailable: connection reset")
        return update(*args, metadata=metadata, **kwargs)

    monkeypatch.setattr(store, "update_memory", write_back_fails)
    failed = fake_cli("update", memory_id, "--unset", "source")
    assert failed.exit_code == 5, failed.stderr
    [line] = failed.stderr.strip().splitlines()
    assert "connection reset" in line and "not written back" in line
    monkeypatch.setattr(store, "update_memory", update)
    assert fake_cli.json("get", memory_id)["metadata"] == {}  # what the error is about
    restore = shlex.split(line.split("restore them with: ", 1)[1].rstrip(")"))
    assert restore[:3] == ["memcore", "update", memory_id]
    assert fake_cli.json(*restore[1:])["metadata"] == {"topic": "food", "note": "it's hot tea"}


def test_unset_on_the_embedded_store_is_one_write(local_cli):
    """A clear and then a write-back left the metadata cleared if the process died between
    them; the embedded store removes the keys in the update itself."""
    memory_id = local_cli.json("add", "--sync", "-m", "topic=food", "-m", "source=chat", "Tea")[
        "memory_ids"
    ][0]
    done = local_cli.json("update", memory_id, "--unset", "source", "--text", "Green tea")
    assert (done["text"], done["metadata"]) == ("Green tea", {"topic": "food"})
    updates = local_cli.json("requests", "--operation", "UpdateMemory")["items"]
    assert len(updates) == 1, updates


def test_unset_of_a_key_the_memory_lacks_writes_nothing_and_says_so(cli):
    """It exited 0 and moved the version and updated_at, nothing changed, and said nothing."""
    memory_id = cli.json("add", "--sync", "-m", "topic=food", "Tea")["memory_ids"][0]
    before = cli.json("get", memory_id)
    result = cli("--json", "update", memory_id, "--unset", "nokey")
    assert result.exit_code == 0, result.stderr
    assert "not set, so nothing to remove: nokey" in result.stderr
    after = cli.json("get", memory_id)
    assert (after["version"], after["updated_at"]) == (before["version"], before["updated_at"])
    both = cli.json("update", memory_id, "--unset", "nokey", "--unset", "topic")
    assert both["metadata"] == {}


def test_unset_keeps_a_key_another_writer_set_after_it_was_read(local_cli, monkeypatch):
    """The keys to keep were those read before the clear: a key another writer set between
    the read and the clear was lost."""
    from memcore_sqlite.store import SqliteMemoryStore

    memory_id = local_cli.json("add", "--sync", "-m", "topic=food", "-m", "source=chat", "Tea")[
        "memory_ids"
    ][0]
    find = SqliteMemoryStore.find_memory

    writes = [{"mood": "calm"}]  # once, just after the first read

    def read_then_another_writer(self, store, pattern, wanted):
        found = find(self, store, pattern, wanted)
        if writes:
            self.update_memory(store, found.scope, found.id, metadata=writes.pop())
        return found

    monkeypatch.setattr(SqliteMemoryStore, "find_memory", read_then_another_writer)
    done = local_cli.json("update", memory_id, "--unset", "source")
    assert done["metadata"] == {"topic": "food", "mood": "calm"}


def test_text_from_stdin_loses_only_its_final_newline(local_cli):
    for piped, kept in (
        ("Lives in Hangzhou\n", "Lives in Hangzhou"),
        ("two\nlines\n\n", "two\nlines\n"),
    ):
        memory_id = local_cli.json("add", "-", input=piped)["memory_ids"][0]
        assert local_cli.json("get", memory_id)["text"] == kept


@pytest.mark.parametrize("key", ["", "  "])
def test_update_refuses_an_empty_unset_key(local_cli, key):
    memory_id = local_cli.json("add", "-m", "a=1", "keep my metadata")["memory_ids"][0]
    result = local_cli("update", memory_id, "--unset", key)
    assert result.exit_code == 2
    assert "--unset" in _error(result)
    assert local_cli.json("get", memory_id)["metadata"] == {"a": "1"}


def test_tenant_help_does_not_offer_default_as_a_value(local_cli):
    """``--tenant __default__`` is escaped to a tenant of its own; the help must not suggest
    that it names the shared default tenant."""
    shown = " ".join(local_cli.ok("--help").stdout.split())
    assert "(default: config, __default__)" not in shown
    assert "'--tenant __default__' is a tenant of its own" in shown
    written = local_cli.json("--tenant", "__default__", "add", "mine")
    assert written["scope"]["tenant_id"] != "__default__"


@pytest.mark.parametrize("signum", ["SIGINT", "SIGTERM"])
def test_unset_stopped_between_its_two_writes_still_writes_the_kept_keys_back(
    local_cli, monkeypatch, signum
):
    """On a store that cannot remove a key in one write (TableStore), Ctrl-C or SIGTERM
    right after the clear ended the command there: the memory kept no
    metadata at all, and nothing said so or printed the restoring command. The two writes
    now finish with the signal held (here the test's own SIGTERM handler stands in for the
    default action, which would end pytest: it sees the signal only if it is not held)."""
    import signal

    from memcore.service import MemoryService

    memory_id = local_cli.json("add", "-m", "topic=food", "-m", "source=chat", "Tea")["memory_ids"][
        0
    ]
    escaped: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda sig, frame: escaped.append(sig))
    update = MemoryService.update

    def stopped_after_the_clear(self, memory_id, *, text=None, metadata=None):
        memory = update(self, memory_id, text=text, metadata=metadata)
        if metadata == {}:
            signal.raise_signal(getattr(signal, signum))
        return memory

    monkeypatch.setattr(MemoryService, "update", stopped_after_the_clear)
    # As on TableStore, whose update only merges or clears: the embedded store removes a key
    # in one write, so there is no window there.
    monkeypatch.setattr(MemoryService, "removes_keys", property(lambda self: False))
    try:
        result = local_cli("--json", "update", memory_id, "--unset", "source")
    finally:
        signal.signal(signal.SIGTERM, previous)
    monkeypatch.undo()
    assert escaped == []
    assert result.exit_code == 0, result.stderr
    assert local_cli.json("get", memory_id)["metadata"] == {"topic": "food"}


def test_a_text_that_reads_as_an_option_is_told_how_to_give_it(local_cli):
    """``memcore search "-5 degrees"`` answered only "No such option: -5"; the line now says
    that such a text goes after ``--``, which then finds it (a command without a text gets
    no such hint)."""
    local_cli.ok("add", "--sync", "--", "-5 degrees outside this morning")
    result = local_cli("search", "-5 degrees")
    assert result.exit_code == 2
    assert result.stderr.strip().endswith(
        "a text that starts with '-' goes after '--': memcore search -- TEXT"
    ), result.stderr
    assert "-5 degrees outside" in local_cli.ok("search", "--", "-5 degrees").stdout
    assert "goes after '--'" not in local_cli("list", "--fitler", "x").stderr
    assert "goes after '--'" not in local_cli("search", "--limit", "3", "tea").stderr


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (("export", "--out", ""), "--out"),
        (("export", "--out", " "), "--out"),
        (("add", "--messages-file", ""), "--messages-file"),
        (("import", ""), "FILE"),
        (("import", "--lines", " "), "FILE"),
    ],
)
def test_an_empty_file_name_is_named_as_empty(local_cli, tmp_path, monkeypatch, args, option):
    """An empty file name (an unset shell variable) was read as ".", the current folder:
    "cannot write . (a folder)", "cannot read . (Is a directory)", naming a file the user
    never gave. The option is named as empty instead (exit 2, one line)."""
    monkeypatch.chdir(tmp_path)
    local_cli.ok("add", "kept")
    result = local_cli(*args)
    assert result.exit_code == 2, (result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    assert line.startswith(f"memcore: error: {option} is empty (an unset shell variable?)")
    assert local_cli.json("count")["count"] == 1


def test_text_from_stdin_loses_a_byte_order_mark(local_cli):
    """A file Notepad saved, piped into ``add -``, was stored with its BOM: a second memory
    beside the same text added without it, starting with an invisible character."""
    first = local_cli.json("add", "User is a dentist in Hangzhou")["memory_ids"][0]
    again = local_cli.json("add", "-", input="\ufeffUser is a dentist in Hangzhou\n")
    assert again["memory_ids"] == [first]
    assert local_cli.json("get", first)["text"] == "User is a dentist in Hangzhou"
