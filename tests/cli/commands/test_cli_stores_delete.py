"""``stores delete`` without --yes and without a terminal refuses as ``forget`` does: one
line, exit 2; its question says that every tenant's memories go with the store."""

from __future__ import annotations


def test_delete_without_yes_off_a_terminal_is_a_usage_error(local_cli):
    local_cli.ok("stores", "create", "team_notes")
    result = local_cli("stores", "delete", "team_notes")
    assert result.exit_code == 2
    lines = result.stderr.splitlines()
    assert len(lines) == 1 and lines[0].startswith("memcore: error: not deleting")
    assert "every tenant" in lines[0] and "--yes" in lines[0]
    assert result.stdout == ""
    assert "team_notes" in local_cli.ok("stores", "list").stdout


def test_forget_and_stores_delete_answer_alike(local_cli):
    local_cli.ok("stores", "create", "team_notes")
    local_cli.ok("add", "x")
    forget = local_cli("forget", "--all")
    delete = local_cli("stores", "delete", "team_notes")
    assert forget.exit_code == delete.exit_code == 2


def test_yes_still_deletes(local_cli):
    local_cli.ok("stores", "create", "team_notes")
    local_cli.ok("stores", "delete", "team_notes", "--yes")
    assert "team_notes" not in local_cli.ok("stores", "list").stdout
