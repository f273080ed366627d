"""The key of the one tenant a search's scope lies in, shared by the lexical caches.

Its own module so that the lengths cache and the build pace it uses both import it from
below, instead of from each other.
"""

from __future__ import annotations

#: (store id, app id, tenant id): the one tenant a search's scope lies in.
Tenant = tuple[int, str, str]
