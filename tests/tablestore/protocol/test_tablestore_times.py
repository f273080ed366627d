"""The wire's times and audit scopes: RFC3339 with 0 to 9 fraction digits on every supported
Python, and request-log records whose scope holds ``*`` levels (the vendor's types allow it)."""

from __future__ import annotations

import datetime as dt
import json
import types
from pathlib import Path

import pytest

from memcore.errors import ProtocolError
from memcore.scope import Scope, ScopePattern
from memcore_tablestore.protocol import answer_fields, answers

GOLDEN = Path(__file__).parent.parent / "golden"
#: 2026-08-25T05:52:19Z
BASE = 1787637139.0
DIGITS = "123456789"


def _py310_datetime() -> types.SimpleNamespace:
    """``datetime`` as Python 3.10 has it: ``fromisoformat`` takes 0, 3 or 6 fraction digits."""

    class Py310(dt.datetime):
        @classmethod
        def fromisoformat(cls, text: str) -> dt.datetime:  # type: ignore[override]
            clock = text.partition("T")[2]
            fraction = clock.partition(".")[2]
            digits = len(fraction) - len(fraction.lstrip("0123456789"))
            if "." in clock and digits not in (3, 6):
                raise ValueError(f"Invalid isoformat string: {text!r}")
            return dt.datetime.fromisoformat(text)

    return types.SimpleNamespace(datetime=Py310, timezone=dt.timezone, timedelta=dt.timedelta)


@pytest.fixture(params=["this python", "python 3.10"])
def clock(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> None:
    if request.param == "python 3.10":
        monkeypatch.setattr(answer_fields, "_dt", _py310_datetime())
    answer_fields._TIMES.clear()


@pytest.mark.parametrize("digits", range(10))
@pytest.mark.parametrize(
    ("zone", "shift"), [("Z", 0), ("z", 0), ("+00:00", 0), ("+08:00", -8 * 3600), ("-05:30", 19800)]
)
def test_rfc3339_with_0_to_9_fraction_digits_decodes(clock, digits, zone, shift) -> None:
    fraction = "." + DIGITS[:digits] if digits else ""
    text = f"2026-08-25T05:52:19{fraction}{zone}"
    expected = BASE + shift + (int(DIGITS[:digits]) / 10**digits if digits else 0.0)
    got = answer_fields.when("X", {"t": text}, "t")
    assert got == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize(
    "text",
    [
        "2026-08-25T05:52:19.1234567890Z",  # ten digits
        "2026-08-25T05:52:19.Z",
        "2026-13-25T05:52:19Z",
        "2026-08-25T05:52:19+24:00",
        "2026-08-25",
        "yesterday",
    ],
)
def test_what_is_not_rfc3339_is_a_protocol_error(clock, text) -> None:
    with pytest.raises(ProtocolError, match="RFC3339"):
        answer_fields.when("X", {"t": text}, "t")


def test_a_request_log_page_with_wildcard_scopes_and_9_digit_times_decodes(clock) -> None:
    body = json.loads((GOLDEN / "ListMemoryStoreRequests.json").read_text("utf-8"))["response"]
    add, search, listing = answers.requests(body).items
    assert add.scope == Scope("app-001", "user-001", "assistant", "session-001")
    assert search.scope == ScopePattern("app-001", "user-001", "*", "*")
    assert listing.scope == ScopePattern("app-001", "user-001", "assistant", "*")
    assert search.created_at == pytest.approx(BASE + 2.123456789, abs=1e-6)
    assert listing.created_at == pytest.approx(BASE + 2.1234567, abs=1e-6)


def test_a_record_scope_that_is_no_valid_pattern_is_still_refused() -> None:
    body = json.loads((GOLDEN / "ListMemoryStoreRequests.json").read_text("utf-8"))["response"]
    body["requests"][1]["scope"] = {"appId": "app-001", "tenantId": "*", "agentId": "a"}
    with pytest.raises(ProtocolError, match="scope"):
        answers.requests(body)


def test_the_emulator_reads_request_times_with_the_same_decoder() -> None:
    from memcore_tablestore.emulator import request_fields as emulator_fields

    assert emulator_fields._rfc3339("2026-08-25T05:52:19.123456789Z") == int(
        (BASE + 0.123456789) * 1000
    )
    assert emulator_fields._rfc3339("2026-08-25T05:52:19.1234") is None  # no offset: refused
