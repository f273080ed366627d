"""Opaque page tokens: a cursor over a monotonically growing sequence number.

Every listing orders by a ``seq`` primary key and resumes after the last one it returned, so
pages return every item exactly once even while other writers append.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from memcore.errors import InvalidInput, ProtocolError
from memcore.values import Page

T = TypeVar("T")


def encode_token(after: int) -> str:
    return base64.urlsafe_b64encode(json.dumps({"after": after}).encode()).decode().rstrip("=")


#: Sequence numbers are SQLite INTEGERs (signed 64 bits): a token past them cannot have been
#: issued, and would fail in the query rather than as the bad token it is.
_SEQ_END = 2**63


def decode_token(token: str | None) -> int:
    """The sequence number a token resumes after (-1: the start); a token this module could
    not have written is :class:`InvalidInput`, whatever the store behind it."""
    if token is None:
        return -1
    try:
        if not isinstance(token, str) or len(token) > 200:
            raise ValueError
        data = json.loads(base64.urlsafe_b64decode(token + "=" * (-len(token) % 4)))
        after = data["after"]
        if isinstance(after, bool) or not isinstance(after, int) or not -1 <= after < _SEQ_END:
            raise ValueError
        return int(after)
    except Exception:
        raise foreign_token() from None


def foreign_token() -> InvalidInput:
    """The one answer to a token a store did not issue, whatever is wrong with it (forged,
    another store's, another listing's), so the answer tells nothing about where it came from."""
    return InvalidInput("next_token is not a token this store issued", field="next_token")


def page(
    rows: Sequence[tuple[int, Any]], limit: int, seal: Callable[[int], str] = encode_token
) -> Page[Any]:
    """The first ``limit`` rows of ``rows`` (already after the cursor), with the next token,
    which ``seal`` writes (a store whose sequence spans tenants seals it: see the embedded
    store's ``page_tokens``)."""
    chunk = rows[:limit]
    token = seal(chunk[-1][0]) if len(rows) > limit else None
    return Page(tuple(item for _, item in chunk), token)


def paginate(items: Sequence[tuple[int, T]], limit: int, token: str | None) -> Page[T]:
    """Cursor paging over (sequence, item) pairs sorted by sequence: each item exactly once."""
    after = decode_token(token)
    return page([(seq, item) for seq, item in items if seq > after], limit)


#: The most pages :func:`pages` follows when the caller sets no budget: 10 million items at the
#: largest page size, far past any real listing, and still an end for a token that never stops.
MAX_PAGES = 100_000


def pages(
    fetch: Callable[[str | None], Page[T]],
    *,
    start: str | None = None,
    max_pages: int | None = None,
) -> Iterator[Page[T]]:
    """Every page of a listing from ``start`` (the first page by default), following its
    tokens; at most ``max_pages``.

    ``fetch(token)`` asks for one page. A caller that must know whether the listing ended
    before ``max_pages`` looks at the last page's ``next_token``. Without ``max_pages`` a
    listing longer than :data:`MAX_PAGES` raises :class:`ProtocolError`; a next token that was
    already followed (a backend going round in circles) raises it at once, whatever the budget.
    """
    budget = MAX_PAGES if max_pages is None else max_pages
    if start is not None and not isinstance(start, str):  # a dict was a bare TypeError here
        raise foreign_token()
    seen: set[str] = {start} if start else set()
    token = start
    for _ in range(budget):
        page = fetch(token)
        yield page
        token = page.next_token
        if not token:
            return
        if token in seen:
            raise ProtocolError(
                "the listing answered a page token it had already given (it would never end)",
                field="next_token",
            )
        seen.add(token)
    if max_pages is None and token:
        raise ProtocolError(f"the listing did not end within {MAX_PAGES} pages", field="next_token")


def every_item(fetch: Callable[[str | None], Page[T]]) -> Iterator[T]:
    """Every item of a listing, page after page (see :func:`pages`)."""
    for page in pages(fetch):
        yield from page.items
