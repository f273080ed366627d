"""A fork waits for the library's SQLite calls under way on other threads (a child forked
inside one inherited SQLite's state held, and could hang for ever opening the same file),
but never for the forking thread's own, and the child starts with none under way."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from memcore_sqlite.storage import fork_guard

pytestmark = pytest.mark.filterwarnings(
    "ignore:This process .* is multi-threaded:DeprecationWarning"
)


def _fork(child: object) -> int:
    """Fork; the child exits with ``child()`` (a callable returning an exit code)."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            code = child()  # type: ignore[operator]
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status)


def test_a_fork_waits_for_a_call_under_way_on_another_thread() -> None:
    inside, done = threading.Event(), [False]

    def call() -> None:
        with fork_guard.working():
            inside.set()
            time.sleep(0.3)
            done[0] = True

    worker = threading.Thread(target=call)
    worker.start()
    inside.wait()
    assert _fork(lambda: 0 if done[0] else 3) == 0  # the child saw the call finished
    worker.join()


def test_a_thread_forking_inside_its_own_call_does_not_wait_for_itself() -> None:
    def child() -> int:
        with fork_guard.working():  # the child's gate is its own: nothing left waiting
            return 0

    started = time.monotonic()
    with fork_guard.working():
        assert _fork(child) == 0
    assert time.monotonic() - started < fork_guard.WAIT / 2


def test_a_call_started_during_a_fork_waits_until_it_is_done() -> None:
    inside, order = threading.Event(), []

    def slow() -> None:
        with fork_guard.working():
            inside.set()
            time.sleep(0.3)
            order.append("first call left")

    def late() -> None:
        while not fork_guard._gate.forking:  # the fork is waiting for ``slow``
            time.sleep(0.001)
        with fork_guard.working():
            order.append("second call began")

    threads = [threading.Thread(target=slow), threading.Thread(target=late)]
    threads[0].start()
    inside.wait()
    threads[1].start()
    assert _fork(lambda: 0 if order == ["first call left"] else 3) == 0
    for t in threads:
        t.join()
    assert order == ["first call left", "second call began"]


def test_calls_wait_until_every_fork_under_way_is_done() -> None:
    """Two threads in ``os.fork`` at once: the first one's return let calls start while the
    second had yet to fork, so its child could inherit one under way. These are the hooks in
    the order ``os.fork`` runs them on the two threads."""
    fork_guard._before_fork()  # the first thread's fork
    fork_guard._before_fork()  # the second's
    fork_guard._after_fork_in_parent()  # the first returns; the second has not forked yet
    entered = threading.Event()

    def call() -> None:
        with fork_guard.working():
            entered.set()

    worker = threading.Thread(target=call)
    worker.start()
    try:
        assert not entered.wait(0.3)
    finally:
        fork_guard._after_fork_in_parent()  # the second returns
    assert entered.wait(5)
    worker.join()


def _python(code: str, prints: str) -> None:
    """``code`` in a fresh interpreter (a hang there is a timeout here) prints ``prints``."""
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=fork_guard.WAIT * 3,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, prints), done.stderr


_FORK_IN_A_HANDLER = """
import os, signal
from memcore_sqlite.storage import fork_guard

def fork(*_):
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)

signal.signal(signal.SIGUSR1, fork)
with fork_guard._gate.changed:  # the thread is entering or leaving a call
    signal.raise_signal(signal.SIGUSR1)  # its handler runs here, on this thread
print("forked")
"""


def test_a_fork_from_a_signal_handler_does_not_hang_its_own_thread() -> None:
    """A handler runs on the main thread between two of its steps, also while it holds the
    gate's lock (entering or leaving a call): a fork there waited for that lock for ever."""
    _python(_FORK_IN_A_HANDLER, "forked\n")


_FORK_WHILE_ENTERING = """
import os, signal, sys, time
from memcore_sqlite.storage import fork_guard

took = []

def fork(*_):
    started = time.monotonic()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
    took.append(time.monotonic() - started)

def step(frame, event, arg):
    # The thread is counted in the call, its depth not yet set: the handler runs there.
    if frame.f_code.co_name == "__enter__" and event == "line" and not took:
        line = open(frame.f_code.co_filename).read().splitlines()[frame.f_lineno - 1]
        if "_depth.n = outer + 1" in line:
            signal.raise_signal(signal.SIGUSR1)
    return step

signal.signal(signal.SIGUSR1, fork)
sys.settrace(step)
with fork_guard.working():
    pass
sys.settrace(None)
print(len(took), took[0] < fork_guard.WAIT / 2)
"""


