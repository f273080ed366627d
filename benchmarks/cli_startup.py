"""How fast the ``memcore`` console script answers (goal: ``--help`` under 300 ms).

Runs the installed script as a user would, in a throwaway ``MEMCORE_HOME``, and prints JSON:
medians and p95 in milliseconds, plus the interpreter's own start-up for comparison.

    uv run python -m benchmarks.cli_startup [--runs N]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

SCRIPT = Path(sys.executable).with_name("memcore")


def _time(argv: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    samples = []
    for _ in range(runs):
        started = time.perf_counter()
        done = subprocess.run(argv, env=env, capture_output=True, check=False)
        samples.append((time.perf_counter() - started) * 1000)
        if done.returncode != 0:
            raise SystemExit(f"{argv} failed: {done.stderr.decode(errors='replace')}")
    samples.sort()
    p95 = samples[min(len(samples) - 1, round(0.95 * (len(samples) - 1)))]
    return {
        "median_ms": round(statistics.median(samples), 1),
        "p95_ms": round(p95, 1),
        "min_ms": round(samples[0], 1),
        "runs": runs,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        lexical_home = Path(tmp) / "lexical"
        lexical_home.mkdir()
        (lexical_home / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
        hybrid_home = Path(tmp) / "hybrid"
        base = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": tmp, "LANG": "C.UTF-8"}
        lexical = {**base, "MEMCORE_HOME": str(lexical_home)}
        hybrid = {**base, "MEMCORE_HOME": str(hybrid_home)}
        memcore = [str(SCRIPT)]
        subprocess.run(
            [*memcore, "add", "User prefers concise answers"],
            env=lexical,
            capture_output=True,
            check=True,
        )
        subprocess.run(
            [*memcore, "add", "User prefers concise answers"],
            env=hybrid,
            capture_output=True,
            check=True,
        )
        few = max(3, args.runs // 3)
        report = {
            "benchmark": "cli_startup",
            "python_startup": _time([sys.executable, "-c", "pass"], base, args.runs),
            "help": _time([*memcore, "--help"], lexical, args.runs),
            "add_help": _time([*memcore, "add", "--help"], lexical, args.runs),
            "search_lexical": _time([*memcore, "search", "answer style"], lexical, args.runs),
            "add_lexical": _time(
                [*memcore, "add", "User prefers concise answers"], lexical, args.runs
            ),
            "search_hybrid_cold_process": _time([*memcore, "search", "answer style"], hybrid, few),
            "goal_help_ms": 300,
        }
        report["help_under_goal"] = report["help"]["median_ms"] < 300
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
