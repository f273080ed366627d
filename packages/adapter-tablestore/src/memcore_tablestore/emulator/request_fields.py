"""Reading request bodies the way the service does: types, ranges and time filters.

Every problem is a 400 ``INVALID_PARAMETER`` naming the field. Limits come from the typed SDK
(``memory.d.ts``) unless a comment says otherwise.
"""

from __future__ import annotations

import base64
import binascii
import datetime as _dt
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

from memcore_tablestore.emulator.service_errors import invalid
from memcore_tablestore.protocol.answer_fields import rfc3339_seconds

Body = Mapping[str, Any]


def string(body: Body, key: str, *, required: bool = False) -> str | None:
    value = body.get(key)
    if value is None:
        if required:
            raise invalid(f"{key} is required")
        return None
    if not isinstance(value, str):
        raise invalid(f"{key} must be a string")
    return value


def required(body: Body, key: str) -> str:
    value = string(body, key, required=True)
    assert value is not None
    if not value.strip():
        raise invalid(f"{key} is required")
    return value


def whole(body: Body, key: str, default: int, low: int, high: int) -> int:
    value = body.get(key, default)
    if value is None:
        value = default
    if isinstance(value, bool) or not isinstance(value, int):
        raise invalid(f"{key} must be a whole number")
    if not low <= value <= high:
        raise invalid(f"{key} must be from {low} to {high}")
    return value


def flag(body: Body, key: str, default: bool) -> bool:
    value = body.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise invalid(f"{key} must be true or false")
    return value


def fraction(body: Body, key: str) -> float | None:
    """A number in [0, 1] (similarities, confidences)."""
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise invalid(f"{key} must be from 0 to 1")
    if not 0.0 <= float(value) <= 1.0:
        raise invalid(f"{key} must be from 0 to 1")
    return float(value)


def choice(body: Body, key: str, allowed: Sequence[str], default: str | None = None) -> str | None:
    value = string(body, key)
    if value is None:
        return default
    if value not in allowed:
        raise invalid(f"{key} must be one of {', '.join(allowed)}")
    return value


def string_list(body: Body, key: str, low: int, high: int) -> list[str]:
    value = body.get(key)
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise invalid(f"{key} must be a list of strings")
    if not low <= len(value) <= high:
        raise invalid(f"{key} must have {low} to {high} entries")
    return value


# -- time ---------------------------------------------------------------------------------
def _millis(value: Any) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, str) and value.strip().isdigit():
        return int(value.strip())
    return None


def _rfc3339(value: Any) -> int | None:
    if not isinstance(value, str):
        return None
    seconds = rfc3339_seconds(value, need_offset=True)
    return None if seconds is None else int(seconds * 1000)


def millis_only(body: Body, key: str) -> int | None:
    """Unix ms (number or numeric string); the dream and task listings reject RFC3339."""
    value = body.get(key)
    if value is None:
        return None
    ms = _millis(value)
    if ms is None or ms < 0:
        raise invalid(f"{key} must be Unix milliseconds")
    return ms


def millis_or_rfc3339(body: Body, key: str) -> int | None:
    """Message and request-audit listings take Unix ms or an RFC3339 timestamp."""
    value = body.get(key)
    if value is None:
        return None
    ms = _millis(value)
    if ms is None:
        ms = _rfc3339(value)
    if ms is None or ms < 0:
        raise invalid(f"{key} must be Unix milliseconds or an RFC3339 timestamp")
    return ms


def time_range(body: Body, *, rfc3339: bool) -> tuple[int, int]:
    """The ``[minTimestamp, maxTimestamp]`` span in ms; unbounded where not asked (a message
    may be dated before 1970, and is then listed as the embedded store lists it)."""
    read = millis_or_rfc3339 if rfc3339 else millis_only
    low, high = read(body, "minTimestamp"), read(body, "maxTimestamp")
    low = -(2**62) if low is None else low
    high = 2**62 if high is None else high
    if low > high:
        raise invalid("minTimestamp must not be after maxTimestamp")
    return low, high


def parse_rfc3339(value: str, field: str) -> float:
    """An RFC3339 timestamp (message ``timestamp``) as epoch seconds."""
    ms = _rfc3339(value)
    if ms is None:
        raise invalid(f"{field} must be an RFC3339 string")
    return ms / 1000.0


def iso(seconds: float | None) -> str:
    """Epoch seconds as RFC3339 in UTC, with milliseconds when there are any."""
    moment = _dt.datetime.fromtimestamp(seconds or 0.0, _dt.timezone.utc)
    millis = moment.microsecond // 1000
    text = moment.strftime("%Y-%m-%dT%H:%M:%S")
    return f"{text}.{millis:03d}Z" if millis else f"{text}Z"


def to_millis(seconds: float | None) -> int:
    return round((seconds or 0.0) * 1000)


# -- pages --------------------------------------------------------------------------------
def offset(body: Body, key: str = "offset") -> int:
    """Where a listing resumes; tokens are the emulator's own (opaque to clients)."""
    token = string(body, "nextToken")
    if token is None or token == "":
        return 0
    try:
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        value = data[key]
    except (binascii.Error, ValueError, TypeError, KeyError, UnicodeDecodeError):
        raise invalid("nextToken is not a token this service issued") from None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise invalid("nextToken is not a token this service issued")
    return value


def token(next_offset: int, key: str = "offset") -> str:
    raw = json.dumps({key: next_offset}, separators=(",", ":")).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def window(items: Sequence[Any], body: Body, limit: int) -> tuple[list[Any], str | None]:
    """One page of ``items`` and the token of the next page (None on the last)."""
    start = offset(body)
    chunk = list(items[start : start + limit])
    more = start + limit < len(items)
    return chunk, token(start + limit) if more else None


def newest_first_window(
    items: Sequence[Any], body: Body, limit: int
) -> tuple[list[Any], str | None]:
    """One page of ``items`` listed newest first. What lands between two pages goes in front,
    so the token counts the older items still to come, not a position from the front: each
    item is listed once however many land meanwhile."""
    older = offset(body, "older") if string(body, "nextToken") else len(items)
    start = max(0, len(items) - older)
    chunk = list(items[start : start + limit])
    left = len(items) - (start + limit)
    return chunk, token(left, "older") if left > 0 else None
