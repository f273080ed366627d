"""Fixtures for the Hermes plugin tests: a temporary HERMES_HOME, providers, the emulator."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from memcore.testing import InMemoryMemoryStore
from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.config.envfile import SECRET_VARS
from memcore_hermes.outbox.delivery import RetryPolicy
from memcore_hermes.testing import FakeChatServer

REPO_ROOT = Path(__file__).resolve().parents[2]
EMULATOR_KEYS = {"TABLESTORE_MEMORY_AK": "emu-ak", "TABLESTORE_MEMORY_SK": "emu-sk"}
FAST_RETRY = RetryPolicy(base_s=0.02, cap_s=0.1, jitter=0.0)
HERMES_BIN = Path(sys.executable).with_name("hermes")


@pytest.fixture
def hermes_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty Hermes home, selected through ``HERMES_HOME``; no secrets in the environment."""
    home = tmp_path / "hermes-home"
    home.mkdir()
    (tmp_path / "user-home").mkdir()
    monkeypatch.setenv("HERMES_HOME", str(home))
    monkeypatch.setenv("HOME", str(tmp_path / "user-home"))
    for var in SECRET_VARS:
        monkeypatch.delenv(var, raising=False)
    return home


def write_config(home: Path, **values: Any) -> Path:
    path = home / "tablestore_memory.json"
    path.write_text(json.dumps(values), encoding="utf-8")
    return path


def write_env(home: Path, values: dict[str, str], *, mode: int = 0o600) -> Path:
    path = home / ".env"
    path.write_text("".join(f"{k}={v}\n" for k, v in values.items()), encoding="utf-8")
    os.chmod(path, mode)
    return path


@pytest.fixture
def fake_store() -> InMemoryMemoryStore:
    return InMemoryMemoryStore()


MakeProvider = Callable[..., MemcoreMemoryProvider]


@pytest.fixture
def make_provider(hermes_home: Path) -> Iterator[MakeProvider]:
    """Build and initialise providers over a given store; all are shut down afterwards."""
    made: list[MemcoreMemoryProvider] = []

    def make(
        store: Any,
        *,
        session_id: str = "s1",
        user_id: str | None = "alice",
        platform: str = "telegram",
        agent_context: str = "primary",
        retry: RetryPolicy = FAST_RETRY,
        **kwargs: Any,
    ) -> MemcoreMemoryProvider:
        provider = MemcoreMemoryProvider(
            # A fake closed by an earlier provider's shutdown serves the next one.
            store_factory=lambda _config: getattr(store, "reopen", lambda: store)(),
            retry=retry,
            flush_timeout=kwargs.pop("flush_timeout", 5.0),
            spool_limits=kwargs.pop("spool_limits", None),
        )
        provider.initialize(
            session_id,
            hermes_home=str(hermes_home),
            platform=platform,
            agent_context=agent_context,
            user_id=user_id,
            **kwargs,
        )
        made.append(provider)
        return provider

    yield make
    for provider in made:
        provider.shutdown()


@pytest.fixture
def emulator() -> Iterator[Any]:
    from memcore_tablestore.testing import running_emulator

    with running_emulator(record_requests=True) as server:
        yield server


def emulator_home(
    home: Path, server: Any, *, keys: dict[str, str] = EMULATOR_KEYS, **config: Any
) -> None:
    """Point the plugin in ``home`` at the emulator, ``keys`` in a 0600 ``.env``."""
    write_config(
        home,
        backend="tablestore",
        endpoint=server.url,
        instance_name=server.instance_name,
        **{"timeout": 3.0, **config},
    )
    write_env(home, keys)


def install_plugin(home: Path) -> Path:
    """Copy the plugin (repo root files and packages) into ``home/plugins/tablestore-mem``."""
    from memcore_hermes.plugin_copy import copy_plugin

    target = copy_plugin(REPO_ROOT, home / "plugins" / "tablestore-mem")
    (home / "config.yaml").write_text("memory:\n  provider: tablestore-mem\n", encoding="utf-8")
    return target


def run_hermes(
    home: Path, *args: str, timeout: float = 60.0, user_home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the real ``hermes`` CLI with ``home`` as HERMES_HOME (and a throwaway HOME, unless
    ``user_home`` is given)."""
    user_home = user_home or home.parent / "user-home"
    env = {k: v for k, v in os.environ.items() if k not in SECRET_VARS}
    env.update(HERMES_HOME=str(home), HOME=str(user_home), NO_COLOR="1")
    user_home.mkdir(exist_ok=True)
    return subprocess.run(
        [str(HERMES_BIN), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


def run_cli_full(
    capsys: pytest.CaptureFixture[str], *args: str, secrets: tuple[str, ...] = ()
) -> tuple[int, Any, str]:
    """The command handler Hermes calls for ``hermes tablestore-mem``, in-process (no Hermes
    start): its exit status, JSON answer and stderr; no ``secrets`` may appear in the output,
    and Ctrl-C must not escape it (it reports one line and exits 130)."""
    import argparse

    from memcore_hermes.commands.cli import register_cli, tablestore_mem_command

    parser = argparse.ArgumentParser(prog="hermes tablestore-mem")
    register_cli(parser)
    code = 0
    try:
        tablestore_mem_command(parser.parse_args(list(args)))
    except SystemExit as exc:
        code = int(exc.code or 0)
    except KeyboardInterrupt:
        pytest.fail("Ctrl-C escaped the command (no rollback, no one-line report)")
    out = capsys.readouterr()
    for secret in secrets:
        assert secret not in out.out + out.err
    return code, json.loads(out.out), out.err


def run_cli(
    capsys: pytest.CaptureFixture[str], *args: str, secrets: tuple[str, ...] = ()
) -> tuple[int, dict[str, Any]]:
    """:func:`run_cli_full` without stderr."""
    code, answer, _ = run_cli_full(capsys, *args, secrets=secrets)
    return code, answer


def settle(provider: Any, seconds: float) -> bool:
    """Flush until the spool is empty (a forced pass stops at the first failure); True if so."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if provider.runtime.flush(seconds):
            return True
        time.sleep(0.02)
    return False


def lacking_vectors(provider: Any, store_name: str, seconds: float) -> int:
    """Memories still without a vector once the provider's background re-embedding is done
    (or ``seconds`` have passed)."""
    store = provider.runtime.handle.store
    deadline = time.monotonic() + seconds
    while store.missing_vectors(store_name) and time.monotonic() < deadline:
        time.sleep(0.05)
    count: int = store.missing_vectors(store_name)
    return count


@pytest.fixture
def kit() -> Any:
    """The helpers above, for test modules (conftest modules cannot be imported by name)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        write_config=write_config,
        write_env=write_env,
        emulator_home=emulator_home,
        install_plugin=install_plugin,
        run_hermes=run_hermes,
        run_cli=run_cli,
        run_cli_full=run_cli_full,
        settle=settle,
        lacking_vectors=lacking_vectors,
        EMULATOR_KEYS=EMULATOR_KEYS,
        FAST_RETRY=FAST_RETRY,
        REPO_ROOT=REPO_ROOT,
    )


@pytest.fixture
def chat_server() -> Iterator[FakeChatServer]:
    server = FakeChatServer(lambda body: "Noted, thanks!")
    yield server
    server.stop()
