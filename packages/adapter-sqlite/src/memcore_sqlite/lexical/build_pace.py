"""When a tenant's postings are worth building (again): after how many searches at one
generation.

A build costs about what a thousand searches gain (0.9 s of CPU at 100k rows, against 0.8 ms
saved a search), so a tenant that this process or another writes between every few searches
(an agent writing each turn) should not be built again after every write. A tenant waits
:data:`FIRST_WAIT` searches at one generation before a build (its second search: never a
process's first). Each entry that goes, by a write or another process's, having served fewer
than :data:`SERVED` searches doubles the wait, up to :data:`MAX_WAIT`; one that served them
sets it back. A read-mostly tenant is then built at its second search as before, and a
write-heavy one soon stops paying for builds its searches never use. The lengths cache
(:mod:`memcore_sqlite.lexical.lengths`), whose load costs little, keeps only the first wait.
"""

from __future__ import annotations

from collections import OrderedDict
from typing import TypeVar

from memcore_sqlite.lexical.tenant import Tenant

FIRST_WAIT = 2
MAX_WAIT = 64
#: Searches an entry must serve for its tenant's next build to come as soon as the first.
SERVED = 64
#: Tenants remembered (the least recently seen are forgotten, and start again).
TENANTS = 1_024

_V = TypeVar("_V")


class BuildPace:
    """Per tenant: searches seen at its latest generation, the wait, and what its entry served.
    Not thread-safe: the caller holds its cache's lock."""

    def __init__(self) -> None:
        self._seen: OrderedDict[Tenant, tuple[int, int]] = OrderedDict()
        self._wait: OrderedDict[Tenant, int] = OrderedDict()
        self._served: dict[Tenant, int] = {}

    def due(self, tenant: Tenant, generation: int) -> bool:
        """Count a search of the tenant (which has no entry) at ``generation``: whether the
        tenant has now waited long enough at it for a build."""
        seen, count = self._seen.get(tenant, (generation, 0))
        count = count + 1 if seen == generation else 1
        self._seen[tenant] = (generation, count)
        _touch(self._seen, tenant)
        return count >= self._wait.get(tenant, FIRST_WAIT)

    def started(self, tenant: Tenant) -> None:
        self._seen.pop(tenant, None)

    def built(self, tenant: Tenant) -> None:
        self._served[tenant] = 0

    def served(self, tenant: Tenant) -> None:
        if tenant in self._served:
            self._served[tenant] += 1

    def gone(self, tenant: Tenant, *, evicted: bool = False) -> None:
        """The tenant's entry went; ``evicted`` (for room, not staleness) says nothing of
        how often the tenant is written."""
        served = self._served.pop(tenant, None)
        if served is None or evicted:
            return
        wait = self._wait.get(tenant, FIRST_WAIT)
        self._wait[tenant] = FIRST_WAIT if served >= SERVED else min(2 * wait, MAX_WAIT)
        _touch(self._wait, tenant)

    def wait(self, tenant: Tenant) -> int:
        return self._wait.get(tenant, FIRST_WAIT)


def _touch(table: OrderedDict[Tenant, _V], tenant: Tenant) -> None:
    table.move_to_end(tenant)
    while len(table) > TENANTS:
        table.popitem(last=False)
