"""Fixtures for the CLI tests: an isolated home, and a ``cli`` runner per backend.

The runner hands the CLI an explicit environment through ``Overrides`` (the same hook any
caller can use), so no test reads the real environment, $HOME or a credentials chain.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import attrs
import pytest
from typer.testing import CliRunner, Result

from memcore_cli.app import app
from memcore_cli.wiring.state import Overrides, StoreFactory

EMULATOR_AK = "cli-test-ak"
EMULATOR_SK = "cli-test-secret-value"
EMULATOR_API_KEY = "cli-test-api-key-value"


class Cli:
    """Runs ``memcore`` in-process with an explicit environment and optional global options."""

    def __init__(
        self,
        home: Path,
        *,
        env: dict[str, str] | None = None,
        prefix: Sequence[str] = (),
        store_factory: StoreFactory | None = None,
    ) -> None:
        self.home = home
        self.env = {"MEMCORE_HOME": str(home), **(env or {})}
        self.prefix = list(prefix)
        self.store_factory = store_factory
        self.runner = CliRunner()

    def __call__(
        self, *args: str, input: str | None = None, env: dict[str, str] | None = None
    ) -> Result:
        environ = {**self.env, **(env or {})}
        overrides = Overrides(store_factory=self.store_factory, environ=environ)
        return self.runner.invoke(
            app,
            [*self.prefix, *args],
            input=input,
            env=environ,
            obj=overrides,
            catch_exceptions=False,
        )

    def ok(self, *args: str, input: str | None = None) -> Result:
        result = self(*args, input=input)
        assert result.exit_code == 0, (result.exit_code, result.stdout, result.stderr)
        return result

    def json(self, *args: str, input: str | None = None) -> Any:
        return json.loads(self.ok("--json", *args, input=input).stdout)

    def json_lines(self, *args: str) -> list[Any]:
        return [json.loads(line) for line in self.ok("--json", *args).stdout.splitlines() if line]


#: The installed ``memcore`` script, which :func:`run_memcore` runs as a user would.
MEMCORE = str(Path(sys.executable).with_name("memcore"))


def run_memcore(home: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """``memcore *args`` in a subprocess with only PATH and ``MEMCORE_HOME`` set; it must
    exit 0."""
    env = {"PATH": os.environ.get("PATH", ""), "MEMCORE_HOME": str(home)}
    done = subprocess.run(
        [MEMCORE, *args], capture_output=True, text=True, env=env, timeout=120, check=False
    )
    assert done.returncode == 0, (done.returncode, done.stdout, done.stderr)
    return done


def write_config(home: Path, data: dict[str, Any]) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


@pytest.fixture
def set_config() -> Callable[[Path, dict[str, Any]], Path]:
    """Write ``config.json`` into a home directory."""
    return write_config


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


@pytest.fixture
def local_cli(home: Path) -> Cli:
    """The embedded SQLite store, opened through the real entry point (lexical, for speed)."""
    write_config(home, {"embedder": "none"})
    return Cli(home)


def _emulated(tmp_path: Path, backing: Any, *, api_key: str | None = None) -> Iterator[Cli]:
    """The CLI against an emulator over ``backing``: with the access key pair, or with
    ``api_key`` alone (the emulator then accepts both; the CLI is given the key only)."""
    from memcore_tablestore.emulator import EmulatorServer

    server = EmulatorServer(
        backing, access_key_id=EMULATOR_AK, access_key_secret=EMULATOR_SK, api_key=api_key
    )
    server.start()
    home = tmp_path / "ts-home"
    write_config(
        home, {"endpoint": server.url, "instance_name": server.instance_name, "timeout": 10.0}
    )
    keys = (
        {"TABLESTORE_MEMORY_API_KEY": api_key}
        if api_key
        else {"TABLESTORE_MEMORY_AK": EMULATOR_AK, "TABLESTORE_MEMORY_SK": EMULATOR_SK}
    )
    try:
        yield Cli(home, env=keys, prefix=["--backend", "tablestore"])
    finally:
        server.stop()
        backing.close()


@pytest.fixture
def emulator_cli(tmp_path: Path) -> Iterator[Cli]:
    """``--backend tablestore`` against the loopback emulator serving a real SQLite store."""
    from memcore_sqlite import SqliteMemoryStore

    yield from _emulated(tmp_path, SqliteMemoryStore(tmp_path / "served.db"))


@pytest.fixture
def emulator_fake_cli(tmp_path: Path) -> Iterator[Cli]:
    """The emulator over the in-memory fake, which implements dream tasks."""
    from memcore.testing import InMemoryMemoryStore

    yield from _emulated(tmp_path, InMemoryMemoryStore())


@pytest.fixture
def api_key_cli(tmp_path: Path) -> Iterator[Cli]:
    """``--backend tablestore`` against an emulator, with an API key and no access key pair."""
    from memcore.testing import InMemoryMemoryStore

    yield from _emulated(tmp_path, InMemoryMemoryStore(), api_key=EMULATOR_API_KEY)


@pytest.fixture(params=["local", "tablestore"])
def cli(request: pytest.FixtureRequest) -> Cli:
    """Every memory command runs against both the embedded store and the emulator."""
    name = "local_cli" if request.param == "local" else "emulator_cli"
    return request.getfixturevalue(name)


@pytest.fixture
def fake_cli(home: Path) -> Cli:
    """The in-memory fake injected as the store (it implements dream tasks)."""
    from memcore.testing import InMemoryMemoryStore

    store = InMemoryMemoryStore()

    # Each command closes the store it opened; the same data serves the next one.
    factory: Callable[[Any], Any] = lambda settings: store.reopen()  # noqa: E731
    cli = Cli(home, store_factory=factory)
    cli.store = store  # type: ignore[attr-defined]
    return cli


#: Runs ``memcore`` (arguments: JSON in argv[1]) and prints, as its last line, the top-level
#: modules the run imported.
_IMPORT_PROBE = """
import json, sys
sys.argv = ["memcore", *json.loads(sys.argv[1])]
from memcore_cli.app import main
try:
    main()
except SystemExit:
    pass
print("\\n" + json.dumps(sorted({m.split(".")[0] for m in sys.modules})))
"""


@attrs.frozen
class ImportProbe:
    """What one ``memcore`` run in a fresh interpreter printed and imported."""

    modules: frozenset[str]
    stdout: str


@pytest.fixture(scope="session")
def import_probe() -> Callable[..., ImportProbe]:
    """``import_probe(args, env, timeout=120)``: run ``memcore *args`` in a fresh interpreter
    with exactly ``env``, and report which top-level modules it imported."""

    def run(args: Sequence[str], env: dict[str, str], *, timeout: float = 120.0) -> ImportProbe:
        done = subprocess.run(
            [sys.executable, "-c", _IMPORT_PROBE, json.dumps(list(args))],
            capture_output=True,
            text=True,
            timeout=timeout,
            env=env,
            check=False,
        )
        modules = json.loads(done.stdout.strip().splitlines()[-1])
        return ImportProbe(frozenset(modules), done.stdout)

    return run
