"""An ``add --messages-file`` stopped by Ctrl-C or SIGTERM half way says how many messages it
stored: a long conversation is many writes, each that landed stays, and the line said only
"memcore: interrupted" (SIGTERM: nothing at all, exit 143)."""

from __future__ import annotations

import json
import signal

import pytest

from memcore.service import MemoryService


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_a_stopped_add_says_how_many_messages_were_stored(local_cli, monkeypatch, tmp_path, sig):
    turns = tmp_path / "turns.json"
    chat = [{"role": "user", "content": f"fact number {i} about the garden"} for i in range(100)]
    turns.write_text(json.dumps(chat), encoding="utf-8")
    real, calls = MemoryService.write_turn, []

    def stopping(self, write, **kwargs):
        done = real(self, write, **kwargs)
        calls.append(len(write.messages))
        if len(calls) == 2:  # the second write landed: the signal comes now
            signal.raise_signal(sig)
        return done

    monkeypatch.setattr(MemoryService, "write_turn", stopping)
    result = local_cli("add", "--sync", "--messages-file", str(turns))
    monkeypatch.undo()
    stored = sum(calls)
    assert 0 < stored < 100 and len(calls) == 2
    assert result.exit_code == 130
    assert result.stderr.splitlines()[-1] == (
        f"memcore: interrupted (the first {stored} of 100 messages were stored before it;"
        " the rest were not)"
    )
    assert local_cli.ok("count").stdout.strip() == str(stored)
