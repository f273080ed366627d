"""``memcore.wording``: a count in a line people read agrees with its noun and verb, and a
refused value is quoted within the line."""

from __future__ import annotations

import json
from collections.abc import Callable

import pytest

from memcore.errors import MemcoreError
from memcore.transfer.restoring import Undone, finished
from memcore.wording import counted, shown


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


# A refused value is quoted within a line: its start and end, "..." between.

LONG = "a" * 50_000 + "MIDDLE" + "z" * 50_000


def _refusals() -> list[tuple[str, Callable[[], object]]]:
    from memcore import discovery, limits
    from memcore.config import MemcoreConfig
    from memcore.dream.policy import check_thresholds
    from memcore.scope import Scope, ScopePattern
    from memcore.transfer.parsing import parse_line
    from memcore.turn_policy import check_store_assistant
    from memcore.values import Message

    tenant = Scope("app", "tenant", "agent", "run")
    return [
        ("store name", lambda: limits.check_store_name(LONG)),
        ("message role", lambda: limits.check_message_fields(Message(LONG, "hi"))),
        ("config choice", lambda: MemcoreConfig(tenant_scope=LONG)),
        ("config key", lambda: MemcoreConfig(**{LONG: 1})),
        ("backend", lambda: discovery.load_backend(LONG)),
        ("scope pattern", lambda: ScopePattern.parse(LONG + "/b/c/d/e")),
        ("store_assistant", lambda: check_store_assistant(LONG)),
        ("dream threshold", lambda: check_thresholds({LONG: 0.5})),
        (
            "export line kind",
            lambda: parse_line(
                1, json.dumps({"format": 2, "kind": LONG, "text": "x"}), tenant, retarget=False
            ),
        ),
    ]


@pytest.mark.parametrize("name", [name for name, _ in _refusals()])
def test_a_refusal_quotes_a_long_value_by_its_ends_only(name: str) -> None:
    refuse = dict(_refusals())[name]
    with pytest.raises(MemcoreError) as caught:
        refuse()
    message = caught.value.message
    assert len(message) < 1_000, message[:1_000]
    assert "aaaa..." in message or "aaaa...zzzz" in message
    assert "MIDDLE" not in message


def test_a_value_that_cannot_be_shown_is_named_by_its_type() -> None:
    class Unshowable:
        def __repr__(self) -> str:
            raise RuntimeError("no")

    assert shown(10**5000) == "a int that cannot be shown"  # past Python's printable digits
    assert "Unshowable" in shown(Unshowable())
    assert shown("short") == "'short'"
