"""What every contract family shares: the store name, four scopes, and the helpers that write
and page through a store, as plain functions so that no family reaches another's state."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from memcore import ports
from memcore.facade import Memory as Library
from memcore.paging import pages
from memcore.ports import MemoryStore
from memcore.scope import Scope
from memcore.values import Page

STORE = "contract_mem"
A1 = Scope("app", "tenant_a", "agent1", "run1")
A2 = Scope("app", "tenant_a", "agent2", "run2")
B1 = Scope("app", "tenant_b", "agent1", "run1")
OTHER_APP = Scope("other", "tenant_a", "agent1", "run1")

OPTIONAL_PORTS: tuple[type, ...] = (
    ports.BulkAdd,
    ports.DreamUndo,
    ports.KeyRemoval,
    ports.MemoryLookup,
    ports.MessageLog,
    ports.MessageMove,
    ports.NeighbourTurns,
    ports.SearchWarmup,
    ports.UnclaimedDelete,
    ports.VersionHistory,
)
"""The ports a store may add to ``MemoryStore``; the service asks for each with ``isinstance``."""

Settle = Callable[[MemoryStore], None]
"""Waits until earlier writes are visible to search (the ``settle`` fixture's type)."""


def add(store: MemoryStore, scope: Scope, text: str, **meta: str) -> str:
    """Writes one memory and waits for it: the one-id receipt every family starts from."""
    receipt = store.add_text(STORE, scope, text, metadata=meta or None, sync=True)
    assert receipt.status == "completed"
    assert len(receipt.memory_ids) == 1
    return receipt.memory_ids[0]


def library(store: MemoryStore) -> Library:
    """A ``Memory`` on this store (it does not own it), default identity in tenant_a."""
    return Library(store, scope=A1, store_name=STORE)


def all_pages(fetch: Any, limit: int) -> list[Any]:
    """Every item of a paged listing, checking each page's size and that paging ends."""
    items: list[Any] = []
    page: Page[Any] | None = None
    for page in pages(lambda token: fetch(limit=limit, next_token=token), max_pages=10_000):
        assert len(page.items) <= limit
        items.extend(page.items)
    if page is not None and page.next_token:
        raise AssertionError("pagination never ended")
    return items
