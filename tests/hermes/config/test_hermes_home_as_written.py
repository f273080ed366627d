"""A ``HERMES_HOME`` holding a literal ``~`` (quoted in a shell) is the folder Hermes uses, a
folder named ``~`` in the working directory; sessions and commands use that one too, and files
left where the ``~`` would point are named, never taken silently."""

from __future__ import annotations

import json
import logging
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.config.envfile import SECRET_VARS
from memcore_hermes.config.home import HermesHome


@pytest.fixture
def quoted_home(hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``HERMES_HOME='~/hh'`` run from ``tmp_path/work``: the folder Hermes itself uses."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    monkeypatch.setenv("HERMES_HOME", "~/hh")
    from hermes_constants import get_hermes_home

    assert str(get_hermes_home()) == "~/hh"  # Hermes takes it as written
    return work / "~" / "hh"


def _remember(text: str) -> None:
    """A session as Hermes starts one: its own home passed as ``hermes_home``."""
    from hermes_constants import get_hermes_home

    provider = MemcoreMemoryProvider()
    provider.initialize("s1", hermes_home=str(get_hermes_home()), user_id="gus")
    try:
        answer = json.loads(provider.handle_tool_call("tablestore_remember", {"content": text}))
        assert "error" not in answer, answer
    finally:
        provider.shutdown()


def test_sessions_and_commands_use_the_folder_hermes_uses(
    quoted_home: Path, tmp_path: Path, kit: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """The session expanded the ``~`` (its memories in ``$HOME/hh``) while Hermes and the
    plugin's commands did not (``./~/hh``): a command never saw what a session kept."""
    quoted_home.mkdir(parents=True)
    kit.write_config(quoted_home, backend="local", embedder="none")

    _remember("Gus keeps bees")

    assert (quoted_home / "tablestore_memory_local.sqlite3").is_file()
    assert not (tmp_path / "user-home" / "hh").exists()
    code, answer, err = kit.run_cli_full(capsys, "list", "--user-id", "gus", "--platform", "cli")
    assert code == 0, err
    assert "Gus keeps bees" in json.dumps(answer), answer
    assert "warning" not in err


def test_files_where_the_tilde_points_are_named_by_sessions_and_commands(
    quoted_home: Path,
    tmp_path: Path,
    kit: Any,
    capsys: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Releases that expanded the ``~`` kept a session's config, spool and memories in
    ``$HOME/hh``: they are left there (that folder may be another home in use), and every
    command and the first session start say where they are and where the plugin looks."""
    other = tmp_path / "user-home" / "hh"
    other.mkdir(parents=True)
    kit.write_config(other, backend="local", embedder="none")
    (other / "tablestore_memory_spool.sqlite3").write_bytes(b"")
    quoted_home.mkdir(parents=True)
    kit.write_config(quoted_home, backend="local", embedder="none")

    code, _, err = kit.run_cli_full(capsys, "list", "--user-id", "gus", "--platform", "cli")
    assert code == 0, err
    (line,) = err.splitlines()
    assert line.startswith("tablestore-mem: warning: HERMES_HOME is '~/hh' as written")
    assert str(other) in line and str(quoted_home) in line
    assert "(tablestore_memory.json, tablestore_memory_spool.sqlite3)" in line

    status = MemcoreMemoryProvider().get_status_config()  # ``hermes memory status``
    assert str(other) in status["warning"] and str(quoted_home) in status["warning"]

    with caplog.at_level(logging.WARNING):
        _remember("Gus keeps bees")
        _remember("Gus sells honey")
    warned = [r.getMessage() for r in caplog.records if "as written" in r.getMessage()]
    assert len(warned) == 1 and str(other) in warned[0]  # once per process
    assert (other / "tablestore_memory.json").is_file()  # nothing moved or removed


def test_no_warning_without_files_elsewhere_or_a_tilde(
    hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert HermesHome(hermes_home).elsewhere_warning() is None
    monkeypatch.chdir(tmp_path)
    assert HermesHome("~/empty").elsewhere_warning() is None
    assert HermesHome("~no-such-user-here/hermes").elsewhere() is None
    unknown = HermesHome("~no-such-user-here/hermes")  # no error: a folder Hermes can use
    assert unknown.root == tmp_path / "~no-such-user-here" / "hermes"


def test_hermes_own_commands_find_the_plugin_in_the_quoted_home(
    hermes_home: Path, tmp_path: Path, kit: Any
) -> None:
    """The real ``hermes`` run with ``HERMES_HOME='~/hh'``: it loads the plugin from, and
    ``hermes memory status`` and ``hermes tablestore-mem`` read, the folder Hermes uses; the
    files where the ``~`` points are named in both."""
    work = tmp_path / "work"
    quoted = work / "~" / "hh"
    quoted.mkdir(parents=True)
    kit.install_plugin(quoted)
    kit.write_config(quoted, backend="local", embedder="none")
    other = tmp_path / "user-home" / "hh"
    other.mkdir(parents=True)
    kit.write_config(other, backend="local")
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARS}
    env.update(HERMES_HOME="~/hh", HOME=str(tmp_path / "user-home"), NO_COLOR="1")

    def hermes(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(Path(sys.executable).with_name("hermes")), *args],
            cwd=work,
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )

    status = hermes("memory", "status")
    assert "warning:" in status.stdout and str(other) in status.stdout, status.stdout
    listed = hermes("tablestore-mem", "list", "--user-id", "gus", "--platform", "cli")
    assert listed.returncode == 0, listed.stderr
    assert (
        f"tablestore-mem: warning: HERMES_HOME is '~/hh' as written, which Hermes reads as {quoted}"
        in listed.stderr
    )
    assert (quoted / "tablestore_memory_local.sqlite3").is_file()
    assert not (other / "tablestore_memory_local.sqlite3").exists()
