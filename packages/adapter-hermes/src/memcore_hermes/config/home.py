"""What the plugin keeps under ``$HERMES_HOME``: config, secrets file, spool and local database.

Kept free of heavy imports: Hermes imports every provider just to ask ``is_available()``.
"""

from __future__ import annotations

import errno
import json
import os
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar, cast

from memcore_sqlite.storage.file_modes import (
    FILE_MODE,
    NULL_DEVICE,
    held,
    make_home,
    not_a_file,
    planted,
)

if TYPE_CHECKING:
    from memcore.config import MemcoreConfig

E = TypeVar("E", bound=Exception)

CONFIG_FILE = "tablestore_memory.json"
ENV_FILE = ".env"
SPOOL_FILE = "tablestore_memory_spool.sqlite3"
LOCAL_DB_FILE = "tablestore_memory_local.sqlite3"
#: How to fix a Hermes home folder that cannot be created (its files are Hermes', so the
#: embedded store's own MEMCORE_HOME would move nothing).
HOME_ADVICE = "set HERMES_HOME to a writable folder"


def home_expanded(path: str | os.PathLike[str]) -> Path | None:
    """``path`` with a leading ``~`` or ``~user`` made the home folder, or None when there is
    no such user (or no home): Python raises ``RuntimeError`` there, which each caller turns
    into its own one-line error. The plugin's one such helper (the CLI and the embedded store
    each have theirs; the plugin imports neither for it)."""
    try:
        return Path(path).expanduser()
    except RuntimeError:
        return None


def resolve_home(hermes_home: str | os.PathLike[str] | None = None) -> Path:
    """The active Hermes home: the argument, Hermes' own resolver, ``$HERMES_HOME``, ``~/.hermes``.

    Taken as written, as Hermes takes it: a ``HERMES_HOME`` quoted in a shell (``'~/hermes'``)
    is a folder named ``~`` in the working directory for Hermes' own files, so it is for the
    plugin's too (:meth:`HermesHome.elsewhere` finds the plugin's files in the folder the
    ``~`` would have named)."""
    if hermes_home:
        return Path(hermes_home)
    try:
        from hermes_constants import get_hermes_home  # type: ignore[import-untyped,unused-ignore]

        return Path(get_hermes_home())
    except ImportError:
        pass
    env = os.environ.get("HERMES_HOME", "").strip()
    return Path(env) if env else Path.home() / ".hermes"


def _absolute(path: Path) -> Path:
    try:
        return Path(os.path.abspath(path))
    except OSError:  # no working directory left: kept as Hermes has it
        return path


