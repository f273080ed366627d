"""``memcore --help`` must not import the core, the backends, SDKs, numpy or rich.

This checks what is imported, not how long it takes (timings live in benchmarks/).
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = (
    "memcore",
    "memcore_sqlite",
    "memcore_tablestore",
    "tablestore",
    "alibabacloud_credentials",
    "numpy",
    "onnxruntime",
    "tokenizers",
    "rich",
    "cattrs",
    "sqlite3",
    "urllib3",
)

PROBE = """
import json, sys
sys.argv = ["memcore", *json.loads(sys.argv[1])]
from memcore_cli.app import main
try:
    main()
except SystemExit:
    pass
print("\\n" + json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.mark.parametrize("args", [["--help"], ["add", "--help"], ["dream", "--help"], []])
def test_help_imports_nothing_heavy(args, tmp_path):
    result = subprocess.run(
        [sys.executable, "-c", PROBE, json.dumps(args)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"MEMCORE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"},
        check=False,
    )
    loaded = set(json.loads(result.stdout.strip().splitlines()[-1]))
    assert "Usage" in result.stdout
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_every_command_has_help_with_an_example():
    from typer.testing import CliRunner

    from memcore_cli.app import app, command_paths

    runner = CliRunner()
    commands = command_paths()
    assert ["dream", "create"] in commands and ["emulator", "serve"] in commands
    assert len(commands) >= 28
    for command in commands:
        result = runner.invoke(app, [*command, "--help"])
        assert result.exit_code == 0, command
        assert "Example" in result.stdout, command
        assert f"memcore {command[0]}" in result.stdout or "memcore --" in result.stdout, command


def test_shell_completion_is_offered():
    from typer.testing import CliRunner

    from memcore_cli.app import app

    result = CliRunner().invoke(app, ["--help"])
    assert "--install-completion" in result.stdout
    assert "--show-completion" in result.stdout
