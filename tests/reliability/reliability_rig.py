"""The rig the fault scenarios share: a Hermes provider against the emulator, a ledger that
counts turns issued, acknowledged and stored, and a proxy that cuts answers after the commit.
"""

from __future__ import annotations

import json
import os
import random
import socket
import time
import uuid
from collections import Counter
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from fault_proxy import LoopbackProxy

from memcore.paging import every_item

STORE = "hermes_mem"
EMU_ENV = {"TABLESTORE_MEMORY_AK": "emu-ak", "TABLESTORE_MEMORY_SK": "emu-sk"}


def make_hermes_home(
    root: Path,
    config: dict[str, Any],
    env: dict[str, str] | None = None,
    *,
    env_mode: int = 0o600,
) -> Path:
    """A Hermes home with ``tablestore_memory.json`` (and a ``.env``, 0600 by default, when
    given)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "tablestore_memory.json").write_text(json.dumps(config), encoding="utf-8")
    if env:
        path = root / ".env"
        path.write_text("".join(f"{k}={v}\n" for k, v in env.items()), encoding="utf-8")
        os.chmod(path, env_mode)
    return root


#: The config of a Hermes home on the embedded store.
LOCAL_CONFIG = {"backend": "local", "embedder": "none"}


def hermes_home_for(
    root: Path,
    endpoint: str,
    *,
    timeout: float = 2.0,
    keys: dict[str, str] | None = None,
    env_mode: int = 0o600,
    **extra: Any,
) -> Path:
    """A Hermes home whose config points the ``tablestore`` backend at ``endpoint``."""
    config = {
        "backend": "tablestore",
        "endpoint": endpoint,
        "instance_name": "emulator",
        "timeout": timeout,
    }
    config.update(extra)
    return make_hermes_home(root, config, keys or EMU_ENV, env_mode=env_mode)


def fast_retry() -> Any:
    """Spool backoff scaled down so a short run recovers within seconds (same algorithm)."""
    from memcore_hermes.outbox.delivery import RetryPolicy

    return RetryPolicy(base_s=0.05, cap_s=0.5)


def new_provider(
    home: Path, *, user_id: str = "alice", session: str = "session-1", **kwargs: Any
) -> Any:
    from memcore_hermes import MemcoreMemoryProvider

    kwargs.setdefault("retry", fast_retry())
    kwargs.setdefault("flush_timeout", 5.0)
    provider = MemcoreMemoryProvider(environ={}, **kwargs)
    provider.initialize(
        session,
        hermes_home=str(home),
        platform="telegram",
        user_id=user_id,
        agent_context="primary",
    )
    return provider


class TurnLedger:
    """Unique turns, and what became of each: acknowledged, then found at the backend."""

    def __init__(self, label: str = "") -> None:
        self.nonce = f"{label}{uuid.uuid4().hex[:8]}"
        self.issued: list[str] = []
        self.acknowledged: list[str] = []
        self.refused: list[str] = []

    def user_text(self, i: int) -> str:
        return f"turn {i} of {self.nonce}: the user says something worth keeping"

    def issue(self, provider: Any) -> None:
        """One ``sync_turn``; acknowledged unless the plugin reported it could not spool it."""
        i = len(self.issued)
        text = self.user_text(i)
        runtime = provider.runtime
        before = runtime.refused_writes if runtime is not None else 0
        provider.sync_turn(text, f"assistant answer {i}", session_id="session-1")
        self.issued.append(text)
        after = runtime.refused_writes if runtime is not None else before
        if runtime is not None and after == before:
            self.acknowledged.append(text)
        else:
            self.refused.append(text)

    def issue_for(self, provider: Any, seconds: float, *, interval: float = 0.02) -> None:
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            self.issue(provider)
            time.sleep(interval)

    def tally(self, contents: Iterable[str]) -> dict[str, int]:
        counts = Counter(c for c in contents if self.nonce in c)
        ack = set(self.acknowledged)
        stored = sum(1 for t in self.issued if counts[t] > 0)
        return {
            "issued": len(self.issued),
            "acknowledged": len(self.acknowledged),
            "stored": stored,
            "lost": sum(1 for t in ack if counts[t] == 0),
            "duplicated": sum(max(0, n - 1) for n in counts.values()),
        }


def all_messages(store: Any, scope: Any, store_name: str = STORE) -> list[str]:
    """Every short-term message of ``scope`` (read from the backing store directly)."""
    listing = every_item(
        lambda token: store.list_messages(store_name, scope, limit=100, next_token=token)
    )
    return [m.content for m in listing]


def all_memory_texts(store: Any, pattern: Any, store_name: str = "mem") -> list[str]:
    """The text of every long-term memory under ``pattern`` (read from the store directly)."""
    listing = every_item(
        lambda token: store.list_memories(store_name, pattern, limit=100, next_token=token)
    )
    return [m.text for m in listing]


def fuzz_settings(max_examples: float) -> Any:
    """Hypothesis settings for the fuzz scenarios: no deadline, no example database (each run
    starts fresh), and no health check (the examples are slow and the inputs large on purpose)."""
    from hypothesis import HealthCheck, settings

    return settings(
        max_examples=int(max_examples),
        deadline=None,
        database=None,
        suppress_health_check=list(HealthCheck),
    )


def drain(provider: Any, *, deadline_s: float = 60.0) -> bool:
    """Flush until the spool is empty (or the deadline passes); True when empty."""
    runtime = provider.runtime
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if runtime.flush(min(10.0, max(0.1, end - time.monotonic()))):
            return True
        time.sleep(0.1)
    return False


def wait_spool_empty(provider: Any, *, deadline_s: float = 60.0) -> bool:
    """Wait, without forcing anything, until the provider's lane has emptied the spool."""
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if provider.runtime.spool.stats(time.time()).depth == 0:
            return True
        time.sleep(0.1)
    return False


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class CutAfterCommitProxy(LoopbackProxy):
    """A loopback HTTP proxy that forwards each request, lets the server commit it, then cuts
    the answer half-way for ``rate`` of the requests: the client cannot tell it landed."""

    def __init__(self, upstream_port: int, *, rate: float = 0.0, seed: int = 7) -> None:
        self.rate = rate
        self.cut = 0
        self._rng = random.Random(seed)
        super().__init__(upstream_port, name="cut-proxy")

    def _handle(self, client: socket.socket, request: bytes) -> bool:
        response = self._forward(request)
        if response is None:
            return False
        with self._lock:
            cut = self.rate > 0 and self._rng.random() < self.rate
            if cut:
                self.cut += 1
        if cut:
            client.sendall(response[: max(1, len(response) // 2)])
            client.shutdown(socket.SHUT_RDWR)
            return False
        client.sendall(response)
        return True


#: A child Hermes process: takes turns and prints ``ACK <text>`` once each ``sync_turn`` returned.
CHILD = Path(__file__).resolve().with_name("reliability_child.py")


def child_command(
    home: Path,
    nonce: str,
    count: int,
    interval: float,
    session: str,
    flush_timeout: float = 10.0,
) -> list[str]:
    import sys

    return [
        sys.executable,
        str(CHILD),
        str(home),
        nonce,
        str(count),
        str(interval),
        session,
        str(flush_timeout),
    ]


#: The keys ``memcore emulator serve`` accepts.
CLI_EMULATOR_KEYS = {
    "TABLESTORE_MEMORY_AK": "memcore-emulator",
    "TABLESTORE_MEMORY_SK": "memcore-emulator-secret",
}


class EmulatorProcess:
    """``memcore emulator serve`` in its own process (as the real service would be: its CPU
    work does not compete with the agent process for the GIL), over a SQLite file."""

    def __init__(
        self, database: Path, *, latency_ms: float = 0.0, env: dict[str, str] | None = None
    ) -> None:
        import subprocess
        import sys

        self.database = database
        self.port = free_port()
        script = Path(sys.executable).parent / "memcore"
        self.proc = subprocess.Popen(
            [
                str(script),
                "emulator",
                "serve",
                "--port",
                str(self.port),
                "--latency-ms",
                str(latency_ms),
                "--database",
                str(database),
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            env=env,
        )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.5):
                    return
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError("memcore emulator serve exited early") from None
                time.sleep(0.1)
        self.stop()
        raise RuntimeError("memcore emulator serve did not start")

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def stop(self) -> None:
        import signal

        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except Exception:
                self.proc.kill()
                self.proc.wait(5)
