"""Reading one field of a Memory Store answer, with complaints that name the API and the path.

Every decoder in :mod:`memcore_tablestore.protocol.answers` reads through these helpers, so a wrong
type or a missing field is always ``ProtocolError("<Api> answered ... <path>")``, never a
``KeyError``. Times come as RFC3339 strings or Unix milliseconds and leave as epoch seconds.
"""

from __future__ import annotations

import datetime as _dt
import math
import re
from collections.abc import Mapping
from typing import Any

from memcore.errors import InvalidInput, ProtocolError
from memcore.scope import DEFAULT_SEGMENT, WILDCARD, Scope, ScopePattern

#: Scope levels as the service spells them.
WIRE_LEVELS = ("appId", "tenantId", "agentId", "runId")
#: The zero time the service sends for fields it never fills (``lastSeenAt``).
ZERO_TIME = "0001-01-01T00:00:00Z"


def problem(api: str, path: str, what: str) -> ProtocolError:
    return ProtocolError(f"{api} answered with {path} {what}"[:400], field=path)


def obj(api: str, value: object, path: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise problem(api, path, "that is not a JSON object")
    return value


def need(api: str, data: Mapping[str, Any], key: str, path: str) -> Any:
    """A field the type declares required and memcore acts on."""
    value = data.get(key)
    if value is None:
        raise ProtocolError(f"{api} answered without {path}{key}"[:400], field=f"{path}{key}")
    return value


def text(api: str, data: Mapping[str, Any], key: str, path: str = "") -> str:
    value = need(api, data, key, path)
    if not isinstance(value, str):
        raise problem(api, path + key, "that is not a string")
    return value


def opt_text(api: str, data: Mapping[str, Any], key: str, path: str = "") -> str | None:
    value = data.get(key)
    if value is None or value == "":
        return None
    if not isinstance(value, str):
        raise problem(api, path + key, "that is not a string")
    return value


def number(api: str, value: object, path: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise problem(api, path, "that is not a finite number")
    return float(value)


def opt_number(api: str, data: Mapping[str, Any], key: str, path: str = "") -> float | None:
    value = data.get(key)
    return None if value is None else number(api, value, path + key)


def opt_int(api: str, data: Mapping[str, Any], key: str, path: str = "") -> int | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int):
        raise problem(api, path + key, "that is not a whole number")
    return value


def items(api: str, data: Mapping[str, Any], key: str, path: str = "") -> list[Any]:
    """A required list (``[]`` and ``null`` both mean empty)."""
    if key not in data:
        raise ProtocolError(f"{api} answered without {path}{key}"[:400], field=f"{path}{key}")
    value = data[key]
    if value is None:
        return []
    if not isinstance(value, list):
        raise problem(api, path + key, "that is not a list")
    return value


def strings(api: str, data: Mapping[str, Any], key: str, path: str = "") -> tuple[str, ...]:
    value = data.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise problem(api, path + key, "that is not a list of strings")
    return tuple(value)


def string_map(api: str, data: Mapping[str, Any], key: str, path: str = "") -> dict[str, str]:
    value = data.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise problem(api, path + key, "that is not an object of strings")
    return value


def count_map(api: str, value: object, path: str) -> dict[str, int]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise problem(api, path, "that is not an object")
    out: dict[str, int] = {}
    for key, count in value.items():
        if isinstance(count, bool) or not isinstance(count, int):
            raise problem(api, f"{path}.{key}", "that is not a whole number")
        out[key] = count
    return out


#: RFC3339 (``T``, ``t`` or a space between date and time): 0 to 9 fraction digits, ``Z`` or
#: an offset. No offset is read as UTC (older answers). ``datetime.fromisoformat`` is not used:
#: on Python 3.10 it accepts only 0, 3 or 6 fraction digits.
_RFC3339 = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2}):(\d{2})(?:\.(\d{1,9}))?"
    r"(?:([Zz])|([+-])(\d{2}):(\d{2}))?"
)


