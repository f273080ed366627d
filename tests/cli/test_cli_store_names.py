"""A mistyped memory store name: the answer names the stores close to it.

``memcore doctor`` and the ``store_not_found`` line (exit 3) said only that the store did not
exist, and on the embedded store a read made the mistyped store, empty, and answered "no
memories matched". Now a read there creates a store only in a file that holds none yet, and
both answers end "did you mean 'hermes_mem'?". Store names belong to the backend (``stores
list`` shows them to anyone with its keys), so a hint holds no tenant's memories, nor a key.
"""

from __future__ import annotations

import json

from .conftest import EMULATOR_AK, EMULATOR_SK

HINT = "; did you mean 'hermes_mem'?"


def _error_line(result) -> str:
    assert result.exit_code == 3, (result.exit_code, result.stdout, result.stderr)
    (line,) = result.stderr.splitlines()
    return line


def test_a_mistyped_tablestore_store_is_answered_with_the_close_name(emulator_cli):
    cli = emulator_cli
    cli.ok("--tenant", "alice", "add", "--sync", "Alice keeps bees in the garden")
    cli.ok("config", "set", "memory_store_name", "hermes_me")
    line = _error_line(cli("--tenant", "bob", "search", "bees"))
    assert line.startswith("memcore: error: memory store 'hermes_me' does not exist")
    assert line.endswith(HINT)
    for secret in (EMULATOR_AK, EMULATOR_SK, "bees", "alice"):
        assert secret not in line
    error = json.loads(cli("--json", "list").stderr)["error"]
    assert (error["code"], error["exit_code"]) == ("store_not_found", 3)
    assert error["message"].endswith(HINT)
    # doctor passed this line ("does not exist yet") while every read refused, exit 3.
    doctor = cli("doctor")
    assert doctor.exit_code == 3
    assert "does not exist (reads refuse; the first write creates it)" + HINT in doctor.stdout


def test_a_name_close_to_none_gets_no_hint(emulator_cli):
    emulator_cli.ok("add", "--sync", "Erin plays the cello")
    emulator_cli.ok("config", "set", "memory_store_name", "zz_archive")
    line = _error_line(emulator_cli("list"))
    assert "did you mean" not in line


def test_a_mistyped_embedded_store_is_not_created_by_a_read(local_cli):
    local_cli.ok("add", "--sync", "Erin plays the cello")
    local_cli.ok("config", "set", "memory_store_name", "hermes_me")
    line = _error_line(local_cli("search", "cello"))
    assert line == (
        "memcore: error: memory store 'hermes_me' does not exist (a read does not create it: "
        "the first write does, or 'memcore stores create hermes_me')" + HINT
    )
    assert [s["name"] for s in local_cli.json("stores", "list")] == ["hermes_mem"]
    doctor = local_cli("doctor")
    assert doctor.exit_code == 3
    assert "does not exist (reads refuse; the first write creates it)" + HINT in doctor.stdout
    local_cli.ok("add", "--sync", "Erin plays the viola")  # the first write creates it
    assert [m["text"] for m in local_cli.json("list")["items"]] == ["Erin plays the viola"]


def test_the_first_read_of_a_new_file_still_makes_its_store(local_cli):
    assert local_cli("list").exit_code == 0
    assert [s["name"] for s in local_cli.json("stores", "list")] == ["hermes_mem"]


def test_with_auto_create_off_the_embedded_line_names_the_close_store(local_cli):
    local_cli.ok("add", "--sync", "Erin plays the cello")
    local_cli.ok("config", "set", "auto_create_store", "false")
    local_cli.ok("config", "set", "memory_store_name", "Hermes_mem")
    line = _error_line(local_cli("count"))
    assert line.endswith(HINT)
    assert local_cli("doctor").exit_code == 3


def test_a_store_named_on_the_command_line_is_not_answered_with_the_configured_ones_kin(
    local_cli,
):
    """``stores describe`` and ``stores delete`` name their own store: the hint was worked out
    for the configured name instead, so deleting a missing 'xyz' answered "did you mean
    'hermes_mem2'?", a store of every tenant's memories that the user never asked about."""
    local_cli.ok("add", "--sync", "Erin plays the cello")
    local_cli.ok("stores", "create", "hermes_mem2")
    for argv in (("stores", "describe", "xyz"), ("stores", "delete", "--yes", "xyz")):
        line = _error_line(local_cli(*argv))
        assert line == "memcore: error: memory store 'xyz' does not exist", (argv, line)
    local_cli.ok("config", "set", "memory_store_name", "hermes_me")
    assert _error_line(local_cli("list")).endswith("; did you mean 'hermes_mem' or 'hermes_mem2'?")


def test_a_dream_over_a_mistyped_store_is_refused_not_made_on_it(local_cli, emulator_cli):
    """``dream create`` made the mistyped store, empty, and answered a task over 0 memories
    (exit 0); every read after it then found that store and answered "no memories matched",
    the mistake out of sight. A dream reads the store, as MCP's ``dream_propose`` does: a
    missing one is exit 3 with the close names, and nothing is created (``dream undo`` too)."""
    for cli, stores in (
        (local_cli, lambda: [s["name"] for s in local_cli.json("stores", "list")]),
        (emulator_cli, lambda: [s["name"] for s in emulator_cli.json("stores", "list")]),
    ):
        cli.ok("add", "--sync", "Erin plays the cello")
        cli.ok("config", "set", "memory_store_name", "hermes_me")
        assert _error_line(cli("dream", "create")).endswith(HINT)
        assert _error_line(cli("dream", "undo", "0" * 32, "1" * 32)).endswith(HINT)
        assert stores() == ["hermes_mem"]
        assert _error_line(cli("search", "cello")).endswith(HINT)


def test_a_reindex_of_a_mistyped_store_is_refused_not_made_on_it(local_cli):
    """``reindex`` made the mistyped store, empty, re-embedded 0 memories and exited 0: the
    mistake out of sight for every later read, as ``dream create`` did."""
    local_cli.ok("config", "set", "embedder", "auto")  # the shipped model: reindex needs one
    local_cli.ok("add", "--sync", "Erin plays the cello")
    local_cli.ok("config", "set", "memory_store_name", "hermes_me")
    assert _error_line(local_cli("reindex")).endswith(HINT)
    assert [s["name"] for s in local_cli.json("stores", "list")] == ["hermes_mem"]


def test_stores_create_gives_the_configured_store_the_configs_description(local_cli):
    """The error for a missing store says to run ``stores create NAME``; that made it with
    an empty description and no extraction instructions, where a first write that creates
    it uses the config's. The configured store gets them; another store none."""
    local_cli.ok("config", "set", "description", "Food notes")
    local_cli.ok("config", "set", "memory_store_name", "food")
    made = local_cli.json("stores", "create", "food")
    assert made["description"] == "Food notes"
    other = local_cli.json("stores", "create", "other")
    assert other["description"] == ""
    given = local_cli.json("stores", "create", "third", "--description", "Mine")
    assert given["description"] == "Mine"
