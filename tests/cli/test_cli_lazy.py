"""Commands load only what they need: no embedding model for add (its vector waits for the
next search), list, get, count or --help; the model for those that embed (loaded early, in a
thread)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

MAIN = "from memcore_cli.app import main; main()"
PROBE = """
import json, sys
sys.argv = ["memcore", *json.loads(sys.argv[1])]
from memcore_cli.app import main
try:
    main()
except SystemExit as exc:
    code = exc.code
loaded = {
    "model": "onnxruntime" in sys.modules,
    "pydantic": "pydantic" in sys.modules,
    "mcp": "mcp" in sys.modules,
}
print("\\n" + json.dumps({"code": code, **loaded}))
"""


def _probe(home, args):
    done = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "MEMCORE_HOME": str(home)},
        check=False,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.fixture(scope="module")
def hybrid_home(tmp_path_factory):
    pytest.importorskip("onnxruntime")
    home = tmp_path_factory.mktemp("hybrid")
    assert _probe(home, ["add", "The user likes green tea"])["model"] is False
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
def test_commands_that_do_not_embed_never_load_the_model(hybrid_home, args):
    assert _probe(hybrid_home, args)["model"] is False


@pytest.mark.parametrize("args", [["search", "what does the user drink?"], ["add", "--sync", "x"]])
def test_commands_that_embed_load_the_model(hybrid_home, args):
    assert _probe(hybrid_home, args)["model"] is True


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
def test_the_common_commands_parse_their_options_without_pydantic(hybrid_home, args):
    """Typer's pydantic conversion costs about 80 ms per process; plain options skip it."""
    assert _probe(hybrid_home, args)["pydantic"] is False


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
def test_only_the_mcp_command_imports_the_mcp_sdk(tmp_path, args):
    assert _probe(tmp_path, args)["mcp"] is False
