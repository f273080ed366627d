"""The embedded store stays on the machine: loading the ONNX model leaves onnxruntime's
telemetry off. onnxruntime 1.2x writes a device id and process facts (the interpreter's
path, with the user's name in it) under ``~/.cache/Microsoft`` and, some seconds later,
looks up and posts to ``mobile.events.data.microsoft.com``, unless ``ORT_DISABLE_TELEMETRY``
is set before it is first imported (setting it later, or
``onnxruntime.disable_telemetry_events()``, does not stop either)."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from memcore_sqlite.embedders import missing_onnx_requirements

pytestmark = pytest.mark.skipif(
    bool(missing_onnx_requirements()), reason="the semantic extra is not installed"
)

_EMBED = (
    "import os\n"
    "from memcore_sqlite.embedders.onnx import OnnxEmbedder\n"
    "OnnxEmbedder().embed(['my cat is called Miso'])\n"
    "print(os.environ.get('ORT_DISABLE_TELEMETRY'))\n"
)


def _embed_in_a_fresh_process(home: Path, **extra: str) -> str:
    """Embed one text in a new process with ``home`` as its HOME (it exits long before the
    telemetry's first upload, so nothing leaves the machine even before the fix)."""
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"), **extra)
    done = subprocess.run(
        [sys.executable, "-c", _EMBED], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_loading_the_model_leaves_onnxruntime_telemetry_off(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert _embed_in_a_fresh_process(home) == "1"
    assert not (home / ".cache" / "Microsoft").exists()


def test_a_user_who_sets_the_variable_keeps_their_choice(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    assert _embed_in_a_fresh_process(home, ORT_DISABLE_TELEMETRY="0") == "0"


@pytest.mark.skipif(sys.version_info < (3, 11), reason="the Hermes tests collect on 3.11+")
def test_the_test_suite_itself_leaves_onnxruntime_telemetry_off(tmp_path: Path) -> None:
    """`uv run pytest` imports onnxruntime while it collects (``importorskip``), before any
    memcore module has set the variable: the suite's own setting must come first, or a run
    writes the user's device id and posts it, from a suite that promises loopback only."""
    home = tmp_path / "home"
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if k != "ORT_DISABLE_TELEMETRY"}
    env.update(HOME=str(home), XDG_CACHE_HOME=str(home / ".cache"))
    root = Path(__file__).resolve().parents[3]
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "--collect-only",
            "-q",
            "-p",
            "no:randomly",
            "tests/hermes/commands/test_hermes_commands.py",
        ],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert not (home / ".cache" / "Microsoft").exists()
