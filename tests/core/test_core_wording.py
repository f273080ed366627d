"""``memcore.wording``: a count in a line people read agrees with its noun and verb."""

from __future__ import annotations

import pytest

from memcore.transfer.restoring import Undone, finished
from memcore.wording import counted


@pytest.mark.parametrize(
    ("count", "noun", "said"),
    [
        (0, "memory", "0 memories"),
        (1, "memory", "1 memory"),
        (2, "memory", "2 memories"),
        (1, "record", "1 record"),
        (3, "record", "3 records"),
        (1, "replaced version", "1 replaced version"),
        (2, "replaced version", "2 replaced versions"),
        (1, "dream action", "1 dream action"),
        (-1, "key", "-1 keys"),
    ],
)
def test_one_is_singular_and_every_other_count_plural(count: int, noun: str, said: str) -> None:
    assert counted(count, noun) == said


def test_an_irregular_plural_is_given() -> None:
    assert counted(1, "entry", "entries") == "1 entry"
    assert counted(5, "day", "days") == "5 days"
    assert counted(2, "day") == "2 days"  # a vowel before the y: no "ies"


def test_a_rollback_of_one_memory_says_memory_and_was() -> None:
    assert Undone(added=1, left=0).describe() == (
        "import stopped; the 1 memory it had added was deleted again"
    )


def test_a_partial_rollback_agrees_in_every_count() -> None:
    said = Undone(added=3, left=1, claimed=1).describe()
    assert "of the 3 memories it had added, 1 is still stored" in said
    assert "1 was kept because another write landed in it meanwhile" in said
    assert "1 was deleted again" in said
    two = Undone(added=4, left=2).describe()
    assert "2 are still stored" in two and "2 were deleted again" in two


def test_an_import_finished_under_ctrl_c_counts_one_memory_and_one_message() -> None:
    said = str(finished(1, 1))
    assert said.endswith("the 1 memory and 1 message it added are kept")
    assert str(finished(2, 0)).endswith("the 2 memories it added are kept")
