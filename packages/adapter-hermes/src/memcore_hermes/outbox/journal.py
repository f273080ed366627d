"""A memory-mapped append-only journal in front of the spool: the turn path makes no system call.

Every system call releases Python's GIL, and under a gateway's load getting it back can take
milliseconds (the delivery threads hold it between their own calls). Copying a record into a
shared file mapping is a plain memory copy: once it is done the bytes are in the kernel's page
cache, so they survive the process being killed (the same promise as the spool's WAL with
``synchronous=NORMAL``). The spool then moves records into SQLite off the agent's thread.

Layout: a 16-byte header (magic), then records ``<u32 length><u32 crc32><bytes>``. A zero
length ends the journal; a record whose CRC does not match is a torn tail and ends it too.
Each process writes its own journal file and holds an exclusive ``flock`` on it for its life,
so a journal whose lock can be taken belongs to a dead process and may be adopted.
"""

from __future__ import annotations

import errno
import mmap
import os
import struct
import threading
import time
import uuid
import zlib
from pathlib import Path

try:
    import fcntl
except ImportError:  # not a POSIX system: no journal, turns go straight to the spool
    fcntl = None  # type: ignore[assignment]

MAGIC = b"MCJOURNAL1\x00\x00\x00\x00\x00\x00"
_HEAD = struct.Struct("<II")
HEADER_BYTES = len(MAGIC)
#: Room for hundreds of ordinary turns; a record that does not fit takes the slow path.
DEFAULT_BYTES = 1024 * 1024


def journal_glob(spool: Path) -> list[Path]:
    """The journal files next to ``spool`` (any process's), oldest first."""
    return sorted(spool.parent.glob(f"{spool.name}.j-*"), key=lambda p: p.name)


def _allocate(fd: int, size: int) -> None:
    """Reserve ``size`` bytes on disk (``ENOSPC`` now rather than SIGBUS on a later write)."""
    fallocate = getattr(os, "posix_fallocate", None)  # not on macOS
    if fallocate is not None:
        try:
            fallocate(fd, 0, size)
            return
        except OSError as exc:
            if exc.errno not in (errno.EINVAL, errno.EOPNOTSUPP, errno.ENOSYS):
                raise
    chunk = bytes(64 * 1024)
    for at in range(0, size, len(chunk)):
        os.pwrite(fd, chunk[: min(len(chunk), size - at)], at)


