"""``memcore.ports``: every port of the core in one package, and the fake implements them."""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import memcore
import memcore.ports
from memcore.ports import DreamUndo, MemoryStore, MessageMove
from memcore.testing import HashingEmbedder, InMemoryMemoryStore


def _protocols_defined_in(module_name: str) -> set[str]:
    module = importlib.import_module(module_name)
    return {
        name
        for name, value in vars(module).items()
        if inspect.isclass(value)
        and getattr(value, "_is_protocol", False)
        and value.__module__ == module_name
    }


def _core_modules() -> list[str]:
    return [
        info.name
        for info in pkgutil.walk_packages(memcore.__path__, prefix="memcore.")
        if not info.name.startswith("memcore.testing")  # test support, not ports
    ]


#: Protocols that are not ports: the scope policies are rules the core itself implements
#: (and a host may replace), not something the core needs from the outside world.
NOT_PORTS = {"memcore.policies"}


def test_every_protocol_of_the_core_is_in_the_ports_package() -> None:
    elsewhere = {
        f"{name}.{protocol}"
        for name in _core_modules()
        if not name.startswith("memcore.ports") and name not in NOT_PORTS
        for protocol in _protocols_defined_in(name)
    }
    assert elsewhere == set()


def test_the_ports_package_gives_every_port_it_holds() -> None:
    held = {
        protocol
        for name in _core_modules()
        if name.startswith("memcore.ports.")
        for protocol in _protocols_defined_in(name)
    }
    assert held <= set(memcore.ports.__all__)
    assert {"ChatModel", "DreamReviewer", "FactExtractor", "BackendFactory"} <= held


def test_the_fake_store_and_embedder_implement_their_ports() -> None:
    store = InMemoryMemoryStore()
    assert isinstance(store, MemoryStore)
    assert not isinstance(store, DreamUndo)  # the fake keeps no undo records
    assert isinstance(store, MessageMove)
    embedder = HashingEmbedder()
    [vector] = embedder.embed(["tea"])
    assert len(vector) == embedder.dimension and isinstance(embedder.name, str)


def test_the_contract_checks_every_optional_port_a_store_may_hold() -> None:
    """The contract's ``ports`` check covers only what ``OPTIONAL_PORTS`` lists: a new store
    port left out of it could be lost by an adapter unnoticed."""
    import memcore.ports.store
    from memcore.testing.contract.harness import OPTIONAL_PORTS

    store_ports = {
        name
        for name in _protocols_defined_in("memcore.ports.store") - {"MemoryStore"}
        if getattr(getattr(memcore.ports.store, name), "_is_runtime_protocol", False)
    }  # a callback's type (ProgressCallback) is no capability: the service never asks for it
    assert {p.__name__ for p in OPTIONAL_PORTS} == store_ports
    assert len(OPTIONAL_PORTS) == len(set(OPTIONAL_PORTS))
