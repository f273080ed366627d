"""Large arrays in memory that the kernel hands out a small page at a time.

numpy asks Linux for transparent huge pages on every array of 4 MiB or more. Where the kernel
compacts memory on demand for such requests (``defrag=madvise``, common on distributions), the
first touch of each 2 MiB page can wait for that compaction. A fresh process's first search
copies 38 MB of int8 codes at 100k memories: into numpy's memory the copy took 101-335 ms in
eight fresh processes of nine, against 26-34 ms into a private anonymous map and 18-26 ms into
one mapped with its pages (``MAP_POPULATE``: one kernel call instead of a fault per 4 KiB
page). The sketch's build at 100k took 0.26-1.35 s (median 0.66) in fresh processes, 0.26-0.43
s (median 0.28) in these pages; its stalls held the GIL, so searches beside it waited too. An
anonymous map is never advised; the map lives as long as the array (its buffer).
"""

from __future__ import annotations

import math
import mmap
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

#: A private map where the platform has the flag (``mmap``'s default is shared, which on Linux
#: is backed by shared memory: slower to fault, and written through to a forked child).
_PRIVATE = getattr(mmap, "MAP_PRIVATE", 0) | getattr(mmap, "MAP_ANONYMOUS", 0)
#: Linux maps the pages of a map that is filled at once in the same call.
_POPULATE = getattr(mmap, "MAP_POPULATE", 0)


def zeros(shape: tuple[int, ...], dtype: Any, *, filled_at_once: bool = False) -> np.ndarray:
    """A writable array of zeros, like ``numpy.zeros``, outside numpy's huge-page advice.

    ``filled_at_once`` maps every page up front: right for an array about to be written whole,
    wrong for spare capacity, which would take memory before it holds anything.
    """
    import numpy

    kind = numpy.dtype(dtype)
    size = math.prod(shape) * kind.itemsize
    if size == 0:
        return numpy.zeros(shape, kind)
    flags = _PRIVATE | (_POPULATE if filled_at_once else 0)
    buffer: Any = mmap.mmap(-1, size, flags=flags) if _PRIVATE else mmap.mmap(-1, size)
    return numpy.frombuffer(buffer, dtype=kind).reshape(shape)
