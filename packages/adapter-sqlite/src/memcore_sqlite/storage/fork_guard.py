"""A fork waits for the SQLite calls (and imports) this library has under way on other threads.

SQLite keeps state for the whole process: its allocator's mutex, and each open file's lock
records and shared-memory index, which every connection to that file shares. A thread
inside a call may hold them; a child forked meanwhile inherits them held, with no thread to
let them go, and its own first open of the same file blocked for ever in C, where no alarm
reaches it (a child forked while an open's whole-file check ran hung so, on Python 3.13
under load). So the library makes its SQLite calls inside :func:`working`, and ``os.fork``
first waits, at most :data:`WAIT` seconds, until none is under way on another thread; none
starts until the fork is done. A ``subprocess`` does not fork through Python and waits for
nothing.

A child also lets go of the connections it inherited (:func:`connect` opens them all): SQLite
keeps one lock record per file and process, which the child inherits believing it holds the
parent's locks (``fcntl`` locks are not inherited). The child's own connection to the file
then took no lock at all, and the parent's close, seeing nobody, folded in and deleted the
write-ahead log the child was writing to: the child's acknowledged writes were lost.
"""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
import time
import weakref
from typing import Any

_log = logging.getLogger(__name__)

#: Seconds a fork waits for the calls under way (the longest is an open's whole-file check:
#: about 5 s at a million memories); past it the fork goes on, as it did before.
WAIT = 10.0


class _Gate:
    """The threads in a call, and the forks under way: while any fork is, no call starts.

    Forks are counted, not flagged: threads may fork at once, and the first one done let
    calls start while another had yet to fork, whose child could then inherit one under way.
    A signal handler that forks runs on a thread between two of its steps, so the lock is
    reentrant (the thread may hold it), and a thread is in ``inside`` or not in one step (a
    count and a flag beside it disagreed there, and the fork waited :data:`WAIT` for its own
    thread)."""

    def __init__(self, inside: set[int] | None = None) -> None:
        self.changed = threading.Condition(threading.RLock())
        self.inside: set[int] = inside or set()
        self.forking = 0


_gate = _Gate()
#: How deep the current thread is in :func:`working`: only the outermost call counts.
_depth = threading.local()


class _Working:
    """Around SQLite calls (an open, a transaction, a check, a close): a fork waits for it,
    and it waits for a fork under way. Enter it before any lock those calls take, else a
    thread holding that lock could wait here for a fork that waits for the lock's holder.
    About 2 us on a loaded 2-core machine, against 0.5-1.3 ms for a search."""

    __slots__ = ()

    def __enter__(self) -> None:
        outer = getattr(_depth, "n", 0)
        if not outer:
            with _gate.changed:
                while _gate.forking:
                    _gate.changed.wait()
                _gate.inside.add(threading.get_ident())
        _depth.n = outer + 1

    def __exit__(self, *_: object) -> None:
        _depth.n -= 1
        if not _depth.n:
            with _gate.changed:  # the module's gate now: a forked child has one of its own
                _gate.inside.discard(threading.get_ident())
                if _gate.forking:
                    _gate.changed.notify_all()


_WORKING = _Working()


def working() -> _Working:
    """The guard around SQLite calls (see :class:`_Working`)."""
    return _WORKING


def _importing(me: int) -> list[str]:
    """The modules another thread is importing now. Each holds its module's import lock: a
    child forked meanwhile inherits it held by a thread it does not have, and its own first
    import of that module (the library imports numpy and the embedder's runtime on first
    use) waits for ever. Read from importlib's table of those locks, where this Python has
    one (CPython 3.10 to 3.13 do); elsewhere nothing is waited for."""
    from importlib import _bootstrap

    table = getattr(_bootstrap, "_module_locks", None)
    if not isinstance(table, dict):
        return []
    busy = []
    for name, ref in list(table.items()):
        lock = ref() if callable(ref) else None
        owner = getattr(lock, "owner", None)
        if owner is not None and owner != me:
            busy.append(str(name))
    return busy


def _before_fork() -> None:
    """Wait for the calls and imports of other threads; the forking thread's own (it forks
    from inside one) cannot end before its fork does, and is in no SQLite call meanwhile."""
    gate, me = _gate, threading.get_ident()
    deadline = time.monotonic() + WAIT
    with gate.changed:
        gate.forking += 1
        if not gate.changed.wait_for(lambda: not gate.inside - {me}, WAIT):
            _log.warning(
                "forking while %d SQLite call(s) are still under way after %gs: the child "
                "may not be able to open the same database file",
                len(gate.inside - {me}),
                WAIT,
            )
    busy = _importing(me)
    while busy and time.monotonic() < deadline:
        time.sleep(0.005)
        busy = _importing(me)
    if busy:
        _log.warning(
            "forking while another thread still imports %s after %gs: the child may hang "
            "when it imports the same module",
            ", ".join(busy[:3]),
            WAIT,
        )


def _after_fork_in_parent() -> None:
    """Also after a fork that failed (``os.fork`` runs it then too)."""
    with _gate.changed:
        _gate.forking -= 1
        if not _gate.forking:
            _gate.changed.notify_all()


def _after_fork_in_child() -> None:
    """The parent's other threads do not exist here, nor do their calls; the lock may have
    been held by one of them. The forking thread keeps its identity, and its call."""
    global _gate
    me = threading.get_ident()
    _gate = _Gate({me} if me in _gate.inside else None)


class _Connection(sqlite3.Connection):
    """A connection :func:`connect` keeps track of (a plain one takes no weak reference)."""


#: Tells a connection's close not to fold in and delete the log (Python 3.12+).
_NO_FOLD_ON_CLOSE: int | None = getattr(sqlite3, "SQLITE_DBCONFIG_NO_CKPT_ON_CLOSE", None)
#: The connections open in this process (and, in a child before its hook, in its parent).
_opened: weakref.WeakSet[_Connection] = weakref.WeakSet()


def connect(database: str, **options: Any) -> sqlite3.Connection:
    """``sqlite3.connect``, and a forked child closes this connection at once (see above)."""
    conn = sqlite3.connect(database, factory=_Connection, **options)
    _opened.add(conn)
    return conn


def _let_go_of_inherited() -> None:
    """Close the parent's connections, freeing the lock records they shared with any the
    child opens. The close takes, lets go and deletes nothing of the parent's: the child holds
    no real lock, and ``fcntl`` unlocks only the caller's; the last close's fold-in needs an
    exclusive lock, which the parent's shared one refuses, and a parent that closed first left
    it nothing to fold in (Python 3.12+ is told not to even try). One the forking thread is in a transaction on stays open: its rollback would
    rewrite the write-ahead log's index the parent is using."""
    for conn in list(_opened):
        try:  # a closed one (not yet collected) refuses even in_transaction
            if conn.in_transaction:
                continue
            setconfig = getattr(conn, "setconfig", None)
            if setconfig is not None and _NO_FOLD_ON_CLOSE is not None:
                setconfig(_NO_FOLD_ON_CLOSE, True)
            conn.close()
        except sqlite3.Error:  # closed, or another thread's (check_same_thread): leave it
            continue
    _opened.clear()


def _after_fork_in_child_all() -> None:
    _after_fork_in_child()
    _let_go_of_inherited()


os.register_at_fork(
    before=_before_fork,
    after_in_parent=_after_fork_in_parent,
    after_in_child=_after_fork_in_child_all,
)
