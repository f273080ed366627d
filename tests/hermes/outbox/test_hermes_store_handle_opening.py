"""A handle over an opening that the session's start stopped waiting for: the store comes
from that opening, never from a second one, and only the lane ever waits for it."""

from __future__ import annotations

import threading
from concurrent.futures import Future
from typing import Any

import pytest

from memcore.config import MemcoreConfig
from memcore.errors import Unavailable
from memcore.testing import InMemoryMemoryStore
from memcore_hermes.outbox.delivery import StoreHandle


def _handle(opening: Future[Any]) -> tuple[StoreHandle, list[str]]:
    opened: list[str] = []

    def opener() -> Any:
        opened.append(threading.current_thread().name)
        return InMemoryMemoryStore()

    handle = StoreHandle.deferred(
        opener, MemcoreConfig(), Unavailable("still opening"), opening=opening
    )
    return handle, opened


def test_the_lane_takes_the_store_of_the_opening_under_way() -> None:
    opening: Future[Any] = Future()
    handle, opened = _handle(opening)
    handle.open_only_on(threading.Thread())  # not this thread
    with pytest.raises(Unavailable, match="still being opened in the background"):
        handle.get()
    assert handle.opening
    store = InMemoryMemoryStore()
    opening.set_result(store)
    assert handle.get() is store  # an opening that ended is taken by any thread
    assert opened == [] and not handle.opening


def test_after_the_opening_failed_only_the_lane_opens_again() -> None:
    opening: Future[Any] = Future()
    handle, opened = _handle(opening)
    box: dict[str, Any] = {}

    def lane() -> None:
        try:
            handle.get()
        except Unavailable as exc:
            box["lane"] = exc

    lane_thread = threading.Thread(target=lane, name="lane")
    handle.open_only_on(lane_thread)
    opening.set_exception(Unavailable("the database is busy"))
    lane_thread.start()
    lane_thread.join(10)
    assert "busy" in str(box["lane"])
    # The opening is used up: this thread is refused at once, it never opens one itself.
    with pytest.raises(Unavailable):
        handle.get()
    assert opened == []


def test_an_opening_never_taken_is_closed_when_it_ends() -> None:
    opening: Future[Any] = Future()
    handle, _ = _handle(opening)
    handle.close()
    store = InMemoryMemoryStore()
    opening.set_result(store)
    assert store.closed


def test_an_opening_refused_for_good_is_answered_alike_and_never_tried_again() -> None:
    from memcore.errors import PermissionDenied

    opening: Future[Any] = Future()
    opened: list[str] = []

    def opener() -> Any:
        opened.append("again")
        return InMemoryMemoryStore()

    handle = StoreHandle.deferred(
        opener,
        MemcoreConfig(),
        Unavailable("still opening"),
        opening=opening,
        lasting=lambda error: not error.retryable,
    )
    opening.set_exception(PermissionDenied("the access keys were refused"))
    for _ in range(3):  # the caller that met the refusal first, and every one after it
        with pytest.raises(PermissionDenied, match="cannot be used") as info:
            handle.get()
        assert "the access keys were refused" in str(info.value)
        assert info.value.retryable is False
        assert info.value.__traceback__ is not None
    assert opened == [] and not handle.waiting_to_open
    assert handle.refused is not None and handle.refused.__traceback__ is None
