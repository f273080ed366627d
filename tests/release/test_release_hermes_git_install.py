"""Hermes from a git URL: `hermes plugins install`, `hermes memory setup`, a real agent.

A fresh venv holds only hermes-agent, as a user's Hermes does. The plugin comes from a
`file://` git clone of the tree; `hermes memory setup tablestore-mem` installs the
`plugin.yaml` pip dependencies and, with no terminal, takes the offline backend chosen by
`TABLESTORE_MEMORY_BACKEND=local`. Then a real `AIAgent` runs two turns against a loopback
chat server that makes the model call `tablestore_search`.
"""

from __future__ import annotations

import json
import re
import stat
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes.testing import FakeChatServer, ToolCall

pytestmark = pytest.mark.slow

# hermes-agent (and its PyYAML) is a dev dependency on Python >= 3.11 only.
yaml = pytest.importorskip("yaml")

PROVIDER = "tablestore-mem"
AGENT_SCRIPT = Path(__file__).with_name("agent_two_turns.py")


@pytest.fixture(scope="module")
def installed(
    tmp_path_factory: pytest.TempPathFactory,
    hermes_venv_factory: Callable[..., Any],
    hermes_cmd: Callable[..., Any],
    run_command: Callable[..., Any],
    plugin_repo: Path,
) -> dict[str, Any]:
    """Hermes venv, HERMES_HOME and the output of each install step, run once in order."""
    root = tmp_path_factory.mktemp("hermes-git")
    venv = hermes_venv_factory(root / "venv")
    home = root / "hermes-home"
    home.mkdir()
    steps: dict[str, Any] = {"venv": venv, "home": home}
    steps["install"] = hermes_cmd(venv, home, "plugins", "install", plugin_repo.as_uri())
    # No terminal (stdin is closed): setup must not wait for an answer.
    steps["setup"] = run_command(
        [venv.bin("hermes"), "memory", "setup", PROVIDER],
        env=venv.env(HERMES_HOME=str(home), TABLESTORE_MEMORY_BACKEND="local"),
        timeout=300,
    )
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


def test_release_git_install_memory_setup_configures_the_offline_backend(
    installed: dict[str, Any],
) -> None:
    setup = installed["setup"].check()
    config_file = installed["home"] / "tablestore_memory.json"
    assert json.loads(config_file.read_text())["backend"] == "local", setup.explain()
    assert stat.S_IMODE(config_file.stat().st_mode) == 0o600
    assert "available: local backend" in setup.stdout, setup.explain()
    assert "search: hybrid" in setup.stdout, setup.explain()


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
    assert re.search(r"search:\s+hybrid", out), out


def test_release_git_install_plugin_cli_remembers_and_searches_offline(
    installed: dict[str, Any],
    hermes_cmd: Callable[..., Any],
    remember_then_find: Callable[..., Any],
) -> None:
    venv, home = installed["venv"], installed["home"]
    remember_then_find(venv, home, "The user keeps a pet tortoise", "tortoise")
    added = json.loads(
        hermes_cmd(venv, home, PROVIDER, "add", "The user's bike is a green Brompton")
        .check()
        .stdout
    )
    assert added["status"] == "stored" and len(added["memory_ids"]) == 1, added
    doctor = hermes_cmd(venv, home, PROVIDER, "doctor").check()
    report = json.loads(doctor.stdout)
    assert report["backend"] == "local" and report["ok"] is True, doctor.explain()
    assert report["search"]["mode"] == "hybrid", doctor.explain()
    # Without --sync the add left its vector to the next search, which computes it.
    assert report["search"]["memories_without_vector"] == 1, doctor.explain()
    hermes_cmd(venv, home, PROVIDER, "search", "bicycle").check()
    doctor = hermes_cmd(venv, home, PROVIDER, "doctor").check()
    assert json.loads(doctor.stdout)["search"]["memories_without_vector"] == 0, doctor.explain()


def _chat(body: dict[str, Any]) -> str | ToolCall:
    """The model: asked about dinner, it first searches memory for dietary restrictions."""
    messages = body.get("messages") or [{}]
    last = messages[-1]
    if last.get("role") == "tool":
        return "How about a chickpea curry?"
    if last.get("role") == "user" and "dinner" in str(last.get("content")):
        return ToolCall("tablestore_search", {"query": "dietary restrictions"})
    return "Noted!"


def test_release_git_install_agent_recalls_an_earlier_turn_by_meaning(
    installed: dict[str, Any], run_command: Callable[..., Any]
) -> None:
    """Turn one says "I'm vegetarian"; in turn two the model's search for "dietary restrictions"
    (no word in common) finds it, which only the hybrid offline store can do."""
    installed["setup"].check()
    venv, home = installed["venv"], installed["home"]
    server = FakeChatServer(_chat)
    try:
        out = run_command(
            [venv.python, AGENT_SCRIPT, server.url],
            env=venv.env(HERMES_HOME=str(home)),
            timeout=180,
        ).check()
    finally:
        server.stop()
    result = json.loads(out.stdout.strip().splitlines()[-1])
    assert result == {
        "provider": PROVIDER,
        "backend": "local",
        "first": "Noted!",
        "second": "How about a chickpea curry?",
    }, out.explain()
    [answer] = server.tool_results("tablestore_search")
    texts = [hit["text"] for hit in json.loads(answer)["results"]]
    assert "I'm vegetarian, and I cook most evenings." in texts, answer
