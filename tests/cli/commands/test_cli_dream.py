"""``dream`` commands, over a store that implements consolidation (the in-memory fake),
injected directly and behind the TableStore emulator (through the real SDK)."""

from __future__ import annotations

import json
import shlex

import attrs
import pytest


@pytest.fixture(params=["injected", "emulator"])
def dream_cli(request):
    return request.getfixturevalue(
        "fake_cli" if request.param == "injected" else "emulator_fake_cli"
    )


def test_dream_create_status_actions_apply_list(dream_cli):
    dream_cli.ok("add", "--sync", "User likes coffee")
    dream_cli.ok("add", "--sync", "user likes  COFFEE")
    task = dream_cli.json("dream", "create")
    assert task["id"]
    assert task["scopes"] == [
        {
            "app_id": "hermes",
            "tenant_id": "__default__",
            "agent_id": "*",
            "run_id": "*",
        }
    ]
    status = dream_cli.json("dream", "status", task["id"])
    assert status["id"] == task["id"]
    actions = dream_cli.json("dream", "actions", task["id"])["items"]
    assert [t["id"] for t in dream_cli.json("dream", "list")["items"]] == [task["id"]]
    assert [a["action"] for a in actions] == ["MERGE"]
    applied = dream_cli.json("dream", "apply", task["id"], actions[0]["id"])
    assert [a["id"] for a in applied] == [actions[0]["id"]]
    assert [m["text"] for m in dream_cli.json("list")["items"]] == ["User likes coffee"]
    assert "MERGE" in dream_cli.ok("dream", "actions", task["id"]).stdout
    assert "status" in dream_cli.ok("dream", "status", task["id"]).stdout


def test_dream_cancel_and_unknown_task(dream_cli):
    dream_cli.ok("add", "--sync", "something")
    task = dream_cli.json("dream", "create")
    cancelled = dream_cli.json("dream", "cancel", task["id"])
    assert cancelled["id"] == task["id"]
    result = dream_cli("dream", "status", "no-such-task")
    assert result.exit_code == 3
    assert dream_cli("dream", "apply", task["id"], "no-such-action").exit_code in (2, 3)


def test_local_dream_applies_safely_lists_current_and_undoes(local_cli):
    stale = "We keep 30 dozen eggs in the fridge at the moment"
    local_cli.ok("add", "--sync", stale)
    local_cli.ok("add", "--sync", "The cat sleeps on the sofa")
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    task = local_cli.json("dream", "create", "--apply-mode", "safe_auto")
    assert (task["status"], task["apply_mode"]) == ("completed", "safe_auto")
    [action] = local_cli.json("dream", "actions", task["id"])["items"]
    assert (action["action"], action["status"]) == ("UPDATE", "applied")
    assert "UPDATE" in local_cli.ok("dream", "actions", task["id"]).stdout
    texts = [m["text"] for m in local_cli.json("list")["items"]]
    assert stale not in texts and len(texts) == 2
    assert texts == [m["text"] for m in local_cli.json("list", "--current")["items"]]
    assert stale in [m["text"] for m in local_cli.json("list", "--all-versions")["items"]]
    undone = local_cli.json("dream", "undo", task["id"], action["id"])
    assert undone["status"] == "proposed"
    assert stale in [m["text"] for m in local_cli.json("list")["items"]]
    assert local_cli("dream", "create", "--apply-mode", "sometimes").exit_code == 2


def test_count_agrees_with_list_after_a_dream_pass(local_cli):
    stale = "We keep 30 dozen eggs in the fridge at the moment"
    local_cli.ok("add", "--sync", stale)
    local_cli.ok("add", "--sync", "The cat sleeps on the sofa")
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    task = local_cli.json("dream", "create", "--apply-mode", "safe_auto")
    [action] = local_cli.json("dream", "actions", task["id"])["items"]
    assert action["status"] == "applied"
    shown = local_cli.json("list")["items"]
    assert local_cli.json("count")["count"] == len(shown) == 2
    assert local_cli.ok("count").stdout.strip() == "2"
    assert local_cli.json("count", "--since", "1d")["count"] == 2
    every = local_cli.json("list", "--all-versions")["items"]
    assert local_cli.json("count", "--all-versions")["count"] == len(every) == 3


