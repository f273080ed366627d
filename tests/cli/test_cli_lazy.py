"""Commands load only what they need: no embedding model for add (its vector waits for the
next search), list, get, count or --help; the model for those that embed (loaded early, in a
thread)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

MAIN = "from memcore_cli.app import main; main()"


def _loaded(import_probe, home, args):
    """The top-level modules ``memcore *args`` imports with ``home`` as its MEMCORE_HOME."""
    return import_probe(args, {**os.environ, "MEMCORE_HOME": str(home)}).modules


@pytest.fixture(scope="module")
def hybrid_home(tmp_path_factory, import_probe):
    pytest.importorskip("onnxruntime")
    home = tmp_path_factory.mktemp("hybrid")
    assert "onnxruntime" not in _loaded(import_probe, home, ["add", "The user likes green tea"])
    return home


@pytest.mark.parametrize(
    "args",
    [
        ["add", "The user likes coffee"],
        ["list"],
        ["count"],
        ["get", "ffffffffff"],
        ["search", "--help"],
        ["--help"],
    ],
)
def test_commands_that_do_not_embed_never_load_the_model(import_probe, hybrid_home, args):
    assert "onnxruntime" not in _loaded(import_probe, hybrid_home, args)


@pytest.mark.parametrize("args", [["search", "what does the user drink?"], ["add", "--sync", "x"]])
def test_commands_that_embed_load_the_model(import_probe, hybrid_home, args):
    assert "onnxruntime" in _loaded(import_probe, hybrid_home, args)


@pytest.mark.parametrize(
    "args",
    [
        ["add", "The user likes tea"],
        ["search", "what does the user drink?", "--top-k", "3"],
        ["list", "--limit", "5"],
        ["count"],
        ["--json", "get", "ffffffffff"],
    ],
)
def test_the_common_commands_parse_their_options_without_pydantic(import_probe, hybrid_home, args):
    """Typer's pydantic conversion costs about 80 ms per process; plain options skip it."""
    assert "pydantic" not in _loaded(import_probe, hybrid_home, args)


def test_a_search_refused_while_the_model_loads_still_exits_cleanly(hybrid_home):
    """The early load must not outlive the process: onnxruntime aborts (SIGABRT) if the
    interpreter exits while it builds its session."""
    env = {**os.environ, "MEMCORE_HOME": str(hybrid_home)}
    for _ in range(3):
        done = subprocess.run(
            [sys.executable, "-c", MAIN, "search", "q", "--top-k", "51"],
            capture_output=True,
            text=True,
            timeout=120,
            env=env,
            check=False,
        )
        assert done.returncode == 2
        assert done.stderr == "memcore: error: top_k must be from 1 to 50, not 51\n"


@pytest.mark.parametrize("args", [["--help"], ["list"], ["mcp", "--help"]])
def test_only_the_mcp_command_imports_the_mcp_sdk(import_probe, tmp_path, args):
    assert "mcp" not in _loaded(import_probe, tmp_path, args)
