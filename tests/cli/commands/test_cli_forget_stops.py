"""A ``forget`` stopped by Ctrl-C half way says how far it got: what it deleted stays deleted
(nothing is put back), and the line said only "memcore: interrupted"."""

from __future__ import annotations

import signal

import pytest

from memcore.service import MemoryService
from memcore_sqlite.operations.writes import MemoryWrites

STOPPED = "memcore: interrupted (2 of 5 memories forgotten before it; the rest are kept)"


def _five(local_cli) -> list[str]:
    return [
        local_cli.ok(
            "--format", "plain", "add", f"note number {i}", "-m", "topic=notes"
        ).stdout.split()[1]
        for i in range(5)
    ]


def _interrupt_on_second(monkeypatch, cls, name):
    real = getattr(cls, name)
    calls = []

    def stopping(self, *args, **kwargs):
        done = real(self, *args, **kwargs)
        calls.append(1)
        if len(calls) == 2:  # the second delete is done: the interrupt comes now
            signal.raise_signal(signal.SIGINT)
        return done

    monkeypatch.setattr(cls, name, stopping)


@pytest.mark.parametrize("how", [["--filter", "topic=notes"], "ids"])
def test_ctrl_c_during_a_forget_of_several_says_how_many_were_forgotten(
    local_cli, monkeypatch, how
):
    ids = _five(local_cli)
    _interrupt_on_second(monkeypatch, MemoryService, "forget")
    result = local_cli("forget", "--yes", *(ids if how == "ids" else how))
    monkeypatch.undo()
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1] == STOPPED
    assert local_cli.ok("count").stdout.strip() == "3"


def test_ctrl_c_during_forget_all_says_how_many_were_forgotten(local_cli, monkeypatch):
    _five(local_cli)
    _interrupt_on_second(monkeypatch, MemoryWrites, "delete_memory")
    result = local_cli("forget", "--all", "--yes")
    monkeypatch.undo()
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1] == STOPPED
    assert local_cli.ok("count").stdout.strip() == "3"


def _down_after_second(monkeypatch, cls, name):
    from memcore.errors import Unavailable

    real = getattr(cls, name)
    calls = []

    def failing(self, *args, **kwargs):
        calls.append(1)
        if len(calls) > 2:  # two deletes done, then the backend is gone
            raise Unavailable("the connection failed")
        return real(self, *args, **kwargs)

    monkeypatch.setattr(cls, name, failing)


@pytest.mark.parametrize("how", [["--all"], ["--filter", "topic=notes"]])
def test_a_forget_the_backend_stops_half_way_says_how_many_were_forgotten(
    local_cli, monkeypatch, how
):
    """Only the backend's error was said (exit 5), though some memories were gone."""
    _five(local_cli)
    _down_after_second(monkeypatch, MemoryWrites, "delete_memory")
    result = local_cli("forget", "--yes", *how)
    monkeypatch.undo()
    assert result.exit_code == 5
    assert result.stderr.splitlines()[-1] == (
        "memcore: error: the connection failed "
        "(2 of 5 memories forgotten before it; the rest are kept)"
    )
    assert local_cli.ok("count").stdout.strip() == "3"
