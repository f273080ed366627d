"""Scopes' sketches are built in the background one at a time, and only for scopes the
cache still holds. Side by side the builds slowed each other many times over (their BLAS
threads share the cores), so under searches and writes they piled up by the hundred until
OpenBLAS aborted the process; a closed store's or a replaced entry's build only took CPU."""

from __future__ import annotations

import threading
import time
from typing import Any

import numpy as np

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
