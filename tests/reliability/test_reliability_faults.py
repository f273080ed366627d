"""Backend faults through the emulator's fault injection, measured end to end.

A Hermes ``tablestore-mem`` provider (real SDK, real HTTP on 127.0.0.1, real SQLite spool) takes
turns while the emulator misbehaves for a window; then the service recovers and the spool
drains. Every turn the plugin acknowledged must be stored at the backend exactly once.
"""

from __future__ import annotations

import time

import pytest
import reliability_rig as rig

from memcore_tablestore.emulator import Faults


def _run_window(
    emulator,
    tmp_path,
    scenario,
    *,
    name,
    fault,
    faults,
    window_s,
    timeout=2.0,
    interval=0.02,
    via=None,
):
    from memcore.testing import InMemoryMemoryStore

    backing = InMemoryMemoryStore()
    server = emulator(backing)
    endpoint = server.url
    proxy = None
    if via == "cut-after-commit":
        proxy = rig.CutAfterCommitProxy(server.port)
        endpoint = proxy.url
    home = rig.hermes_home_for(tmp_path / "hermes", endpoint, timeout=timeout)
    provider = rig.new_provider(home)
    ledger = rig.TurnLedger()
    with scenario(name, fault) as s:
        try:
            assert provider.runtime.wait_idle(30.0)
            if proxy is not None:
                proxy.rate = faults
            else:
                server.set_faults(faults)
            ledger.issue_for(provider, window_s, interval=interval)
            if proxy is not None:
                proxy.rate = 0.0
            else:
                server.set_faults(Faults())
            drained = rig.drain(provider, deadline_s=90.0)
            stats = provider.runtime.spool.stats(time.time())
            dead = provider.runtime.spool.dead_letter_count()
            counts = ledger.tally(rig.all_messages(backing, provider.runtime.scope))
            s.counts(**counts)
            s.note(
                window_s=window_s,
                spool_depth_after=stats.depth,
                dead_letters=dead,
                delivery_failures=provider.runtime.deliverer.failures,
                cut_answers=proxy.cut if proxy else None,
            )
            assert drained, f"spool not drained: {stats}"
            assert dead == 0
            assert counts["lost"] == 0, counts
            assert counts["duplicated"] == 0, counts
            assert counts["acknowledged"] == counts["issued"] > 0, counts
        finally:
            provider.shutdown()
            if proxy is not None:
                proxy.stop()
    return counts


# One row a fault: the scenario's name, the fault as the report states it, what is injected,
# the window's (short, full, medium) seconds, and the client's settings where they differ.
_WINDOWS = [
    pytest.param(
        "503 burst",
        "30% of calls answer 503 OTSServerBusy for the window, then recovery",
        Faults(error_rate=0.3, error_status=503, error_code="OTSServerBusy", seed=11),
        (4, 60, 15),
        {},
        id="503_burst",
    ),
    pytest.param(
        "429 throttling",
        "30% of calls answer 429 OTSOperationThrottled for the window, then recovery",
        Faults(error_rate=0.3, error_status=429, error_code="OTSOperationThrottled", seed=12),
        (4, 60, 15),
        {},
        id="429_throttling",
    ),
    pytest.param(
        "500 internal errors",
        "30% of calls answer 500 OTSInternalServerError for the window",
        Faults(error_rate=0.3, error_status=500, error_code="OTSInternalServerError", seed=13),
        (3, 20, 10),
        {},
        id="500_internal_errors",
    ),
    pytest.param(
        "dropped connections",
        "30% of connections cut mid-response (before the write is applied)",
        Faults(drop_rate=0.3, seed=14),
        (4, 60, 15),
        {},
        id="dropped_connections",
    ),
    pytest.param(
        "answer lost after commit",
        "30% of answers cut half-way AFTER the server applied the write (loopback proxy)",
        0.3,
        (4, 30, 15),
        {"via": "cut-after-commit"},
        id="answer_lost_after_commit",
    ),
    pytest.param(
        "2 s latency, 1 s timeout",
        "every call delayed 2 s with a 1 s client timeout (the server still applies it)",
        Faults(latency_ms=2000, seed=15),
        (4, 60, 15),
        {"timeout": 1.0, "interval": 0.05},
        id="latency_beyond_timeout",
    ),
]


@pytest.mark.slow
@pytest.mark.parametrize(("name", "fault", "faults", "window", "client"), _WINDOWS)
def test_reliability_faults(
    emulator, tmp_path, scenario, pick, name, fault, faults, window, client
):
    _run_window(
        emulator,
        tmp_path,
        scenario,
        name=name,
        fault=fault,
        faults=faults,
        window_s=pick(*window),
        **client,
    )
