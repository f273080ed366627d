"""API name -> handler, for the 22 Memory Store APIs of ``memory.d.ts``.

Handlers live next to what they answer: :mod:`.stores`, :mod:`.memories`,
:mod:`.records` (messages, audit, scopes, tasks) and :mod:`.dreams`.
"""

from __future__ import annotations

from memcore_tablestore.emulator.apis import dreams, memories, records, stores
from memcore_tablestore.emulator.context import Handler

TABLE: dict[str, Handler] = {
    **stores.CALLS,
    **memories.CALLS,
    **records.CALLS,
    **dreams.CALLS,
}
STORE_APIS = frozenset(stores.CALLS)
#: APIs that answer 409 CONFLICT while a new store's index initialises: GetMemoryStore has
#: no status field, so that answer is the only readiness signal the service gives.
DATA_PLANE_APIS = frozenset(TABLE) - STORE_APIS
