"""Hermes finds, loads and lists the plugin from a copy of the repository root."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

HEAVY_MODULES = (
    "tablestore",
    "numpy",
    "onnxruntime",
    "alibabacloud_tablestore20201209",
    "urllib3",
    "memcore",
)


@pytest.fixture
def clean_plugin_modules() -> Iterator[None]:
    """The loader caches user plugins in ``sys.modules``; forget them around each test."""

    def purge() -> None:
        for name in list(sys.modules):
            if name.startswith("_hermes_user_memory"):
                del sys.modules[name]

    purge()
    yield
    purge()


def test_the_repository_root_is_a_valid_plugin(kit: Any) -> None:
    root = kit.REPO_ROOT
    assert sorted(p.name for p in root.glob("*.py")) == ["__init__.py", "cli.py"]
    head = (root / "__init__.py").read_text()[:8192]
    assert "register_memory_provider" in head and "MemoryProvider" in head
    meta = yaml.safe_load((root / "plugin.yaml").read_text())
    assert meta.get("kind", "exclusive") == "exclusive"
    assert meta["description"]
    deps = " ".join(meta["pip_dependencies"])
    for needed in (
        "tablestore",
        "alibabacloud-tablestore20201209",
        "alibabacloud-credentials",
        "tablestore-agent-storage",
        "attrs",
        "cattrs",
    ):
        assert needed in deps
    assert (root / "after-install.md").is_file()


def test_load_memory_provider_finds_the_installed_copy(
    hermes_home: Path, kit: Any, clean_plugin_modules: None
) -> None:
    from agent.memory_provider import MemoryProvider
    from plugins.memory import discover_memory_providers, load_memory_provider

    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local")
    provider = load_memory_provider("tablestore-mem")
    assert provider is not None
    assert isinstance(provider, MemoryProvider)
    assert provider.name == "tablestore-mem"
    assert provider.is_available() is True
    listed = {name: available for name, _desc, available in discover_memory_providers()}
    assert listed["tablestore-mem"] is True


def test_plugin_cli_is_discovered_with_its_handler(
    hermes_home: Path, kit: Any, clean_plugin_modules: None
) -> None:
    from plugins.memory import discover_plugin_cli_commands

    kit.install_plugin(hermes_home)
    [command] = discover_plugin_cli_commands()
    assert command["name"] == "tablestore-mem"
    assert callable(command["setup_fn"]) and callable(command["handler_fn"])


def test_hermes_memory_status_shows_installed_and_available(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local")
    result = kit.run_hermes(hermes_home, "memory", "status")
    assert result.returncode == 0, result.stderr
    assert "Provider:  tablestore-mem" in result.stdout
    assert "Plugin:    installed ✓" in result.stdout
    assert "Status:    available ✓" in result.stdout


def test_hermes_memory_status_without_keys_is_not_available(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    result = kit.run_hermes(hermes_home, "memory", "status")
    assert "Plugin:    installed ✓" in result.stdout
    assert "not available" in result.stdout
    assert "TABLESTORE_MEMORY_AK" in result.stdout


_PROBE = r"""
import importlib.util, json, sys, time
import agent.memory_provider  # already loaded in any Hermes process
root = sys.argv[1]
HEAVY = set(sys.argv[3].split(","))
if sys.argv[2] == "isolated":
    sys.path[:] = [p for p in sys.path if "/packages/" not in p]
