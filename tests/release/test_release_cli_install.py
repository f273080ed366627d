"""`pip install ./packages/adapter-cli` (with its unpublished workspace dependencies as local
paths, the embedded store with its `semantic` extra, as the README says) gives a working
`memcore` command with hybrid search in a fresh venv."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

# The CLI's workspace dependencies are not on the package index, so they go in as paths too;
# each before the package that needs it, as the README lists them.
CLI_INSTALL = (
    "./packages/memcore",
    "./packages/adapter-sqlite[semantic]",
    "./packages/adapter-tablestore",
    "./packages/adapter-cli",
)


@pytest.fixture
def memcore_cmd(
    cli_venv: Any, tmp_path: Path, run_command: Callable[..., Any]
) -> Callable[..., Any]:
    """Run the installed `memcore` with a fresh MEMCORE_HOME under tmp_path."""
    env = cli_venv.env(MEMCORE_HOME=str(tmp_path / "home"))
    return lambda *args: run_command([cli_venv.bin("memcore"), *args], env=env, timeout=60)


@pytest.fixture(scope="module")
def cli_venv(tmp_path_factory: pytest.TempPathFactory, new_venv: Callable[..., Any]) -> Any:
    venv = new_venv(tmp_path_factory.mktemp("cli") / "venv")
    # uv with pip's semantics (the library test runs pip itself); pip takes ~40 s here.
    venv.uv_pip_install(*CLI_INSTALL, pip_semantics=True)
    return venv


def test_release_cli_install_puts_the_memcore_command_in_the_venv(
    cli_venv: Any, memcore_cmd: Callable[..., Any]
) -> None:
    assert cli_venv.bin("memcore").is_file(), (
        "pip install ./packages/adapter-cli installed no `memcore`"
    )
    out = memcore_cmd("--help").check()
    assert "Usage: memcore" in out.stdout
    for command in ("add", "search", "list", "doctor"):
        assert command in out.stdout


def test_release_cli_install_adds_and_searches_with_zero_config(
    memcore_cmd: Callable[..., Any], tmp_path: Path
) -> None:
    added = memcore_cmd("add", "User prefers concise answers").check()
    assert added.stdout.strip(), added.explain()
    found = memcore_cmd("--json", "search", "concise answers").check()
    hits = _json_documents(found.stdout)
    texts = [hit["text"] for hit in hits]
    assert "User prefers concise answers" in texts, found.explain()
    assert all(set(hit["scope"]) == {"app_id", "tenant_id", "agent_id", "run_id"} for hit in hits)
    assert (tmp_path / "home").is_dir(), "the data did not live under MEMCORE_HOME"


def test_release_cli_install_gives_hybrid_search(memcore_cmd: Callable[..., Any]) -> None:
    """The README's install line gives recall by meaning, not only by shared words."""
    memcore_cmd("add", "The user likes strong espresso").check()
    memcore_cmd("add", "The user lives in Hangzhou").check()
    doctor = memcore_cmd("doctor").check()
    mode = [line for line in doctor.stdout.splitlines() if "search mode" in line]
    assert mode and "hybrid" in mode[0], doctor.explain()
    found = memcore_cmd("--json", "search", "coffee").check()
    hits = _json_documents(found.stdout)
    assert hits and hits[0]["text"] == "The user likes strong espresso", found.explain()


def test_release_cli_install_uses_the_given_paths_not_editable_members(cli_venv: Any) -> None:
    out = cli_venv.python_run(
        "import importlib.metadata as m\n"
        "for d in m.distributions():\n"
        "    if d.metadata['Name'].startswith('memcore'):\n"
        "        print(d.metadata['Name'], d.read_text('direct_url.json'))\n",
        env=cli_venv.env(),
    ).check()
    lines = out.stdout.strip().splitlines()
    assert len(lines) == 4, out.stdout
    assert not [ln for ln in lines if '"editable": true' in ln or '"editable":true' in ln], (
        out.stdout
    )
    # Each came from the paths given: the name `memcore` on the package index is another project.
    assert all('"url": "file://' in ln or '"url":"file://' in ln for ln in lines), out.stdout


def test_release_cli_install_reaches_both_backends(cli_venv: Any) -> None:
    out = cli_venv.python_run(
        "from memcore.discovery import installed_backends; print(','.join(installed_backends()))",
        env=cli_venv.env(),
    ).check()
    assert out.stdout.strip().split(",") == ["local", "tablestore"]


@pytest.mark.parametrize(
    ("last", "expected"),
    [
        ("./packages/adapter-cli", CLI_INSTALL),
        ("./packages/adapter-mcp", (*CLI_INSTALL, "./packages/adapter-mcp")),
    ],
    ids=["cli", "cli-with-mcp"],
)
def test_release_cli_install_line_resolves_with_the_pip_python_ships(
    last: str,
    expected: tuple[str, ...],
    repo_root: Path,
    tmp_path: Path,
    run_command: Callable[..., Any],
    environment: Callable[..., Any],
) -> None:
    """The README's lines, in their order, with the pip a plain ``python -m venv`` gives (pip
    23.2 on Python 3.11): that pip refused ``memcore-sqlite`` when ``adapter-cli``, which needs
    it, came before the path that provides it with its extra."""
    [line] = [
        ln
        for ln in (repo_root / "README.md").read_text(encoding="utf-8").splitlines()
        if ln.startswith("pip install ") and ln.endswith(f" {last}")
    ]
    targets = tuple(shlex.split(line)[2:])
    assert targets == expected, line
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    done = run_command(
        [venv / "bin" / "python", "-m", "pip", "install", "--dry-run", "--quiet", *targets],
        env=environment(PIP_DISABLE_PIP_VERSION_CHECK="1"),
        timeout=300,
    )
    assert done.returncode == 0, done.explain()
    assert not re.search(r"No matching distribution", done.stderr), done.explain()


def _json_documents(text: str) -> list[dict[str, Any]]:
    """One JSON document (a list or an object holding a list) or JSON Lines."""
    text = text.strip()
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        return [json.loads(line) for line in text.splitlines() if line.strip()]
    if isinstance(doc, list):
        return doc
    for key in ("hits", "items", "results", "memories"):
        if isinstance(doc.get(key), list):
            return doc[key]  # type: ignore[no-any-return]
    return [doc]
