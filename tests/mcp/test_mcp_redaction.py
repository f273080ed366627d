"""hide_database and public_error: every spelling of the server's database file and folder
gives way to a neutral word; the rest of an error (type, code, retryable) is left alone."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import pytest

from memcore.errors import PermissionDenied
from memcore.values import DreamAction, DreamTask, Page
from memcore_mcp import answers, tools
from memcore_mcp.redaction import DATABASE, FIELD, FOLDER, hide_database, public_error
from memcore_sqlite.storage.errors import map_error
from memcore_sqlite.storage.integrity import corrupted


@pytest.fixture
def linked(tmp_path: Path) -> tuple[Path, Path]:
    """A database named through a link to its folder: (as given, resolved)."""
    real = tmp_path / "users" / "ada" / ".memcore"
    real.mkdir(parents=True)
    (tmp_path / "link").symlink_to(real)
    return tmp_path / "link" / "memcore.db", real / "memcore.db"


def test_the_file_as_given_and_resolved_becomes_a_word(linked: tuple[Path, Path]) -> None:
    given, resolved = linked
    for spelling in (given, resolved):
        text = f"the memory database {spelling} is busy [SQLITE_BUSY]; retry"
        assert hide_database(text, given) == f"{DATABASE} is busy [SQLITE_BUSY]; retry"
        assert hide_database(f"cp '{spelling}' '{spelling}.damaged-1'", str(given)) == (
            f"cp '{DATABASE}' '{DATABASE}.damaged-1'"
        )
    assert hide_database(f"open {resolved.as_uri()}?mode=ro", given) == f"open {DATABASE}?mode=ro"


def test_the_folder_becomes_a_word_in_each_spelling(linked: tuple[Path, Path]) -> None:
    given, resolved = linked
    for folder in (given.parent, resolved.parent):
        text = f"cannot create {folder}: permission denied"
        assert hide_database(text, given) == f"cannot create {FOLDER}: permission denied"


def test_a_home_relative_spelling_becomes_a_word(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    home = tmp_path / "home" / "ada"
    monkeypatch.setenv("HOME", str(home))
    database = home / ".memcore" / "memcore.db"
    text = "~/.memcore/memcore.db is locked; ~/.memcore is full"
    assert hide_database(text, database) == f"{DATABASE} is locked; {FOLDER} is full"


def test_a_relative_database_leaves_ordinary_words_alone(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Its folder (".", "data") is no secret and would match words: only its absolute
    spellings are hidden."""
    monkeypatch.chdir(tmp_path)
    text = f"the memory database data/memcore.db (in {tmp_path / 'data'}) holds data."
    assert hide_database(text, "data/memcore.db") == f"{DATABASE} (in {FOLDER}) holds data."
    assert hide_database("memories. in memory", "memcore.db") == "memories. in memory"


def test_without_a_database_nothing_changes() -> None:
    assert hide_database("the memory database /x/m.db", None) == "the memory database /x/m.db"


def test_a_store_error_keeps_its_type_code_and_retry_but_not_the_path(
    linked: tuple[Path, Path],
) -> None:
    given, resolved = linked
    busy = map_error(sqlite3.OperationalError("database is locked"), path=str(resolved))
    body = public_error(busy.to_dict(), given)
    assert body == {**busy.to_dict(), "message": body["message"], "field": FIELD}
    assert (body["type"], body["code"], body["retryable"]) == ("Unavailable", "unavailable", True)
    assert str(resolved.parent) not in str(body) and "ada" not in str(body)

    folder = PermissionDenied(f"cannot create {given.parent}", field=str(given.parent))
    assert public_error(folder.to_dict(), given)["field"] == FIELD
    named = PermissionDenied("a tenant may not be chosen", field="tenant_id")
    assert public_error(named.to_dict(), given) == named.to_dict()


def test_a_tool_error_answer_names_no_path(linked: tuple[Path, Path]) -> None:
    given, resolved = linked
    damaged = corrupted(resolved, "database disk image is malformed")
    result = answers.error(damaged, "recall", database=str(given))
    text = result.content[0].text  # type: ignore[union-attr]
    assert result.is_error and result.structured_content is not None
    error = result.structured_content["error"]
    assert (error["code"], error["field"], error["retryable"]) == ("store_corrupted", FIELD, False)
    for shown in (text, str(result.structured_content)):
        assert str(resolved.parent) not in shown and str(given.parent) not in shown


class _Dreams:
    """A session's dreams whose finished task holds one action that failed on the database."""

    def __init__(self, error: str) -> None:
        self.error = error

    def actions(self, task_id: str, **_: Any) -> Page[DreamAction]:
        failed = DreamAction("a1", task_id, "MERGE", status="failed", error=self.error)
        return Page((failed,))


def test_a_dream_answer_names_no_path(linked: tuple[Path, Path]) -> None:
    given, resolved = linked
    message = f"the memory database {resolved} is busy; retry"
    task = DreamTask(id="t1", status="failed", error=message)
    answer = tools._dream_answer(_Dreams(message), task, str(given))  # type: ignore[arg-type]
    assert answer["error"] == f"{DATABASE} is busy; retry"
    assert answer["actions"][0]["error"] == f"{DATABASE} is busy; retry"