started = time.perf_counter()
spec = importlib.util.spec_from_file_location(
    "_hermes_user_memory_probe", root + "/__init__.py", submodule_search_locations=[root]
)
mod = importlib.util.module_from_spec(spec)
spec.loader.exec_module(mod)
elapsed = time.perf_counter() - started
import memcore_hermes
print(json.dumps({
    "elapsed_ms": elapsed * 1000,
    "loaded": sorted(m for m in sys.modules if m.split(".")[0] in HEAVY),
    "memcore_hermes": memcore_hermes.__file__,
    "has_register": hasattr(mod, "register"),
}))
"""


def _probe(root: Path, mode: str) -> dict[str, Any]:
    out = subprocess.run(
        [sys.executable, "-c", _PROBE, str(root), mode, ",".join(HEAVY_MODULES)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    result: dict[str, Any] = json.loads(out.stdout.strip().splitlines()[-1])
    return result


def test_importing_the_plugin_loads_no_sdk(kit: Any) -> None:
    result = _probe(kit.REPO_ROOT, "installed")
    assert result["has_register"]
    assert result["loaded"] == []


def test_a_clone_without_installed_packages_uses_its_bundled_sources(
    hermes_home: Path, kit: Any
) -> None:
    target = kit.install_plugin(hermes_home)
    result = _probe(target, "isolated")
    assert result["memcore_hermes"].startswith(str(target / "packages"))
    assert result["loaded"] == []


# What Hermes does on a start (build its CLI tree) and for ``memory status``, then ``doctor``;
# prints the modules each step loaded that the plugin must not load at that point.
_STEPS_PROBE = r"""
import argparse, io, json, sys, contextlib
import agent.memory_provider, hermes_cli.config  # Hermes has these before it asks the plugin
WATCH = ("memcore", "memcore_sqlite", "memcore_tablestore", "memcore_hermes", "attrs", "attr",
         "cattrs", "numpy", "onnxruntime", "tokenizers", "tablestore",
         "alibabacloud_tablestore20201209", "alibabacloud_credentials", "urllib3")
def loaded():
    return {m for m in sys.modules if m.split(".")[0] in WATCH}
out, seen = {}, loaded()
def step(name):
    global seen
    now = loaded()
    out[name] = sorted(now - seen)
    seen = now

from plugins.memory import discover_plugin_cli_commands, load_memory_provider
(command,) = discover_plugin_cli_commands()
parser = argparse.ArgumentParser()
command["setup_fn"](parser)
step("cli_tree")
provider = load_memory_provider("tablestore-mem")
status = (provider.is_available(), provider.get_status_config())
step("memory_status")
if sys.argv[1:] != ["--no-doctor"]:
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        command["handler_fn"](parser.parse_args(["doctor"]))
    step("doctor")
