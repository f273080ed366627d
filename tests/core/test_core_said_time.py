"""A message's own time (when it was said), as the library's dict messages and the CLI's
messages file give it: seconds since the epoch or ISO 8601 text, checked like a reference
time, and the date its memory is shown with."""

from __future__ import annotations

import time
from datetime import datetime, timedelta, timezone

import pytest

from memcore import Memory, limits
from memcore.errors import InvalidInput
from memcore.recall import format_recall
from memcore.testing import InMemoryMemoryStore

UTC = timezone.utc
MARCH_12 = datetime(2023, 3, 12, 9, 30, tzinfo=UTC).timestamp()


@pytest.mark.parametrize(
    "given",
    [MARCH_12, int(MARCH_12), "2023-03-12T09:30:00Z", "2023-03-12T09:30", "2023-03-12T11:30+02:00"],
)
def test_a_json_message_time_is_seconds_or_iso_text_utc_without_an_offset(given: object) -> None:
    message = limits.message_from_json({"role": "user", "content": "hi", "timestamp": given})
    assert message.timestamp == MARCH_12


@pytest.mark.parametrize(
    "bad",
    [
        "last week",
        "2023-02-30",
        "0999-12-31",
        "9001-01-01",
        float("inf"),
        True,
        [2023],
        (datetime.now(UTC) + timedelta(hours=8)).isoformat(),  # a local time read as UTC
    ],
)
def test_a_bad_json_message_time_names_its_field(bad: object) -> None:
    with pytest.raises(InvalidInput) as refused:
        limits.message_from_json({"role": "user", "content": "hi", "timestamp": bad}, index=3)
    assert refused.value.field == "messages[3].timestamp"


def test_a_time_within_the_skew_ahead_is_accepted() -> None:
    now = time.time()
    assert limits.check_said_time(now + limits.MAX_SAID_AHEAD_S - 5, now=now) > now
    with pytest.raises(InvalidInput):
        limits.check_said_time(now + limits.MAX_SAID_AHEAD_S + 5, now=now)


def test_the_library_dates_a_dict_message_when_it_was_said() -> None:
    mem = Memory(InMemoryMemoryStore())
    said = {"role": "user", "content": "I adopted a cat", "timestamp": "2023-03-12T09:30Z"}
    mem.add(messages=[said], user_id="ana")
    [memory] = mem.list(user_id="ana").items
    assert memory.created_at == MARCH_12
    assert "[2023-03-12] I adopted a cat" in format_recall(mem.search("cat", user_id="ana"))
