"""What every handler gets: the service state (:class:`Service`) and the call (:class:`Call`)."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import attrs

from memcore import limits
from memcore.errors import InvalidInput
from memcore.ports import MemoryStore
from memcore.values import Page, StoreInfo
from memcore_tablestore.emulator import request_fields
from memcore_tablestore.emulator.ledger import Ledger
from memcore_tablestore.emulator.service_errors import invalid

T = TypeVar("T")
Answer = dict[str, Any]


@attrs.define
class Call:
    """One request; handlers note the scope and target for the audit record."""

    api: str
    body: Mapping[str, Any]
    request_id: str
    scope: Any = None
    target: str | None = None
    summary: str = ""

    @property
    def store_name(self) -> str:
        name = request_fields.required(self.body, "memoryStoreName")
        try:
            return limits.check_store_name(name)
        except InvalidInput:
            raise invalid(
                "memoryStoreName must match ^[a-zA-Z0-9_]+$ and have at most 32 characters"
            ) from None


@attrs.define
class Service:
    """The emulated service: the backing store, the ledger, and the knobs."""

    store: MemoryStore
    ledger: Ledger
    instance_name: str
    #: Seconds a new store answers 409 CONFLICT on data-plane calls.
    init_seconds: Callable[[], float] = lambda: 0.0
    clock: Callable[[], float] = time.time

    def existing(self, name: str) -> StoreInfo:
        """The store, or the port's NotFound (404)."""
        return self.store.describe_store(name)

    @staticmethod
    def everything(fetch: Callable[[str | None], Page[T]], cap: int = 100_000) -> list[T]:
        """Every item of a port listing, following its tokens."""
        out: list[T] = []
        token: str | None = None
        while len(out) < cap:
            page = fetch(token)
            out.extend(page.items)
            token = page.next_token
            if not token:
                break
        return out[:cap]


def port_page(body: Mapping[str, Any], fetch: Callable[[int, str | None], Page[T]]) -> Page[T]:
    """One page of a port listing for a request's ``limit`` (1..100, default 50) and
    ``nextToken`` (the port's own tokens, passed through as opaque)."""
    limit = request_fields.whole(body, "limit", 50, 1, 100)
    token = request_fields.string(body, "nextToken")
    try:
        return fetch(limit, token or None)
    except InvalidInput:
        raise invalid("nextToken is not a token this service issued") from None


Handler = Callable[[Service, Call], Answer]
