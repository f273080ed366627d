"""Compare a wire answer with a golden answer by shape: keys, nesting and JSON types.

Used by the emulator's tests against ``tests/tablestore/golden/`` (and usable by decoder
tests): ``optional`` paths may be absent, ``maps`` paths have free keys, ``nullable`` paths
may be ``null``. Paths are dotted keys with ``[]`` for list items (``results[].unit.id``).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any


def kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, list):
        return "list"
    if isinstance(value, Mapping):
        return "object"
    return type(value).__name__


def shape_mismatches(
    expected: Any,
    actual: Any,
    *,
    optional: Iterable[str] = (),
    maps: Iterable[str] = (),
    nullable: Iterable[str] = (),
) -> list[str]:
    """Every difference in shape between ``actual`` and ``expected`` (empty when they match)."""
    rules = (frozenset(optional), frozenset(maps), frozenset(nullable))
    out: list[str] = []
    _compare(expected, actual, "", rules, out)
    return out


def _join(path: str, key: str) -> str:
    return f"{path}.{key}" if path else key


def _compare(
    expected: Any,
    actual: Any,
    path: str,
    rules: tuple[frozenset[str], frozenset[str], frozenset[str]],
    out: list[str],
) -> None:
    optional, maps, nullable = rules
    where = path or "<root>"
    if actual is None and path in nullable:
        return
    want, got = kind(expected), kind(actual)
    if want != got:
        out.append(f"{where}: expected {want}, got {got}")
        return
    if want == "list":
        if expected:
            for item in actual:
                _compare(expected[0], item, f"{path}[]", rules, out)
        return
    if want != "object":
        return
    if path in maps:
        sample = next(iter(expected.values()), None)
        for value in actual.values():
            if sample is not None:
                _compare(sample, value, f"{path}.*", rules, out)
        return
    for key, value in expected.items():
        child = _join(path, key)
        if key not in actual:
            if child not in optional:
                out.append(f"{child}: missing")
            continue
        _compare(value, actual[key], child, rules, out)
    for key in actual:
        if key not in expected:
            out.append(f"{_join(path, key)}: not in the documented shape")
