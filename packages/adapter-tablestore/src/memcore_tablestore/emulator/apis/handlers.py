"""API name -> handler, for the 22 Memory Store APIs of ``memory.d.ts``.

Handlers live next to what they answer: :mod:`.stores_api`, :mod:`.memories_api`,
:mod:`.records_api` (messages, audit, scopes, tasks) and :mod:`.dreams_api`.
"""

from __future__ import annotations

from memcore_tablestore.emulator.apis import dreams as dreams_api
from memcore_tablestore.emulator.apis import memories as memories_api
from memcore_tablestore.emulator.apis import records as records_api
from memcore_tablestore.emulator.apis import stores as stores_api
from memcore_tablestore.emulator.context import Handler

TABLE: dict[str, Handler] = {
    **stores_api.CALLS,
    **memories_api.CALLS,
    **records_api.CALLS,
    **dreams_api.CALLS,
}
STORE_APIS = frozenset(stores_api.CALLS)
#: APIs that answer 409 CONFLICT while a new store's index initialises: GetMemoryStore has
#: no status field, so that answer is the only readiness signal the service gives.
DATA_PLANE_APIS = frozenset(TABLE) - STORE_APIS
