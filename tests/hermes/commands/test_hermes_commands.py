"""One-shot ``hermes tablestore-mem`` commands on the local store: ``add`` leaves its vector
to the next search, ``search`` has the model loading while Hermes starts."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes.backend.preload import for_home
from memcore_hermes.commands.cli import loads_model
from memcore_hermes.config.home import HermesHome

pytest.importorskip("onnxruntime")

STORE = "hermes_mem"
VEGETARIAN = "I'm vegetarian, and I cook most evenings."


@pytest.fixture
def local_home(hermes_home: Path, kit: Any) -> Path:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local")
    return hermes_home


def hermes_json(kit: Any, home: Path, *args: str) -> tuple[int, dict[str, Any]]:
    result = kit.run_hermes(home, "tablestore-mem", *args, timeout=120)
    assert "Traceback" not in result.stderr, result.stderr[-3000:]
    try:
        return result.returncode, json.loads(result.stdout)
    except ValueError:
        pytest.fail(f"not JSON: {result.stdout!r} {result.stderr[-2000:]!r}")


def without_vector(kit: Any, home: Path) -> int:
    code, report = hermes_json(kit, home, "doctor")
    assert code == 0 and report["ok"] is True, report
    assert report["search"]["mode"] == "hybrid"
    count: int = report["search"]["memories_without_vector"]
    return count


def test_add_stores_at_once_and_the_next_search_computes_its_vector(
    local_home: Path, kit: Any
) -> None:
    code, added = hermes_json(kit, local_home, "add", VEGETARIAN)
    assert code == 0 and added["status"] == "stored"
    [memory_id] = added["memory_ids"]
    assert "next search" in added["note"] and "--sync" in added["note"]
    assert without_vector(kit, local_home) == 1  # doctor says so, and reads nothing else

    code, found = hermes_json(kit, local_home, "search", "dietary restrictions")
    assert code == 0
    assert [r["id"] for r in found["results"]][:1] == [memory_id]  # by meaning: no shared word
    assert without_vector(kit, local_home) == 0


def test_add_sync_embeds_at_once(local_home: Path, kit: Any) -> None:
    code, added = hermes_json(kit, local_home, "add", VEGETARIAN, "--sync")
    assert code == 0 and added["status"] == "completed" and len(added["memory_ids"]) == 1
    assert "note" not in added
    assert without_vector(kit, local_home) == 0


def test_the_agents_provider_embeds_a_deferred_add_in_the_background(
    local_home: Path, kit: Any
) -> None:
    from memcore_hermes import MemcoreMemoryProvider

    code, added = hermes_json(kit, local_home, "add", VEGETARIAN)
    assert code == 0 and added["status"] == "stored"
    provider = MemcoreMemoryProvider()  # as Hermes builds it: the configured local store
    provider.initialize("s1", hermes_home=str(local_home), platform="cli", user_id=None)
    try:
        assert kit.lacking_vectors(provider, STORE, 60) == 0
    finally:
        provider.shutdown()
    code, found = hermes_json(kit, local_home, "search", "dietary restrictions")
    assert [r["id"] for r in found["results"]][:1] == added["memory_ids"]


# What Hermes does for ``hermes <argv>``: build the CLI tree (our ``register_cli`` sees the
# real ``sys.argv``), then run the handler; reports what loaded when, and how many embedders
# were made.
_COMMAND_PROBE = r"""
import argparse, contextlib, io, json, sys
import agent.memory_provider, hermes_cli.config  # Hermes has these before it asks the plugin
sys.argv = ["hermes", *sys.argv[1:]]
MODEL = ("numpy", "onnxruntime", "tokenizers")
def model_loaded():
    return sorted(m for m in MODEL if m in sys.modules)
from plugins.memory import discover_plugin_cli_commands
(command,) = discover_plugin_cli_commands()
parser = argparse.ArgumentParser()
command["setup_fn"](parser)
from memcore_hermes.backend import preload
started = preload.current() is not None
from memcore_sqlite.embedders.onnx import OnnxEmbedder
made = []
real_init = OnnxEmbedder.__init__
def counting_init(self, *a, **k):
    made.append(1)
    real_init(self, *a, **k)
