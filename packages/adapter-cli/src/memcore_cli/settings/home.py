"""Where the CLI keeps its data and its config file: ``$MEMCORE_HOME`` or the user data dir."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from memcore_sqlite.storage.room import nearest_existing

HOME_ENV = "MEMCORE_HOME"
DB_FILENAME = "memcore.db"
CONFIG_FILENAME = "config.json"


def home_expanded(path: str | Path) -> Path | None:
    """``path`` with a leading ``~`` or ``~user`` made the home folder, or None when there is
    no such user (or no home): Python raises ``RuntimeError`` there, which each caller turns
    into its own one-line error."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return None


def expand(path: str, *, field: str) -> Path:
    """:func:`home_expanded`, or a :class:`ConfigError` naming ``field``."""
    expanded = home_expanded(path)
    if expanded is None:
        from memcore.errors import ConfigError

        raise ConfigError(f"{path!r} names a home folder this system does not know", field=field)
    return expanded


def data_home(environ: Mapping[str, str]) -> Path:
    """``$MEMCORE_HOME`` when set, else the platform's user data directory for memcore."""
    explicit = environ.get(HOME_ENV, "").strip()
    if explicit:
        return expand(explicit, field=HOME_ENV)
    import platformdirs

    return Path(platformdirs.user_data_dir("memcore", appauthor=False))


def default_config_path(home: Path) -> Path:
    return home / CONFIG_FILENAME


def database_path(home: Path, local_path: str | None, *, source: str) -> Path:
    """The embedded store's file: the config's ``local_path`` (relative to home) or the
    default; ``source`` is the config file, named when its ``local_path`` is refused."""
    if local_path:
        if not local_path.strip():  # a hand-written " ": never a file named so in the home
            from memcore.errors import ConfigError

            raise ConfigError(
                "local_path is blank; give a file path, or leave it out for the default",
                field="local_path",
                source=source,
            )
        path = expand(local_path, field="local_path")
        return path if path.is_absolute() else home / path
    return home / DB_FILENAME


def checked_database(path: Path, *, field: str) -> Path:
    """``path``, or a :class:`ConfigError` naming ``field`` (the setting it came from) when no
    database file can have it (SQLite's rule, :func:`memcore.limits.path_problem`)."""
    from memcore.limits import path_problem

    problem = path_problem(str(path))
    if problem is not None:
        from memcore.errors import ConfigError

        raise ConfigError(f"the database path {path} will not do: {problem}", field=field)
    return path


def too_long(path: Path) -> str | None:
    """What the file system's own limits say of ``path`` before any file is made, or None: a
    name past ``NAME_MAX``, or the whole past ``PATH_MAX``, of the nearest folder that exists
    (else ``config set local_path`` took it and every later command failed on it)."""
    import os

    absolute = Path(os.path.abspath(path))
    existing = nearest_existing(absolute)
    try:
        name_max = os.pathconf(existing, "PC_NAME_MAX")
        path_max = os.pathconf(existing, "PC_PATH_MAX")
    except (OSError, ValueError):  # no such limits here (or not told): the open will say
        return None
    for part in absolute.relative_to(existing).parts:
        size = len(os.fsencode(part))
        if size > name_max:
            return f"a name in it is {size:,} bytes long; {existing} takes {name_max} at most"
    size = len(os.fsencode(str(absolute)))
    if size >= path_max:  # PATH_MAX counts the final NUL
        return f"it is {size:,} bytes long; paths under {existing} take {path_max - 1} at most"
    return None