@pytest.mark.parametrize("how", [(), ("--since", "1d"), ("--all",)])
def test_list_all_versions_says_which_rows_are_superseded(local_cli, how):
    """``list --all-versions`` printed the replaced version as a row like any other, so only
    ``--json`` told the stale fact from the current one; a column now names its successor."""
    stale = "We keep 30 dozen eggs in the fridge at the moment"
    local_cli.ok("add", "--sync", stale)
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    local_cli.json("dream", "create", "--apply-mode", "safe_auto")
    by_text = {m["text"]: m for m in local_cli.json("list", "--all-versions")["items"]}
    successor = by_text[stale]["superseded_by"]
    assert successor, by_text
    rows = local_cli.ok("--format", "plain", "list", "--all-versions", *how).stdout.splitlines()
    cells = {row.split("\t")[1]: row.split("\t") for row in rows}
    assert cells[stale][-1] == successor, rows
    assert cells["We now keep 20 dozen eggs in the fridge"][-1] == "", rows
    current = local_cli.ok("--format", "plain", "list", *how).stdout.splitlines()
    assert [len(row.split("\t")) for row in current] == [4], current


def test_the_next_page_command_of_list_all_versions_keeps_the_flag(local_cli):
    """The "more:" line printed the next page's command without --all-versions: run as
    shown, the listing went on with the current memories only, and the replaced versions
    on the later pages were never shown."""
    stale = "We keep 30 dozen eggs in the fridge at the moment"
    local_cli.ok("add", "--sync", "The cat sleeps on the sofa")
    local_cli.ok("add", "--sync", stale)
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    local_cli.json("dream", "create", "--apply-mode", "safe_auto")
    seen: list[str] = []
    argv = ["--format", "plain", "list", "--all-versions", "--limit", "1"]
    for _ in range(5):
        page = local_cli.ok(*argv)
        seen += [row.split("\t")[1] for row in page.stdout.splitlines()]
        more = [line for line in page.stderr.splitlines() if line.startswith("more: ")]
        if not more:
            break
        argv = ["--format", "plain", *shlex.split(more[0])[2:]]
    assert stale in seen and len(seen) == 3, seen


@pytest.mark.parametrize("as_json", [False, True])
def test_an_unknown_action_among_those_applied_is_named_in_one_error_line(local_cli, as_json):
    local_cli.ok("add", "--sync", "We keep 30 dozen eggs in the fridge at the moment")
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    task = local_cli.json("dream", "create")
    [action] = local_cli.json("dream", "actions", task["id"])["items"]
    prefix = ["--json"] if as_json else []
    result = local_cli(*prefix, "dream", "apply", task["id"], action["id"], "ffffffffff")
    assert result.exit_code == 3
    [line] = result.stderr.splitlines()
    if as_json:
        assert [a["status"] for a in json.loads(result.stdout)] == ["applied", "not_found"]
        error = json.loads(line)["error"]
        assert (error["code"], error["exit_code"]) == ("not_found", 3)
        assert error["message"] == "dream action 'ffffffffff' does not exist"
    else:
        assert "applied" in result.stdout
        assert line == "memcore: error: dream action 'ffffffffff' does not exist"


def test_a_failed_dream_task_shows_why_it_failed(local_cli):
    """``dream status`` and ``dream cancel`` showed a failed task's status but not its error,
    so a person could not tell what stopped it without --json."""
    from memcore.errors import Unavailable
    from memcore.scope import ScopePattern
    from memcore_sqlite import SqliteMemoryStore

    class Down:
        def review(self, candidates, actions, instructions):
            raise Unavailable("the model endpoint answered HTTP 503")

    local_cli.ok("add", "--sync", "We keep 30 dozen eggs in the fridge at the moment")
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    first = local_cli.json("dream", "create")
    [listed] = local_cli.json("stores", "list")
    store = SqliteMemoryStore(local_cli.home / "memcore.db", dream_reviewer=Down())
    try:
        pattern = ScopePattern(**first["scopes"][0])
        failed = store.create_dream_task(listed["name"], pattern)
    finally:
        store.close()
    assert failed.status == "failed"
    for command in ("status", "cancel"):
        shown = local_cli.ok("dream", command, failed.id).stdout
        assert "failed" in shown and "the model endpoint answered HTTP 503" in shown


