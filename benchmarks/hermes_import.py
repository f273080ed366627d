"""How long importing the ``tablestore-mem`` plugin takes (what ``hermes memory status`` pays).

Each sample is a fresh interpreter that first imports Hermes' provider base class (already
loaded in any Hermes process), then executes the plugin root's ``__init__.py``. Prints JSON.

    uv run python -m benchmarks.hermes_import [--runs 15]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

_PROBE = r"""
import importlib.util, json, sys, time
if sys.argv[2] == "with-base":
    import agent.memory_provider
t = time.perf_counter()
spec = importlib.util.spec_from_file_location("_tablestore_mem_probe", sys.argv[1] + "/__init__.py",
                                              submodule_search_locations=[sys.argv[1]])
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
elapsed = time.perf_counter() - t
heavy = sorted(m for m in ("tablestore", "numpy", "memcore", "onnxruntime", "urllib3") if m in sys.modules)
print(json.dumps({"ms": elapsed * 1000, "heavy": heavy}))
"""


def sample(mode: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(ROOT), mode], capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    report: dict[str, object] = {"benchmark": "hermes_import", "runs": args.runs, "goal_ms": 150}
    for mode in ("with-base", "cold"):
        runs = [sample(mode) for _ in range(args.runs)]
        ms = sorted(float(r["ms"]) for r in runs)  # type: ignore[arg-type]
        report[mode] = {
            "median_ms": round(statistics.median(ms), 2),
            "p90_ms": round(ms[int(0.9 * (len(ms) - 1))], 2),
            "max_ms": round(ms[-1], 2),
            "heavy_modules_loaded": sorted({m for r in runs for m in r["heavy"]}),  # type: ignore[attr-defined]
        }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
