"""Reading and writing the JSON config file (same keys as the plugin's ``tablestore_memory.json``).

Writes are atomic (temp file in the same directory, fsync, rename) and the file is mode 0600,
so a crash never leaves half a config and other users cannot read it.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

from memcore.config import MemcoreConfig, dump_config, parse_config
from memcore.errors import ConfigError, MemcoreError, PermissionDenied


def read_config(path: Path, *, required: bool) -> MemcoreConfig:
    """The config in ``path``; defaults when it is missing and not ``required``, or the null
    device (``--config /dev/null``: no settings)."""
    from memcore_sqlite.storage.file_modes import NULL_DEVICE, not_a_file, not_ours_to_read

    try:
        kind = not_a_file(path)
        if kind == NULL_DEVICE:
            return MemcoreConfig()
        if kind is not None:  # a FIFO would hang the read, /dev/zero never end it
            raise ConfigError(f"the config path is {kind}, not a file", source=str(path))
        foreign = not_ours_to_read(path)
        if foreign is not None:
            raise PermissionDenied(
                f"not reading the config file {path}: {foreign} (remove it, or set "
                "MEMCORE_HOME to a folder of your own)",
                field="config",
            )
        raw = path.read_bytes()
    except FileNotFoundError:
        if required:
            raise ConfigError("the config file does not exist", source=str(path)) from None
        return MemcoreConfig()
    except IsADirectoryError:
        raise ConfigError("the config path is a directory", source=str(path)) from None
    except OSError as exc:
        raise _file_error(exc, path, "read") from None
    return parse_config(raw, source=str(path))


def write_config(path: Path, config: MemcoreConfig) -> None:
    """Replace ``path`` (a symlink's target) with ``config`` atomically, readable only by its
    owner."""
    from memcore_sqlite.storage.file_modes import FILE_MODE, make_home, not_a_file, planted

    text = dump_config(config)
    make_home(path.parent)
    link = planted(path)
    if link is not None:  # following it would replace a file of another user's choosing
        raise PermissionDenied(
            f"cannot write {path} (a {link} another user left in a shared folder)",
            field="config",
        )
    # A linked config (kept with the user's dotfiles) stays linked: its target is replaced.
    real = Path(os.path.realpath(path)) if path.is_symlink() else path
    kind = not_a_file(real)
    if kind is not None:  # replacing it would put a file where a device was (/dev/null)
        raise ConfigError(f"cannot write the config: its path is {kind}", source=str(path))
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    except OSError as exc:
        raise _file_error(exc, path, "write") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            if hasattr(os, "fchmod"):  # POSIX; Windows has no owner-only mode bits
                os.fchmod(fh.fileno(), FILE_MODE)
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, real)
    except OSError as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise _file_error(exc, path, "write") from None


def change_config(
    path: Path, change: Callable[[MemcoreConfig], MemcoreConfig], *, mends: str | None = None
) -> MemcoreConfig:
    """The config at ``path`` read, changed and written back (:func:`write_config`), its
    folder held meanwhile: two ``config set`` at once each wrote back what it had read, and
    one setting was lost though both said it was set.

    A file refused for the very key ``mends`` (``config set top_k 5`` over a hand-written
    ``"top_k": 99``) is read without that key, then changed: the command that sets it was
    refused for the value it replaces."""
    from memcore_sqlite.storage.file_modes import held

    with held(path):
        try:
            base = read_config(path, required=False)
        except ConfigError as exc:
            if mends is None or exc.field != mends:
                raise
            base = _without(path, mends, exc)
        updated = change(base)
        write_config(path, updated)
    return updated


def _without(path: Path, key: str, refused: ConfigError) -> MemcoreConfig:
    """The config at ``path`` read without ``key``; ``refused`` again when that is not all
    that is wrong with it."""
    import json

    from memcore.config import config_from_mapping

    try:
        data = json.loads(path.read_bytes().decode("utf-8-sig"))
        if not isinstance(data, dict):
            raise refused
        data.pop(key, None)
        return config_from_mapping(data, source=str(path))
    except (OSError, ValueError, ConfigError):
        raise refused from None


def _file_error(exc: OSError, path: Path, verb: str) -> MemcoreError:
    """A permission problem or a read-only file system exits 4 and names the file; any
    other, a config error (exit 2)."""
    from memcore_sqlite.storage.file_modes import not_writable

    why = not_writable(exc)
    if why is not None:
        return PermissionDenied(f"cannot {verb} the config file {path}: {why}", field="config")
    return ConfigError(f"cannot {verb} the config file ({exc.strerror})", source=str(path))