def test_a_fork_from_a_signal_handler_inside_a_call_does_not_wait_for_its_own_call() -> None:
    """Counted in the call but its depth not yet set, the thread's own call was waited for
    the whole :data:`~memcore_sqlite.storage.fork_guard.WAIT` (10 s)."""
    _python(_FORK_WHILE_ENTERING, "1 True\n")


def test_a_child_closes_the_connections_it_inherited_but_not_one_in_a_transaction(
    tmp_path: Path,
) -> None:
    """Closed, they no longer lend the child their lock records; one the forking thread is in
    a transaction on stays open (its rollback would rewrite the log's index the parent uses).
    Closed ones not yet collected (they refuse even ``in_transaction``) stop none of it."""
    path = str(tmp_path / "f.db")
    closed = [fork_guard.connect(path) for _ in range(50)]
    for conn in closed:
        conn.close()
    idle = fork_guard.connect(path, isolation_level=None)
    idle.execute("PRAGMA journal_mode=WAL")
    busy = fork_guard.connect(path, isolation_level=None)
    busy.execute("BEGIN")
    busy.execute("SELECT count(*) FROM sqlite_master").fetchone()

    def child() -> int:
        try:
            idle.execute("SELECT 1")
        except sqlite3.ProgrammingError:
            return 0 if busy.in_transaction else 2
        return 3

    assert _fork(child) == 0
    busy.execute("COMMIT")
    assert idle.execute("SELECT 1").fetchone() == (1,)  # the parent's are untouched
    idle.close()
    busy.close()
    assert len(closed) == 50


_FORK_DURING_AN_IMPORT = """
import os, sys, threading, time
from pathlib import Path
from memcore_sqlite.storage import fork_guard

folder = Path(sys.argv[1])
(folder / "slow_module.py").write_text("import time\\ntime.sleep(0.5)\\nVALUE = 7\\n")
sys.path.insert(0, str(folder))
threading.Thread(target=lambda: __import__("slow_module")).start()
time.sleep(0.1)  # the thread is inside the import, holding its module's lock
pid = os.fork()
if pid == 0:
    import slow_module  # waited for ever on the lock the parent's thread held at the fork
    os._exit(0 if slow_module.VALUE == 7 else 3)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


def test_a_fork_waits_for_an_import_under_way_on_another_thread(tmp_path: Path) -> None:
    """The library imports numpy and the embedder's runtime on first use, maybe on another
    thread; a worker forked meanwhile, as the README says to, hung at its first search."""
    done = subprocess.run(
        [sys.executable, "-c", _FORK_DURING_AN_IMPORT, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=fork_guard.WAIT * 3,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr


_FORK_DURING_A_MODEL_LOAD = """
import os, sys, threading, time
import memcore

config = {"local_path": sys.argv[1] + "/memcore.db", "embedder": "onnx"}
mem = memcore.Memory.open("local", config=config)
threading.Thread(target=lambda: mem.search("anything", user_id="alice")).start()
time.sleep(float(sys.argv[2]))  # the first search imports numpy and loads the model
pid = os.fork()
if pid == 0:
    worker = memcore.Memory.open("local", config=config)  # its own, as the README says
    worker.add(text="a worker's fact", user_id="bob", sync=True)
    os._exit(0)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
"""


@pytest.mark.parametrize("delay", [0.0, 0.03])
def test_a_worker_forked_while_the_model_loads_can_embed(tmp_path: Path, delay: float) -> None:
    """The embedder (one per process) was loading under its lock: the worker inherited the
    lock held, and its first write waited for ever."""
    pytest.importorskip("onnxruntime")
    done = subprocess.run(
        [sys.executable, "-c", _FORK_DURING_A_MODEL_LOAD, str(tmp_path), str(delay)],
        capture_output=True,
        text=True,
        timeout=fork_guard.WAIT * 3,
        check=False,
    )
    assert (done.returncode, done.stdout) == (0, "0\n"), done.stderr
