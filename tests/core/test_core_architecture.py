"""The hexagon is checked, not trusted: import contracts and a clean core import."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
FORBIDDEN_IN_CORE = [
    "memcore_sqlite",
    "memcore_tablestore",
    "memcore_hermes",
    "memcore_cli",
    "tablestore",
    "alibabacloud_credentials",
    "alibabacloud_tablestore20201209",
    "typer",
    "rich",
    "sqlite3",
    "urllib3",
    "aiohttp",
    "http.client",
    "numpy",
    "agent",
    "hermes_cli",
]


def test_import_contracts_hold() -> None:
    exe = shutil.which("lint-imports") or str(Path(sys.executable).with_name("lint-imports"))
    if not Path(exe).exists():
        pytest.fail("lint-imports is not installed; run `uv sync --all-packages`")
    proc = subprocess.run([exe], cwd=ROOT, capture_output=True, text=True, timeout=240)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-2000:]


def test_importing_the_core_loads_no_adapter_sdk_or_io_library() -> None:
    code = (
        "import sys, json, memcore, memcore.testing, memcore.testing.contract;"
        f"print(json.dumps([m for m in {FORBIDDEN_IN_CORE!r} if m in sys.modules]))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert json.loads(out.stdout) == []


def test_repo_root_holds_only_the_plugin_shims() -> None:
    assert sorted(p.name for p in ROOT.glob("*.py")) in (
        [],
        ["__init__.py"],
        ["__init__.py", "cli.py"],
    )
