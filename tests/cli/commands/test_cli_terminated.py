"""SIGTERM (``kill``, ``timeout``) during an export to a file or a ``forget --all`` is an
interrupt: one line, exit 130, and what Ctrl-C undoes or reports. Its default action ended
the process without a word, leaving a hidden partial copy of the memories beside the
``--out`` file (one more per run), or a forget that had deleted some of them unsaid."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.cli.conftest import MEMCORE, run_memcore, write_config

pytestmark = [pytest.mark.skipif(os.name != "posix", reason="signals"), pytest.mark.slow]

MEMORIES = 20_000


@pytest.fixture(scope="module")
def filled(tmp_path_factory: pytest.TempPathFactory) -> Path:
    home = tmp_path_factory.mktemp("filled") / "home"
    write_config(home, {"embedder": "none"})
    lines = home.parent / "lines.txt"
    lines.write_text("".join(f"note {i} about topic {i % 97}\n" for i in range(MEMORIES)))
    run_memcore(home, "import", "--lines", str(lines))
    return home


def _start(home: Path, *args: str) -> subprocess.Popen[str]:
    env = {"PATH": os.environ.get("PATH", ""), "MEMCORE_HOME": str(home)}
    return subprocess.Popen(
        [MEMCORE, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env
    )


def _until(seen: object, proc: subprocess.Popen[str]) -> None:
    deadline = time.monotonic() + 120
    while not seen():  # type: ignore[operator]
        assert proc.poll() is None, proc.communicate()
        assert time.monotonic() < deadline
        time.sleep(0.005)


def test_sigterm_during_an_export_to_a_file_leaves_no_partial_copy(
    filled: Path, tmp_path: Path
) -> None:
    out = tmp_path / "out"
    out.mkdir()
    proc = _start(filled, "export", "--out", str(out / "memories.jsonl"))
    _until(lambda: any(out.iterdir()), proc)  # the hidden file it writes before the rename
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the export ended before the signal came")
    assert proc.returncode == 130, err
    assert err.strip().endswith("memcore: interrupted"), err
    assert list(out.iterdir()) == []


def test_sigterm_during_forget_all_says_how_many_it_deleted(filled: Path, tmp_path: Path) -> None:
    import shutil

    home = tmp_path / "home"
    shutil.copytree(filled, home)
    proc = _start(home, "forget", "--all", "--yes")

    def some_gone() -> bool:
        counted = run_memcore(home, "count").stdout.strip()
        return int(counted) < MEMORIES

    _until(some_gone, proc)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    if proc.returncode == 0:
        pytest.skip("the forget ended before the signal came")
    assert proc.returncode == 130, err
    left = int(run_memcore(home, "count").stdout.strip())
    said = f"memcore: interrupted ({MEMORIES - left} of {MEMORIES} memories forgotten"
    assert said in err, err
