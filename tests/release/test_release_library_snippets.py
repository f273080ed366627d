"""The README's Python examples run as written, in the order a reader meets them, on one
fresh store; each runs a second time too (a reader tries it again), and an example that shows
its output in comments prints that (a score within a CPU's drift)."""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

PYTHON_BLOCK = re.compile(r"^```python[ \t]*\n(.*?)^```", flags=re.M | re.S)


def python_blocks(readme: str) -> list[str]:
    return [m.group(1) for m in PYTHON_BLOCK.finditer(readme)]


def shown_output(block: str) -> list[str]:
    """The comment lines that close a block (``# 宠物 0.4 ...``): the output it promises."""
    lines = block.rstrip("\n").splitlines()
    shown: list[str] = []
    while lines and lines[-1].startswith("# "):
        shown.insert(0, lines.pop()[2:])
    return shown


#: A score the README shows is one machine's: the embedders' kernels take other paths on other
#: CPUs (AVX-512 against AVX2), which moves a cosine by a few thousandths.
SCORE_TOLERANCE = 0.02
NUMBER = re.compile(r"\d+\.\d+")


def same_output(printed: list[str], shown: list[str]) -> bool:
    """Line for line the same words, and every decimal within :data:`SCORE_TOLERANCE`."""
    if len(printed) != len(shown):
        return False
    for got, want in zip(printed, shown):
        if NUMBER.sub("#", got) != NUMBER.sub("#", want):
            return False
        pairs = zip(NUMBER.findall(got), NUMBER.findall(want))
        if any(abs(float(a) - float(b)) > SCORE_TOLERANCE for a, b in pairs):
            return False
    return True


def test_release_same_output_allows_a_cpu_s_score_drift_only() -> None:
    assert same_output(["宠物 0.39 豆豆"], ["宠物 0.4 豆豆"])
    assert not same_output(["宠物 0.35 豆豆"], ["宠物 0.4 豆豆"])
    assert not same_output(["饮料 0.4 豆豆"], ["宠物 0.4 豆豆"])
    assert not same_output(["宠物 0.4 豆豆"], ["宠物 0.4 豆豆", "x"])


def test_release_shown_output_is_the_closing_comment_lines() -> None:
    block = "print(1)\nx = 2  # not output\n# 1\n# 2\n"
    assert shown_output(block) == ["1", "2"]
    assert shown_output("print(1)\n") == []


def test_release_readme_python_examples_run_in_order_and_again(
    repo_root: Path,
    tmp_path: Path,
    run_command: Callable[..., Any],
    environment: Callable[..., dict[str, str]],
) -> None:
    blocks = python_blocks((repo_root / "README.md").read_text(encoding="utf-8"))
    assert len(blocks) >= 3, "README.md lost its Python examples"
    env = environment(MEMCORE_HOME=str(tmp_path / "memcore-home"))
    for number, block in enumerate(blocks, start=1):
        if "/path/to/" in block:  # a template the reader fills in
            continue
        script = tmp_path / f"example_{number}.py"
        script.write_text(block, encoding="utf-8")
        for attempt in ("first", "second"):
            done = run_command([sys.executable, script], cwd=tmp_path, env=env, timeout=300)
            assert done.returncode == 0, f"example {number}, {attempt} run\n{done.explain()}"
            shown = shown_output(block)
            if shown:
                printed = done.stdout.strip().splitlines()
                assert same_output(printed, shown), (
                    f"example {number}, {attempt} run\n{done.explain()}"
                )
