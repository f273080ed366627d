"""Shared rig for the reliability suite: durations (short in CI, full for the report), the
scenario recorder that feeds RELIABILITY.md, and fixtures for real subprocesses.

Every fault scenario records one row: what was injected, how many writes were issued,
acknowledged and found stored after recovery, how many were lost or duplicated, and whether the
scenario passed. Rows go to the JSON Lines file named by ``MEMCORE_RELIABILITY_OUT`` (when set).
"""

from __future__ import annotations

import contextlib
import json
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

#: Full durations (60 s windows, 200 turns x 8 threads) for the published report.
FULL = os.environ.get("MEMCORE_RELIABILITY_FULL") == "1"
#: The medium mode: longer than CI, shorter than the published full figures.
MEDIUM = os.environ.get("MEMCORE_RELIABILITY_MEDIUM") == "1"
# The rig module sits next to this file; tests import it by its (repo-unique) name.
if str(Path(__file__).resolve().parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent))
_OUT_LOCK = threading.Lock()


def pick(short: float, full: float, medium: float | None = None) -> float:
    """A duration or count: ``short`` in CI, ``full`` for the published report."""
    if FULL:
        return full
    if MEDIUM:
        return medium if medium is not None else (short + full) / 2
    return short


def mode_name() -> str:
    return "full" if FULL else "medium" if MEDIUM else "short"


class Scenario:
    """Counts for one scenario; recorded as a row when the ``with`` block ends."""

    def __init__(self, name: str, fault: str, nodeid: str) -> None:
        self.name = name
        self.fault = fault
        self.nodeid = nodeid
        self.issued = 0
        self.acknowledged = 0
        self.stored = 0
        self.lost = 0
        self.duplicated = 0
        self.notes: dict[str, Any] = {}
        self._started = time.monotonic()

    def counts(
        self, *, issued: int, acknowledged: int, stored: int, lost: int, duplicated: int
    ) -> None:
        self.issued, self.acknowledged, self.stored = issued, acknowledged, stored
        self.lost, self.duplicated = lost, duplicated

    def note(self, **values: Any) -> None:
        self.notes.update(values)

    def row(self, passed: bool, error: str | None) -> dict[str, Any]:
        return {
            "scenario": self.name,
            "fault": self.fault,
            "issued": self.issued,
            "acknowledged": self.acknowledged,
            "stored": self.stored,
            "lost": self.lost,
            "duplicated": self.duplicated,
            "passed": passed,
            "error": error,
            "notes": self.notes,
            "test": self.nodeid,
            "mode": mode_name(),
            "seconds": round(time.monotonic() - self._started, 2),
        }


def write_row(row: dict[str, Any]) -> None:
    out = os.environ.get("MEMCORE_RELIABILITY_OUT")
    if not out:
        return
    line = json.dumps(row, ensure_ascii=False, sort_keys=True, default=str)
    with _OUT_LOCK, open(out, "a", encoding="utf-8") as fh:
        fh.write(line + "\n")


class ScenarioRecorder:
    def __init__(self, nodeid: str) -> None:
        self.nodeid = nodeid

    def __call__(self, name: str, fault: str) -> _ScenarioBlock:
        return _ScenarioBlock(Scenario(name, fault, self.nodeid))


class _ScenarioBlock:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario

    def __enter__(self) -> Scenario:
        return self.scenario

    def __exit__(self, exc_type: Any, exc: BaseException | None, tb: Any) -> None:
        s = self.scenario
        passed = exc is None and s.lost == 0 and s.duplicated == 0
        error = (
            None
            if exc is None
            else f"{exc_type.__name__}: {str(exc).splitlines()[0][:200] if str(exc) else ''}"
        )
        write_row(s.row(passed, error))


@pytest.fixture
def scenario(request: pytest.FixtureRequest) -> ScenarioRecorder:
    """``with scenario("name", "fault") as s: ...; s.counts(...)`` records one report row."""
    return ScenarioRecorder(request.node.nodeid)


@pytest.fixture
def subprocess_env(tmp_path: Path) -> dict[str, str]:
    """An environment for child processes: the venv's Python, a private HOME, no proxies."""
    env = {k: v for k, v in os.environ.items() if not k.lower().endswith("_proxy")}
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    env.update(
        HOME=str(home),
        MEMCORE_HOME=str(tmp_path / "memcore-home"),
        PYTHONUNBUFFERED="1",
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )
    env.pop("MEMCORE_RELIABILITY_OUT", None)
    return env


@pytest.fixture
def tiny_fs(tmp_path: Path) -> Iterator[Path | None]:
    """A 1 MiB tmpfs to fill up (needs root); None where mounting is not permitted."""
    target = tmp_path / "tinyfs"
    target.mkdir()
    mounted = False
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        import subprocess

        proc = subprocess.run(
            ["mount", "-t", "tmpfs", "-o", "size=1m,mode=0700", "tmpfs", str(target)],
            capture_output=True,
            check=False,
        )
        mounted = proc.returncode == 0
    try:
        yield target if mounted else None
    finally:
        if mounted:
            import subprocess

            subprocess.run(["umount", "-l", str(target)], capture_output=True, check=False)


@pytest.fixture(name="pick")
def _pick_fixture():
    """``pick(short, full)``: the CI value or the published-report value."""
    return pick


@pytest.fixture
def emulator() -> Iterator[Any]:
    """``start(store=None, **kwargs)`` -> a running ``EmulatorServer``; all stopped at teardown."""
    from memcore_tablestore.testing import running_emulator

    with contextlib.ExitStack() as stack:

        def start(store: Any = None, **kwargs: Any) -> Any:
            return stack.enter_context(running_emulator(store, **kwargs))

        yield start


@pytest.fixture
def local_provider(tmp_path: Path) -> Iterator[Any]:
    """A ``tablestore-mem`` provider on the embedded store, initialised for user ``alice``."""
    import reliability_rig as rig

    from memcore_hermes import MemcoreMemoryProvider

    home = rig.make_hermes_home(tmp_path / "hermes", rig.LOCAL_CONFIG)
    provider = MemcoreMemoryProvider(environ={}, flush_timeout=10.0)
    provider.initialize(
        "session-1", hermes_home=str(home), user_id="alice", agent_context="primary"
    )
    try:
        yield provider
    finally:
        provider.shutdown()
