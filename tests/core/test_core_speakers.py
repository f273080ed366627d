"""Speaker labels ("Priya: ...") told apart from what was said: the strings that look like
a label and are not, and a property over generated lines."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from memcore import speakers


@pytest.mark.parametrize(
    ("text", "name", "said"),
    [
        ("Priya: Finally.", "Priya", "Finally."),
        ("Mary Ann Lee: yes, Tuesday", "Mary Ann Lee", "yes, Tuesday"),
        ("Jean-Luc: bonjour", "Jean-Luc", "bonjour"),
        ("O'Neil:\tsure", "O'Neil", "sure"),
        ("Zoë: hola", "Zoë", "hola"),
        ("Élodie Brun: oui", "Élodie Brun", "oui"),
        ("Title: Kyoto trip notes", "Title", "Kyoto trip notes"),
        # How Hermes gives the messages of a session several people share.
        ("[Priya] Finally.", "Priya", "Finally."),
        ("[alice_92] see you at 5", "alice_92", "see you at 5"),
        ("[Zoë|1234]\nhola", "Zoë|1234", "hola"),
        ("[x] buy milk", "x", "buy milk"),
    ],
)
def test_a_label_is_told_apart_from_what_was_said(text: str, name: str, said: str) -> None:
    assert speakers.label(text) == name
    assert speakers.spoken(text) == said


@pytest.mark.parametrize(
    "text",
    [
        "https://example.com/a: b",  # a URL
        "10:30 standup with the team",  # a time
        "note: buy milk",  # a lower-case lead-in
        "Priya:",  # nothing said
        "Priya:   ",
        "Priya:no space",
        "Priya:\nnext line",
        "The plan for today: rest",  # a lower-case word inside
        "One Two Three Four: too long a label",  # four words
        "A" * 41 + ": a label longer than forty characters",
        "小明: 今天去爬山",  # no case in the script: not read as a label
        "",
        "Plain sentence without a label.",
        "[2024-05-01] went to Paris",  # no letter between the brackets
        "[ ] buy milk",
        "[click here](https://example.com) for more",  # a link
        "[Priya]",  # nothing said
        "[Priya]nothing between",
        "[" + "a" * 65 + "] too long a display name",
        "[Pri\nya] two lines",
    ],
)
def test_what_is_not_a_label_is_left_whole(text: str) -> None:
    assert speakers.label(text) is None
    assert speakers.spoken(text) == text


def test_differ_needs_two_labels_that_name_different_people() -> None:
    assert speakers.differ("Priya: I love Khruangbin", "Tom: I love Khruangbin")
    assert not speakers.differ("Priya: I love Khruangbin", "priya: nobody beats them")
    assert not speakers.differ("Priya: I love Khruangbin", "I love Khruangbin")
    assert not speakers.differ("I love Khruangbin", "I love them too")
    assert speakers.differ("[Priya] I love Khruangbin", "Tom: I love Khruangbin")
    assert not speakers.differ("[Priya] I love Khruangbin", "Priya: me too")
    # A lead-in names a part of a note, not a person: an update may still supersede a note.
    assert not speakers.differ("Note: I live in Paris", "Update: I moved to Berlin")
    assert not speakers.differ("Priya: I live in Paris", "Update: Priya moved to Berlin")


names = st.lists(
    st.text(st.characters(categories=["Lu", "Ll"]), min_size=1, max_size=8).filter(
        lambda w: w[0].isupper()
    ),
    min_size=1,
    max_size=3,
).map(" ".join)


@given(name=names, said=st.text(min_size=1, max_size=40).filter(lambda s: not s[0].isspace()))
def test_spoken_is_what_follows_the_label(name: str, said: str) -> None:
    text = f"{name}: {said}"
    if len(name) <= speakers.MAX_CHARS:
        assert speakers.label(text) == name
        assert speakers.spoken(text) == said


@given(name=names, said=st.text(min_size=1, max_size=40).filter(lambda s: not s[0].isspace()))
def test_a_bracketed_name_is_a_label_too(name: str, said: str) -> None:
    text = f"[{name.lower()}] {said}"
    assert speakers.label(text) == name.lower()
    assert speakers.spoken(text) == said


@given(st.text(max_size=60))
def test_spoken_is_always_a_nonempty_tail_of_the_text(text: str) -> None:
    said = speakers.spoken(text)
    assert text.endswith(said)
    assert (said == text) == (speakers.label(text) is None)
    if text.strip():
        assert said.strip()
