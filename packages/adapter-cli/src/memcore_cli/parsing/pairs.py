"""``key=value`` options (``--metadata``, ``--filter``) parsed into maps, refusing bad input."""

from __future__ import annotations

from collections.abc import Sequence

from memcore.errors import InvalidInput


def parse_pairs(values: Sequence[str] | None, *, option: str) -> dict[str, str] | None:
    """``None`` when the option was not given; a repeated key is an error, never a silent overwrite."""
    if not values:
        return None
    field = option.lstrip("-")
    out: dict[str, str] = {}
    for raw in values:
        key, sep, value = raw.partition("=")
        key = key.strip()
        if not sep:
            raise InvalidInput(f"{option} {raw!r} must look like key=value", field=field)
        if not key:
            raise InvalidInput(f"{option} {raw!r} has an empty key", field=field)
        if key in out:
            raise InvalidInput(f"{option} gives the key {key!r} twice", field=f"{field}.{key}")
        out[key] = value
    return out


def check_user_metadata(metadata: dict[str, str] | None) -> None:
    """The service's metadata rules, checked before any store is opened."""
    from memcore.service import check_user_metadata as check

    check(metadata, scope_source="--app/--tenant/--agent/--run")


def check_filters(filters: dict[str, str] | None) -> None:
    """The service's filter rules (a scope key is refused), checked before any store is opened."""
    from memcore.service import check_filters as check

    check(filters, scope_source="--app/--tenant/--agent/--run")
