"""``memcore --help`` must not import the core, the backends, SDKs, numpy or rich.

This checks what is imported, not how long it takes (timings live in benchmarks/).
"""

from __future__ import annotations

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


@pytest.mark.parametrize("args", [["--help"], ["add", "--help"], ["dream", "--help"], []])
def test_help_imports_nothing_heavy(import_probe, args, tmp_path):
    env = {"MEMCORE_HOME": str(tmp_path), "PATH": "/usr/bin:/bin"}
    result = import_probe(args, env, timeout=60)
    assert "Usage" in result.stdout
    assert not result.modules & set(HEAVY), sorted(result.modules & set(HEAVY))


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
    for group in sorted({command[0] for command in commands if len(command) > 1}):
        result = runner.invoke(app, [group, "--help"])  # a group shows how its commands go
        assert result.exit_code == 0, group
        assert "Example" in result.stdout and f"memcore {group} " in result.stdout, group


def test_shell_completion_is_offered():
    from typer.testing import CliRunner

    from memcore_cli.app import app

    result = CliRunner().invoke(app, ["--help"])
    assert "--install-completion" in result.stdout
    assert "--show-completion" in result.stdout


def test_the_readme_lists_every_command():
    import re
    from pathlib import Path

    from memcore_cli.app import command_paths

    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    listed = readme.split("\nCommands: ", 1)[1].split("Every command has", 1)[0]
    named = set()
    for words in re.findall(r"`([^`]+)`", listed):
        group, _, subs = words.rpartition(" ")
        named |= {f"{group} {sub}".strip() for sub in subs.split("|")}
    assert named == {" ".join(path) for path in command_paths()}
