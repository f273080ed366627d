"""The server's database path stays on the server: no answer names the file or its folder.

The embedded store's errors name its file in ``message`` and use it as ``field``: the
``memcore`` CLI shows them to the local user, who chose the file. A client of this server may
be another tenant on another machine, and the path tells it the server's layout (its home
folder, its user's name): every error text an answer carries goes through
:func:`hide_database`, which puts a neutral word in place of each spelling of the path (as
given, absolute, resolved, ``~``-relative, as a ``file:`` URI) and of its folder.
"""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path

DATABASE = "the server's database"
FOLDER = "the server's database folder"
#: The ``field`` of an error whose field named the file or its folder.
FIELD = "database"
#: How the embedded store's messages introduce the file, replaced with it ("the memory
#: database /x/memcore.db is busy" reads "the server's database is busy").
_INTRODUCED = "the memory database "


def hide_database(text: str, database: str | os.PathLike[str] | None) -> str:
    """``text`` with the path of ``database``, and of its folder, put as neutral words."""
    if database is None or not str(database):
        return text
    return _pattern(str(database)).sub(_word, text)


def public_error(
    body: Mapping[str, object], database: str | os.PathLike[str] | None
) -> dict[str, object]:
    """An error's ``to_dict()`` with no trace of ``database`` in its ``message`` or ``field``;
    its type, code and retryable flag are left as they are."""
    out = dict(body)
    message, field = out.get("message"), out.get("field")
    if isinstance(message, str):
        out["message"] = hide_database(message, database)
    if isinstance(field, str) and hide_database(field, database) != field:
        out["field"] = FIELD
    return out


def _word(match: re.Match[str]) -> str:
    return DATABASE if match.group("file") else FOLDER


@functools.lru_cache(maxsize=8)
def _pattern(database: str) -> re.Pattern[str]:
    file = Path(database)
    pattern = f"(?P<file>(?:{re.escape(_INTRODUCED)})?(?:{_alternatives(_spellings(file))}))"
    folders = {s for s in _spellings(file.parent) if _names_a_place(s)}
    if folders:
        pattern += f"|(?P<folder>{_alternatives(folders)})"
    return re.compile(pattern)


def _spellings(path: Path) -> set[str]:
    """The ways a message may write ``path``."""
    spellings = {str(path), os.path.abspath(path)}
    try:
        resolved = path.resolve()
        spellings |= {str(resolved), resolved.as_uri()}
        home = str(Path.home())
    except (OSError, RuntimeError, ValueError):  # a loop of links, no home folder
        return spellings
    for absolute in list(spellings):
        if home != os.sep and absolute.startswith(home + os.sep):
            spellings.add("~" + absolute[len(home) :])
    return spellings


def _names_a_place(folder: str) -> bool:
    """False for a folder spelling that tells nothing and would match ordinary text: a
    relative one ("." or "data") or the root."""
    if folder.startswith("~" + os.sep):
        return True
    path = Path(folder.removeprefix("file://"))
    return path.is_absolute() and path != Path(path.anchor)


def _alternatives(spellings: Iterable[str]) -> str:
    """A regex alternation of ``spellings``, the longest first (so a longer one wins)."""
    return "|".join(re.escape(s) for s in sorted(set(spellings), key=len, reverse=True))
