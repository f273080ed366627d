"""Which deferred writes a search embeds first: those of the tenant it searches.

A deferred write (``defer_vectors``: the CLI's plain ``memcore add``) leaves its memory
without a vector and its task pending; the next semantic search embeds it. A search reads
one tenant, so it embeds that tenant's memories only: another tenant's backlog is left to
that tenant's searches, which are the ones that read it (before, one tenant's 240 deferred
adds made another's next search take 667 ms instead of 7: ``benchmarks.deferred_search``).
"""

from __future__ import annotations

from memcore.scope import ScopePattern
from memcore_sqlite.storage.rows import pattern_sql

_TASKS = "status = 'pending' AND operation = 'AddMemories'"


def tasks_of(pattern: ScopePattern) -> tuple[str, list[str]]:
    """The ``WHERE`` terms (after ``store_id = ?``) and their parameters that pick the
    pending deferred-write tasks of the tenant ``pattern`` reaches: its app and tenant
    levels, compared exactly with the task's scope as stored. The agent and run levels are
    not, so that a search of one run embeds its tenant's whole backlog, which the tenant's
    next search would otherwise embed."""
    tenant = ScopePattern(pattern.app_id, pattern.tenant_id)
    levels, params = pattern_sql(tenant, level="json_extract(scope, '$.{name}')")
    return _TASKS + levels, params
