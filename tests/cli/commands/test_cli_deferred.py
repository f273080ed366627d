"""A CLI ``add`` leaves its vector to the next search: stored and found by its words at once,
pending as a task until a semantic search embeds it; ``--sync`` embeds at once."""

from __future__ import annotations

import pytest

from tests.cli.conftest import Cli


@pytest.fixture
def hybrid_cli(tmp_path):
    pytest.importorskip("onnxruntime")
    return Cli(tmp_path / "home")


def _statuses(cli) -> list[str]:
    return [t["status"] for t in cli.json("tasks", "list")["items"]]


def test_add_is_pending_until_a_search_embeds_it(hybrid_cli):
    added = hybrid_cli.json("add", "The user drinks green tea every morning")
    assert added["receipts"][0]["status"] == "pending"
    memory_id = added["memory_ids"][0]
    assert hybrid_cli.json("get", memory_id)["text"].startswith("The user drinks")
    assert _statuses(hybrid_cli) == ["pending"]
    hits = hybrid_cli.json("search", "what beverage does the user like")  # no shared word
    assert [h["id"] for h in hits] == [memory_id]
    assert _statuses(hybrid_cli) == ["completed"]


def test_pending_tasks_are_listed_by_the_status_they_show(hybrid_cli):
    pending = hybrid_cli.json("add", "The user drinks green tea every morning")["receipts"][0]
    done = hybrid_cli.json("add", "--sync", "User prefers concise answers")["receipts"][0]
    listed = hybrid_cli.json("tasks", "list", "--status", "pending")["items"]
    assert [t["id"] for t in listed] == [pending["task_id"]]
    listed = hybrid_cli.json("tasks", "list", "--status", "completed")["items"]
    assert [t["id"] for t in listed] == [done["task_id"]]
    assert "pending" in hybrid_cli.ok("tasks", "list", "--help").stdout


def test_add_sync_embeds_at_once(hybrid_cli):
    added = hybrid_cli.json("add", "--sync", "User prefers concise answers")
    assert added["receipts"][0]["status"] == "completed"
    assert _statuses(hybrid_cli) == ["completed"]


def test_the_library_finds_what_a_cli_add_left_pending(hybrid_cli, monkeypatch):
    import memcore

    memory_id = hybrid_cli.json("add", "The user drinks green tea every morning")["memory_ids"][0]
    monkeypatch.setenv("MEMCORE_HOME", str(hybrid_cli.home))
    with memcore.Memory.open("local") as mem:
        hits = mem.search("what beverage does the user like")
    assert [h.memory.id for h in hits] == [memory_id]
