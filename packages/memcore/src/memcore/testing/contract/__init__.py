"""The ``MemoryStore`` contract: one pytest suite that every adapter must pass.

Subclass :class:`MemoryStoreContract` in a test module and provide a ``store`` fixture::

    class TestMyStoreContract(MemoryStoreContract):
        @pytest.fixture
        def store(self, tmp_path):
            s = MyStore(tmp_path / "m.db")
            yield s
            s.close()

Override the ``settle`` fixture when the backend indexes asynchronously. Each family of
behaviour is a class of its own (``StoresContract``, ``SearchContract``...), so that a new
adapter can pass one family at a time before it takes the whole suite.
"""

from __future__ import annotations

from memcore.testing.contract.dreams import DreamsContract
from memcore.testing.contract.fixtures import StoreFixtures
from memcore.testing.contract.imports import ImportsContract
from memcore.testing.contract.isolation import IsolationContract
from memcore.testing.contract.library import LibraryContract
from memcore.testing.contract.memories import MemoriesContract
from memcore.testing.contract.messages import MessagesContract
from memcore.testing.contract.search import SearchContract
from memcore.testing.contract.stores import StoresContract
from memcore.testing.contract.tasks import TasksContract

__all__ = [
    "DreamsContract",
    "ImportsContract",
    "IsolationContract",
    "LibraryContract",
    "MemoriesContract",
    "MemoryStoreContract",
    "MessagesContract",
    "SearchContract",
    "StoreFixtures",
    "StoresContract",
    "TasksContract",
]


class MemoryStoreContract(
    StoresContract,
    MemoriesContract,
    IsolationContract,
    SearchContract,
    MessagesContract,
    ImportsContract,
    TasksContract,
    DreamsContract,
    LibraryContract,
):
    """Behaviour every ``MemoryStore`` adapter shares with the service: every family at once.

    The families share nothing but the fixtures of :class:`StoreFixtures`; their helpers are
    the plain functions of ``harness``."""