OnnxEmbedder.__init__ = counting_init
answer, code = io.StringIO(), 0
with contextlib.redirect_stdout(answer), contextlib.redirect_stderr(io.StringIO()):
    try:
        command["handler_fn"](parser.parse_args(sys.argv[2:]))
    except SystemExit as exc:
        code = exc.code or 0
print(json.dumps({"preload_started": started, "embedders_made_later": len(made),
                  "model_loaded": model_loaded(), "code": code,
                  "answer": json.loads(answer.getvalue())}))
"""


def probe_command(*argv: str) -> dict[str, Any]:
    probe = subprocess.run(
        [sys.executable, "-c", _COMMAND_PROBE, "tablestore-mem", *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert probe.returncode == 0, probe.stderr[-3000:]
    result: dict[str, Any] = json.loads(probe.stdout.strip().splitlines()[-1])
    return result


def test_add_loads_no_model_and_search_reuses_the_one_loaded_while_hermes_starts(
    local_home: Path,
) -> None:
    added = probe_command("add", VEGETARIAN)
    assert added["code"] == 0 and added["answer"]["status"] == "stored"
    assert added["preload_started"] is False
    assert added["model_loaded"] == []  # no numpy, onnxruntime or tokenizers at all

    found = probe_command("search", "dietary restrictions")
    assert found["code"] == 0
    assert found["preload_started"] is True  # while Hermes was still building its CLI tree
    assert found["embedders_made_later"] == 0  # the store got the preloaded one
    assert found["answer"]["results"][0]["id"] == added["answer"]["memory_ids"][0]

    synced = probe_command("add", "I live in Porto", "--sync")
    assert synced["preload_started"] is True and synced["embedders_made_later"] == 0
    assert synced["answer"]["status"] == "completed"


def test_a_search_that_fails_after_the_early_load_exits_cleanly(local_home: Path, kit: Any) -> None:
    code, answer = hermes_json(kit, local_home, "search", "anything", "--top-k", "500")
    assert code == 2 and answer["error"]["field"] == "top_k"  # invalid input
    help_text = kit.run_hermes(local_home, "tablestore-mem", "search", "--help")
    assert help_text.returncode == 0 and "--top-k" in help_text.stdout
    # Hermes' parser refuses this after the load started: the process still ends normally.
    no_query = kit.run_hermes(local_home, "tablestore-mem", "search")
    assert no_query.returncode == 2 and "Traceback" not in no_query.stderr


def test_a_broken_config_is_reported_by_search_not_by_the_early_load(
    local_home: Path, kit: Any
) -> None:
    (local_home / "tablestore_memory.json").write_text('{"backend": "local", "top_k": 0}')
    code, answer = hermes_json(kit, local_home, "search", "anything")
    assert code == 2 and answer["error"]["field"] == "top_k"  # a configuration error


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["tablestore-mem", "search", "tea"], True),
        (["-p", "work", "tablestore-mem", "search", "tea", "--top-k", "3"], True),
        (["tablestore-mem", "reindex"], True),
        (["tablestore-mem", "add", "tea", "--sync"], True),
        (["tablestore-mem", "add", "tea"], False),
        (["tablestore-mem", "search", "--help"], False),
        (["tablestore-mem", "search", "-h"], False),
        (["tablestore-mem", "doctor"], False),
        (["tablestore-mem"], False),
        (["memory", "status"], False),
        (["chat", "-q", "tablestore-mem search tea"], False),
    ],
)
def test_which_command_lines_load_the_model_early(argv: list[str], expected: bool) -> None:
    assert loads_model(argv) is expected


@pytest.mark.parametrize(
    "config",
    [
        {"backend": "local", "embedder": "none"},
        {"backend": "tablestore", "endpoint": "http://127.0.0.1:9", "instance_name": "inst1"},
        {},
    ],
)
def test_no_early_load_where_the_store_would_not_embed(
    hermes_home: Path, kit: Any, config: dict[str, Any]
) -> None:
    kit.write_config(hermes_home, **config)
    assert for_home(HermesHome(hermes_home)) is None
