"""Scopes' sketches are built in the background one at a time, and only for scopes the
cache still holds. Side by side the builds slowed each other many times over (their BLAS
threads share the cores), so under searches and writes they piled up by the hundred until
OpenBLAS aborted the process; a closed store's or a replaced entry's build only took CPU."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np
import pytest

from memcore_sqlite.vector.cache import VectorCache, _Entry
from memcore_sqlite.vector.quantize import Codes, encode
from memcore_sqlite.vector.sketch import Sketch

DIM = 64


def _codes(n: int, seed: int) -> Codes:
    rng = np.random.default_rng(seed)
    rows = rng.standard_normal((n, DIM)).astype(np.float32)
    rows /= np.linalg.norm(rows, axis=1, keepdims=True)
    return encode(np.arange(1, n + 1, dtype=np.int64), rows)


def test_builds_take_turns_and_each_scope_gets_its_sketch(monkeypatch: Any) -> None:
    running, most = [0], [0]
    guard = threading.Lock()
    real = Sketch.build

    def timed(*args: Any) -> Sketch:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        try:
            return real(*args)
        finally:
            with guard:
                running[0] -= 1

    monkeypatch.setattr(Sketch, "build", timed)
    entries = [_Entry(0, _codes(300, seed), None) for seed in range(8)]
    for entry in entries:
        entry.start_sketch()
    for entry in entries:
        assert entry.wait_sketch(30)
    assert most[0] == 1


def test_a_retired_entry_starts_no_build_and_a_queued_one_ends_unbuilt(monkeypatch: Any) -> None:
    release = threading.Event()
    real = Sketch.build

    def held(*args: Any) -> Sketch:
        assert release.wait(30)
        return real(*args)

    monkeypatch.setattr(Sketch, "build", held)
    first, queued, retired = (_Entry(0, _codes(300, seed), None) for seed in range(3))
    first.start_sketch()  # takes the turn and holds it
    queued.start_sketch()  # waits for the turn
    retired.retire()
    retired.start_sketch()
    assert retired.building() is None
    queued.retire()  # its scope left the cache while it waited
    release.set()
    assert first.wait_sketch(30)
    assert not queued.wait_sketch(30) and queued.building() is None


def test_closing_or_replacing_retires_the_caches_entries() -> None:
    cache = VectorCache(DIM, exact_rows=0)
    key = (1, ("app", "ana", "*", "*"))
    old = cache.get(key, 1, lambda: _codes(300, 1), lambda seqs: [])
    new = cache.get(key, 2, lambda: _codes(300, 2), lambda seqs: [])
    old.start_sketch()
    assert old.building() is None  # replaced by generation 2
    cache.close()
    new.start_sketch()
    assert new.building() is None


def _slow_blocks(monkeypatch: Any, seconds: float) -> list[int]:
    """Each block of a sketch's rows takes ``seconds`` more; the list counts the blocks."""
    done: list[int] = []
    real = Sketch._fill_block

    def slow(self: Sketch, *args: Any) -> None:
        time.sleep(seconds)
        done.append(1)
        real(self, *args)

    monkeypatch.setattr(Sketch, "_fill_block", slow)
    return done


def test_a_build_under_way_stops_at_its_next_block_when_its_entry_is_stopped(
    monkeypatch: Any,
) -> None:
    done = _slow_blocks(monkeypatch, 0.05)
    entry = _Entry(0, _codes(60_000, 3), None)  # 30 blocks: 1.5 s at least
    entry.start_sketch()
    deadline = time.monotonic() + 30
    while not done and time.monotonic() < deadline:
        time.sleep(0.005)
    started = time.monotonic()
    entry.stop_build()
    assert entry.building() is None and time.monotonic() - started < 1.0
    assert not entry.wait_sketch(0) and len(done) < 30


CHILD = """
import atexit, sys, threading, time

def report():  # registered first, so it runs after the store's own exit hook
    alive = [t for t in threading.enumerate() if t.name == "memcore-sketch"]
    print("build alive at exit" if alive else "build stopped before exit")

atexit.register(report)
import numpy as np
import pytest
from memcore_sqlite.vector.cache import _Entry
from memcore_sqlite.vector.quantize import encode
from memcore_sqlite.vector.sketch import Sketch

real = Sketch._fill_block
def slow(self, *args):
    time.sleep(0.05)
    with open(sys.argv[1], "a") as f:
        f.write("block\\n")
    real(self, *args)
Sketch._fill_block = slow
rows = np.random.default_rng(1).standard_normal((60_000, 64)).astype(np.float32)
rows /= np.linalg.norm(rows, axis=1, keepdims=True)
entry = _Entry(0, encode(np.arange(1, 60_001, dtype=np.int64), rows), None)
entry.start_sketch()
while True:  # exit once the build is under way, without stopping it
    try:
        if open(sys.argv[1]).read():
            break
    except FileNotFoundError:
        pass
    time.sleep(0.005)
"""


def test_a_process_exiting_during_a_build_stops_it_first(tmp_path: Any) -> None:
    """The exit stops a build at its next block of rows instead of cutting its thread off
    inside a BLAS call (which left OpenBLAS's exit handler waiting forever)."""
    import subprocess
    import sys

    blocks = tmp_path / "blocks"
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", CHILD, str(blocks)], capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.strip() == "build stopped before exit"
    assert time.monotonic() - started < 20
    assert 0 < len(blocks.read_text().splitlines()) < 30  # stopped, not finished


def test_a_search_started_build_waits_out_a_grace_that_a_close_cuts_short(
    sketch_builds: list[int],
) -> None:
    """One command (a search, then close) never pays for a sketch it will not use."""
    closed, kept = (_Entry(0, _codes(300, seed), None) for seed in range(2))
    for entry in (closed, kept):
        later: list[Any] = []
        assert entry.ready_sketch(later) is None
        for start in later:  # what a search starts once it has returned
            start()
    started = time.monotonic()
    closed.stop_build()
    assert time.monotonic() - started < 0.2 and closed.building() is None
    assert kept.wait_sketch(30) and not closed.wait_sketch(0)
    assert sketch_builds == [1]


@pytest.mark.filterwarnings("ignore:This process .* is multi-threaded:DeprecationWarning")
def test_a_child_forked_during_a_build_builds_its_own(monkeypatch: Any) -> None:
    """The turn a build holds is the parent's: in a child forked meanwhile (a preforking
    server's worker, which opens its own store) no thread would ever give it back, and
    none of the child's scopes got a sketch."""
    import os
    import signal

    release, holding = threading.Event(), threading.Event()
    real = Sketch.build

    def held(*args: Any) -> Sketch:
        if not holding.is_set():  # the parent's build, under way at the fork
            holding.set()
            assert release.wait(30)
        return real(*args)

    monkeypatch.setattr(Sketch, "build", held)
    parents = _Entry(0, _codes(300, 0), None)
    parents.start_sketch()
    assert holding.wait(30)
    try:
        pid = os.fork()
        if pid == 0:
            code = 1
            try:
                signal.alarm(20)
                own = _Entry(0, _codes(300, 1), None)
                own.start_sketch()
                code = 0 if own.wait_sketch(10) else 3
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        release.set()
    assert parents.wait_sketch(30)
