"""The bounded line reader under ``import``: lines broken where a text read of the file broke
them, and input past its bounds refused with the line it reached."""

from __future__ import annotations

import io

import pytest

from memcore.errors import InvalidInput
from memcore_cli.parsing.bounded import MAX_DOCUMENT_BYTES, bounded_lines


def _lines(data: bytes, **kwargs: int) -> list[tuple[int, str]]:
    stream = io.BytesIO(data)
    return list(bounded_lines(stream.readline, "f", field="file", instead="x", **kwargs))


def test_lines_break_at_newlines_of_every_kind_but_not_inside_a_text() -> None:
    data = "\ufeffa\r\nb\rc\nd\u2028e\x85f\ng".encode()
    assert _lines(data) == [(1, "a"), (2, "b"), (3, "c"), (4, "d\u2028e\x85f"), (5, "g")]


def test_more_than_the_total_is_refused() -> None:
    with pytest.raises(InvalidInput, match="f is larger than an import reads"):
        _lines(b"{}\n" * 100, total=30)


def test_a_line_past_the_bound_names_its_number() -> None:
    data = b"{}\n" + b"x" * (MAX_DOCUMENT_BYTES + 1)
    with pytest.raises(InvalidInput, match="f line 2 is longer than any record"):
        _lines(data)


def test_bytes_that_are_not_utf8_name_their_line() -> None:
    with pytest.raises(InvalidInput, match=r"cannot read f \(not UTF-8 text at line 2\)"):
        _lines(b"{}\n\xe9\n")


def test_lines_a_read_holds_are_numbered_and_bounded_each() -> None:
    """A read stops at ``\\n`` only: the lone ``\\r`` breaks inside it were each a line, but
    a bad byte was named at the read's first line, and its size was one line's."""
    with pytest.raises(InvalidInput, match=r"not UTF-8 text at line 3\)"):
        _lines(b"a\r\nb\r\xe9\rd\n")
    short = b"x" * 1023 + b"\r"
    lines = _lines(short * (MAX_DOCUMENT_BYTES // 1024 + 2))
    assert len(lines) == MAX_DOCUMENT_BYTES // 1024 + 2
    assert lines[-1] == (len(lines), "x" * 1023)


def test_a_crlf_split_across_two_reads_is_one_break() -> None:
    reads = [b"a\r", b"\nb\r", b"c\n", b""]
    found = list(bounded_lines(lambda _n: reads.pop(0), "f", field="file", instead="x"))
    assert found == [(1, "a"), (2, "b"), (3, "c")]


def test_a_line_ended_by_a_lone_cr_is_bounded_like_any_other() -> None:
    """A line ended by ``\\r`` inside the data read was yielded whatever its size: the
    unended part a read leaves over, joined to the next read, made a line of up to twice the
    bound, handed on to be parsed."""
    head = b"{}\r" + b"x" * (MAX_DOCUMENT_BYTES - 3)  # one read: the bound plus one byte
    reads = [head + b"x", b"x" * 10 + b"\r{}\n", b""]
    with pytest.raises(InvalidInput, match="f line 2 is longer than any record"):
        list(bounded_lines(lambda _n: reads.pop(0), "f", field="file", instead="x"))
    exact = b"{}\r" + b"x" * MAX_DOCUMENT_BYTES + b"\r{}\n"  # at the bound: still a line
    assert [n for n, _ in _lines(exact)] == [1, 2, 3]
