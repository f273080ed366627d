"""A store does not cross ``fork``: SQLite forbids carrying a connection into a child
(https://sqlite.org/howtocorrupt.html#fork), and a lock another thread held at the fork
stays held in the child for ever. In a forked child every call is ``StoreClosed``, at
once, naming the way out (open it again there); the parent's store is untouched."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from memcore import MemcoreConfig, Memory
from memcore.errors import StoreClosed

LEXICAL = MemcoreConfig(embedder="none")
pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)

#: Exit codes of the child (an unexpected exception exits 1).
REFUSED, USED, HUNG = 0, 3, 4


def _in_child(work: Callable[[], None]) -> int:
    """Run ``work`` in a forked child, bounded by an alarm; its exit code."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            signal.signal(signal.SIGALRM, lambda *_: os._exit(HUNG))
            signal.alarm(10)
            work()
            code = USED
        except StoreClosed as exc:
            code = REFUSED if "process" in exc.message and "open" in exc.message else 2
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_forked_child_is_refused_and_the_parent_goes_on(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as mem:
        mem.add(text="Alice wrote this before the fork")
        for call in (
            lambda: mem.add(text="A child's write through the parent's connection"),
            lambda: mem.search("fork"),
            lambda: list(mem.iter_all()),
            lambda: mem.store.list_stores(),
        ):
            assert _in_child(call) == REFUSED
        assert _in_child(mem.close) == USED  # closing in the child is fine, and harmless
        mem.add(text="Alice wrote this after the fork")
        assert len(list(mem.iter_all())) == 2
        assert mem.store.check_integrity().ok


def test_a_child_forked_while_another_thread_holds_the_lock_does_not_hang(
    tmp_path: Path,
) -> None:
    with Memory.open("local", config=LEXICAL, user_id="alice", path=tmp_path / "m.db") as mem:
        mem.add(text="Alice wrote this before the fork")
        held, release = threading.Event(), threading.Event()

        def hold() -> None:  # a request in flight in another thread of a web server
            with mem.store._tx.lock:
                held.set()
                release.wait()

        worker = threading.Thread(target=hold)
        worker.start()
        held.wait()
        try:
            assert _in_child(lambda: mem.add(text="from the child")) == REFUSED
            assert _in_child(lambda: mem.search("Alice")) == REFUSED
        finally:
            release.set()
            worker.join()
        assert [m.text for m in mem.iter_all()] == ["Alice wrote this before the fork"]


def test_a_child_opens_its_own_memory_on_the_same_file(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as mem:
        mem.add(text="Alice wrote this before the fork")

        def own() -> None:
            with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as child:
                child.add(text="The child wrote this with its own Memory")

        assert _in_child(own) == USED
        assert len(list(mem.iter_all())) == 2


#: Forks while an open's whole-file check is inside SQLite (made slow by a progress handler
#: on its connection), then opens the same file in the child, writes and reads. Prints the
#: child's exit code: 0 done, 3 forked with the check's connection open, 4 no answer in time.
_FORK_DURING_CHECK = """
import os, signal, sys, threading, time
from contextlib import contextmanager
from memcore import MemcoreConfig, Memory
from memcore_sqlite.storage import clean_close, integrity

path = sys.argv[1]
config = MemcoreConfig(embedder="none")
with Memory.open("local", config=config, user_id="alice", path=path) as mem:
    for i in range(300):
        mem.add(text=f"Alice kept note {i} about the garden")
clean_close.forget(path)  # as after a crash: the next open checks the whole file

real_reading, checking, started = integrity.reading, [False], threading.Event()

def slowly():
    started.set()
    time.sleep(0.002)
    return 0

@contextmanager
def slow_reading(p):
    with real_reading(p) as conn:
        checking[0] = True
        conn.set_progress_handler(slowly, 200)
        yield conn
    checking[0] = False

integrity.reading = slow_reading
with Memory.open("local", config=config, user_id="alice", path=path) as mem:
    assert started.wait(30), "the check did not start"
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            inherited = checking[0]
            integrity.reading = real_reading
            signal.signal(signal.SIGALRM, lambda *_: os._exit(4))
            signal.alarm(20)
            with Memory.open("local", config=config, user_id="alice", path=path) as child:
                child.add(text="The child wrote this on the same file")
                found = [h.memory.text for h in child.search("child")]
            code = 3 if inherited else (0 if found == ["The child wrote this on the same file"] else 2)
        except BaseException:
            import traceback
            traceback.print_exc()
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert len(list(mem.iter_all())) == 301
print(os.waitstatus_to_exitcode(status))
"""


def test_a_fork_waits_for_the_whole_file_check_an_open_started(tmp_path: Path) -> None:
    """The check's connection is inside SQLite at the fork: a child forked then inherited its
    held state (and once hung for ever opening the same file). The fork waits for it."""
    done = subprocess.run(
        [sys.executable, "-c", _FORK_DURING_CHECK, str(tmp_path / "m.db")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0"], done.stderr


def _closed_and_counted(mem: Memory, closed: int, pid: int, path: Path) -> int:
    """Close the parent's store, tell the child so, and count what the file holds once the
    child is done (it must have exited 0)."""
    mem.close()
    os.write(closed, b"x")
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as after:
        return len(list(after.iter_all()))


def test_a_childs_writes_survive_the_parent_closing_the_same_file(tmp_path: Path) -> None:
    """A preforking server's master closing its store (a reload, a stop) while a worker
    writes: the worker's write was acknowledged, then gone from the file. A store closed
    earlier (its connection not yet collected) changes nothing."""
    earlier = Memory.open("local", config=LEXICAL, user_id="alice", path=tmp_path / "e.db")
    earlier.close()
    path = tmp_path / "m.db"
    mem = Memory.open("local", config=LEXICAL, user_id="alice", path=path)
    mem.add(text="Alice wrote this before the fork")
    wrote, closed = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as child:
                child.add(text="The child wrote this first")
                os.write(wrote[1], b"x")
                os.read(closed[0], 1)  # the parent has closed its store
                child.add(text="The child wrote this after the parent closed")
            code = 0
        finally:
            os._exit(code)
    os.read(wrote[0], 1)
    mem.add(text="Alice wrote this while the child wrote")
    assert len(list(mem.iter_all())) == 3
    assert _closed_and_counted(mem, closed[1], pid, path) == 4
    assert earlier is not None


def test_a_child_survives_the_parent_closing_right_after_the_fork(tmp_path: Path) -> None:
    """The parent closes (its last close folds in and deletes the log) before the child has
    opened anything: the child's letting go of what it inherited deletes nothing of it."""
    path = tmp_path / "m.db"
    mem = Memory.open("local", config=LEXICAL, user_id="alice", path=path)
    mem.add(text="Alice wrote this before the fork")
    closed = os.pipe()
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.read(closed[0], 1)
            with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as child:
                child.add(text="The child wrote this after the parent closed")
                code = 0 if len(list(child.iter_all())) == 2 else 2
        finally:
            os._exit(code)
    assert _closed_and_counted(mem, closed[1], pid, path) == 2


def test_a_child_that_opens_nothing_changes_nothing_for_the_parent(tmp_path: Path) -> None:
    path = tmp_path / "m.db"
    with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as mem:
        for i in range(20):
            mem.add(text=f"Alice kept note {i} before the forks")
        for i in range(5):
            assert _in_child(lambda: None) == USED
            mem.add(text=f"Alice wrote note {i} after a fork")
        assert len(list(mem.iter_all())) == 25
    with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as after:
        assert len(list(after.iter_all())) == 25


def _pool_worker(args: tuple[str, int]) -> int:
    """A pool worker: its own store on the parent's file, a few writes, each acknowledged."""
    path, worker = args
    with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as mem:
        for i in range(10):
            mem.add(text=f"Worker {worker} wrote note {i}")
            time.sleep(0.005)
    return worker


def test_a_fork_pool_writing_beside_the_parent_loses_nothing(tmp_path: Path) -> None:
    """``multiprocessing`` with ``fork``: workers write while the parent writes and then
    closes its store; every acknowledged write is in the file at the end."""
    path = tmp_path / "m.db"
    mem = Memory.open("local", config=LEXICAL, user_id="alice", path=path)
    mem.add(text="Alice wrote this before the pool")
    with multiprocessing.get_context("fork").Pool(3) as pool:
        done = pool.map_async(_pool_worker, [(str(path), w) for w in range(6)])
        for i in range(5):
            mem.add(text=f"Alice wrote note {i} beside the pool")
            time.sleep(0.01)
        mem.close()
        assert sorted(done.get(timeout=60)) == list(range(6))
    with Memory.open("local", config=LEXICAL, user_id="alice", path=path) as after:
        assert len(list(after.iter_all())) == 1 + 5 + 60
