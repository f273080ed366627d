"""Large code arrays are kept out of numpy's huge-page advice (see ``vector.plain_pages``)."""

from __future__ import annotations

import mmap
import sqlite3
from pathlib import Path

import numpy as np
import pytest

from memcore_sqlite.vector import code_pages, plain_pages, quantize

_SMAPS = Path("/proc/self/smaps")


def _flags(array: np.ndarray) -> list[str]:
    """The VmFlags of the mapping that holds ``array``'s middle byte (numpy advises from the
    first page boundary inside the array, so its first bytes may sit in a mapping of their own).
    """
    address = array.__array_interface__["data"][0] + array.nbytes // 2
    inside = False
    for line in _SMAPS.read_text().splitlines():
        head = line.split()[0]
        if "-" in head and not head.endswith(":"):
            low, high = (int(part, 16) for part in head.split("-"))
            inside = low <= address < high
        elif inside and head == "VmFlags:":
            return line.split()[1:]
    raise AssertionError("no mapping holds the array")


@pytest.mark.parametrize("filled_at_once", [False, True])
@pytest.mark.parametrize("dtype", [np.int8, np.float32])
def test_zeros_behaves_like_numpy_zeros(dtype: type, filled_at_once: bool) -> None:
    got = plain_pages.zeros((300, 7), dtype, filled_at_once=filled_at_once)
    assert got.shape == (300, 7) and got.dtype == np.dtype(dtype)
    assert not got.any() and got.flags.writeable and got.flags.c_contiguous
    got[5:9] = 3
    assert int(got.sum()) == 3 * 4 * 7


@pytest.mark.parametrize("shape", [(0, 384), (5, 0), (0,)])
def test_empty_shapes(shape: tuple[int, ...]) -> None:
    got = plain_pages.zeros(shape, np.int8)
    assert got.shape == shape and got.flags.writeable


@pytest.mark.skipif(not _SMAPS.exists(), reason="needs Linux's /proc/self/smaps")
def test_big_arrays_are_not_advised_huge_pages() -> None:
    """numpy advises ``hg`` on arrays of 4 MiB or more; ours must not carry it."""
    shape = (40_000, 384)  # 15 MB, as the codes of 40k memories
    theirs = np.empty(shape, np.int8)
    if "hg" not in _flags(theirs):
        pytest.skip("this numpy or kernel gives no huge-page advice")
    for filled_at_once in (False, True):
        ours = plain_pages.zeros(shape, np.int8, filled_at_once=filled_at_once)
        assert "hg" not in _flags(ours)
        assert "sh" not in _flags(ours)  # private: a forked child's writes stay its own


def _root(array: np.ndarray) -> object:
    base: object = array
    while isinstance(base, np.ndarray):
        base = base.base
    return base.obj if isinstance(base, memoryview) else base


def test_loaded_codes_live_in_plain_pages_and_read_back_exactly(tmp_path: Path) -> None:
    """A fresh process's first search copies every code of a scope into such an array."""
    conn = sqlite3.connect(tmp_path / "pages.db")
    conn.executescript(code_pages.SCHEMA)
    rng = np.random.default_rng(3)
    vectors = rng.standard_normal((700, 48)).astype(np.float32)
    codes = quantize.encode(np.arange(1, 701, dtype=np.int64), vectors)
    scope = ("app", "alice", "agent", "run")
    code_pages.write(conn, 1, "m", 48, [], [(scope, codes)])
    loaded = code_pages.load(conn, 1, "m", ("app", "alice", "*", "*"), 48)
    assert isinstance(_root(loaded.q8), mmap.mmap)
    assert np.array_equal(loaded.seqs, codes.seqs) and np.array_equal(loaded.q8, codes.q8)
    assert np.array_equal(loaded.scales, codes.scales)
    loaded.q8[0, 0] = 1  # in-process writes edit the loaded codes
    assert code_pages.load(conn, 1, "m", ("app", "bob", "*", "*"), 48).q8.shape == (0, 48)
