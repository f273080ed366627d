"""Where an export's ``--out`` writes (``memcore export`` and ``hermes tablestore-mem export``
alike): the named file replaced atomically, or written through when it is not a regular file.

A regular file (or a new one) is written to a temporary file beside it and renamed over it,
so a failed export never leaves half a file; a write that fails (a full disk) names the file
and the reason, as :class:`Unavailable`. Renaming over a FIFO, a device such as
``/dev/stdout`` or a symlink would replace that node with a regular file, so a FIFO or a device
is opened and written in place, and a symlink's target (not the link) is replaced.

In a shared folder such as ``/tmp`` (sticky and writable by all), a symlink or FIFO that
another user left there is refused: following it would replace a file of their choosing or
hand them every memory. This is the kernel's ``protected_symlinks``/``protected_fifos`` rule,
kept where those are off and for the link this module resolves itself.
"""

from __future__ import annotations

import contextlib
import os
import stat
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import TextIO

from memcore.errors import InvalidInput, MemcoreError, PermissionDenied, Unavailable
from memcore_sqlite.storage import file_modes
from memcore_sqlite.storage.file_modes import FILE_MODE
from memcore_sqlite.storage.home_paths import expand_home


def _refused(shown: Path, reason: str | None) -> InvalidInput:
    return InvalidInput(f"cannot write {shown} ({reason or 'not writable'})", field="out")


def _not_opened(shown: Path, exc: OSError) -> MemcoreError:
    """The file could not be made or opened: where this user may not write (a read-only
    folder or mount), a permission (exit 4, as a read-only home); else the path is wrong."""
    why = file_modes.not_writable(exc)
    if why is not None:
        return PermissionDenied(f"cannot write {shown} ({why})", field="out")
    return _refused(shown, exc.strerror)


def _failed(shown: Path, exc: OSError) -> MemcoreError:
    """A write that failed once the file was open: a full disk or a file grown past its limit
    is the machine's state, not the user's input (exit 5); a permission, exit 4."""
    why = file_modes.not_writable(exc)
    if why is not None:
        return PermissionDenied(f"cannot write {shown} ({why})", field="out")
    why = (exc.strerror or type(exc).__name__).lower()
    return Unavailable(f"cannot write {shown} ({why})", field="out", retryable=False)


def is_stdout(path: Path) -> bool:
    """``path`` is where standard output goes (``--out /dev/stdout`` into a pipe): the
    export's summary then belongs on stderr, or it ends the data as a line no import reads."""
    try:
        return os.path.samestat(os.stat(path), os.fstat(1))
    except (OSError, ValueError):
        return False


@contextlib.contextmanager
def open_out(shown: Path) -> Iterator[TextIO]:
    """A text stream for ``--out`` (``shown`` as the user gave it); the file is complete only
    once the block ends without an error. Errors opening or finishing it name the path:
    :class:`PermissionDenied` where this user may not write (or must not: a link another user
    left), else :class:`InvalidInput`."""
    target = expand_home(shown)
    if target is None:  # "~nobody/x": no such user's home
        raise _refused(shown, "a home folder this system does not know")
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        mode = None  # a new file, or a symlink to one that does not exist yet
    except OSError as exc:
        raise _not_opened(shown, exc) from None
    if mode is not None and stat.S_ISDIR(mode):
        raise _refused(shown, "a folder")
    planted = file_modes.planted(target)
    if planted is not None:  # a permission, as config set and the Hermes writer refuse it
        raise PermissionDenied(
            f"cannot write {shown} (a {planted} another user left in a shared folder)",
            field="out",
        )
    if mode is not None and not stat.S_ISREG(mode):
        with _write_through(target, shown) as fh:
            yield fh
        return
    # A symlink keeps pointing where it did; what it points to gets the new content.
    real = Path(os.path.realpath(target)) if target.is_symlink() else target
    with _replace(real, shown) as fh:
        yield fh


@contextlib.contextmanager
def _write_through(target: Path, shown: Path) -> Iterator[TextIO]:
    """A FIFO or a device: written as it stands (its mode and owner are not ours to change)."""
    try:
        fh = open(target, "w", encoding="utf-8")  # noqa: SIM115 - closed below
    except OSError as exc:
        raise _not_opened(shown, exc) from None
    try:
        with fh:
            yield fh
    except OSError as exc:  # a write, or the flush as it closes (a full device)
        raise _failed(shown, exc) from None


@contextlib.contextmanager
def _replace(real: Path, shown: Path) -> Iterator[TextIO]:
    """A temporary file in ``real``'s folder (mode 0600), renamed over ``real`` at the end."""
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{real.name}.", suffix=".tmp", dir=real.parent)
    except OSError as exc:
        raise _not_opened(shown, exc) from None
    try:
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                if hasattr(os, "fchmod"):  # POSIX; Windows has no owner-only mode bits
                    os.fchmod(fh.fileno(), FILE_MODE)
                yield fh
                fh.flush()
                os.fsync(fh.fileno())
        except OSError as exc:  # a full disk: the old file stays, the temporary one goes
            raise _failed(shown, exc) from None
        try:
            os.replace(tmp, real)
        except OSError as exc:
            raise _not_opened(shown, exc) from None
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