def test_dream_apply_with_a_failed_action_says_why_and_does_not_exit_0(home):
    """A service that answers an action ``failed`` (TableStore reports each action's outcome)
    left ``dream apply`` at exit 0, its table saying "failed" and no reason: a script saw
    success. The table is still shown; then one line names the failed action and its error,
    exit 1. A skipped action shows its reason, as ``dream actions`` does."""
    import attrs

    from memcore.testing import InMemoryMemoryStore

    from ..conftest import Cli

    class FailingApply(InMemoryMemoryStore):
        def apply_dream_actions(self, store, task_id, action_ids):
            first, *rest = super().apply_dream_actions(store, task_id, action_ids)
            failed = attrs.evolve(first, status="failed", error="the service refused it")
            skipped = [
                attrs.evolve(a, status="skipped", skipped_reason="missing_source") for a in rest
            ]
            return [failed, *skipped]

    store = FailingApply()
    cli = Cli(home, store_factory=lambda settings: store.reopen())
    cli.ok("add", "--sync", "User likes coffee")
    cli.ok("add", "--sync", "user likes  COFFEE")
    cli.ok("add", "--sync", "User lives in Lisbon")
    cli.ok("add", "--sync", "user lives in  LISBON")
    task = cli.json("dream", "create")
    actions = [a["id"] for a in cli.json("dream", "actions", task["id"])["items"]]
    assert len(actions) == 2
    result = cli("dream", "apply", task["id"], *actions)
    assert result.exit_code == 1, (result.stdout, result.stderr)
    assert "failed" in result.stdout and "skipped (missing_source)" in result.stdout
    (line,) = result.stderr.splitlines()
    assert actions[0] in line and "the service refused it" in line
    as_json = cli("--json", "dream", "apply", task["id"], *actions)
    assert as_json.exit_code == 1
    assert json.loads(as_json.stderr)["error"]["exit_code"] == 1


def test_a_pass_reads_the_newest_memories_its_help_says(tmp_path, local_cli):
    """``dream create`` said it consolidated "the current tenant"; it read the newest 1,000
    memories only, so two repeats older than those were never merged, with nothing saying
    so. The help and the task's ``memoryCount`` now say how many it reads."""
    import re

    path = tmp_path / "many.txt"
    older = ["The user likes green tea in the morning", "the user likes green TEA in the morning!"]
    newer = [
        f"note {i}: parcel {i * 7919 % 100003} went to shelf {i * 104729 % 99991}"
        for i in range(1000)
    ]
    path.write_text("\n".join([*older, *newer]) + "\n", encoding="utf-8")
    local_cli.ok("import", "--lines", str(path))
    helped = " ".join(local_cli.ok("dream", "create", "--help").stdout.split())
    said = re.search(r"the newest ([\d,]+) memories", helped)
    assert said is not None, helped
    task = local_cli.json("dream", "create")
    assert task["extras"]["memoryCount"] == int(said.group(1).replace(",", "")) == 1000
    actions = local_cli.json("dream", "actions", task["id"], "--limit", "100")["items"]
    assert not any("green tea" in (a["text"] or "").lower() for a in actions)


def test_one_failed_action_of_one_is_counted_in_the_singular(home):
    """Each action applies whole or not at all; the error line counts them as it should."""
    from memcore.testing import InMemoryMemoryStore
    from tests.cli.conftest import Cli

    class FailsEveryAction(InMemoryMemoryStore):
        def apply_dream_actions(self, store, task_id, action_ids):
            done = super().apply_dream_actions(store, task_id, action_ids)
            return [attrs.evolve(a, status="failed", error="the disk is full") for a in done]

    store = FailsEveryAction()
    cli = Cli(home, store_factory=lambda settings: store.reopen())
    cli.ok("add", "--sync", "User likes coffee")
    cli.ok("add", "--sync", "user likes  COFFEE")
    task = cli.json("dream", "create")
    [action] = cli.json("dream", "actions", task["id"])["items"]
    result = cli("dream", "apply", task["id"], action["id"])
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1] == (
        f"memcore: error: 1 of 1 dream action failed and changed nothing "
        f"({action['id']!r}: the disk is full)"
    )


def test_an_undo_after_the_same_file_was_imported_again_names_the_import(local_cli, tmp_path):
    """Importing a file whose memories are present claims them (their version moves, so
    another import's rollback keeps them); a later undo is refused as for any newer write, and
    its line names the import among the causes: it said "edited" when nothing was."""
    stale = "We keep 30 dozen eggs in the fridge at the moment"
    local_cli.ok("add", "--sync", stale)
    local_cli.ok("add", "--sync", "We now keep 20 dozen eggs in the fridge")
    task = local_cli.json("dream", "create", "--apply-mode", "safe_auto")
    [action] = local_cli.json("dream", "actions", task["id"])["items"]
    backup = tmp_path / "backup.jsonl"
    local_cli.ok("export", "--out", str(backup))
    local_cli.ok("import", str(backup))
    refused = local_cli("dream", "undo", task["id"], action["id"])
    assert refused.exit_code == 2
    assert "imported again" in refused.stderr
    assert stale not in [m["text"] for m in local_cli.json("list")["items"]]


