"""One file-mode policy for everything memcore writes: homes 0700, files 0600.

Memories are personal; the library, the CLI and the Hermes plugin all create their homes and
files through here, so that no entry point leaves a world-readable database behind. On
Windows the mode bits mean little and the calls are harmless. Import-light on purpose: the
Hermes plugin uses it at start-up.
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import sys
from collections.abc import Iterator
from pathlib import Path

HOME_MODE = 0o700
FILE_MODE = 0o600
#: SQLite's companions of a database file, which hold the same data.
SIDE_FILES = ("-wal", "-shm", "-journal")
#: What a folder that cannot be created advises, unless its caller knows better (a database
#: placed by a config's ``local_path`` is moved there, not by ``MEMCORE_HOME``).
MOVE_ADVICE = "set MEMCORE_HOME to a writable folder"


def make_home(folder: str | os.PathLike[str], *, advice: str = MOVE_ADVICE) -> Path:
    """Create ``folder`` (and missing parents) as 0700; an existing folder is left as it is.
    ``advice`` ends the message of a folder that cannot be created."""
    path = Path(folder)
    if path.is_dir():
        return path
    try:
        path.mkdir(parents=True, exist_ok=True, mode=HOME_MODE)
        path.chmod(HOME_MODE)  # mkdir's mode is masked by the umask
    except OSError as exc:
        from memcore.errors import PermissionDenied, Unavailable  # the core only on a failure

        why = not_writable(exc)
        if why is None and exc.errno in (errno.EEXIST, errno.ENOTDIR):
            why = in_the_way(path)
        if why is not None:
            raise PermissionDenied(
                f"cannot create {path}: {why} ({advice})", field=str(path)
            ) from None
        raise Unavailable(f"cannot create {path} ({exc.strerror})", field=str(path)) from None
    return path


def in_the_way(folder: str | os.PathLike[str]) -> str | None:
    """Which file stands where ``folder`` or one of its parents must be a folder, said as a
    reason ("/x is a file, not a folder"), or None. No retry makes such a folder, so it is
    not an outage to wait out."""
    path = Path(folder)
    for place in (path, *path.parents):
        if place.exists() and not place.is_dir():
            return "it is a file" if place == path else f"{place} is a file, not a folder"
    return None


def not_writable(exc: OSError) -> str | None:
    """Why ``exc`` means this user cannot write there ("permission denied", "read-only file
    system"), or None for any other failure. A read-only mount answers EROFS, not a
    PermissionError, and is as much a place to move away from: it is never worth a retry."""
    if isinstance(exc, PermissionError):
        return "permission denied"
    if exc.errno == errno.EROFS:
        return "read-only file system"
    return None


def restrict(path: str | os.PathLike[str]) -> None:
    """Make an existing file of ours 0600 (and its SQLite side files); others' are left alone."""
    uid = getattr(os, "getuid", lambda: None)()
    for name in (str(path), *(str(path) + suffix for suffix in SIDE_FILES)):
        with contextlib.suppress(OSError):
            st = os.stat(name)
            if st.st_mode & 0o777 != FILE_MODE and uid in (None, st.st_uid):
                os.chmod(name, FILE_MODE)


def create_private(path: str | os.PathLike[str]) -> bool:
    """Create ``path`` empty as 0600 unless it exists (SQLite gives its side files the same
    mode), so the file is never readable by others, not even for a moment; True if created."""
    try:
        os.close(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, FILE_MODE))
    except FileExistsError:
        return False
    return True


def open_to_all(folder: str | os.PathLike[str]) -> bool:
    """True when every user may write ``folder`` (``/tmp``, a folder made 0777): another user
    could put a file there (the database, its ``-wal``) that SQLite then writes memories
    into. A missing folder is not: it is made 0700."""
    try:
        return bool(os.stat(folder).st_mode & stat.S_IWOTH) and os.name == "posix"
    except OSError:
        return False


def writable(path: str | os.PathLike[str]) -> bool:
    """True when SQLite can write ``path``: the file (if any) and its folder are writable."""
    file = Path(path)
    if file.exists() and not os.access(file, os.W_OK):
        return False
    return os.access(file.parent, os.W_OK)


def planted(target: Path) -> str | None:
    """What ``target`` is ("symlink", "fifo", ...) when another user left it in a sticky,
    world-writable folder: its owner is neither us nor the folder's owner. None otherwise
    (a regular file there is renamed over, which the sticky bit itself refuses)."""
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


def not_ours_to_read(target: Path) -> str | None:
    """Why a settings file at ``target`` must not be obeyed, or None: another user could have
    chosen it. It (or the link standing there) belongs to neither us nor the folder's
    owner, in a folder every user may write to (``MEMCORE_HOME=/tmp``), or every user may
    write to the file itself. Obeyed, such a file sent the memories written next to the
    endpoint, file or tenant of its author's choosing."""
    geteuid = getattr(os, "geteuid", None)
    if geteuid is None:  # pragma: no cover - Windows: no owners to compare
        return None
    try:
        st = os.lstat(target)
        folder = os.stat(target.parent)
        final = os.stat(target)
    except OSError:
        return None  # the read that follows says what is wrong
    if folder.st_mode & stat.S_IWOTH and st.st_uid not in (geteuid(), folder.st_uid):
        return "it is a file another user left in a shared folder"
    if final.st_mode & stat.S_IWOTH and stat.S_ISREG(final.st_mode):
        return "every user may write to it"
    return None


#: What :func:`not_a_file` calls the null device, which reads as an empty file.
NULL_DEVICE = "the null device"


def not_a_file(path: Path) -> str | None:
    """What ``path`` is when it exists and is neither a regular file nor a folder: a config
    written over it replaced a device with a file (``--config /dev/null`` took the system's
    null device), and a named pipe hung its read. None for a file, a folder, or no such path
    (the read or the write that follows says why)."""
    try:
        st = path.stat()
    except OSError:
        return None
    if stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode):
        return None
    if stat.S_ISFIFO(st.st_mode):
        return "a named pipe"
    if stat.S_ISSOCK(st.st_mode):
        return "a socket"
    with contextlib.suppress(OSError):
        if stat.S_ISCHR(st.st_mode) and st.st_rdev == os.stat(os.devnull).st_rdev:
            return NULL_DEVICE
    return "a device"


@contextlib.contextmanager
def held(path: Path) -> Iterator[None]:
    """Hold the folder of ``path`` (a link's target's) while its file is read, changed and
    written back: two ``config set`` at once each wrote back what it had read before the
    other's write, so one setting was lost though both said it was set. POSIX (``flock``
    on the folder, released when it closes); elsewhere nothing is held."""
    fd = None
    if sys.platform != "win32":
        folder = Path(os.path.realpath(path)).parent
        with contextlib.suppress(Exception):  # none to make or read: the write says why
            fd = os.open(make_home(folder), os.O_RDONLY)
    try:
        if fd is not None:
            import fcntl

            fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        if fd is not None:
            os.close(fd)
