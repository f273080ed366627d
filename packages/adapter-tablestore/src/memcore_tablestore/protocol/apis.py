"""The Memory Store APIs, listed once: each one's name and whether it only reads.

The names are those of the vendor's typed SDK (``memory.d.ts``); the SDK method that sends an
API is its name in snake case, on ``OTSClient``, ``AsyncOTSClient`` and the API-key client.
The emulator keeps its own table (``emulator.apis.handlers``), so that it cannot agree with
the client by sharing its list; a test checks that the two name the same APIs.
"""

from __future__ import annotations

import re

#: API name -> True when it changes nothing (the live check calls only those).
_READS_ONLY = {
    "ListMemoryStores": True,
    "GetMemoryStore": True,
    "CreateMemoryStore": False,
    "UpdateMemoryStore": False,
    "DeleteMemoryStore": False,
    "AddMemories": False,
    "SearchMemories": True,
    "ListMemories": True,
    "GetMemory": True,
    "UpdateMemory": False,
    "DeleteMemory": False,
    "ListMemoryStoreMessages": True,
    "ListMemoryStoreRequests": True,
    "ListMemoryStoreScopes": True,
    "ListMemoryTasks": True,
    "GetMemoryTask": True,
    "CreateMemoryDreamTask": False,
    "ListMemoryDreamTasks": True,
    "GetMemoryDreamTask": True,
    "CancelMemoryDreamTask": False,
    "ListMemoryDreamActions": True,
    "ApplyMemoryDreamActions": False,
}

#: Every API, in the order above.
APIS = tuple(_READS_ONLY)
#: The APIs that change nothing.
READ_ONLY = tuple(api for api, reads in _READS_ONLY.items() if reads)


def sdk_method(api: str) -> str:
    """``ListMemoryStoreMessages`` -> ``list_memory_store_messages``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", api).lower()


#: API name -> the SDK method that sends it.
SDK_METHODS = {api: sdk_method(api) for api in APIS}
