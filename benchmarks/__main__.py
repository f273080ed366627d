"""Run a benchmark by name: ``uv run python -m benchmarks <name> [args]``; no name lists them."""

from __future__ import annotations

import importlib
import json
import pkgutil
import sys
from pathlib import Path


def available() -> list[str]:
    here = Path(__file__).parent
    return sorted(m.name for m in pkgutil.iter_modules([str(here)]) if not m.name.startswith("_"))


def main(argv: list[str]) -> int:
    names = available()
    if not argv or argv[0] in ("-h", "--help", "list"):
        print(json.dumps({"benchmarks": names}, indent=2))
        return 0
    name, rest = argv[0], argv[1:]
    if name not in names:
        print(
            json.dumps({"error": f"unknown benchmark {name!r}", "benchmarks": names}),
            file=sys.stderr,
        )
        return 2
    module = importlib.import_module(f"benchmarks.{name}")
    sys.argv = [f"benchmarks.{name}", *rest]
    result = module.main()
    return int(result or 0)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
