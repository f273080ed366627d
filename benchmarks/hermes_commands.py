"""Wall and CPU time of real ``hermes`` commands with the ``tablestore-mem`` plugin installed.

Each sample is a new ``hermes`` process, as a user runs it, against its own temporary
HERMES_HOME holding the plugin (copied as ``hermes plugins install`` leaves it) on the offline
local backend. Hermes runs from a venv holding ``hermes-agent`` and the plugin's
``pip_dependencies`` but not memcore, so the plugin imports its own bundled packages (the dev
venv's editable installs would shadow them). Bytecode is written, as in a normal install.

Variants, run interleaved so that load changes hit them alike:

- ``noop``: a plugin of the same name whose provider and sub-commands do nothing. It is the
  floor that Hermes itself costs for each command; ``ours_ms`` is a variant minus ``noop``.
- ``head``: this working tree.
- ``baseline``: a git ref (``--baseline main``), exported with ``git archive``.

    uv run python -m benchmarks.hermes_commands [--runs 7] [--baseline REF] [--venv DIR]
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from memcore_hermes.plugin_copy import copy_plugin

ROOT = Path(__file__).resolve().parents[1]
HERMES_AGENT = "hermes-agent==0.19.0"
PLUGIN = "tablestore-mem"

COMMANDS: dict[str, list[str]] = {
    "version": ["--version"],
    "memory_status": ["memory", "status"],
    "doctor": [PLUGIN, "doctor"],
    "add": [PLUGIN, "add", "The user prefers green tea in the afternoon"],
    "add_sync": [PLUGIN, "add", "--sync", "The user walks to work"],
    "search": [PLUGIN, "search", "what does the user drink"],
}

_NOOP_INIT = '''"""A memory provider that does nothing: the floor Hermes costs (benchmarks only)."""
from agent.memory_provider import MemoryProvider


class NoopProvider(MemoryProvider):
    @property
    def name(self):
        return "tablestore-mem"

    def is_available(self):
        return True

    def initialize(self, session_id, **kwargs):
        pass

    def get_tool_schemas(self):
        return []

    def get_status_config(self, provider_config=None):
        return {}


def register(ctx):
    ctx.register_memory_provider(NoopProvider())
'''

_NOOP_CLI = '''"""Sub-commands that parse like the real ones and print ``{}``."""


def register_cli(subparser):
    commands = subparser.add_subparsers(dest="action")
    for name in ("add", "search"):
        command = commands.add_parser(name)
        command.add_argument("text")
        command.add_argument("--sync", action="store_true")
    commands.add_parser("doctor")


def tablestore_mem_command(args):
    print("{}")


globals()["tablestore-mem_command"] = tablestore_mem_command
'''


def _run(argv: list[str], env: dict[str, str], **kw: Any) -> subprocess.CompletedProcess[str]:
    return subprocess.run(argv, env=env, capture_output=True, text=True, check=False, **kw)


def _plugin_dependencies() -> list[str]:
    lines = (ROOT / "plugin.yaml").read_text(encoding="utf-8").splitlines()
    deps, inside = [], False
    for line in lines:
        if line.startswith("pip_dependencies:"):
            inside = True
        elif inside and line.startswith("  - "):
            deps.append(line[4:].strip())
        elif inside:
            break
    return deps


def make_venv(path: Path) -> Path:
    """A venv with Hermes and the plugin's dependencies (uv's cache makes it quick)."""
    hermes = path / "bin" / "hermes"
    if hermes.exists():
        return hermes
    uv = shutil.which("uv") or sys.exit("uv is required")
    env = {k: v for k, v in os.environ.items() if k != "VIRTUAL_ENV"}
    for argv in (
        [uv, "venv", "--quiet", "--python", sys.executable, str(path)],
        [uv, "pip", "install", "--quiet", "--python", str(path / "bin" / "python"),
         HERMES_AGENT, *_plugin_dependencies()],
    ):  # fmt: skip
        done = _run(argv, env, timeout=600)
        if done.returncode != 0:
            sys.exit(f"{argv[:3]} failed: {done.stderr[-2000:]}")
    return hermes


def _export_ref(ref: str, dest: Path) -> Path:
    dest.mkdir(parents=True)
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", ref], capture_output=True, check=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(dest)], input=archive, check=True)
    return dest


def make_home(root: Path, label: str, plugin_source: Path | None) -> Path:
    home = root / label
    target = home / "plugins" / PLUGIN
    if plugin_source is None:
        target.mkdir(parents=True)
        (target / "plugin.yaml").write_text(
            f"name: {PLUGIN}\nversion: 0.0.0\ndescription: no-op\nkind: exclusive\n",
            encoding="utf-8",
        )
        (target / "__init__.py").write_text(_NOOP_INIT, encoding="utf-8")
        (target / "cli.py").write_text(_NOOP_CLI, encoding="utf-8")
    else:
        copy_plugin(plugin_source, target)
    (home / "config.yaml").write_text(f"memory:\n  provider: {PLUGIN}\n", encoding="utf-8")
    (home / "tablestore_memory.json").write_text('{"backend": "local"}', encoding="utf-8")
    (home / "tablestore_memory.json").chmod(0o600)
    return home


def _env(home: Path) -> dict[str, str]:
    keep = ("PATH", "LANG", "LC_ALL", "TMPDIR", "UV_CACHE_DIR")
    env = {k: os.environ[k] for k in keep if k in os.environ}
    user_home = home.parent / f"{home.name}-user"
    user_home.mkdir(exist_ok=True)
    env.update(HERMES_HOME=str(home), HOME=str(user_home), NO_COLOR="1", COLUMNS="120")
    return env


def sample(hermes: Path, home: Path, argv: list[str]) -> tuple[float, float, int]:
    """(wall ms, CPU ms of the child, exit status) of one ``hermes`` process."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = _run([str(hermes), *argv], _env(home), timeout=300)
    wall = (time.perf_counter() - started) * 1000
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime) * 1000
    return wall, cpu, done.returncode