class HermesHome:
    """The plugin's files inside one Hermes home (a profile has its own)."""

    def __init__(self, root: str | os.PathLike[str] | None = None) -> None:
        self.written = resolve_home(root)
        #: Made absolute when written with a ``~``: a path handed on (the embedded store's
        #: file) must not have it expanded by the next reader.
        self.root = _absolute(self.written) if str(self.written).startswith("~") else self.written

    def __repr__(self) -> str:
        return f"HermesHome({str(self.root)!r})"

    @property
    def config_file(self) -> Path:
        return self.root / CONFIG_FILE

    def store_advice(self, error: E) -> E:
        """A missing memory store's error with the ``memcore ...`` commands it advises
        (create the store, run doctor) pointed at this home (``--hermes-home``): run as
        written, they read memcore's own config, often the embedded store, and the store
        this home's sessions read stays missing. Any other error is returned as it is."""
        from memcore.errors import StoreNotFound

        if not isinstance(error, StoreNotFound):
            return error
        return cast(E, error.advised_with(["--hermes-home", str(self.root)]))

    def elsewhere(self) -> tuple[Path, list[str]] | None:
        """The folder this home's ``~`` names in a shell, and the plugin's files there, when
        the home is written with one and that folder (not this one) holds some. Releases
        before this one expanded the ``~`` for sessions: their config, unsent writes (the
        spool) and local memories are there, out of sight, and nothing moves them."""
        text = str(self.written)
        if not text.startswith("~"):
            return None
        other = home_expanded(text)
        if other is None:
            return None
        try:
            if other.resolve() == self.root.resolve():
                return None
            found = [n for n in (CONFIG_FILE, SPOOL_FILE, LOCAL_DB_FILE) if (other / n).exists()]
        except (OSError, RuntimeError):
            return None
        return (other, found) if found else None

    def elsewhere_warning(self) -> str | None:
        """One line naming both folders when :meth:`elsewhere` finds files, else None."""
        found = self.elsewhere()
        if found is None:
            return None
        other, names = found
        return (
            f"HERMES_HOME is {str(self.written)!r} as written, which Hermes reads as {self.root} (a "
            f"folder named '~' in the working directory), as this plugin now does; its files "
            f"in {other}, where a shell puts '~' ({', '.join(names)}), are not used: move the "
            f"tablestore_memory* files from there, or set HERMES_HOME={other} (unquoted)"
        )

    @property
    def env_file(self) -> Path:
        return self.root / ENV_FILE

    @property
    def spool_file(self) -> Path:
        return self.root / SPOOL_FILE

    def local_db_file(self, config: MemcoreConfig | None = None) -> Path:
        """The embedded store's database: ``local_path`` from the config, else inside the home.
        A blank ``local_path``, or one in an unknown user's home, is a
        :class:`~memcore.errors.ConfigError` naming the config file."""
        if config is not None and config.local_path:
            from memcore.errors import ConfigError

            if not config.local_path.strip():  # hand-written " ": never a file named so here
                raise ConfigError(
                    "local_path is blank; give a file path, or leave it out for the default",
                    field="local_path",
                    source=str(self.config_file),
                )
            path = home_expanded(config.local_path)
            if path is None:
                raise ConfigError(
                    f"local_path {config.local_path!r} names a home folder this system does "
                    "not know",
                    field="local_path",
                    source=str(self.config_file),
                )
            return path if path.is_absolute() else self.root / path
        return self.root / LOCAL_DB_FILE

    # -- config ---------------------------------------------------------------------------
    def read_config_bytes(self) -> bytes:
        """The config file's bytes; none when it is missing or the null device. A named pipe
        or another device is an :class:`OSError`: its read would hang Hermes' start, or
        never end (``/dev/zero``)."""
        kind = not_a_file(self.config_file)
        if kind == NULL_DEVICE:
            return b""
        if kind is not None:
            raise OSError(errno.EINVAL, f"its path is {kind}, not a file")
        from memcore_hermes.config.envfile import config_file_problem

        problem = config_file_problem(self.config_file)
        if problem is not None:  # not obeyed: its endpoint could be anyone's
            raise OSError(errno.EPERM, problem)
        try:
            return self.config_file.read_bytes()
        except FileNotFoundError:
            return b""

    def load_config(self) -> MemcoreConfig:
        """Parse ``tablestore_memory.json``; a missing file means the defaults."""
        from memcore.config import parse_config
        from memcore.errors import ConfigError

        try:
            raw = self.read_config_bytes()
        except OSError as exc:
            raise ConfigError(
                f"cannot read the configuration ({exc.strerror})", source=str(self.config_file)
            ) from None
        return parse_config(raw, source=str(self.config_file))

    def save_config(self, values: Mapping[str, Any]) -> MemcoreConfig:
        """Merge ``values`` into the config file, validated, written atomically with mode 0600."""
        from memcore.config import dump_config, merge_config
        from memcore.errors import ConfigError

        with held(self.config_file):  # another change at once would be written over
            base = self.load_config()
            merged = merge_config(base, _coerce_setup_values(values), source=str(self.config_file))
            try:
                atomic_write(self.config_file, dump_config(merged).encode("utf-8"))
            except OSError as exc:
                raise ConfigError(
                    f"cannot write the configuration ({exc.strerror})",
                    source=str(self.config_file),
                ) from None
        return merged

    def peek_config(self) -> dict[str, Any]:
        """The config file's values as written, read cheaply (no validation, no memcore
        import); empty when missing or unreadable."""
        try:
            data = json.loads(self.read_config_bytes().decode("utf-8-sig") or "{}")
        except (OSError, ValueError, RecursionError):  # RecursionError: absurdly nested JSON
            return {}
        return data if isinstance(data, dict) else {}

    def peek_backend(self) -> str | None:
        """The configured backend, read cheaply for ``is_available()`` (None when unreadable)."""
        value = self.peek_config().get("backend")
        return value if isinstance(value, str) else None


# Setup prompts return text; these keys are typed in the config model.
_BOOL_KEYS = frozenset({"enable_rerank", "auto_create_store"})
_INT_KEYS = frozenset({"top_k", "recall_wait_ms", "recall_neighbours"})
_FLOAT_KEYS = frozenset({"timeout"})


def _coerce_setup_values(values: Mapping[str, Any]) -> dict[str, Any]:
    """Turn the strings ``hermes memory setup`` collects into the config's types.

    Only exact spellings are accepted; anything else is passed through so the config model
    rejects it with an error that names the key.
    """
    out: dict[str, Any] = {}
    for key, value in values.items():
        if isinstance(value, str):
            text = value.strip()
            if key in _BOOL_KEYS and text.lower() in ("true", "false"):
                value = text.lower() == "true"
            elif key in _INT_KEYS and text.isascii() and text.lstrip("-").isdigit():
                value = int(text)
            elif key in _FLOAT_KEYS:
                try:
                    value = float(text)
                except ValueError:
                    pass
            elif text == "":
                value = None
        out[key] = value
    return out


def atomic_write(path: Path, data: bytes, *, mode: int = FILE_MODE) -> None:
    """Write ``data`` to ``path`` through a temporary file and a rename, with ``mode``; a
    symlink (a config kept with the user's dotfiles) stays, and its target is replaced; one
    that another user left in a shared folder is refused (:func:`planted`, as the CLI's)."""
    make_home(path.parent, advice=HOME_ADVICE)
    link = planted(path)
    if link is not None:  # following it would replace a file of another user's choosing
        from memcore.errors import PermissionDenied

        raise PermissionDenied(
            f"cannot write {path} (a {link} another user left in a shared folder)",
            field=path.name,
        )
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    kind = not_a_file(path)
    if kind is not None:  # renamed over, a device (/dev/null) would become this file
        raise OSError(errno.EINVAL, f"{path} is {kind}, not a file")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    try:
        dir_fd = os.open(path.parent, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(dir_fd)
    except OSError:
        pass
    finally:
        os.close(dir_fd)
