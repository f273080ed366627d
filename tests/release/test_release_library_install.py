"""`pip install ./packages/memcore './packages/adapter-sqlite[semantic]'` (the README's line)
gives a working `memcore.Memory` with hybrid search."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

# Runs inside the fresh venv: the library example of the README, checked instead of printed.
LIBRARY_SCRIPT = r"""
import json, sys
import memcore

with memcore.Memory.open("local", user_id="alice") as mem:
    receipts = mem.add_receipts(text="The user likes strong espresso", metadata={"topic": "drinks"})
    mem.add(text="The user lives in Hangzhou")
    hits = mem.search("espresso")
    meaning = [h.memory.text for h in mem.search("coffee")]
    listed = list(mem.iter_all())
with memcore.Memory.open("local", user_id="bob") as other:
    foreign = other.search("espresso")
print(json.dumps({
    "memcore_file": memcore.__file__,
    "statuses": [r.status for r in receipts],
    "hits": [[h.memory.text, h.memory.metadata, h.score] for h in hits],
    "meaning": meaning,
    "listed": sorted(m.text for m in listed),
    "foreign": len(foreign),
}))
"""


@pytest.fixture(scope="module")
def library_venv(
    tmp_path_factory: pytest.TempPathFactory, new_venv: Callable[..., Any], repo_root: Path
) -> Any:
    venv = new_venv(tmp_path_factory.mktemp("library") / "venv", seed=True)
    venv.pip_install("./packages/memcore", "./packages/adapter-sqlite[semantic]")
    return venv


def test_release_library_install_pulls_in_the_core_and_the_embedded_store_with_its_model(
    library_venv: Any,
) -> None:
    out = library_venv.python_run(
        "import importlib.metadata as m, json;"
        "print(json.dumps(sorted(d.metadata['Name'].lower() for d in m.distributions())))",
        env=library_venv.env(),
    ).check()
    names = set(json.loads(out.stdout))
    assert {"memcore", "memcore-sqlite"} <= names
    assert not names & {"memcore-tablestore", "memcore-hermes", "memcore-cli", "tablestore"}
    assert {"numpy", "onnxruntime", "tokenizers"} <= names, "the semantic extra was not installed"
    # Without the extra the store stays lexical-only: the model's packages are extras only.
    requires = library_venv.python_run(
        "import importlib.metadata as m, json; print(json.dumps(m.requires('memcore-sqlite')))",
        env=library_venv.env(),
    ).check()
    for line in json.loads(requires.stdout):
        if line.split(";")[0].strip().lower().startswith(("numpy", "onnxruntime", "tokenizers")):
            assert "extra ==" in line, line
    # `memcore` on the package index is an unrelated project; ours must come from the path given.
    origin = library_venv.python_run(
        "import importlib.metadata as m; d = m.distribution('memcore');"
        "print(d.metadata['Author'], d.read_text('direct_url.json'))",
        env=library_venv.env(),
    ).check()
    assert origin.stdout.startswith("memcore developers "), origin.stdout
    assert "packages/memcore" in origin.stdout, origin.stdout


def test_release_library_install_remembers_and_searches_on_the_embedded_store(
    library_venv: Any, tmp_path: Path, repo_root: Path
) -> None:
    home = tmp_path / "memcore-home"
    out = library_venv.python_run(
        LIBRARY_SCRIPT, env=library_venv.env(MEMCORE_HOME=str(home))
    ).check()
    result = json.loads(out.stdout.strip().splitlines()[-1])
    # The installed copy, not the working tree, answered.
    assert not Path(result["memcore_file"]).is_relative_to(repo_root)
    assert result["statuses"] == ["completed"]
    assert result["hits"][0][0] == "The user likes strong espresso"
    assert result["hits"][0][1] == {"topic": "drinks"}
    assert result["meaning"][:1] == ["The user likes strong espresso"], "no recall by meaning"
    assert 0.0 < result["hits"][0][2] <= 1.0
    assert result["listed"] == ["The user likes strong espresso", "The user lives in Hangzhou"]
    assert result["foreign"] == 0, "another tenant saw alice's memory"
    assert home.is_dir() and any(home.rglob("*")), "the store did not live under MEMCORE_HOME"


def test_release_library_install_names_the_installed_backends_for_a_missing_one(
    library_venv: Any, tmp_path: Path
) -> None:
    code = (
        "import memcore\n"
        "from memcore.errors import MemcoreError\n"
        "try:\n"
        "    memcore.Memory.open('tablestore', user_id='alice')\n"
        "except MemcoreError as exc:\n"
        "    print(type(exc).__name__, exc)\n"
        "else:\n"
        "    raise SystemExit('opened a backend that is not installed')\n"
    )
    out = library_venv.python_run(code, env=library_venv.env(MEMCORE_HOME=str(tmp_path))).check()
    assert "local" in out.stdout, out.stdout


SUPPORTED = ("3.10", "3.11", "3.12", "3.13")


RUNNING = f"{sys.version_info[0]}.{sys.version_info[1]}"


@pytest.mark.parametrize("version", [v for v in SUPPORTED if v != RUNNING])
def test_release_library_install_works_on_every_supported_python(
    version: str,
    tmp_path: Path,
    new_venv: Callable[..., Any],
    interpreter: Callable[[str], str | None],
) -> None:
    """The classifiers promise 3.10 to 3.13; the running version is covered above."""
    python = interpreter(version)
    if python is None:
        pytest.skip(f"no local Python {version} interpreter")
    venv = new_venv(tmp_path / "venv", seed=True, python=python)
    venv.pip_install("./packages/memcore", "./packages/adapter-sqlite")
    out = venv.python_run(LIBRARY_SCRIPT, env=venv.env(MEMCORE_HOME=str(tmp_path / "home"))).check()
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result["hits"][0][0] == "The user likes strong espresso"
    assert result["foreign"] == 0
