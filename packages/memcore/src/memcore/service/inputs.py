"""The input checks several use cases share: lists, caller metadata, texts a restore writes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from memcore import limits
from memcore.errors import InvalidInput
from memcore.recall import strip_recall

#: Metadata keys that describe where a memory came from; callers may not forge scope keys.
RESERVED_METADATA_KEYS = frozenset({"app_id", "tenant_id", "agent_id", "run_id", "scope"})


def check_list(value: object, *, field: str) -> None:
    """Refuse what is not a list of things (a string is a sequence of characters)."""
    if isinstance(value, (str, bytes, Mapping)) or not isinstance(value, Iterable):
        raise InvalidInput(f"{field} must be a list", field=field)


def check_user_metadata(
    metadata: Mapping[str, str] | None, *, scope_source: str = "the session"
) -> dict[str, str]:
    """Metadata a caller may set: within the limits, and no key that tries to name the scope."""
    checked = limits.check_metadata(metadata)
    refuse_scope_keys(checked, field="metadata", scope_source=scope_source)
    return checked


def check_filters(
    filters: Mapping[str, str] | None,
    *,
    field: str = "filters",
    scope_source: str = "the session",
) -> dict[str, str]:
    """Filters within the metadata limits, refusing a scope key: no memory's metadata holds
    one, so such a filter matched nothing and a search read as "no memories" (``agent_id``
    given as a filter, as some other memory libraries take it)."""
    checked = limits.check_metadata(filters, field=field)
    if "user_id" in checked:
        # Other memory libraries scope a search this way; here it would read the metadata of
        # the session's own tenant (another's memories that merely say the name, or none).
        raise InvalidInput(
            f"{field} key 'user_id' names a tenant, which a filter cannot choose; the scope "
            f"searched comes from {scope_source}",
            field=f"{field}.user_id",
        )
    named = sorted(RESERVED_METADATA_KEYS & checked.keys())
    if named:
        raise InvalidInput(
            f"{field} key {named[0]!r} is reserved: no memory's metadata holds it, so it "
            f"would match nothing; the scope searched comes from {scope_source}",
            field=f"{field}.{named[0]}",
        )
    return checked


def refuse_scope_keys(
    metadata: Mapping[str, str], *, field: str, scope_source: str = "the session"
) -> None:
    """Refuse a metadata key that tries to name the scope (``field`` names the map)."""
    forged = sorted(RESERVED_METADATA_KEYS & metadata.keys())
    if forged:
        raise InvalidInput(
            f"{field} key {forged[0]!r} is reserved: the scope comes from {scope_source}",
            field=f"{field}.{forged[0]}",
        )


def restorable_text(text: object, *, field: str = "text") -> str:
    """A text as ``remember``, ``update`` and a restore write it: without a recall block (so a
    recalled block never comes back as a memory), and within the limits."""
    if isinstance(text, str):
        text = strip_recall(text)
    return limits.check_text(text, field=field)