def rfc3339_seconds(value: str, *, need_offset: bool = False) -> float | None:
    """Epoch seconds of an RFC3339 time, or None when ``value`` is not one (or, with
    ``need_offset``, carries neither ``Z`` nor an offset)."""
    m = _RFC3339.fullmatch(value.strip())
    if m is None:
        return None
    year, month, day, hour, minute, second, fraction, zulu, sign, oh, om = m.groups()
    if sign is None and zulu is None and need_offset:
        return None
    try:
        offset = _dt.timedelta(0)
        if sign is not None:
            offset = _dt.timedelta(hours=int(oh), minutes=int(om))
            if offset >= _dt.timedelta(hours=24):
                return None
            offset = -offset if sign == "-" else offset
        moment = _dt.datetime(
            int(year),
            int(month),
            int(day),
            int(hour),
            int(minute),
            int(second),
            tzinfo=_dt.timezone(offset),
        )
    except ValueError:
        return None
    return moment.timestamp() + (int(fraction) / 10 ** len(fraction) if fraction else 0.0)


#: Times repeat across a page and across calls: each RFC3339 string is parsed once.
_TIMES: dict[str, float] = {}


def when(api: str, data: Mapping[str, Any], key: str, path: str = "") -> float | None:
    """Epoch seconds from an RFC3339 string or Unix milliseconds; the zero time is None."""
    value = data.get(key)
    if type(value) is str:
        seen = _TIMES.get(value)
        if seen is not None:
            return seen
    if value is None or value == "" or value == ZERO_TIME:
        return None
    if isinstance(value, str):
        if value.isdigit():
            return int(value) / 1000.0
        seconds = rfc3339_seconds(value)
        if seconds is None:
            raise problem(api, path + key, "that is not an RFC3339 time")
        if len(_TIMES) < 4096:
            _TIMES[value] = seconds
        return seconds
    return number(api, value, path + key) / 1000.0


def extras(data: Mapping[str, Any], known: frozenset[str]) -> dict[str, Any]:
    """Everything the service sent that memcore does not model: kept, never fatal."""
    return {k: v for k, v in data.items() if k not in known}


# -- scopes ----------------------------------------------------------------------------------
def scope_to_wire(scope: Scope | ScopePattern) -> dict[str, str]:
    return dict(zip(WIRE_LEVELS, scope.as_tuple()))


_SEEN_SCOPES: dict[tuple[Any, ...], Scope] = {}


def scope(api: str, value: object, path: str) -> Scope:
    """A concrete scope as the service reports it; an omitted level is ``__default__``."""
    if type(value) is dict and len(value) == 4:
        # Scopes repeat across a page and across calls: a checked one is reused as is.
        key = (value.get("appId"), value.get("tenantId"), value.get("agentId"), value.get("runId"))
        seen = _SEEN_SCOPES.get(key)
        if seen is not None:
            return seen
        found = _check_scope(api, value, path)
        if len(_SEEN_SCOPES) < 4096:
            _SEEN_SCOPES[key] = found
        return found
    return _check_scope(api, value, path)


def scope_or_pattern(api: str, value: object, path: str) -> Scope | ScopePattern:
    """A scope an audit record holds: the scope of the call it records, which for a search or a
    listing may end in ``*`` levels (then a :class:`ScopePattern`; concrete ones stay a Scope)."""
    found = pattern(api, value, path)
    return found.concrete() if found.is_concrete else found


def _levels(api: str, value: object, path: str, *, concrete: bool) -> list[str]:
    """The four levels; an omitted one is ``__default__``, or ``*`` after a ``*`` (patterns)."""
    data = obj(api, value, path)
    levels: list[str] = []
    for key in WIRE_LEVELS:
        level = data.get(key)
        if level is None or level == "":
            level = WILDCARD if WILDCARD in levels else DEFAULT_SEGMENT
        if not isinstance(level, str):
            raise problem(api, f"{path}.{key}", "that is not a string")
        if concrete and level == WILDCARD:
            raise problem(api, f"{path}.{key}", "that is not a concrete scope level")
        levels.append(level)
    return levels


def _check_scope(api: str, value: object, path: str) -> Scope:
    levels = _levels(api, value, path, concrete=True)
    try:
        return Scope(*levels)
    except InvalidInput as exc:
        raise problem(api, path, f"that is not a valid scope ({exc})") from None


def pattern(api: str, value: object, path: str) -> ScopePattern:
    """A scope pattern; omitted levels are ``*`` after a ``*`` and ``__default__`` before."""
    levels = _levels(api, value, path, concrete=False)
    try:
        return ScopePattern(*levels)
    except InvalidInput as exc:
        raise problem(api, path, f"that is not a valid scope pattern ({exc})") from None
