"""The rollback of a stopped import when the backend stops answering."""

from __future__ import annotations

from typing import Any

import pytest

from memcore.errors import InvalidInput, Unavailable
from memcore.scope import Scope
from memcore.service import MemoryService
from memcore.testing import InMemoryMemoryStore
from memcore.transfer import take_back

SCOPE = Scope("app", "alice", "agent", "run")


def _service_with(count: int) -> tuple[MemoryService, list[tuple[Scope, str]]]:
    store = InMemoryMemoryStore()
    store.ensure_store("m")
    service = MemoryService(store, store_name="m", scope=SCOPE)
    added = [(SCOPE, service.remember(f"line {i}", sync=True).memory_ids[0]) for i in range(count)]
    return service, added


def test_a_backend_that_stops_answering_ends_the_rollback_at_the_second_failure(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """With TableStore down, each delete waited out its timeout and retries (about 1.8 s):
    the rollback of 318 memories ran 9 minutes with Ctrl-C held and no word, then said the
    store had refused to delete them."""
    service, added = _service_with(50)
    tries: list[str] = []

    def down(self: MemoryService, memory_id: str) -> None:
        tries.append(memory_id)
        raise Unavailable("the connection failed")

    monkeypatch.setattr(MemoryService, "forget", down)
    undone = take_back(service, added, {})
    assert len(tries) == 2
    assert (undone.added, undone.left, undone.unreachable) == (50, 50, True)
    assert "50 are still stored (the store could not delete them: the connection failed)" in (
        undone.describe()
    )


def test_a_full_disk_is_not_called_an_unreachable_backend(monkeypatch: pytest.MonkeyPatch) -> None:
    """An import stopped by a full disk said its memories were left "because the backend
    could not be reached", which sent the user to look at a network that was fine."""
    service, added = _service_with(5)
    full = "the disk holding /home/u/memcore.db is full [SQLITE_FULL]; free space and retry"

    def refused(self: MemoryService, memory_id: str) -> None:
        raise Unavailable(full)

    monkeypatch.setattr(MemoryService, "forget", refused)
    said = take_back(service, added, {}).describe()
    assert full in said and "could not be reached" not in said


@pytest.mark.parametrize("first", [Unavailable("busy"), InvalidInput("refused")])
def test_one_failure_alone_is_passed_over(monkeypatch: pytest.MonkeyPatch, first: Any) -> None:
    service, added = _service_with(5)
    forget = MemoryService.forget
    failed: list[str] = []

    def once(self: MemoryService, memory_id: str) -> None:
        if not failed:
            failed.append(memory_id)
            raise first
        forget(self, memory_id)

    monkeypatch.setattr(MemoryService, "forget", once)
    undone = take_back(service, added, {})
    assert (undone.left, undone.unreachable) == (1, False)
    assert "the store refused to delete them" in undone.describe()
    assert [m.id for m in service.every_memory()] == failed
