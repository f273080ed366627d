"""Importing the ``tablestore`` SDK without its start-up noise on stdout."""

from __future__ import annotations

import contextlib
import importlib
import logging
import os
import sys
from collections.abc import Iterator


def import_sdk_quietly() -> None:
    """Import the ``tablestore`` SDK without its start-up noise on our streams.

    On import the SDK logs "Native C++ encoder/decoder not available" (shown by Python's
    last-resort handler when the host configured none) and its native module may write to
    fd 1, which would corrupt ``--json`` output. Those two loggers keep their errors only, and
    fd 1 points at stderr for the duration of the import. Later imports are free.
    """
    if "tablestore" in sys.modules:
        return
    for name in ("tablestore.encoder", "tablestore.decoder"):
        logging.getLogger(name).setLevel(logging.ERROR)
    with _stdout_to_stderr():
        importlib.import_module("tablestore")


@contextlib.contextmanager
def _stdout_to_stderr() -> Iterator[None]:
    try:
        sys.stdout.flush()
        saved = os.dup(1)
    except (OSError, ValueError):  # no real fd 1 (an embedding host): nothing to guard
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        os.dup2(saved, 1)
        os.close(saved)
