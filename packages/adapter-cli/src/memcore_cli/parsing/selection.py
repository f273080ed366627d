"""Which memories ``list --since``, ``count`` and ``forget --filter`` mean.

``--since`` takes an age (``30m``, ``12h``, ``7d``, ``2w``) or a date or time in ISO 8601
(``2026-11-01``, ``2026-11-01T09:30``, UTC unless it says otherwise).
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping

import attrs

from memcore import limits
from memcore.errors import InvalidInput
from memcore.values import MemoryRecord

_AGE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([smhdw])\s*$")
_UNIT_SECONDS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 7 * 86400}


def parse_since(value: str, *, now: float | None = None) -> float:
    """Seconds since the epoch for an age or an ISO date/time."""
    now = time.time() if now is None else now
    age = _AGE.match(value)
    if age:
        return now - float(age.group(1)) * _UNIT_SECONDS[age.group(2)]
    try:
        # Read as --at is (a "Z" suffix too, which Python 3.10's fromisoformat refuses).
        stamp = limits.parse_reference_time(value, field="since")
    except InvalidInput:
        raise InvalidInput(
            f"--since must be an age like 30m, 12h, 7d or an ISO date like 2026-11-01, "
            f"not {value!r}",
            field="since",
        ) from None
    assert stamp is not None
    return stamp.timestamp()


@attrs.frozen
class Selection:
    """Memories created at or after ``since`` whose metadata holds every ``filters`` pair."""

    since: float | None = None
    filters: Mapping[str, str] = attrs.field(factory=dict)

    @property
    def narrows(self) -> bool:
        return self.since is not None or bool(self.filters)

    def __call__(self, memory: MemoryRecord) -> bool:
        if self.since is not None and (memory.created_at or 0) < self.since:
            return False
        return all(memory.metadata.get(k) == v for k, v in self.filters.items())


def selection(since: str | None, filters: dict[str, str] | None) -> Selection:
    from memcore_cli.parsing.pairs import check_filters

    check_filters(filters)
    return Selection(None if since is None else parse_since(since), dict(filters or {}))
