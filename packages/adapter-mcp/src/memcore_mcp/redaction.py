"""The server's database path stays on the server: no answer names the file or its folder.

The embedded store's errors name its file in ``message`` and use it as ``field``: the
``memcore`` CLI shows them to the local user, who chose the file. A client of this server may
be another tenant on another machine, and the path tells it the server's layout (its home
folder, its user's name): every error text an answer carries goes through
:func:`hide_database`, which puts a neutral word in place of each spelling of the path (as
given, absolute, resolved, ``~``-relative, as a ``file:`` URI) and of its folder.

No value a client sent reaches a log line either (:class:`ClientValues`).
"""

from __future__ import annotations

import functools
import logging
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


#: The SDK's loggers that put a value the client sent into a line: a refused ``Host`` or
#: ``Origin`` header, word for word, and a session id sent with another tenant's token.
CLIENT_VALUE_LOGGERS = ("mcp.server.transport_security", "mcp.server.streamable_http_manager")
CLIENT_VALUE = "[value not logged]"


class ClientValues(logging.Filter):
    """Leave the values a client sent out of the SDK's log lines (shown with ``--debug``):
    a header may carry a token pasted in the wrong place, and raw text from the network
    could forge lines (a newline) or drive the terminal (escape codes). The line keeps its
    words and says the value is not logged."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.args:
            args = record.args if isinstance(record.args, tuple) else (record.args,)
            record.args = tuple(CLIENT_VALUE for _ in args)
        elif isinstance(record.msg, str) and ": " in record.msg:  # an f-string: "words: value"
            record.msg = f"{record.msg.split(': ', 1)[0]}: {CLIENT_VALUE}"
        return True


def keep_client_values_out_of_logs() -> None:
    """Install :class:`ClientValues` on the SDK's loggers that log what a client sent."""
    for name in CLIENT_VALUE_LOGGERS:
        logger = logging.getLogger(name)
        if not any(isinstance(f, ClientValues) for f in logger.filters):
            logger.addFilter(ClientValues())