class Journal:
    """One process's journal file, mapped; ``append`` is thread-safe and syscall-free."""

    def __init__(self, path: Path, fd: int, mm: mmap.mmap, *, head: int) -> None:
        self.path = path
        self.name = path.name
        self._fd = fd
        self._mm = mm
        self.size = len(mm)
        self.lock = threading.Lock()
        self.head = head  # end of the last complete record
        self.consumed = HEADER_BYTES  # records before this offset are in the spool
        #: Records before this offset went into a spool that was lost: they may have been
        #: delivered, so each is looked for at the service before it is sent again.
        self.tried_until = HEADER_BYTES
        self.pending_entries = 0
        self.sealed = False  # replaced by a newer journal: appends go there

    def __repr__(self) -> str:
        return f"Journal({self.name!r}, head={self.head}, consumed={self.consumed})"

    @classmethod
    def create(cls, spool: Path, *, size: int | None = None) -> Journal:
        """A new, zeroed, fully allocated journal beside ``spool``, locked by this process.

        The space is allocated up front: writing into a sparse mapping on a full disk would
        kill the process with SIGBUS instead of giving an error. ``OSError`` when it cannot.
        """
        size = size or DEFAULT_BYTES
        if fcntl is None:
            raise OSError(errno.ENOTSUP, "no flock on this system")
        # Named so that sorting the names sorts by creation: replays keep the order of writes.
        path = (
            spool.parent
            / f"{spool.name}.j-{time.time_ns():020d}-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        )
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            _allocate(fd, size)
            os.pwrite(fd, MAGIC, 0)
            mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            path.unlink(missing_ok=True)
            raise
        return cls(path, fd, mm, head=HEADER_BYTES)

    @classmethod
    def adopt(cls, path: Path) -> Journal | None:
        """Open another process's journal if that process is gone (its lock is free), else None."""
        if fcntl is None:
            return None
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
        except FileNotFoundError:
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        try:
            # Another process may have adopted it between our open and our lock: it unlinked
            # the file before letting go, and replaying that copy again would double its writes.
            if os.stat(path).st_ino != os.fstat(fd).st_ino:
                raise FileNotFoundError(path)
        except FileNotFoundError:
            os.close(fd)
            return None
        try:
            size = os.fstat(fd).st_size
            if size < HEADER_BYTES or os.pread(fd, HEADER_BYTES, 0) != MAGIC:
                mm = None
            else:
                mm = mmap.mmap(fd, size, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        except BaseException:
            os.close(fd)
            raise
        if mm is None:  # not a journal of ours (or never got its header): nothing to replay
            journal = cls(path, fd, mmap.mmap(-1, HEADER_BYTES), head=HEADER_BYTES)
            return journal
        journal = cls(path, fd, mm, head=HEADER_BYTES)
        journal.head = journal._scan_end()
        return journal

    # -- the turn path ----------------------------------------------------------------------
    def append(self, records: list[bytes]) -> bool:
        """Copy ``records`` in, all or none; False when they do not fit (take the slow path)."""
        need = sum(_HEAD.size + len(r) for r in records)
        with self.lock:
            at = self.head
            if (
                self.sealed or at + need + _HEAD.size > self.size
            ):  # keep room for the zero end marker
                return False
            mm = self._mm
            for record in records:
                end = at + _HEAD.size + len(record)
                mm[at + _HEAD.size : end] = record
                mm[at : at + _HEAD.size] = _HEAD.pack(len(record), zlib.crc32(record))
                at = end
            self.head = at
            self.pending_entries += len(records)
            return True

    # -- the spool's side -------------------------------------------------------------------
    def read(self, start: int, end: int) -> list[bytes]:
        """The records between two record boundaries."""
        out: list[bytes] = []
        mm = self._mm
        at = start
        while at < end:
            length, _crc = _HEAD.unpack_from(mm, at)
            out.append(bytes(mm[at + _HEAD.size : at + _HEAD.size + length]))
            at += _HEAD.size + length
        return out

    def _scan_end(self) -> int:
        """The end of the last intact record (a zero length or a bad CRC ends the scan)."""
        mm = self._mm
        at = HEADER_BYTES
        while at + _HEAD.size <= self.size:
            length, crc = _HEAD.unpack_from(mm, at)
            end = at + _HEAD.size + length
            if length == 0 or end > self.size or zlib.crc32(mm[at + _HEAD.size : end]) != crc:
                break
            at = end
        return at

    def replay_all(self) -> None:
        """Move every record still in the mapping into the spool again (a rebuilt spool lost
        the ones already moved; the spool's keys keep a record from being stored twice)."""
        with self.lock:
            self.pending_entries += len(self.read(HEADER_BYTES, self.consumed))
            self.tried_until = max(self.tried_until, self.consumed)
            self.consumed = HEADER_BYTES

    def mark_consumed(self, upto: int, entries: int) -> None:
        with self.lock:
            self.consumed = upto
            self.pending_entries -= entries

    @property
    def pending_bytes(self) -> int:
        """Bytes of records appended but not yet moved into the spool."""
        return self.head - self.consumed

    @property
    def used(self) -> int:
        return self.head - HEADER_BYTES

    def close(self, *, unlink: bool) -> None:
        """Unmap and release the lock; ``unlink`` first when every record is in the spool."""
        if unlink:
            self.path.unlink(missing_ok=True)
        try:
            self._mm.close()
        finally:
            os.close(self._fd)

    def forget_after_fork(self) -> None:
        """In a forked child: unmap and drop the descriptor; the journal is the parent's alone."""
        self.sealed = True
        try:
            self._mm.close()
        except (ValueError, OSError):
            pass
        try:
            os.close(self._fd)
        except OSError:
            pass
