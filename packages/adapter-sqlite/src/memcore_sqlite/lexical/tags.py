"""Store, scope and metadata tokens stored in the FTS ``tags`` column.

ANDing a tag into a MATCH expression lets FTS5 intersect posting lists with the caller's scope
before it ranks anything, so search cost follows the scope's size, not the file's. Tags are
digests, so a collision is possible in theory; every hit is checked against its row anyway.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping

from memcore.scope import Scope, ScopePattern


@functools.lru_cache(maxsize=4096)
def _digest(kind: str, *parts: str) -> str:
    """A tag's token. Cached: every search of a scope hashes the same few tags again (about
    10 us of a 1k scope's search); the token depends on its parts only."""
    raw = "\x1f".join(parts).encode("utf-8", "surrogatepass")
    # Letters-then-digit keeps the porter stemmer from touching the token.
    return f"{kind}x{hashlib.blake2b(raw, digest_size=8).hexdigest()}0"


def _prefix_tag(store_id: int, levels: tuple[str, ...]) -> str:
    return _digest(f"s{len(levels)}", str(store_id), *levels)


def scope_tags(store_id: int, scope: Scope) -> list[str]:
    """The store's tag, then one per scope prefix: app, app/tenant, app/tenant/agent, all."""
    levels = scope.as_tuple()
    return [_prefix_tag(store_id, levels[:i]) for i in range(0, 5)]


def pattern_tag(store_id: int, pattern: ScopePattern) -> str:
    """The tag that selects the pattern's scopes (the store's tag for ``*``)."""
    concrete = tuple(v for v in pattern.as_tuple() if v != "*")
    return _prefix_tag(store_id, concrete)


def tenant_tag(store_id: int, app_id: str, tenant_id: str) -> str:
    """The tag every row of the tenant holds (the pattern tag of ``app/tenant/*/*``)."""
    return _prefix_tag(store_id, (app_id, tenant_id))


def _metadata_tag(store_id: int, levels: tuple[str, ...], key: str, value: str) -> str:
    return _digest(f"m{len(levels)}", str(store_id), *levels, "\x1e", key, value)


def metadata_tags(store_id: int, scope: Scope, metadata: Mapping[str, str]) -> list[str]:
    """Each pair at store, app and tenant level, so a filter's postings stay tenant-local."""
    levels = scope.as_tuple()[:2]
    return [
        _metadata_tag(store_id, levels[:i], key, value)
        for key, value in sorted(metadata.items())
        for i in range(3)
    ]


def filter_expression(store_id: int, pattern: ScopePattern, filters: Mapping[str, str]) -> str:
    """``tag AND tag ...`` for the pattern and every filter."""
    concrete = tuple(v for v in pattern.as_tuple()[:2] if v != "*")
    parts = [pattern_tag(store_id, pattern)]
    parts += [_metadata_tag(store_id, concrete, k, v) for k, v in sorted(filters.items())]
    return " AND ".join(f'"{t}"' for t in parts)
