"""How results reach stdout: rich tables for people, tab-separated lines for pipes, or JSON.

Data goes to stdout; notes, progress and errors go to stderr, so the output can always be
piped. Tables cut long text to one short line (``get`` and ``--json`` give it whole); plain
lines keep every value whole, with tabs and line breaks escaped so that one row stays one line.
Control characters never reach the terminal raw: every human format shows them as escapes
(see ``visible``); JSON keeps the text exact.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import sys
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, Protocol

from memcore_cli.output.visible import json_safe, one_line, visible

PIPE_WIDTH = 120
#: Table cells of long text are cut here (characters), so a long memory stays one row.
TABLE_TEXT = 80


class Advance(Protocol):
    def __call__(
        self, steps: int = 1, *, total: int | None = None, note: str | None = None
    ) -> None: ...


def when(seconds: float | None) -> str:
    """A timestamp for people (UTC, to the second). A time no calendar date holds (a store
    written before imports were bounded) is shown as its number, so one such memory cannot
    break every listing of its tenant."""
    if seconds is None:
        return ""
    try:
        stamp = dt.datetime.fromtimestamp(seconds, tz=dt.timezone.utc)
    except (OverflowError, OSError, ValueError):
        return f"{seconds:g}"
    return stamp.strftime("%Y-%m-%d %H:%M:%S")


def cut(text: str, width: int = TABLE_TEXT) -> str:
    """``text`` on one line of at most ``width`` characters, an ellipsis marking a cut."""
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1].rstrip() + "…"


def plain_cell(value: Any) -> str:
    """A value for a tab-separated line: whole, with every control character (tab and
    newline too) and backslash escaped."""
    return one_line(_show(value))


class Output:
    def __init__(self, format: str = "table") -> None:
        self.format = format
        self.as_json = format == "json"
        self._console: Any = None
        self._err: Any = None

    # -- scripts ------------------------------------------------------------------------
    def json(self, document: Any) -> None:
        """One JSON document on stdout."""
        sys.stdout.write(json_safe(json.dumps(document, ensure_ascii=False, indent=2)) + "\n")
        sys.stdout.flush()

    def json_line(self, document: Any) -> None:
        """One line of a JSON Lines stream on stdout."""
        text = json.dumps(document, ensure_ascii=False, separators=(",", ":"))
        sys.stdout.write(json_safe(text) + "\n")

    # -- people -------------------------------------------------------------------------
    @property
    def console(self) -> Any:
        if self._console is None:
            from rich.console import Console

            self._console = Console(highlight=False, width=_width(sys.stdout))
        return self._console

    @property
    def err(self) -> Any:
        if self._err is None:
            from rich.console import Console

            self._err = Console(stderr=True, highlight=False, width=_width(sys.stderr))
        return self._err

    def note(self, message: str) -> None:
        """A remark for people on stderr (kept out of the data on stdout)."""
        sys.stderr.write(visible(message) + "\n")

    def line(self, text: str) -> None:
        """One plain line on stdout, never wrapped (people copy ids out of it)."""
        sys.stdout.write(visible(text) + "\n")
        sys.stdout.flush()

    def table(
        self,
        columns: Sequence[str],
        rows: Iterable[Sequence[Any]],
        *,
        title: str | None = None,
        empty: str = "nothing to show",
    ) -> None:
        """Rows for people (a table, long text cut) or for pipes (tab-separated, whole)."""
        rows = list(rows)
        if not rows:
            self.note(empty)
            return
        if self.format == "plain":
            sys.stdout.write("".join("\t".join(map(plain_cell, row)) + "\n" for row in rows))
            sys.stdout.flush()
            return
        from rich.markup import escape
        from rich.table import Table

        from memcore_cli.output.fitting import IDS, LONG_TEXT, fit

        shown = [
            [
                visible(cut(_show(cell)) if columns[i] in LONG_TEXT else _show(cell))
                for i, cell in enumerate(row)
            ]
            for row in rows
        ]
        shown, text_width = fit(columns, shown, self.console.width)
        table = Table(title=title, show_lines=False)
        for name in columns:
            if name in LONG_TEXT:  # one line: cut again to the width left, with an ellipsis
                table.add_column(name, no_wrap=True, overflow="ellipsis", max_width=text_width)
            elif name in IDS:
                table.add_column(name, no_wrap=True)
            else:
                table.add_column(name, overflow="fold")
        for cells in shown:
            table.add_row(*(escape(c) for c in cells))
        self.console.print(table)

    def fields(self, pairs: Iterable[tuple[str, Any]], *, title: str | None = None) -> None:
        """A two-column key/value table for one object."""
        self.table(("field", "value"), ((k, _show(v)) for k, v in pairs), title=title)

    @contextlib.contextmanager
    def progress(self, description: str, *, total: int | None = None) -> Iterator[Advance]:
        """A progress bar on stderr when it is a terminal; silent otherwise."""
        if not sys.stderr.isatty():

            def advance_quietly(
                steps: int = 1, *, total: int | None = None, note: str | None = None
            ) -> None:
                if note is not None:
                    sys.stderr.write(f"{description}: {note}\n")

            yield advance_quietly
            return
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            SpinnerColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        with Progress(
            SpinnerColumn(),
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=self.err,
            transient=False,
        ) as bar:
            task = bar.add_task(description, total=total)

            def advance(
                steps: int = 1, *, total: int | None = None, note: str | None = None
            ) -> None:
                changes: dict[str, Any] = {"advance": steps}
                if total is not None:
                    changes["total"] = total
                if note is not None:
                    changes["description"] = f"{description}: {note}"
                bar.update(task, **changes)

            yield advance


def _width(stream: Any) -> int | None:
    """Rich's own choice on a terminal (or $COLUMNS); 120 columns when piped."""
    if os.environ.get("COLUMNS") or (hasattr(stream, "isatty") and stream.isatty()):
        return None
    return PIPE_WIDTH


def _show(value: Any) -> str:
    if value is None:
        return ""
    if isinstance(value, (dict, list)):
        return json.dumps(value, ensure_ascii=False)
    return str(value)