out["available"] = status[0]
print(json.dumps(out))
"""


def test_start_status_and_doctor_load_only_what_they_need(hermes_home: Path, kit: Any) -> None:
    """The CLI tree needs argparse alone; ``memory status`` and ``doctor`` read the config and
    the stores but never load the embedding model, numpy or the TableStore SDK."""
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local")
    added = kit.run_hermes(hermes_home, "tablestore-mem", "add", "--sync", "I drink green tea")
    assert added.returncode == 0, added.stderr
    probe = subprocess.run(
        [sys.executable, "-c", _STEPS_PROBE], capture_output=True, text=True, timeout=120
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    steps = json.loads(probe.stdout.strip().splitlines()[-1])
    assert steps["cli_tree"] == [
        "memcore_hermes",
        "memcore_hermes.commands",
        "memcore_hermes.commands.cli",
    ]
    assert steps["available"] is True
    never = ("numpy", "onnxruntime", "tokenizers", "tablestore", "alibabacloud", "urllib3")
    for name in ("memory_status", "doctor"):
        assert [m for m in steps[name] if m.startswith(never)] == [], (name, steps[name])
    assert "memcore.config" in steps["memory_status"]  # it does validate the config
    assert "memcore_sqlite.store" in steps["doctor"]  # and doctor does open the store


def test_status_of_the_tablestore_backend_loads_no_sdk(hermes_home: Path, kit: Any) -> None:
    """``memory status`` checks keys and config only; the SDK loads when a store is opened."""
    kit.install_plugin(hermes_home)
    kit.write_config(
        hermes_home, backend="tablestore", endpoint="http://127.0.0.1:9", instance_name="inst1"
    )
    kit.write_env(hermes_home, kit.EMULATOR_KEYS)
    probe = subprocess.run(
        [sys.executable, "-c", _STEPS_PROBE, "--no-doctor"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    steps = json.loads(probe.stdout.strip().splitlines()[-1])
    assert steps["available"] is True
    assert steps["cli_tree"] == [
        "memcore_hermes",
        "memcore_hermes.commands",
        "memcore_hermes.commands.cli",
    ]
    sdk = ("tablestore", "alibabacloud", "urllib3", "numpy", "onnxruntime")
    assert [m for m in steps["memory_status"] if m.startswith(sdk)] == []


def test_the_plugin_commands_wait_for_activation_as_the_docs_say(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`hermes plugins install` (or a copy) leaves the provider inactive, and Hermes adds a
    provider's own commands only while it is the active one: `hermes tablestore-mem setup`,
    which after-install.md offered as the way to set up without a terminal, was then an
    unknown command. `hermes memory setup tablestore-mem` activates it; after that the
    plugin's commands, its flag-driven setup among them, work."""
    kit.install_plugin(hermes_home)
    (hermes_home / "config.yaml").unlink()  # as the installer leaves it: no provider chosen
    early = kit.run_hermes(hermes_home, "tablestore-mem", "setup", "--backend", "local")
    assert early.returncode == 2 and "invalid choice: 'tablestore-mem'" in early.stderr
    status = kit.run_hermes(hermes_home, "memory", "status")
    assert "Plugin:    installed" not in status.stdout  # not until a setup activates it
    monkeypatch.setenv("TABLESTORE_MEMORY_BACKEND", "local")
    setup = kit.run_hermes(hermes_home, "memory", "setup", "tablestore-mem", timeout=300)
    assert setup.returncode == 0, setup.stderr
    later = kit.run_hermes(hermes_home, "tablestore-mem", "setup", "--backend", "local")
    assert later.returncode == 0, later.stderr
    # The docs offer the plugin's own setup only with the activation it needs.
    for doc in (kit.REPO_ROOT / "after-install.md", kit.REPO_ROOT / "README.md"):
        for paragraph in doc.read_text(encoding="utf-8").split("\n\n"):
            if "hermes tablestore-mem setup" in paragraph:
                assert "active" in paragraph, (doc.name, paragraph)
        text = doc.read_text(encoding="utf-8")
        if "cp -r memcore" in text:
            after_copy = text[text.index("cp -r memcore") :].split("\n## ", 1)[0]
            assert "hermes memory setup tablestore-mem" in after_copy, doc.name


# Two agents built at once in a fresh process (a gateway's first messages after a start): the
# first is held inside the plugin's import, the second asks Hermes' loader meanwhile.
_TOGETHER_PROBE = r"""
import importlib.abc, json, sys, threading
import agent.memory_provider
from plugins.memory import load_memory_provider
inside, go_on = threading.Event(), threading.Event()
class Gate(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name == "memcore_hermes" and threading.current_thread().name == "first":
            inside.set()
            go_on.wait(10)
        return None
sys.meta_path.insert(0, Gate())
got = {}
def build():
    got[threading.current_thread().name] = load_memory_provider("tablestore-mem")
first = threading.Thread(target=build, name="first")
first.start()
assert inside.wait(10), "the plugin never imported memcore_hermes"
second = threading.Thread(target=build, name="second")
second.start()
second.join(0.5)
go_on.set()
first.join(30)
second.join(30)
print(json.dumps({k: None if v is None else v.name for k, v in sorted(got.items())}))
"""


def test_agents_built_together_in_a_new_process_each_get_the_provider(
    hermes_home: Path, kit: Any
) -> None:
    """Hermes' loader publishes the plugin's module before running it (``cli.py`` first, then
    ``__init__``), and a second agent built meanwhile takes the module as it finds it: with no
    ``register`` there yet it got no provider, and that session kept no memory at all."""
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local")
    out = subprocess.run(
        [sys.executable, "-c", _TOGETHER_PROBE],
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {"first": "tablestore-mem", "second": "tablestore-mem"}, out.stderr[-2000:]
