"""A ``HERMES_HOME`` holding a literal ``~`` (quoted in a shell) is the folder Hermes uses, a
folder named ``~`` in the working directory; sessions and commands use that one too, and files
left where the ``~`` would point are named, never taken silently."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider
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
    assert "tablestore_memory.json, tablestore_memory_spool.sqlite3" in line

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
