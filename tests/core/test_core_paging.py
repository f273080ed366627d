"""Following page tokens: every item once, from a given page, within a page budget."""

from __future__ import annotations

import base64
import json

import pytest

from memcore.paging import encode_token, every_item, pages, paginate

ROWS = [(seq, f"item{seq}") for seq in range(10)]


def fetch(token: str | None, calls: list[str | None]):
    calls.append(token)
    return paginate(ROWS, 3, token)


def test_every_item_follows_the_tokens_to_the_end() -> None:
    calls: list[str | None] = []
    assert list(every_item(lambda t: fetch(t, calls))) == [item for _, item in ROWS]
    assert len(calls) == 4 and calls[0] is None


def test_pages_start_from_a_given_token() -> None:
    first = paginate(ROWS, 3, None)
    rest = [
        item
        for page in pages(lambda t: paginate(ROWS, 3, t), start=first.next_token)
        for item in page.items
    ]
    assert rest == [item for _, item in ROWS[3:]]


def test_pages_stop_at_the_budget_and_the_last_page_says_more_remain() -> None:
    calls: list[str | None] = []
    got = list(pages(lambda t: fetch(t, calls), max_pages=2))
    assert len(got) == 2 == len(calls)
    assert got[-1].next_token is not None
    assert list(pages(lambda t: fetch(t, []), max_pages=4))[-1].next_token is None


def test_pages_refuse_a_repeated_next_token_instead_of_looping() -> None:
    import pytest

    from memcore.errors import ProtocolError
    from memcore.values import Page

    def circular(token: str | None) -> Page[str]:
        return Page(("x",), "a" if token != "a" else "b") if token != "b" else Page(("y",), "a")

    with pytest.raises(ProtocolError) as caught:
        list(pages(circular))
    assert caught.value.field == "next_token"
    with pytest.raises(ProtocolError):  # a budget does not hide the loop either
        list(pages(circular, max_pages=50))


def test_pages_without_a_budget_stop_at_max_pages() -> None:
    import pytest

    from memcore import paging
    from memcore.errors import ProtocolError
    from memcore.values import Page

    count = iter(range(10**9))
    fetched: list[int] = []

    def endless(token: str | None) -> Page[int]:
        n = next(count)
        fetched.append(n)
        return Page((n,), f"t{n}")

    with pytest.raises(ProtocolError, match="did not end"):
        list(paging.pages(endless))
    assert len(fetched) == paging.MAX_PAGES


@pytest.mark.parametrize("after", [2**63, 99_999_999_999_999_999_999_999, -2])
def test_a_token_past_the_sequence_range_is_not_one_this_store_issued(after: int) -> None:
    """A forged token with a huge number reached SQLite and failed there (OverflowError)."""
    from memcore.errors import InvalidInput
    from memcore.paging import decode_token

    forged = base64.urlsafe_b64encode(json.dumps({"after": after}).encode()).decode()
    with pytest.raises(InvalidInput, match="not a token this store issued"):
        decode_token(forged)
    assert decode_token(encode_token(2**63 - 1)) == 2**63 - 1
