"""How a table for people fits the terminal it is printed on: one line per row.

A memory's id is 32 characters; with its scope and date beside it a table of memories needed
82 columns before its text got any, so on an 80-column terminal each memory took six or more
wrapped lines and its scope broke mid-word. When a table would not fit with :data:`TEXT_ROOM`
cells of text, its ids show as the shortest prefix, of at least :data:`SHORT_ID` characters,
that tells apart the ids it shows (as ``git log --oneline`` does): every command that takes an
id takes a unique prefix of it, and ``--format plain`` and ``--json`` keep ids whole. Long
text then gets the width that is left, on one line.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from rich.cells import cell_len

#: Columns of long text: cut to the width left, one line each.
LONG_TEXT = frozenset({"text", "content", "detail"})
#: Columns of ids that a command takes back (memories, tasks, actions).
IDS = frozenset({"id", "target"})
#: The least of a shortened id (32 bits of hex: the docs' own examples, ``5f0c2a1e``).
SHORT_ID = 8
#: Cells of text a table should leave its long text before it shortens its ids.
TEXT_ROOM = 30
#: The narrowest long-text column, however little is left: a word or two, then the ellipsis.
LEAST_TEXT = 12


def unique_prefixes(ids: Iterable[str], least: int = SHORT_ID) -> dict[str, str]:
    """Each distinct id's shortest prefix of at least ``least`` characters that no other of
    ``ids`` starts with (an id that is another's prefix stays whole)."""
    distinct = sorted({i for i in ids if i})
    prefixes = {}
    for n, current in enumerate(distinct):
        need = least
        for other in distinct[max(n - 1, 0) : n] + distinct[n + 1 : n + 2]:
            need = max(need, _shared(current, other) + 1)
        prefixes[current] = current[:need]
    return prefixes


def fit(columns: Sequence[str], rows: list[list[str]], width: int) -> tuple[list[list[str]], int]:
    """The rows as shown in ``width`` cells (ids shortened when the table would not fit
    otherwise) and the width each long-text column gets."""
    text = [i for i, name in enumerate(columns) if name in LONG_TEXT]
    ids = [i for i, name in enumerate(columns) if name in IDS]
    frame = 3 * len(columns) + 1  # a rule and two spaces of padding per column, a last rule

    def others(shown: list[list[str]]) -> int:
        return sum(_natural(columns, shown, i) for i in range(len(columns)) if i not in text)

    least_text = sum(min(_natural(columns, rows, i), TEXT_ROOM) for i in text)
    if ids and others(rows) + least_text + frame > width:
        for i in ids:
            short = unique_prefixes(row[i] for row in rows)
            rows = [[*row[:i], short.get(row[i], row[i]), *row[i + 1 :]] for row in rows]
    room = (width - others(rows) - frame) // max(len(text), 1)
    return rows, max(room, LEAST_TEXT)


def _natural(columns: Sequence[str], rows: list[list[str]], i: int) -> int:
    return max(cell_len(columns[i]), *(cell_len(row[i]) for row in rows))


def _shared(a: str, b: str) -> int:
    """How many leading characters ``a`` and ``b`` share."""
    return next((k for k, (x, y) in enumerate(zip(a, b)) if x != y), min(len(a), len(b)))
