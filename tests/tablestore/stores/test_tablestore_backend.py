"""The entry point, configuration errors, and the cheap package import."""

from __future__ import annotations

import json
import subprocess
import sys

import attrs
import pytest

from memcore.config import MemcoreConfig
from memcore.discovery import installed_backends, open_store
from memcore.errors import ConfigError
from memcore.scope import Scope
from memcore_tablestore import open_backend
from memcore_tablestore.emulator import EmulatorServer
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore
from memcore_tablestore.testing import emulator_config, emulator_credentials


def test_registered_as_tablestore_backend() -> None:
    assert "tablestore" in installed_backends()


def test_open_store_through_the_entry_point(emulator: EmulatorServer) -> None:
    config = emulator_config(emulator, memory_store_name="via_ep")
    store = open_store("tablestore", config, credentials=emulator_credentials(emulator))
    assert isinstance(store, TableStoreMemoryStore)
    store.ensure_store(config.memory_store_name)
    receipt = store.add_text(config.memory_store_name, Scope("a", "b", "c", "d"), "hi", sync=True)
    assert receipt.status == "completed"
    store.close()


@pytest.mark.parametrize(
    ("changes", "missing"),
    [({}, "endpoint"), ({"endpoint": "https://x.cn-beijing.ots.aliyuncs.com"}, "instance_name")],
)
def test_unprovisioned_config_says_to_provision(changes: dict[str, str], missing: str) -> None:
    with pytest.raises(ConfigError) as caught:
        open_backend(MemcoreConfig(**changes), credentials=None)
    assert caught.value.field == missing
    assert "provision" in str(caught.value)


def test_unknown_option_is_a_config_error() -> None:
    with pytest.raises(ConfigError):
        open_backend(MemcoreConfig(), colour="blue")


def test_bad_settings_are_config_errors(emulator: EmulatorServer) -> None:
    creds = emulator_credentials(emulator)
    with pytest.raises(ConfigError):
        TableStoreMemoryStore("ftp://nowhere", "emulator", creds)
    with pytest.raises(ConfigError):
        TableStoreMemoryStore(emulator.url, "emulator", creds, timeout=0)
    with pytest.raises(ConfigError):
        TableStoreMemoryStore(emulator.url, "emulator", "ak:sk")  # type: ignore[arg-type]


def test_package_import_does_not_load_the_sdk() -> None:
    code = (
        "import json, sys, memcore_tablestore\n"
        "heavy = [m for m in ('tablestore', 'urllib3', 'aiohttp', 'alibabacloud_credentials') if m in sys.modules]\n"
        "print(json.dumps(heavy))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []


def test_lazy_names_resolve() -> None:
    import memcore_tablestore

    assert memcore_tablestore.TableStoreMemoryStore is TableStoreMemoryStore
    with pytest.raises(AttributeError):
        memcore_tablestore.NoSuchThing  # noqa: B018


def test_the_store_is_a_memory_store(ts: TableStoreMemoryStore) -> None:
    from memcore.ports import MemoryStore

    assert isinstance(ts, MemoryStore)


def test_the_library_opens_no_missing_store_its_first_write_creates_it(
    emulator: EmulatorServer,
) -> None:
    """``Memory.open("tablestore")`` created the configured store whenever it was missing:
    a mistyped name became an empty store whose reads found nothing. Reads now answer
    ``StoreNotFound`` and the first write creates it."""
    from memcore import Memory
    from memcore.errors import StoreNotFound

    config = emulator_config(emulator, memory_store_name="mistyped")
    credentials = emulator_credentials(emulator)
    with Memory.open("tablestore", config=config, user_id="alice", credentials=credentials) as mem:
        with pytest.raises(StoreNotFound):
            mem.list()
        assert "mistyped" not in [s.name for s in mem.store.list_stores()]
        [added] = mem.add(text="The locker code is 4411")
        assert [m.id for m in mem.list().items] == [added]


def test_the_library_opens_the_backend_its_config_names(emulator: EmulatorServer) -> None:
    """``Memory.open(config=...)`` with ``backend: tablestore`` opened the embedded store
    (its argument's default, "local"): the memories went to a local file, unsaid. The
    config's backend is opened when no argument names one; the store it creates carries
    the config's description and extraction instructions (they were dropped)."""
    from memcore import Memory

    config = attrs.evolve(
        emulator_config(emulator, memory_store_name="food"),
        backend="tablestore",
        description="Food notes",
        extract_instructions="Only keep facts about food.",
    )
    credentials = emulator_credentials(emulator)
    with Memory.open(config=config, user_id="alice", credentials=credentials) as mem:
        assert isinstance(mem.store, TableStoreMemoryStore)
        mem.add(text="The user likes kiwis")
        info = mem.store.describe_store("food")
        assert (info.description, info.extract_instructions) == (
            "Food notes",
            "Only keep facts about food.",
        )
