"""The fault run: turns, remembers and built-in memory mirror writes go through the real Hermes
provider and spool, over real HTTP, to the emulator behind a loopback proxy that answers like a
broken middlebox (garbage, empty and HTML 2xx, instead of forwarding and after it; answers later
than the timeout; reset connections) and through a ``kill -9`` mid-delivery. Every accepted write
must be stored exactly once: counted where the emulator applies it (each applied ``add_text`` and
each applied message, not the deduplicated result), since the real service may not deduplicate.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import reliability_rig as rig
from fault_proxy import FaultProxy

from memcore.testing import InMemoryMemoryStore

#: The per-call timeout of the plugin; "late" answers come 1.5 s after the request.
TIMEOUT = 1.0
KINDS = ("turn", "remember", "mirror")


class CountingStore:
    """The emulator's backing store, counting every write it applies (before deduplication)."""

    def __init__(self) -> None:
        self.inner = InMemoryMemoryStore()
        self.applied: Counter[str] = Counter()
        self._lock = threading.Lock()

    def add_text(self, store: str, scope: Any, text: str, **kwargs: Any) -> Any:
        receipt = self.inner.add_text(store, scope, text, **kwargs)
        with self._lock:
            self.applied[text] += 1
        return receipt

    def add_messages(self, store: str, scope: Any, messages: Any, **kwargs: Any) -> Any:
        receipt = self.inner.add_messages(store, scope, messages, **kwargs)
        with self._lock:
            for m in messages:
                if m.role == "user":
                    self.applied[m.content] += 1
        return receipt

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)


def write(provider: Any, nonce: str, i: int) -> Iterator[tuple[str, str]]:
    """One write of each kind; yields ``(kind, text)`` for each the plugin accepted."""
    runtime = provider.runtime
    texts = {kind: f"{kind} {i} of {nonce}: something worth keeping" for kind in KINDS}
    before = runtime.refused_writes
    provider.sync_turn(texts["turn"], f"assistant answer {i}", session_id="session-1")
    if runtime.refused_writes == before:
        yield "turn", texts["turn"]
    answer = provider.handle_tool_call("tablestore_remember", {"content": texts["remember"]})
    if '"queued"' in answer:
        yield "remember", texts["remember"]
    before = runtime.refused_writes
    provider.on_memory_write("add", "memory", texts["mirror"])
    if runtime.refused_writes == before:
        yield "mirror", texts["mirror"]


def tally(backing: CountingStore, accepted: list[tuple[str, str]]) -> dict[str, dict[str, int]]:
    """Per kind: accepted, stored (at least once), lost, duplicated (extra applications)."""
    out = {}
    for kind in KINDS:
        texts = [t for k, t in accepted if k == kind]
        counts = [backing.applied[t] for t in texts]
        out[kind] = {
            "accepted": len(texts),
            "stored": sum(1 for n in counts if n > 0),
            "lost": sum(1 for n in counts if n == 0),
            "duplicated": sum(max(0, n - 1) for n in counts),
        }
    return out


def record(s: Any, counts: dict[str, dict[str, int]]) -> None:
    total = {
        k: sum(c[k] for c in counts.values()) for k in ("accepted", "stored", "lost", "duplicated")
    }
    s.counts(
        issued=total["accepted"],
        acknowledged=total["accepted"],
        stored=total["stored"],
        lost=total["lost"],
        duplicated=total["duplicated"],
    )
    s.note(**{kind: counts[kind] for kind in KINDS})


CASES = {
    "garbage 2xx": ("garbage", "garbage_after"),
    "empty 2xx": ("empty", "empty_after"),
    "HTML 2xx": ("html", "html_after"),
    "late answers": ("late", "late_apply"),
    "connection resets": ("reset", "reset_after"),
}


@pytest.mark.parametrize(
    "case",
    [
        pytest.param(name, marks=[pytest.mark.slow] if name == "late answers" else [])
        for name in CASES
    ],
)
def test_reliability_writes_land_once_when_the_answer_is_not_the_services(
    emulator, tmp_path: Path, scenario, pick, case: str
) -> None:
    backing = CountingStore()
    server = emulator(backing)
    proxy = FaultProxy(server.port)
    home = rig.hermes_home_for(tmp_path / "hermes", proxy.url, timeout=TIMEOUT)
    provider = rig.new_provider(home)
    nonce = uuid.uuid4().hex[:8]
    rounds = int(pick(4, 20, 10))
    try:
        with scenario(f"unknown outcome: {case}", f"proxy answers AddMemories: {case}") as s:
            assert rig.drain(provider, deadline_s=30)  # the store is ready, nothing waits
            proxy.configure(CASES[case], budget=3 * rounds)
            accepted = [w for i in range(rounds) for w in write(provider, nonce, i)]
            drained = rig.drain(provider, deadline_s=90)
            counts = tally(backing, accepted)
            record(s, counts)
            s.note(injected=dict(proxy.injected))
            assert drained
            assert sum(proxy.injected.values()) == 3 * rounds
            assert len(accepted) == 3 * rounds
            for kind in KINDS:
                assert counts[kind]["lost"] == 0, (kind, counts)
                assert counts[kind]["duplicated"] == 0, (kind, counts)
    finally:
        provider.shutdown()
        proxy.stop()


@pytest.mark.slow
def test_reliability_kill_9_mid_delivery_then_replay_lands_each_write_once(
    emulator, tmp_path: Path, scenario, pick
) -> None:
    backing = CountingStore()
    server = emulator(backing)
    # Every answer comes late: at the kill, writes have landed without the child knowing.
    proxy = FaultProxy(server.port, modes=("late",), budget=10_000)
    home = rig.hermes_home_for(tmp_path / "hermes", proxy.url, timeout=TIMEOUT)
    nonce = uuid.uuid4().hex[:8]
    count = int(pick(4, 20, 10))
    child = subprocess.Popen(
        [
            sys.executable,
            str(Path(__file__).with_name("reliability_writes_child.py")),
            str(home),
            nonce,
            str(count),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    lines: list[str] = []
    try:
        with scenario(
            "unknown outcome: kill -9", "kill -9 mid-delivery (answers late), restart replays"
        ) as s:
            assert child.stdout is not None
            for line in child.stdout:
                lines.append(line.rstrip("\n"))
                if line.startswith("SENT"):
                    break
            deadline = time.monotonic() + 30
            while sum(backing.applied.values()) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            applied_at_kill = sum(backing.applied.values())
            child.send_signal(signal.SIGKILL)
            child.wait(10)
            accepted = [tuple(line.split(" ", 2)[1:]) for line in lines if line.startswith("ACK ")]
            proxy.configure((), 0)
            second = rig.new_provider(home)
            try:
                drained = rig.drain(second, deadline_s=90)
            finally:
                second.shutdown()
            counts = tally(backing, accepted)  # type: ignore[arg-type]
            record(s, counts)
            s.note(applied_at_kill=applied_at_kill)
            assert drained
            assert len(accepted) == 3 * count and applied_at_kill >= 3
            for kind in KINDS:
                assert counts[kind]["lost"] == 0, (kind, counts)
                assert counts[kind]["duplicated"] == 0, (kind, counts)
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)
        proxy.stop()
