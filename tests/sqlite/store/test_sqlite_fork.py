"""A store does not cross ``fork``: SQLite forbids carrying a connection into a child
(https://sqlite.org/howtocorrupt.html#fork), and a lock another thread held at the fork
stays held in the child for ever. In a forked child every call is ``StoreClosed``, at
once, naming the way out (open it again there); the parent's store is untouched."""

from __future__ import annotations

import os
import signal
import threading
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
