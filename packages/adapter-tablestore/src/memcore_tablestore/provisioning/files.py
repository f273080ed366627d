"""Files the provisioner keeps next to the config: atomic 0600 writes, the pending marker, a lock.

The pending marker is written *before* an instance is bought. It names the alias the new
instance will carry, so a run that crashed after buying but before saving can find that
instance again instead of buying a second one.
"""

from __future__ import annotations

import contextlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import attrs
import cattrs

from memcore.errors import ConfigError, Conflict, MemcoreError, PermissionDenied

PENDING_MARKER = ".tablestore_pending.json"
LOCK_FILE = ".tablestore_pending.lock"
FILE_MODE = 0o600
#: A folder made here is the data home the memories later go to (``$MEMCORE_HOME``, a
#: Hermes home): as private as the store makes it.
FOLDER_MODE = 0o700

_converter = cattrs.Converter(forbid_extra_keys=True)


@attrs.frozen
class PendingInstance:
    """A bootstrap in progress: the alias chosen, and the instance name once it is known.

    ``create_sent_at`` (wall-clock seconds) is written just before a ``CreateVCUInstance`` is
    sent and cleared once its answer says what happened; while it is set, the instance may
    exist without being listed yet, so the alias is looked for before anything is bought.
    ``bought_at`` is when this intent's instance was bought: its warm-up is timed from there.
    """

    alias: str
    region: str
    instance_name: str | None = None
    started_at: float = 0.0
    create_sent_at: float | None = None
    bought_at: float | None = None


def atomic_write_text(path: Path, text: str, *, mode: int = FILE_MODE) -> None:
    """Write ``text`` so that readers see the old file or the new one, never a torn one.

    A temporary file in the same directory is written, flushed and fsynced, then renamed over
    ``path``; the directory is fsynced too so the rename survives a power cut. A symlink
    (a config kept with the user's dotfiles) stays, and its target is replaced, unless another
    user left it in a shared folder (:func:`planted`).
    """
    _make_folder(path.parent)
    _refuse_planted(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    if path.exists() and not path.is_file():  # renamed over, a device would become a file
        raise ConfigError(f"cannot write {path}: it is not a file", source=str(path))
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        os.chmod(tmp, mode)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def planted(target: Path) -> str | None:
    """What ``target`` is ("symlink", "fifo", ...) when another user left it in a sticky,
    world-writable folder: its owner is neither us nor the folder's owner. None otherwise
    (a regular file there is renamed over, which the sticky bit itself refuses).

    The rule of ``memcore_sqlite.storage.file_modes.planted``, which the CLI and the Hermes
    plugin use for their own files; kept here because the storage adapters import nothing
    of each other."""
    geteuid = getattr(os, "geteuid", None)
    try:
        st = os.lstat(target)
        folder = os.stat(target.parent)
    except OSError:
        return None
    if geteuid is None or stat.S_ISREG(st.st_mode):
        return None
    shared = folder.st_mode & stat.S_ISVTX and folder.st_mode & stat.S_IWOTH
    if not shared or st.st_uid in (geteuid(), folder.st_uid):
        return None
    if stat.S_ISLNK(st.st_mode):
        return "symlink"
    return "fifo" if stat.S_ISFIFO(st.st_mode) else "special file"


def _refuse_planted(path: Path) -> None:
    """Following such a file would write (or create) a file of another user's choosing."""
    link = planted(path)
    if link is not None:
        raise PermissionDenied(
            f"cannot write {path} (a {link} another user left in a shared folder)",
            field="config",
        )


def _make_folder(directory: Path) -> None:
    """Create ``directory`` (and missing parents) as 0700 whatever the umask; a folder that
    is there already is left as it is."""
    if directory.is_dir():
        return
    directory.mkdir(parents=True, exist_ok=True, mode=FOLDER_MODE)
    directory.chmod(FOLDER_MODE)  # mkdir's mode is masked by the umask


def _fsync_dir(directory: Path) -> None:
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def read_pending(directory: Path) -> PendingInstance | None:
    path = directory / PENDING_MARKER
    try:
        raw = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise ConfigError(
            f"cannot read the pending marker: {exc.strerror}", source=str(path)
        ) from None
    try:
        data: Any = json.loads(raw)
        return _converter.structure(data, PendingInstance)
    except Exception:  # json or cattrs: the marker is ours, so any damage is a config problem
        raise ConfigError(
            "the pending bootstrap marker is damaged; if no instance was bought, delete it",
            source=str(path),
        ) from None


def file_error(exc: OSError, path: Path, verb: str) -> MemcoreError:
    """A file of the bootstrap that cannot be used: a permission problem exits 4 and names
    it, as the CLI's own files do; any other, a config error naming it."""
    if isinstance(exc, PermissionError):
        return PermissionDenied(
            f"cannot {verb} {path}: permission denied (the folder of the config file must be "
            "writable for a first run)",
            field="config",
        )
    return ConfigError(
        f"cannot {verb} {path.name} ({exc.strerror or type(exc).__name__})", source=str(path)
    )


def write_pending(directory: Path, pending: PendingInstance) -> None:
    text = json.dumps(_converter.unstructure(pending), indent=2, sort_keys=True) + "\n"
    path = directory / PENDING_MARKER
    try:
        atomic_write_text(path, text)
    except OSError as exc:
        raise file_error(exc, path, "write") from None


def clear_pending(directory: Path) -> None:
    path = directory / PENDING_MARKER
    try:
        with contextlib.suppress(FileNotFoundError):
            path.unlink()
        _fsync_dir(directory)
    except OSError as exc:
        raise file_error(exc, path, "remove") from None


@contextlib.contextmanager
def bootstrap_lock(
    directory: Path,
    *,
    timeout: float,
    sleep: Callable[[float], None] = time.sleep,
    clock: Callable[[], float] = time.monotonic,
) -> Iterator[None]:
    """Hold an exclusive lock so two processes never bootstrap (and buy) at the same time.

    POSIX only (``fcntl``); elsewhere the marker alone guards against repeats, not races.
    """
    try:
        import fcntl
    except ImportError:  # pragma: no cover - Windows
        yield
        return
    path = directory / LOCK_FILE
    try:
        _make_folder(directory)
        _refuse_planted(path)
        # A link of one's own is followed; one made after the check is not (O_NOFOLLOW).
        nofollow = 0 if path.is_symlink() else getattr(os, "O_NOFOLLOW", 0)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | nofollow, FILE_MODE)
    except OSError as exc:
        raise file_error(exc, path, "open") from None
    try:
        deadline = clock() + timeout
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if clock() >= deadline:
                    raise Conflict(
                        "another process is provisioning the TableStore instance; try again shortly",
                        field="instance_name",
                    ) from None
                sleep(0.2)
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


__all__ = [
    "FILE_MODE",
    "LOCK_FILE",
    "PENDING_MARKER",
    "PendingInstance",
    "atomic_write_text",
    "bootstrap_lock",
    "clear_pending",
    "file_error",
    "read_pending",
    "write_pending",
]
