"""Cuts that split no character as a reader sees it: a long text split into memories, and a
neighbouring turn cut to the recall budget."""

from __future__ import annotations

import unicodedata

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memcore.graphemes import safe_end
from memcore.limits import split_text
from memcore.neighbours import fit
from memcore.values import Message, TurnContext

FAMILY = "\U0001f468\u200d\U0001f469\u200d\U0001f467\u200d\U0001f466"
FLAG = "\U0001f1ef\U0001f1f5"
THUMB = "\U0001f44d\U0001f3fd"
E_ACUTE = "e\u0301"  # NFD


def _starts_inside(piece: str) -> bool:
    first = piece[0]
    return unicodedata.category(first) in ("Mn", "Mc", "Me") or first in ("\u200d", "\U0001f3fd")


@pytest.mark.parametrize("unit", [FAMILY, FLAG, THUMB, E_ACUTE, "\u0e01\u0e31"])
def test_a_long_text_without_spaces_is_split_between_whole_characters(unit: str) -> None:
    """A text of emoji or accented letters with no space was split by code point: a piece
    ended with a dangling joiner and the next began with 👦, a lone accent or a Thai vowel."""
    text = "开" + unit * (40_000 // len(unit.encode()))
    pieces = split_text(text)
    assert len(pieces) > 1 and "".join(pieces) == text
    for piece in pieces:
        assert not _starts_inside(piece), piece[:3]
        assert not piece.endswith("\u200d")
    if unit == FLAG:  # flags are pairs of regional indicators: every piece holds whole ones
        assert all((len(p) - p.startswith("开")) % 2 == 0 for p in pieces)


@pytest.mark.parametrize("unit", [FAMILY, FLAG, E_ACUTE])
def test_a_neighbour_cut_to_the_budget_keeps_whole_characters(unit: str) -> None:
    turn = Message("user", "家" * 1198 + unit * 5)
    kept = fit(TurnContext((turn,), ()), 1200).before[0].content
    assert kept.endswith("…")
    body = kept[:-1]
    assert turn.content.startswith(body)
    assert safe_end(turn.content, len(body)) == len(body)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.sampled_from([FAMILY, FLAG, THUMB, E_ACUTE, "a", "家", "\r\n"]), max_size=60),
    st.integers(min_value=0, max_value=200),
)
def test_safe_end_moves_back_only_to_a_boundary(units: list[str], end: int) -> None:
    text = "".join(units)
    at = safe_end(text, end)
    assert 0 <= at <= min(end, len(text))
    boundaries = {0}
    for unit in units:
        boundaries.add(max(boundaries) + len(unit))
    assert at in boundaries