def _summary(values: list[float]) -> dict[str, float]:
    ordered = sorted(values)
    return {
        "median": round(statistics.median(ordered), 1),
        "min": round(ordered[0], 1),
        "max": round(ordered[-1], 1),
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--baseline", default=None, help="a git ref to compare with, e.g. main")
    parser.add_argument("--venv", type=Path, default=None, help="reuse (or create) this venv")
    parser.add_argument("--commands", default=",".join(COMMANDS), help="comma-separated subset")
    args = parser.parse_args()
    names = [n for n in args.commands.split(",") if n]
    with tempfile.TemporaryDirectory(prefix="hermes-bench-") as tmp:
        root = Path(tmp)
        hermes = make_venv(args.venv or root / "venv")
        homes = {"noop": make_home(root, "noop", None), "head": make_home(root, "head", ROOT)}
        if args.baseline:
            source = _export_ref(args.baseline, root / "baseline-src")
            homes["baseline"] = make_home(root, "baseline", source)
        for home in homes.values():  # write bytecode and the store, as a first use would
            for name in names:
                sample(hermes, home, COMMANDS[name])
        load_before = os.getloadavg()
        walls: dict[tuple[str, str], list[float]] = {}
        cpus: dict[tuple[str, str], list[float]] = {}
        failures: dict[str, int] = {}
        for _ in range(args.runs):
            for name in names:
                for label, home in homes.items():
                    wall, cpu, code = sample(hermes, home, COMMANDS[name])
                    walls.setdefault((name, label), []).append(wall)
                    cpus.setdefault((name, label), []).append(cpu)
                    if code != 0:
                        failures[f"{name}/{label}"] = failures.get(f"{name}/{label}", 0) + 1
        load_after = os.getloadavg()
    report: dict[str, Any] = {
        "benchmark": "hermes_commands",
        "runs": args.runs,
        "cpus": os.cpu_count(),
        "loadavg_before": [round(x, 2) for x in load_before],
        "loadavg_after": [round(x, 2) for x in load_after],
        "baseline": args.baseline,
        "failures": failures,
        "commands": {},
    }
    for name in names:
        entry: dict[str, Any] = {"argv": COMMANDS[name]}
        for label in homes:
            entry[label] = {
                "wall_ms": _summary(walls[(name, label)]),
                "cpu_ms": _summary(cpus[(name, label)]),
            }
        floor = entry["noop"]
        for label in homes:
            if label != "noop":
                entry[label]["ours_ms"] = {
                    kind: round(entry[label][kind]["median"] - floor[kind]["median"], 1)
                    for kind in ("wall_ms", "cpu_ms")
                }
        report["commands"][name] = entry
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
