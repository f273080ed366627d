"""The README quickstart block runs as written, from the repository root, on a fresh home."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

FIRST_BASH_BLOCK = re.compile(r"^```bash[ \t]*\n(.*?)^```", flags=re.M | re.S)
# The test command itself is left out: running it here would recurse into this suite.
TEST_COMMAND = re.compile(r"^\s*uv run pytest(\s|$)")


def quickstart_lines(readme: str) -> list[str]:
    block = FIRST_BASH_BLOCK.search(readme)
    assert block, "README.md has no ```bash block"
    lines = [ln.strip() for ln in block.group(1).splitlines()]
    return [ln for ln in lines if ln and not ln.startswith("#")]


def test_release_quickstart_holds_the_main_job_and_the_test_command(repo_root: Path) -> None:
    lines = quickstart_lines((repo_root / "README.md").read_text(encoding="utf-8"))
    assert len(lines) == 2, f"the quickstart should be the two first commands, got {lines}"
    assert any(TEST_COMMAND.match(ln) for ln in lines)


def test_release_quickstart_lines_succeed_on_a_fresh_memcore_home(
    repo_root: Path,
    tmp_path: Path,
    run_command: Callable[..., Any],
    environment: Callable[..., dict[str, str]],
) -> None:
    home = tmp_path / "memcore-home"
    env = environment(MEMCORE_HOME=str(home))
    ran = 0
    for line in quickstart_lines((repo_root / "README.md").read_text(encoding="utf-8")):
        if TEST_COMMAND.match(line):
            continue
        result = run_command(
            ["bash", "-euo", "pipefail", "-c", line], cwd=repo_root, env=env, timeout=110
        )
        result.check()
        assert result.stdout.strip(), f"{line!r} printed nothing"
        ran += 1
    assert ran, "the quickstart holds no command besides the test command"
    if home.exists():
        assert any(home.iterdir()), "the quickstart wrote nothing under MEMCORE_HOME"
