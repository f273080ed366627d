"""Time in the question: the span of dates a query's time words point at, and the order that
lets it decide between memories the search cannot otherwise tell apart.

"What did I do last month?" asked on 22 April means March; "5 days ago", "last Saturday",
"in May", "the past two weeks" each name a span relative to the question's date (the
search's reference time). :func:`window` finds those words and returns the span, or None
when the query names no time: a query without time words ranks exactly as before.

:class:`DatedOrder` puts, among hits of equal relevance, those said inside the span first
(otherwise equal hits go newest first). A larger say, a bounded boost on the relevance, was
measured under the 5-fold protocol (``benchmarks/longmemeval_time.py``) and gained nothing on
held-out folds; ties are where a date decides without outweighing any relevance.

Calendar arithmetic is python-dateutil's (``relativedelta``; its parser reads ISO dates such
as "2023-05-03"). The phrases are found with a short pattern list rather
than a general date finder: ``dateparser`` resolves these phrases too, but its first call
costs about 0.8 s, and an unresolvable phrase ("in the past two months") several seconds,
which a search path cannot pay.

Spans are generous (a day ± one, "3 weeks ago" ± four days): said dates are rough, and the
span only lifts memories (:func:`boost`), it never filters them out.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterator, Sequence
from datetime import date, datetime, timedelta, timezone, tzinfo
from typing import TYPE_CHECKING

import attrs

from memcore.calendar_words import MONTHS, WEEKDAYS
from memcore_sqlite.search.fused_order import FusedOrder, Ranked
from memcore_sqlite.storage.rows import rows_in

if TYPE_CHECKING:
    from dateutil.relativedelta import relativedelta

_NUMBERS = {
    "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6,
    "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12,
    "a couple of": 2, "couple of": 2, "a few": 3, "few": 3, "several": 3,
}  # fmt: skip
_NUM = r"(\d{1,3}|" + "|".join(sorted(map(re.escape, _NUMBERS), key=len, reverse=True)) + ")"
_UNIT = r"(day|week|month|year)s?"
_MONTH = r"(" + "|".join(m.capitalize() for m in MONTHS) + r")"
_DAY = r"(" + "|".join(WEEKDAYS) + r")"

_AGO = re.compile(rf"\b{_NUM}\s+{_UNIT}\s+(?:ago|back|earlier)\b", re.I)
_SPAN = re.compile(rf"\b(?:last|past|previous|recent)\s+(?:{_NUM}\s+)?{_UNIT}\b", re.I)
_THIS = re.compile(rf"\b(?:this|current)\s+{_UNIT}\b", re.I)
_WEEKDAY = re.compile(rf"\b(?:last|this past|on|past)\s+{_DAY}\b", re.I)
_WEEKEND = re.compile(r"\b(?:last|this past|past)\s+weekend\b", re.I)
_DAYWORD = re.compile(r"\b(yesterday|today|tonight|this morning|this evening)\b", re.I)
#: A month name in any case ("in june": chat is often lower case), with its day before
#: ("15 May", "the 3rd of March") or after it ("May 15th"), and its year. "May" only after a
#: word that makes it a month ("in May") or with a day or a year ("May 15"), and "may"/
#: "march" not capitalised only after a word that cannot go before the verb ("in may", never
#: "and may I" or "we march").
_IN_MONTH = re.compile(
    r"(?:\b(in|during|since|from|of|on|early|mid|late|last|until|through|and|or|between)\s+)?"
    r"(?:\b(?:the\s+)?(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?)?"
    rf"\b{_MONTH}\b(?:\s+(\d{{1,2}})(?:st|nd|rd|th)?\b)?(?:,?\s+(\d{{4}}))?",
    re.I,
)
_VERB_MONTHS = frozenset({"may", "march"})
_MONTH_LEADS = frozenset(
    {"in", "during", "since", "on", "early", "mid", "late", "last", "until", "through", "between"}
)
#: A year alone after a word that makes it a time ("in 2025", "during 2023"): the year.
_IN_YEAR = re.compile(r"\b(?:in|during|since|throughout)\s+((?:19|20)\d\d)\b(?!\s*-\d)", re.I)
_ISO = re.compile(r"\b(\d{4}-\d{2}-\d{2})\b")
#: A word every pattern above needs: most queries name no time, and one search for these
#: costs a fraction of running every pattern.
_CUE = re.compile(
    r"\b(?:ago|back|earlier|last|past|previous|recent|this|current|on|weekend|yesterday|today"
    r"|tonight|" + "|".join(MONTHS) + r"|(?:19|20)\d\d)\b|\d{4}-\d{2}-\d{2}",
    re.I,
)

_DAYS = {"day": 1, "week": 7}
_SLACK = {"day": 1, "week": 4, "month": 15, "year": 182}


@attrs.frozen
class Window:
    """A span of time, in seconds since the epoch: ``start`` inclusive, ``end`` exclusive."""

    start: float
    end: float

    def holds(self, when: float | None) -> bool:
        return when is not None and self.start <= when < self.end


def _count(word: str | None) -> int:
    if not word:
        return 1
    word = word.lower()
    return int(word) if word.isdigit() else _NUMBERS.get(word, 1)


def _step(unit: str, n: int) -> relativedelta:
    from dateutil.relativedelta import relativedelta

    unit = unit.lower()
    if unit in _DAYS:
        return relativedelta(days=_DAYS[unit] * n)
    return relativedelta(months=n) if unit == "month" else relativedelta(years=n)


def _day(d: date) -> datetime:
    return datetime(d.year, d.month, d.day)


Span = tuple[datetime, datetime]


def _ago(m: re.Match[str], now: datetime, today: datetime) -> Span | None:
    unit = m.group(2).lower()
    centre = _day((now - _step(unit, _count(m.group(1)))).date())
    slack = timedelta(days=_SLACK[unit])
    return centre - slack, centre + timedelta(days=1) + slack


def _span(m: re.Match[str], now: datetime, today: datetime) -> Span | None:
    unit, n = m.group(2).lower(), m.group(1)
    if n is None and unit in ("month", "year"):  # "last month": the calendar month before
        first = today.replace(day=1) if unit == "month" else today.replace(month=1, day=1)
        return first - _step(unit, 1), first
    # "the past two weeks", "last week": up to the question
    return now - _step(unit, _count(n)) - timedelta(days=1), now + timedelta(days=1)


def _this(m: re.Match[str], now: datetime, today: datetime) -> Span | None:
    unit = m.group(1).lower()
    start = {
        "day": today,
        "week": today - timedelta(days=today.weekday()),
        "month": today.replace(day=1),
        "year": today.replace(month=1, day=1),
    }[unit]
    return start, now + timedelta(days=1)


def _weekday(m: re.Match[str], now: datetime, today: datetime) -> Span | None:
    back = (today.weekday() - WEEKDAYS.index(m.group(1).lower())) % 7 or 7
    day = today - timedelta(days=back)
    return day, day + timedelta(days=1)


def _weekend(m: re.Match[str], now: datetime, today: datetime) -> Span | None:
    saturday = today - timedelta(days=(today.weekday() - 5) % 7 or 7)
    return saturday, saturday + timedelta(days=2)


def _dayword(m: re.Match[str], now: datetime, today: datetime) -> Span | None:
    day = today - timedelta(days=1) if m.group(1).lower() == "yesterday" else today
    return day, day + timedelta(days=1)


def _in_month(m: re.Match[str], now: datetime, today: datetime) -> Span | None:
    lead, day_before, name, day_after, year = m.groups()
    day_no = day_before or day_after
    lower = name.lower()
    if lower in _VERB_MONTHS and (
        (name == "May" and lead is None and not (day_no or year))  # "May I ask": no month
        or (name != name.capitalize() and (lead or "").lower() not in _MONTH_LEADS)
    ):
        return None
    month = MONTHS.index(lower) + 1
    lead = (lead or "").lower()
    if year:
        first = datetime(int(year), month, 1)
    elif lead == "last" and not day_no:  # the latest such month before this one
        first = datetime(now.year - (month >= now.month), month, 1)
    else:  # the latest such month that has begun by the question
        first = datetime(now.year - (month > now.month), month, 1)
    if not day_no:
        return _since(first, now) if lead == "since" else (first, first + _step("month", 1))
    # The day of that month, or ValueError when it has none ("March 32" is no date; a date
    # parser read its number as a year, March 2032).
    one = _month_day(first, int(day_no), today, dated=bool(year))
    return one - timedelta(days=1), one + timedelta(days=2)


def _month_day(first: datetime, day_no: int, today: datetime, *, dated: bool) -> datetime:
    """Day ``day_no`` of ``first``'s month. Without a year, the latest one reached by the
    question ("on December 25" asked on 5 December is last year's, as "in May" asked in
    January is), and a 29 February the latest one there was."""
    if dated:
        return first.replace(day=day_no)
    year = first.year
    for _ in range(9):  # a 29 February comes at least once in eight years
        try:
            one = first.replace(year=year, day=day_no)
        except ValueError:
            if (first.month, day_no) != (2, 29):
                raise
        else:
            if one <= today:
                return one
        year -= 1
    raise ValueError(f"no day {day_no} in month {first.month}")


def _in_year(m: re.Match[str], now: datetime, today: datetime) -> Span | None:
    first = datetime(int(m.group(1)), 1, 1)
    if m.group(0).lower().startswith("since"):
        return _since(first, now)
    return first, first.replace(year=first.year + 1)


def _since(first: datetime, now: datetime) -> Span | None:
    """ "since 2025", "since May": from then to the question (none when it is still ahead)."""
    end = now + timedelta(seconds=1)
    return (first, end) if first < end else None


def _iso(m: re.Match[str], now: datetime, today: datetime) -> Span | None:
    from dateutil import parser as date_parser

    one = date_parser.isoparse(m.group(1))
    return one - timedelta(days=1), one + timedelta(days=2)


#: Each time phrase and the span one of its matches names (None: none after all).
_PHRASES = (
    (_AGO, _ago),
    (_SPAN, _span),
    (_THIS, _this),
    (_WEEKDAY, _weekday),
    (_WEEKEND, _weekend),
    (_DAYWORD, _dayword),
    (_IN_MONTH, _in_month),
    (_IN_YEAR, _in_year),
    (_ISO, _iso),
)


def _spans(query: str, now: datetime) -> Iterator[Span]:
    today = _day(now.date())
    for phrase, span in _PHRASES:
        for m in phrase.finditer(query):
            try:
                found = span(m, now, today)
            except (ValueError, OverflowError):
                # A date the calendar cannot hold (year 0, "December 9999", "999 years ago"
                # asked in year 1000, "February 30"): the phrase names no span.
                continue
            if found is not None:
                yield found


def _seconds(moment: datetime, zone: tzinfo) -> float:
    return moment.replace(tzinfo=zone).timestamp()


def window(query: str, reference: datetime) -> Window | None:
    """The span the query's time words name, relative to ``reference`` (the question's date,
    read in its own time zone; a naive one as UTC), or None when it names none. Several
    phrases give the span covering them all ("in March and April")."""
    if _CUE.search(query) is None:
        return None
    zone = reference.tzinfo or timezone.utc
    now = reference.replace(tzinfo=None)
    spans = list(_spans(query, now))
    if not spans:
        return None
    start = min(s for s, _ in spans)
    end = max(e for _, e in spans)
    return Window(_seconds(start, zone), _seconds(end, zone))


#: When each memory was said: first (its first message's timestamp, else when it was
#: written) and last (``said_at``: said again, or its text edited, since).
_SAID = (
    "SELECT m.seq, COALESCE((SELECT MIN(g.timestamp) FROM messages g"
    " WHERE g.memory_seq = m.seq), m.created_at), m.said_at FROM memories m WHERE m.seq IN ({})"
)


class DatedOrder(FusedOrder):
    """``inner`` with each run of equal relevance reordered: memories said inside ``span``
    first, the rest as they were. Reads one hit past the ``k``-th, and on as far as its run
    goes: a later hit of equal relevance said in the span comes before it."""

    def __init__(self, inner: FusedOrder, span: Window, conn: sqlite3.Connection) -> None:
        super().__init__()
        self._inner = inner
        self._span = span
        self._conn = conn

    def _said(self, seqs: Sequence[int]) -> dict[int, tuple[float | None, ...]]:
        return {int(r[0]): (r[1], r[2]) for r in rows_in(self._conn, _SAID, list(seqs))}

    def first(self, k: int) -> Ranked:
        if k < 1:
            return []
        n = k + 1
        ranked = self._inner.first(n)
        # The run of the k-th score may go on past it: read until a lower score shows.
        while len(ranked) == n and ranked[-1][1].score >= ranked[k - 1][1].score:
            n *= 2
            ranked = self._inner.first(n)
        said = self._said([seq for seq, _ in ranked])
        place = {seq: i for i, (seq, _) in enumerate(ranked)}
        ranked = sorted(
            ranked,
            key=lambda hit: (
                -hit[1].score,
                # In the span when said there first or last: "yesterday" finds what was said
                # again yesterday, "last month" what was first said then.
                not any(self._span.holds(t) for t in said.get(hit[0], ())),
                place[hit[0]],
            ),
        )
        return ranked[:k]


def dated(
    conn: sqlite3.Connection, order: FusedOrder, query: str, reference: datetime
) -> FusedOrder:
    """``order`` with the query's span breaking ties (:class:`DatedOrder`), or ``order``
    itself when the query names no time."""
    span = window(query, reference)
    return order if span is None else DatedOrder(order, span, conn)
