"""The scope rules of each call, as the service applies them.

A wire scope is ``{"appId", "tenantId", "agentId", "runId"}``. Levels left out (or empty) are
the literal ``__default__`` (typed SDK, ListMemoryTasksRequest; documentation, common objects),
except after a ``*``, where they are ``*``: wildcards are hierarchical, so once a level is
``*`` every later one must be ``*`` or omitted.

- writes (AddMemories): ``appId`` required; no ``*``;
- exact calls (Get/Update/DeleteMemory, ListMemoryStoreMessages, ``contextScope``): all four
  levels, no ``*``;
- SearchMemories: ``appId`` and ``tenantId`` required and concrete; ``agentId``/``runId`` may
  be ``*``;
- listings and dream scopes: hierarchical ``*`` at any level.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memcore.errors import InvalidInput
from memcore.scope import DEFAULT_SEGMENT, WILDCARD, Scope, ScopePattern
from memcore_tablestore.emulator.service_errors import invalid

WIRE_LEVELS = ("appId", "tenantId", "agentId", "runId")
SUFFIX_RULE = (
    "scope wildcards must be a suffix: once a level is *, later levels must be * or omitted"
)


def _levels(value: Any, field: str) -> list[str | None]:
    if not isinstance(value, Mapping):
        raise invalid(f"{field} is required" if value is None else f"{field} must be an object")
    out: list[str | None] = []
    for key in WIRE_LEVELS:
        level = value.get(key)
        if level is not None and not isinstance(level, str):
            raise invalid(f"{field}.{key} must be a string")
        out.append(level or None)
    return out


def _fill(levels: list[str | None]) -> tuple[str, str, str, str]:
    filled: list[str] = []
    wild = False
    for _key, level in zip(WIRE_LEVELS, levels):
        if level is None:
            filled.append(WILDCARD if wild else DEFAULT_SEGMENT)
        elif level == WILDCARD:
            wild = True
            filled.append(WILDCARD)
        elif wild:
            raise invalid(SUFFIX_RULE)
        else:
            filled.append(level)
    return filled[0], filled[1], filled[2], filled[3]


def _scope(levels: tuple[str, str, str, str]) -> Scope:
    try:
        return Scope(*levels)
    except InvalidInput as exc:
        raise invalid(exc.message) from None


def _pattern(levels: tuple[str, str, str, str]) -> ScopePattern:
    try:
        return ScopePattern(*levels)
    except InvalidInput as exc:
        raise invalid(exc.message) from None


def write_scope(value: Any, field: str = "scope") -> Scope:
    levels = _levels(value, field)
    if levels[0] is None:
        raise invalid(f"{field}.appId is required")
    for key, level in zip(WIRE_LEVELS, levels):
        if level == WILDCARD:
            raise invalid(f"{field}.{key} must not be a wildcard on a write")
    return _scope(_fill(levels))


def _given(value: Any, field: str, count: int) -> list[str | None]:
    """The levels, the first ``count`` of them required and concrete."""
    levels = _levels(value, field)
    for key, level in zip(WIRE_LEVELS[:count], levels[:count]):
        if level is None:
            raise invalid(f"{field}.{key} is required")
        if level == WILDCARD:
            raise invalid(f"{field}.{key} must not be a wildcard")
    return levels


def exact_scope(value: Any, field: str = "scope") -> Scope:
    return _scope(_fill(_given(value, field, len(WIRE_LEVELS))))


def search_pattern(value: Any, field: str = "scope") -> ScopePattern:
    return _pattern(_fill(_given(value, field, 2)))


def list_pattern(value: Any, field: str = "scope") -> ScopePattern:
    return _pattern(_fill(_levels(value, field)))


def to_wire(scope: Scope | ScopePattern) -> dict[str, str]:
    return dict(zip(WIRE_LEVELS, scope.as_tuple()))


def conversation_key(scope: Scope) -> str:
    return "/".join(scope.as_tuple())
