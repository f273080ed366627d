"""The common path of the ``memcore`` CLI, as a user runs it: each command a new process.

On a local store of 1,000 memories (hybrid search when the semantic extra is installed) it
times ``--help``, ``add``, ``search``, ``list``, ``get`` and ``count`` (median wall time of
``--runs`` runs), and ``import`` of ``--import-size`` memories into a fresh home, embeddings
included (memories per second, and per CPU second, which load disturbs less), and one
``search`` with an empty model cache (the first run after installing). Goals: add/search
<= 0.5 s, list/get/--help <= 0.3 s, import >= 400/s. Byte-compiled modules are cached in a throwaway folder and warmed once, as
an installed package would have them. Prints JSON.

    uv run python -m benchmarks cli_commands [--runs N] [--import-size N] [--src CHECKOUT]

``--src`` runs another checkout's code (its ``packages/*/src`` first on ``PYTHONPATH``) in
this environment, to compare a change with what came before it; commands the older code
lacks (``count``, id prefixes) are left out then.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks._sqlite_corpus import Corpus

SCRIPT = Path(sys.executable).with_name("memcore")
GOALS_S = {"help": 0.3, "add": 0.5, "search": 0.5, "list": 0.3, "get": 0.3, "count": 0.3}
IMPORT_GOAL_PER_S = 400


_SRC: list[str] = []


def _env(home: Path, cache: Path, models: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env.update(
        MEMCORE_HOME=str(home), PYTHONPYCACHEPREFIX=str(cache), MEMCORE_MODEL_CACHE=str(models)
    )
    if _SRC:
        env["PYTHONPATH"] = os.pathsep.join(_SRC)
    return env


_CPU: list[float] = []


def _run(argv: list[str], env: dict[str, str], stdin: str | None = None) -> float:
    """Wall seconds of one run; its CPU seconds (user + system) go to ``_CPU``, a figure
    that a loaded machine disturbs far less than the wall time."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(
        [str(SCRIPT), *argv], env=env, input=stdin, capture_output=True, text=True, check=False
    )
    elapsed = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    _CPU.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        raise SystemExit(f"memcore {' '.join(argv)} failed ({done.returncode}): {done.stderr}")
    return elapsed


def _timed(argvs: list[list[str]], env: dict[str, str]) -> dict[str, float]:
    _CPU.clear()
    summary = _median([_run(argv, env) for argv in argvs])
    summary["cpu_median_s"] = round(statistics.median(_CPU), 3)
    return summary


def _records(texts: list[str]) -> str:
    scope = {"app_id": "hermes", "tenant_id": "__default__", "agent_id": "hermes"}
    return "".join(
        json.dumps({"text": t, "scope": {**scope, "run_id": "__default__"}, "metadata": {}}) + "\n"
        for t in texts
    )


def _median(samples: list[float]) -> dict[str, float]:
    return {
        "median_s": round(statistics.median(samples), 3),
        "min_s": round(min(samples), 3),
        "max_s": round(max(samples), 3),
        "runs": len(samples),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=9)
    parser.add_argument("--import-size", type=int, default=1000)
    parser.add_argument("--src", type=Path, default=None)
    args = parser.parse_args()
    if args.src is not None:
        _SRC.extend(str(p) for p in sorted((args.src / "packages").glob("*/src")))
    corpus = Corpus(seed=3)
    texts = corpus.texts(1000)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        cache = root / "pycache"
        home = root / "home"
        models = root / "models"  # the saved optimised model, made by the first import
        env = _env(home, cache, models)
        data = root / "memories.jsonl"
        data.write_text(_records(texts), encoding="utf-8")
        _run(["--help"], env)  # writes the byte-code cache
        _run(["import", str(data)], env)
        first_id = json.loads(
            subprocess.run(
                [str(SCRIPT), "--json", "list", "--limit", "1"],
                env=env,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )["items"][0]["id"]
        queries = corpus.queries(texts, args.runs)
        commands = {
            "help": lambda i: ["--help"],
            "add": lambda i: ["add", f"benchmark note number {i} about {queries[i]}"],
            "search": lambda i: ["search", queries[i]],
            "list": lambda i: ["list"],
            "get": lambda i: ["get", first_id if _SRC else first_id[:8]],
            "count": lambda i: ["count"],
        }
        if _SRC:
            del commands["count"]
        timings = {
            name: _timed([argv(i) for i in range(args.runs)], env)
            for name, argv in commands.items()
        }
        big = corpus.texts(args.import_size, start=10_000)
        fresh = _env(root / "fresh", cache, models)
        big_file = root / "big.jsonl"
        big_file.write_text(_records(big), encoding="utf-8")
        _CPU.clear()
        seconds = _run(["import", str(big_file)], fresh)
        import_cpu = _CPU[0]
        # The first search after installing: the optimised model is saved on the way.
        _CPU.clear()
        cold = _run(["search", queries[0]], _env(home, cache, root / "cold-models"))
        cold_cpu = _CPU[0]
        search_mode = json.loads(
            subprocess.run(
                [str(SCRIPT), "--json", "doctor"], env=env, capture_output=True, text=True
            ).stdout
        )["checks"]
    mode = next((c["detail"] for c in search_mode if c["name"] == "search mode"), "unknown")
    report = {
        "benchmark": "cli_commands",
        "code": str(args.src) if args.src else "this checkout",
        "store_memories": 1000,
        "load_average_1m": round(os.getloadavg()[0], 2),
        "search_mode": mode,
        "commands": timings,
        "search_first_run": {"seconds": round(cold, 3), "cpu_s": round(cold_cpu, 3)},
        "import": {
            "memories": args.import_size,
            "seconds": round(seconds, 2),
            "cpu_s": round(import_cpu, 2),
            "per_second": round(args.import_size / seconds, 1),
            "per_cpu_second": round(args.import_size / import_cpu, 1),
        },
        "goals": {
            **{f"{k}_s": v for k, v in GOALS_S.items()},
            "import_per_second": IMPORT_GOAL_PER_S,
        },
        "met": {
            **{k: timings[k]["median_s"] <= v for k, v in GOALS_S.items() if k in timings},
            "import": args.import_size / seconds >= IMPORT_GOAL_PER_S,
        },
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
