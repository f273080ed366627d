"""``memcore doctor`` reads the whole database (quick_check), says how long it took, and names
a damaged file as such, with the fix, and a non-zero exit."""

from __future__ import annotations

import json

from memcore.scope import Scope
from memcore_sqlite import SqliteMemoryStore, TextItem

SCOPE = Scope("hermes", "__default__", "hermes", "__default__")


def _fill(local_cli) -> None:
    local_cli.ok("add", "--sync", "doctor needs a store")
    with SqliteMemoryStore(local_cli.home / "memcore.db") as store:
        store.add_many(
            "hermes_mem",
            [
                TextItem(SCOPE, f"memory number {i}, with words to fill pages " * 3)
                for i in range(400)
            ],
        )


def test_doctor_passes_a_sound_file_and_says_how_long_the_check_took(local_cli):
    _fill(local_cli)
    checks = {c["name"]: c for c in local_cli.json("doctor")["checks"]}
    assert checks["integrity"]["ok"]
    assert checks["integrity"]["detail"].startswith("quick_check ok in ")
    assert checks["integrity"]["detail"].endswith(" ms")


def test_doctor_names_one_page_of_garbage_with_the_fix_and_fails(local_cli, damage):
    """Issue 28: with a page of garbage in the file, doctor said ok."""
    _fill(local_cli)
    db = local_cli.home / "memcore.db"
    damage.garble(db, damage.pages(db, "memories")[3])
    result = local_cli("--json", "doctor")
    assert result.exit_code == 5
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    detail = checks["integrity"]["detail"]
    assert not checks["integrity"]["ok"]
    assert "damaged" in detail and "quick_check in " in detail
    assert f"{db}.damaged-" in detail and ".recover" in detail
    text = local_cli("doctor")
    assert text.exit_code == 5
    assert any(line.startswith("FAIL  integrity") for line in text.stdout.splitlines())
    # One line a check, as the README says: quick_check's own lines are not lines of doctor's.
    assert all(line[:6] in ("PASS  ", "FAIL  ", "SKIP  ") for line in text.stdout.splitlines())


def test_doctor_on_a_truncated_file_fails(local_cli, damage):
    _fill(local_cli)
    db = local_cli.home / "memcore.db"
    damage.truncate(db, 0.5)
    result = local_cli("--json", "doctor")
    assert result.exit_code != 0
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["integrity"]["ok"]


def test_a_folder_where_the_database_belongs_is_named_as_such_not_as_damage(local_cli):
    db = local_cli.home / "memcore.db"
    db.mkdir(parents=True)
    added = local_cli("add", "hello")
    assert added.exit_code == 2 and "is a folder" in added.stderr
    result = local_cli("--json", "doctor")
    assert result.exit_code == 2, result.stdout
    checks = {c["name"]: c for c in json.loads(result.stdout)["checks"]}
    assert not checks["database"]["ok"]
    assert checks["database"]["detail"] == (
        f"the memory database {db} is a folder; give the path of a file"
    )
    assert "integrity" not in checks  # there is no file to check, let alone to repair
    assert not any("damaged" in str(c["detail"]) for c in checks.values())
