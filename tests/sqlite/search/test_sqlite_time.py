"""Time in the question: the span a query's time words name, and the ties it decides."""

from __future__ import annotations

import re
from datetime import datetime, timezone
from pathlib import Path

import pytest

from memcore import Memory
from memcore.errors import InvalidInput
from memcore.scope import Scope
from memcore.values import Message
from memcore_sqlite import SqliteMemoryStore
from memcore_sqlite.search.when import window

STORE = "mem"  # the store the conftest fixtures create
ASKED = datetime(2023, 4, 22, 8, 1, tzinfo=timezone.utc)  # a Saturday


def at(year: int, month: int, day: int) -> float:
    return datetime(year, month, day, 12, tzinfo=timezone.utc).timestamp()


def day(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%d")


@pytest.mark.parametrize(
    ("query", "start", "end"),
    [
        ("What did I do last month?", "2023-03-01", "2023-04-01"),
        ("Who did I go with to the music event last Saturday?", "2023-04-15", "2023-04-16"),
        ("What was the activity 5 days ago?", "2023-04-16", "2023-04-19"),
        ("Which airline did I fly with in March and April?", "2023-03-01", "2023-05-01"),
        ("Where did I go in May?", "2022-05-01", "2022-06-01"),  # the last May begun by then
        ("What did I buy in the past two weeks?", "2023-04-07", "2023-04-23"),
        ("What did I cook yesterday?", "2023-04-21", "2023-04-22"),
        ("Where was I on April 3rd?", "2023-04-02", "2023-04-05"),
        ("what did i do in june", "2022-06-01", "2022-07-01"),  # chat is often lower case
        ("IN MAY WHERE DID I GO", "2022-05-01", "2022-06-01"),
        ("what did we do during march", "2023-03-01", "2023-04-01"),
        ("In May, where did I go?", "2022-05-01", "2022-06-01"),
        # a day not reached yet this year is last year's, as a month not begun is
        ("What did I eat on December 25?", "2022-12-24", "2022-12-27"),
        ("What did I do on April 22?", "2023-04-21", "2023-04-24"),
        ("What did I do on April 23?", "2022-04-22", "2022-04-25"),
        ("Who called on February 29?", "2020-02-28", "2020-03-02"),  # the last one there was
        ("Who called on February 29, 2016?", "2016-02-28", "2016-03-02"),
        # "May" with its day is a month; the day before it; a year alone: none named a span.
        ("Which film did I see on May 15?", "2022-05-14", "2022-05-17"),
        ("which film did i see on may 15th", "2022-05-14", "2022-05-17"),
        ("Which film did I see on 15 May?", "2022-05-14", "2022-05-17"),
        ("What happened on the 3rd of March?", "2023-03-02", "2023-03-05"),
        ("Where was I on 2 April 2021?", "2021-04-01", "2021-04-04"),
        ("Where did I travel in 2021?", "2021-01-01", "2022-01-01"),
        # "last April" asked in April is a year ago (it was this April); "last March" is
        # the latest March, as "in March"; "since" runs to the question (it was one year).
        ("Where did I hike last April?", "2022-04-01", "2022-05-01"),
        ("Where did I hike last March?", "2023-03-01", "2023-04-01"),
        ("What have I bought since 2022?", "2022-01-01", "2023-04-22"),
        ("What have I bought since March?", "2023-03-01", "2023-04-22"),
    ],
)
def test_time_words_name_a_span_counted_from_the_question(query: str, start: str, end: str) -> None:
    span = window(query, ASKED)
    assert span is not None
    assert (day(span.start), day(span.end)) == (start, end)


@pytest.mark.parametrize(
    "query",
    [
        "May I ask what my cat is called?",
        "may i ask what my cat is called?",
        "and may I ask what my cat is called?",
        "MAY I ASK WHAT MY CAT IS CALLED?",
        "we march on the capital",
        "I think 2 may be enough",
        "The 1999 film",
        "I was born in 1800",
        "What is my favourite band?",
        "the first one",
        "What have I bought since 2024?",  # still ahead of the question
    ],
)
def test_a_query_without_time_words_names_no_span(query: str) -> None:
    assert window(query, ASKED) is None


REPO = Path(__file__).resolve().parents[3]


def _quoted_time_words(doc: str) -> list[str]:
    """The phrases a doc quotes ("...", “...”) on the lines that speak of time words."""
    lines = (REPO / doc).read_text(encoding="utf-8").splitlines()
    said = [line for line in lines if "time words" in line.lower() or "时间词" in line]
    return [a or b for line in said for a, b in re.findall(r'"([^"]+)"|“([^”]+)”', line)]


@pytest.mark.parametrize(
    "doc", ["README.md", "README.zh-CN.md", "packages/adapter-sqlite/README.md", "docs/backends.md"]
)
def test_every_time_word_the_docs_give_names_a_span(doc: str) -> None:
    """The Chinese README said “上个月” and “3 天前” were read from the reference time: the
    search reads English time words only, so those named no span."""
    words = _quoted_time_words(doc)
    assert words
    assert [w for w in words if window(w, ASKED) is None] == []


def _memory(store: SqliteMemoryStore) -> Memory:
    return Memory(store, scope=Scope("app", "alice", "agent", "run1"), store_name=STORE)


def _said(mem: Memory, text: str, when: float) -> str:
    return mem.add(messages=[Message("user", text, timestamp=when)])[0]


def test_last_month_puts_the_memory_said_that_month_ahead_of_an_equal_one(
    lexical_store: SqliteMemoryStore,
) -> None:
    mem = _memory(lexical_store)
    march = _said(mem, "I went hiking with Sam", at(2023, 3, 12))
    april = _said(mem, "I went hiking with Ana", at(2023, 4, 19))  # newer: ties go to it
    hits = mem.search("Where did I go hiking last month?", reference_time=ASKED)
    assert [h.memory.id for h in hits[:2]] == [march, april]
    assert hits[0].score == hits[1].score  # the date decided, not the relevance
    # Asked a month later, "last month" is April.
    later = mem.search("Where did I go hiking last month?", reference_time=datetime(2023, 5, 20))
    assert [h.memory.id for h in later[:2]] == [april, march]


def test_a_memory_said_again_in_the_span_counts_as_said_there(
    lexical_store: SqliteMemoryStore,
) -> None:
    """A time word read a memory's first saying only: one said a month ago and again
    yesterday lost "yesterday" to one said last week, though its ``said_at`` (the day the
    recall block shows) is yesterday. Its first and its last saying each count."""
    mem = _memory(lexical_store)
    text = "I went hiking with Sam"
    again = mem.add(messages=[Message("user", text, timestamp=at(2023, 3, 20))], agent_id="a")[0]
    mem.add(messages=[Message("user", text, timestamp=at(2023, 4, 21))], agent_id="a")
    other = mem.add(messages=[Message("user", text, timestamp=at(2023, 4, 14))], agent_id="b")[0]
    assert mem.get(again).said_at == at(2023, 4, 21)
    yesterday = mem.search("Where did I go hiking yesterday?", reference_time=ASKED)
    assert [h.memory.id for h in yesterday[:2]] == [again, other]
    last_month = mem.search("Where did I go hiking last month?", reference_time=ASKED)
    assert [h.memory.id for h in last_month[:2]] == [again, other]


def test_a_tie_beyond_the_first_read_is_still_seen(lexical_store: SqliteMemoryStore) -> None:
    mem = _memory(lexical_store)
    march = _said(mem, "I went hiking with Sam", at(2023, 3, 12))  # the oldest of the run
    for i, name in enumerate(
        ["Ana", "Bo", "Cy", "Di", "Ed", "Flo", "Gus", "Hal", "Ivy", "Jo", "Kai", "Lu"]
    ):
        _said(mem, f"I went hiking with {name}", at(2023, 4, 1 + i))
    hits = mem.search("Where did I go hiking last month?", top_k=3, reference_time=ASKED)
    assert hits[0].memory.id == march
    assert len({h.score for h in hits}) == 1


def test_a_query_without_time_words_ranks_exactly_as_before(
    hybrid_store: SqliteMemoryStore,
) -> None:
    mem = _memory(hybrid_store)
    for i, text in enumerate(["I went hiking with Sam", "I went hiking with Ana", "Tea at noon"]):
        _said(mem, text, at(2023, 3, 10 + i))
    plain = mem.search("Where did I go hiking?")
    dated = mem.search("Where did I go hiking?", reference_time=ASKED)
    assert [(h.memory.id, h.score) for h in dated] == [(h.memory.id, h.score) for h in plain]


def test_without_time_words_equal_hits_stay_newest_first(
    lexical_store: SqliteMemoryStore,
) -> None:
    mem = _memory(lexical_store)
    march = _said(mem, "I went hiking with Sam", at(2023, 3, 12))
    april = _said(mem, "I went hiking with Ana", at(2023, 4, 19))
    hits = mem.search("Where did I go hiking?", reference_time=ASKED)
    assert [h.memory.id for h in hits[:2]] == [april, march]


def test_a_time_word_never_outweighs_relevance(lexical_store: SqliteMemoryStore) -> None:
    mem = _memory(lexical_store)
    better = _said(mem, "I went hiking up Mount Tam with Sam", at(2023, 4, 19))
    _said(mem, "I went for a walk", at(2023, 3, 12))
    hits = mem.search("Which mount did I go hiking last month?", reference_time=ASKED)
    assert hits[0].memory.id == better


def test_reference_time_must_be_a_datetime(lexical_store: SqliteMemoryStore) -> None:
    mem = _memory(lexical_store)
    with pytest.raises(InvalidInput) as caught:
        mem.search("last month", reference_time="2023-04-22")  # type: ignore[arg-type]
    assert caught.value.field == "reference_time"


@pytest.mark.parametrize("asked", [datetime(1, 1, 1), datetime(9999, 12, 31, 23)])
def test_a_reference_time_the_calendar_cannot_count_from_is_refused(
    lexical_store: SqliteMemoryStore, asked: datetime
) -> None:
    """Asking "last year" in year 1 or "the past two weeks" at the end raised ValueError
    or OverflowError from the date arithmetic; the store refuses such a date up front."""
    mem = _memory(lexical_store)
    _said(mem, "I went hiking with Sam", at(2023, 3, 12))
    pattern = mem.service.search_pattern
    for query in ("Where did I go hiking last year?", "hiking in the past two weeks"):
        with pytest.raises(InvalidInput) as caught:
            lexical_store.search(STORE, pattern, query, reference_time=asked)
        assert caught.value.field == "reference_time"


@pytest.mark.parametrize(
    "query",
    [
        "hiking on 9999-12-31",
        "hiking on 0001-01-01",
        "hiking in May 0000",
        "hiking in December 9999",
        "hiking on December 31, 9999",
        "hiking on January 1st, 0001",
    ],
)
def test_a_date_in_the_query_past_the_calendar_is_no_time_word(
    lexical_store: SqliteMemoryStore, query: str
) -> None:
    """A date the calendar cannot hold (year 0, or a span reaching past 9999) in the query
    itself raised ValueError or OverflowError out of the search, whatever its reference time;
    such a phrase now names no span, and the words still find the memory."""
    mem = _memory(lexical_store)
    hiking = _said(mem, "I went hiking with Sam", at(2023, 3, 12))
    assert window(query, ASKED) is None
    assert [h.memory.id for h in mem.search(query, reference_time=ASKED)] == [hiking]


@pytest.mark.parametrize("query", ["Where was I on March 32?", "Where was I on March 99?"])
def test_a_day_no_month_holds_is_no_time_word(query: str) -> None:
    """ "March 32" or "March 99" is no date; the number was read as a year (March 2032,
    March 1999), and a memory said then was put ahead of an equal one."""
    assert window(query, ASKED) is None


def test_a_day_no_month_holds_does_not_favour_a_memory_of_that_year(
    lexical_store: SqliteMemoryStore,
) -> None:
    mem = _memory(lexical_store)
    old = _said(mem, "I went hiking with Sam", at(1999, 3, 1))
    new = _said(mem, "I went hiking with Ana", at(2023, 3, 12))  # newer: ties go to it
    hits = mem.search("Where did I go hiking on March 99?", reference_time=ASKED)
    assert [h.memory.id for h in hits[:2]] == [new, old]


@pytest.mark.parametrize(
    ("query", "asked"),
    [
        ("hiking 999 years ago", datetime(1000, 1, 1)),
        ("hiking in the last 999 years", datetime(1000, 1, 1)),
    ],
)
def test_time_words_reaching_before_year_one_name_no_span(
    lexical_store: SqliteMemoryStore, query: str, asked: datetime
) -> None:
    """The earliest reference time allowed, with the most a time word counts back (999
    years, plus a span's slack), reached before year 1 and raised OverflowError."""
    mem = _memory(lexical_store)
    hiking = _said(mem, "I went hiking with Sam", at(2023, 3, 12))
    assert [h.memory.id for h in mem.search(query, reference_time=asked)] == [hiking]


def test_the_recall_block_keeps_the_order_the_dates_decided(
    lexical_store: SqliteMemoryStore,
) -> None:
    """The block a host injects before a turn re-sorted equal hits by write date, which undid
    the order the question's date gave them."""
    mem = _memory(lexical_store)
    _said(mem, "I went hiking with Sam", at(2023, 3, 12))
    _said(mem, "I went hiking with Ana", at(2023, 4, 19))
    block = mem.service.recall("Where did I go hiking last month?", reference_time=ASKED)
    assert block.index("with Sam") < block.index("with Ana")
    later = mem.service.recall(
        "Where did I go hiking last month?", reference_time=datetime(2023, 5, 20)
    )
    assert later.index("with Ana") < later.index("with Sam")
