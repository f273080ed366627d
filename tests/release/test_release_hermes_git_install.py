"""Hermes from a git URL: `hermes plugins install`, `hermes memory setup`, `hermes memory status`.

A fresh venv holds only hermes-agent, as a user's Hermes does. The plugin comes from a
`file://` git clone of the tree; `hermes memory setup` installs the `plugin.yaml` pip
dependencies; the offline `local` backend is chosen in `tablestore_memory.json`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

pytestmark = pytest.mark.slow

# hermes-agent (and its PyYAML) is a dev dependency on Python >= 3.11 only.
yaml = pytest.importorskip("yaml")

PROVIDER = "tablestore-mem"


@pytest.fixture(scope="module")
def installed(
    tmp_path_factory: pytest.TempPathFactory,
    hermes_venv_factory: Callable[..., Any],
    hermes_cmd: Callable[..., Any],
    plugin_repo: Path,
) -> dict[str, Any]:
    """Hermes venv, HERMES_HOME and the output of each install step, run once in order."""
    root = tmp_path_factory.mktemp("hermes-git")
    venv = hermes_venv_factory(root / "venv")
    home = root / "hermes-home"
    home.mkdir()
    steps: dict[str, Any] = {"venv": venv, "home": home}
    steps["install"] = hermes_cmd(venv, home, "plugins", "install", plugin_repo.as_uri())
    steps["setup"] = hermes_cmd(venv, home, "memory", "setup", PROVIDER)
    config = home / "tablestore_memory.json"
    if not config.exists():
        config.write_text(json.dumps({"backend": "local"}))
    else:
        # Keep whatever setup wrote and select the offline backend.
        data = json.loads(config.read_text())
        data["backend"] = "local"
        config.write_text(json.dumps(data))
    os.chmod(config, 0o600)
    steps["status"] = hermes_cmd(venv, home, "memory", "status")
    return steps


def test_release_git_install_puts_the_plugin_under_its_manifest_name(
    installed: dict[str, Any], plugin_repo: Path
) -> None:
    installed["install"].check()
    target = installed["home"] / "plugins" / PROVIDER
    assert target.is_dir(), installed["install"].explain()
    for name in ("plugin.yaml", "__init__.py", "cli.py", "after-install.md", "LICENSE"):
        assert (target / name).is_file(), f"{name} missing from the installed plugin"
    assert not (installed["home"] / "plugins" / plugin_repo.name).exists()
    manifest = yaml.safe_load((target / "plugin.yaml").read_text())
    assert manifest["name"] == PROVIDER


def test_release_git_install_shows_the_after_install_steps(installed: dict[str, Any]) -> None:
    out = installed["install"].check().stdout
    # after-install.md is shown: where secrets go, the offline backend, and doctor.
    for words in (".env", "TABLESTORE_MEMORY_AK", "tablestore_memory.json", "local", "doctor"):
        assert words in out, f"after-install text lacks {words!r}:\n{out}"


def test_release_git_install_memory_setup_selects_the_provider(installed: dict[str, Any]) -> None:
    setup = installed["setup"].check()
    assert "not found" not in setup.stdout, setup.explain()
    config = yaml.safe_load((installed["home"] / "config.yaml").read_text())
    assert config["memory"]["provider"] == PROVIDER, setup.explain()


def test_release_git_install_memory_setup_installs_the_pip_dependencies(
    installed: dict[str, Any], plugin_repo: Path, run_command: Callable[..., Any]
) -> None:
    """The venv held only hermes-agent; `hermes memory setup` brought in plugin.yaml's list."""
    installed["setup"].check()
    manifest = yaml.safe_load((plugin_repo / "plugin.yaml").read_text(encoding="utf-8"))
    venv = installed["venv"]
    code = (
        "import sys, importlib.metadata as m\n"
        "from packaging.requirements import Requirement\n"
        "for raw in sys.argv[1:]:\n"
        "    r = Requirement(raw)\n"
        "    v = m.version(r.name)\n"
        "    assert r.specifier.contains(v, prereleases=True), (raw, v)\n"
        "print('ok')\n"
    )
    out = run_command([venv.python, "-c", code, *manifest["pip_dependencies"]], env=venv.env())
    assert out.returncode == 0, out.explain()


def test_release_git_install_memory_status_is_installed_and_available(
    installed: dict[str, Any],
) -> None:
    out = installed["status"].check().stdout
    assert re.search(rf"Provider:\s+{PROVIDER}\b", out), out
    assert re.search(r"Plugin:\s+installed", out), out
    assert re.search(r"Status:\s+available", out), out


def test_release_git_install_plugin_cli_remembers_and_searches_offline(
    installed: dict[str, Any], hermes_cmd: Callable[..., Any]
) -> None:
    venv, home = installed["venv"], installed["home"]
    hermes_cmd(venv, home, PROVIDER, "add", "The user keeps a pet tortoise", "--sync").check()
    found = hermes_cmd(venv, home, PROVIDER, "search", "tortoise").check()
    texts = [hit["text"] for hit in json.loads(found.stdout)["results"]]
    assert "The user keeps a pet tortoise" in texts, found.explain()
    doctor = hermes_cmd(venv, home, PROVIDER, "doctor").check()
    report = json.loads(doctor.stdout)
    assert report["backend"] == "local" and report["ok"] is True, doctor.explain()
