"""Gateway-style load on the Hermes plugin: turn-path latency and delivery rate by layout.

N agent threads, each with its own ``tablestore-mem`` provider and session, take turns against
``memcore emulator serve`` (its own process, over SQLite) with added latency. Layouts: every
provider on one Hermes home (one shared spool, as a gateway has) or one home per provider.
Reports the time on the agent's thread in ``sync_turn``, how fast the spool drains, turns stored,
and RSS. Prints one JSON document.

    uv run python -m benchmarks.reliability_load [--turns 200] [--latency-ms 20]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks._stats import summary_ms

KEYS = "TABLESTORE_MEMORY_AK=memcore-emulator\nTABLESTORE_MEMORY_SK=memcore-emulator-secret\n"


def _rss_mb() -> float:
    with open("/proc/self/status", encoding="ascii") as fh:
        for line in fh:
            if line.startswith("VmRSS:"):
                return round(int(line.split()[1]) / 1024.0, 1)
    return float("nan")


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def _start_emulator(db: Path, latency_ms: float) -> tuple[subprocess.Popen[bytes], str]:
    port = _free_port()
    script = Path(sys.executable).parent / "memcore"
    proc = subprocess.Popen(
        [
            str(script),
            "emulator",
            "serve",
            "--port",
            str(port),
            "--latency-ms",
            str(latency_ms),
            "--database",
            str(db),
        ],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    for _ in range(600):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.5):
                return proc, f"http://127.0.0.1:{port}"
        except OSError:
            time.sleep(0.1)
    proc.kill()
    raise SystemExit("the emulator did not start")


def _home(root: Path, url: str) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    cfg = {"backend": "tablestore", "endpoint": url, "instance_name": "emulator", "timeout": 10.0}
    (root / "tablestore_memory.json").write_text(json.dumps(cfg))
    (root / ".env").write_text(KEYS)
    os.chmod(root / ".env", 0o600)
    return root


def run_layout(
    threads: int, turns: int, latency_ms: float, shared: bool, workdir: Path
) -> dict[str, Any]:
    from memcore_hermes import MemcoreMemoryProvider
    from memcore_hermes.outbox.delivery import RetryPolicy

    proc, url = _start_emulator(workdir / "emulator.db", latency_ms)
    try:
        homes = [_home(workdir / ("home" if shared else f"home{i}"), url) for i in range(threads)]
        providers = []
        for i in range(threads):
            p = MemcoreMemoryProvider(environ={}, retry=RetryPolicy(base_s=0.05, cap_s=0.5))
            p.initialize(f"gw-{i}", hermes_home=str(homes[i]), user_id=f"user{i}")
            providers.append(p)
        for p in providers:
            p.runtime.wait_idle(60)
        rss_start = _rss_mb()
        samples: list[float] = []
        lock = threading.Lock()

        def agent(i: int) -> None:
            mine = []
            for n in range(turns):
                t0 = time.perf_counter()
                providers[i].sync_turn(f"user {i} turn {n} says something", f"answer {n}")
                mine.append(time.perf_counter() - t0)
                time.sleep(0.005)
            with lock:
                samples.extend(mine)

        start = time.monotonic()
        workers = [threading.Thread(target=agent, args=(i,)) for i in range(threads)]
        for w in workers:
            w.start()
        for w in workers:
            w.join()
        issued_s = time.monotonic() - start
        spools = {str(p.runtime.spool.path): p.runtime.spool for p in providers}
        while (
            any(s.stats(time.time()).depth for s in spools.values())
            and time.monotonic() - start < 600
        ):
            time.sleep(0.1)
        drained_s = time.monotonic() - start
        left = sum(s.stats(time.time()).depth for s in spools.values())
        for p in providers:
            p.shutdown()
        return {
            "threads": threads,
            "turns_per_thread": turns,
            "layout": "one shared home/spool" if shared else "one home/spool per provider",
            "turn_path": summary_ms(samples),
            "issue_seconds": round(issued_s, 2),
            "drain_seconds": round(drained_s, 2),
            "turns_delivered_per_s": round(threads * turns / drained_s, 1),
            "left_in_spool": left,
            "rss_mb_start": rss_start,
            "rss_mb_end": _rss_mb(),
        }
    finally:
        proc.send_signal(signal.SIGINT)
        try:
            proc.wait(15)
        except (
            subprocess.TimeoutExpired
        ):  # it should stop on Ctrl-C; do not let that sink the figures
            print(
                "memcore emulator serve did not stop within 15 s of SIGINT; killed", file=sys.stderr
            )
            proc.kill()
            proc.wait(5)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--turns", type=int, default=200)
    parser.add_argument("--latency-ms", type=float, default=20.0)
    args = parser.parse_args()
    runs = []
    for threads, shared in ((1, True), (8, True), (8, False)):
        with tempfile.TemporaryDirectory() as tmp:
            runs.append(run_layout(threads, args.turns, args.latency_ms, shared, Path(tmp)))
    print(
        json.dumps(
            {"benchmark": "reliability_load", "latency_ms": args.latency_ms, "runs": runs}, indent=2
        )
    )


if __name__ == "__main__":
    main()
