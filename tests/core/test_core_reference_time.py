"""A search's reference time as the hosts give it: ISO 8601 text read at the edge, a datetime
checked by the service, and a date the calendar arithmetic of time words can count from."""

from __future__ import annotations

import asyncio
import inspect
from datetime import datetime, timedelta, timezone

import pytest

import memcore
from memcore import limits
from memcore.errors import InvalidInput
from memcore.testing import InMemoryMemoryStore

UTC = timezone.utc


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("2026-05-01", datetime(2026, 5, 1, tzinfo=UTC)),
        ("2026-05-01T09:30", datetime(2026, 5, 1, 9, 30, tzinfo=UTC)),
        ("2026-05-01T09:30:00Z", datetime(2026, 5, 1, 9, 30, tzinfo=UTC)),
        (" 2026-05-01T09:30:00z ", datetime(2026, 5, 1, 9, 30, tzinfo=UTC)),
        (
            "2026-05-01T09:30:00+02:00",
            datetime(2026, 5, 1, 9, 30, tzinfo=timezone(timedelta(hours=2))),
        ),
    ],
)
def test_iso_text_is_read_with_utc_when_no_offset_is_given(text: str, expected: datetime) -> None:
    parsed = limits.parse_reference_time(text)
    assert parsed == expected and parsed.tzinfo is not None


def test_no_text_is_now() -> None:
    assert limits.parse_reference_time(None) is None


@pytest.mark.parametrize(
    "value",
    ["yesterday", "", "2026-13-01", "2026-05-01T25:00", "1" * 200, 20260501, 3.5, True, ["x"]],
)
def test_bad_text_is_a_typed_error_naming_the_field(value: object) -> None:
    with pytest.raises(InvalidInput) as caught:
        limits.parse_reference_time(value)
    assert caught.value.field == "reference_time"
    assert len(str(caught.value)) < 200  # a long value is not echoed whole


def test_a_host_names_the_field_in_its_own_words() -> None:
    with pytest.raises(InvalidInput) as caught:
        limits.parse_reference_time("soon", field="at", label="--at")
    assert caught.value.field == "at"
    assert str(caught.value).startswith("--at must be an ISO 8601")


@pytest.mark.parametrize("year", [1, 999, 9001, 9999])
def test_a_date_time_words_cannot_count_from_is_refused(year: int) -> None:
    """Asking "last year" in year 1, or "the past two weeks" on 9999-12-31, would leave the
    calendar inside the store's search: refused up front instead, as text or datetime."""
    with pytest.raises(InvalidInput, match="year 1000 to 9000"):
        limits.check_reference_time(datetime(year, 6, 1))
    with pytest.raises(InvalidInput, match="year 1000 to 9000"):
        limits.parse_reference_time(f"{year:04d}-06-01")


def test_the_service_refuses_a_date_out_of_range_before_the_store() -> None:
    mem = memcore.Memory(InMemoryMemoryStore())
    mem.add(text="we went hiking")
    with pytest.raises(InvalidInput) as caught:
        mem.search("hiking last year", reference_time=datetime(1, 1, 1))
    assert caught.value.field == "reference_time"


def test_async_memory_takes_the_reference_time_like_memory() -> None:
    """AsyncMemory is derived from Memory: the keyword is there, and checked the same way."""
    assert "reference_time" in inspect.signature(memcore.AsyncMemory.search).parameters

    async def scenario() -> list[str]:
        async with memcore.AsyncMemory(memcore.Memory(InMemoryMemoryStore())) as mem:
            await mem.add(text="we went hiking")
            asked = datetime(2026, 4, 22, tzinfo=UTC)
            hits = await mem.search("hiking last month", reference_time=asked)
            with pytest.raises(InvalidInput):
                await mem.search("hiking", reference_time="2026-04-22")  # type: ignore[arg-type]
            return [h.memory.text for h in hits]

    assert asyncio.run(scenario()) == ["we went hiking"]
