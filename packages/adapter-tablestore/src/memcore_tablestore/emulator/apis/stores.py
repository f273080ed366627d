"""CreateMemoryStore, GetMemoryStore, UpdateMemoryStore, ListMemoryStores, DeleteMemoryStore.

UpdateMemoryStore is a strict PATCH of ``description`` and ``extractInstructions`` (omitted
or null: unchanged; ``""``: cleared); ``storageMode`` is immutable (typed SDK). Both fields
live in the backing store; the storage mode, which the port cannot be told, in the ledger.
"""

from __future__ import annotations

import time

from memcore.limits import utf8_len
from memcore.values import STORAGE_MODES
from memcore_tablestore.emulator import encode, request_fields
from memcore_tablestore.emulator.context import Answer, Call, Handler, Service
from memcore_tablestore.emulator.service_errors import invalid

MAX_DESCRIPTION_BYTES = 1024
MAX_INSTRUCTIONS_RUNES = 4096


def _description(call: Call) -> str | None:
    value = request_fields.string(call.body, "description")
    if value is not None and utf8_len(value) > MAX_DESCRIPTION_BYTES:
        raise invalid(f"description must have at most {MAX_DESCRIPTION_BYTES} bytes")
    return value


def _instructions(call: Call) -> str | None:
    value = request_fields.string(call.body, "extractInstructions")
    # Code points, not bytes (typed SDK): len() of a Python str counts code points.
    if value is not None and len(value) > MAX_INSTRUCTIONS_RUNES:
        raise invalid(f"extractInstructions must have at most {MAX_INSTRUCTIONS_RUNES} code points")
    return value


def _answer(svc: Service, name: str) -> Answer:
    info = svc.existing(name)
    with svc.ledger.of(name) as st:
        return encode.store_info(info, st.meta, svc.instance_name)


def create_store(svc: Service, call: Call) -> Answer:
    name = call.store_name
    description, instructions = _description(call), _instructions(call)
    mode = request_fields.string(call.body, "storageMode") or "ots"
    if mode not in STORAGE_MODES:
        raise invalid("storageMode must be one of ots, file+ots, filemem")
    svc.store.create_store(
        name, description=description or "", extract_instructions=instructions or None
    )
    svc.ledger.forget(name)  # records of an earlier store of the same name
    with svc.ledger.of(name) as st:
        st.meta.storage_mode = mode
        st.meta.ready_at = time.monotonic() + svc.init_seconds()
    return _answer(svc, name)


def get_store(svc: Service, call: Call) -> Answer:
    return _answer(svc, call.store_name)


def update_store(svc: Service, call: Call) -> Answer:
    name = call.store_name
    if "storageMode" in call.body:
        raise invalid("storageMode cannot be changed after creation")
    description, instructions = _description(call), _instructions(call)
    if description is None and instructions is None:
        return _answer(svc, name)  # a no-op PATCH echoes the store info
    svc.store.update_store(name, description=description, extract_instructions=instructions)
    return _answer(svc, name)


def list_stores(svc: Service, call: Call) -> Answer:
    limit = request_fields.whole(call.body, "limit", 50, 1, 100)
    names = sorted(info.name for info in svc.store.list_stores())
    chunk, token = request_fields.window(names, call.body, limit)
    out: Answer = {"stores": [{"memoryStoreName": n} for n in chunk]}
    if token:
        out["nextToken"] = token
    return out


def delete_store(svc: Service, call: Call) -> Answer:
    name = call.store_name
    svc.store.delete_store(name)
    svc.ledger.forget(name)
    return {"deleted": True, "memoryStoreName": name}


CALLS: dict[str, Handler] = {
    "CreateMemoryStore": create_store,
    "GetMemoryStore": get_store,
    "UpdateMemoryStore": update_store,
    "ListMemoryStores": list_stores,
    "DeleteMemoryStore": delete_store,
}