def test_a_dream_of_a_tenant_with_no_memories_can_be_read_back_by_it(emulator_fake_cli):
    """TableStore's Get names the scopes a task expanded to: none for a tenant with no
    memories. Its own task is still shown; another tenant's answers like a missing id."""
    ghost = ["--tenant", "ghost"]
    emulator_fake_cli.ok("stores", "create", "hermes_mem")  # a dream does not make the store
    task = emulator_fake_cli.json(*ghost, "dream", "create")
    listed = emulator_fake_cli.json(*ghost, "dream", "list")["items"]
    assert [t["id"] for t in listed] == [task["id"]]
    assert emulator_fake_cli.json(*ghost, "dream", "status", task["id"])["id"] == task["id"]
    assert emulator_fake_cli.json(*ghost, "dream", "actions", task["id"])["items"] == []
    assert emulator_fake_cli.json(*ghost, "dream", "cancel", task["id"])["id"] == task["id"]

    def answer(task_id):
        result = emulator_fake_cli("--json", "--tenant", "other", "dream", "status", task_id)
        return (
            result.exit_code,
            result.stdout.replace(task_id, "<id>"),
            result.stderr.replace(task_id, "<id>"),
        )

    missing = "0123456789abcdef0123456789abcdef"
    assert answer(task["id"]) == answer(missing)
    assert answer(missing)[0] == 3


def test_with_an_agent_a_task_over_the_other_agents_is_not_found(local_cli):
    """``--agent chat dream status/apply/undo`` reached a task over the whole tenant, showing
    and changing the other agents' memories that ``--agent chat get`` answers not found."""
    for text in ("The user's salary is 90k.", "The user's salary is 90k!"):
        local_cli.ok("--agent", "work", "add", "--sync", text)
    task = local_cli.json("dream", "create")
    [action] = local_cli.json("dream", "actions", task["id"])["items"]
    for command in (
        ("dream", "status", task["id"]),
        ("dream", "actions", task["id"]),
        ("dream", "apply", task["id"], action["id"]),
        ("dream", "undo", task["id"], action["id"]),
        ("dream", "cancel", task["id"]),
        ("dream", "status", task["id"][:8]),
    ):
        result = local_cli("--agent", "chat", *command)
        assert result.exit_code == 3, (command, result.output)
        assert "90k" not in result.output
    [again] = local_cli.json("dream", "actions", task["id"])["items"]
    assert again["status"] == "proposed"
    # A task of the agent's own reach is the agent's.
    own = local_cli.json("--agent", "work", "dream", "create")
    assert local_cli.json("--agent", "work", "dream", "status", own["id"])["id"] == own["id"]


def test_a_list_page_after_a_dream_pass_is_full(local_cli):
    """``list`` read one page and dropped the superseded memories from it: after a dream
    pass pages came back short, or empty with a ``next_token``, and ``--limit 1`` said "no
    memories yet" over current ones. A page holds ``limit`` current memories unless the
    listing ends there, as the README says and the library's ``list`` did."""
    facts = [
        "Alice drinks green tea",
        "Bob plays chess",
        "Carol swims at dawn",
        "Dave bakes sourdough",
        "Erin collects stamps",
        "Frank repairs bicycles",
        "Gina paints murals",
        "Hugo grows tomatoes",
        "Ines studies volcanoes",
    ]
    lines = "\n".join(f"{f}\n{f.replace(' ', ' really ', 1)}" for f in facts)
    local_cli.ok("import", "--lines", "-", input=lines + "\n")
    local_cli.ok("dream", "create", "--apply-mode", "safe_auto")
    current = local_cli.json("count")["count"]
    assert current < 18
    seen: list[str] = []
    token = None
    while True:
        page = local_cli.json("list", "--limit", "2", *(["--next-token", token] if token else []))
        token = page["next_token"]
        assert len(page["items"]) == 2 or token is None, page
        seen += [m["id"] for m in page["items"]]
        if token is None:
            break
    assert len(seen) == len(set(seen)) == current
    assert "no memories yet" not in local_cli.ok("list", "--limit", "1").stdout
