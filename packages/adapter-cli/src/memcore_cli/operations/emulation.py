"""Wiring for ``memcore emulator serve``: embedded store + TableStore emulator + faults."""

from __future__ import annotations

import errno
import math
import signal
import sys
import threading
from pathlib import Path

import attrs

from memcore.errors import InvalidInput, Unavailable
from memcore_cli.settings.home import HOME_ENV, checked_database, expand
from memcore_cli.wiring.state import CliState

#: Well-known development keys, used when TABLESTORE_MEMORY_AK/SK are not set. The emulator
#: only listens on 127.0.0.1, so they protect nothing and are printed for convenience.
DEV_ACCESS_KEY_ID = "memcore-emulator"
DEV_ACCESS_KEY_SECRET = "memcore-emulator-secret"
DEV_API_KEY = "memcore-emulator-api-key"
INSTANCE_NAME = "emulator"
EMULATOR_DB = "emulator.db"


def port_error(exc: OSError, port: int) -> Unavailable:
    """A bind failure as one clear line (exit 5), instead of ``[Errno 98]``."""
    if exc.errno == errno.EADDRINUSE:
        return Unavailable(
            f"port {port} on 127.0.0.1 is already in use; stop what holds it, or pick another "
            "with --port (0 picks a free one)",
            field="port",
        )
    return Unavailable(f"cannot listen on 127.0.0.1:{port} ({exc.strerror})", field="port")


def _check_faults(port: int, latency_ms: float, fail_rate: float) -> None:
    if not 0 <= port <= 65535:
        raise InvalidInput(f"--port must be from 0 to 65535, not {port}", field="port")
    if not math.isfinite(latency_ms) or latency_ms < 0:
        raise InvalidInput("--latency-ms must be a number of milliseconds >= 0", field="latency_ms")
    if not math.isfinite(fail_rate) or not 0 <= fail_rate <= 1:
        raise InvalidInput("--fail-rate must be from 0 to 1", field="fail_rate")


def serve_forever(
    state: CliState, *, port: int, latency_ms: float, fail_rate: float, database: str | None
) -> None:
    """Serve until SIGTERM (a clean stop) or Ctrl-C, which ends in ``KeyboardInterrupt`` as
    in every command (exit 130); the embedded store is closed on the way out."""
    from memcore_cli.wiring.runtime import open_default_store
    from memcore_tablestore.emulator import EmulatorServer, Faults

    _check_faults(port, latency_ms, fail_rate)
    if database is not None and not database.strip():
        raise InvalidInput(
            "--database is empty (an unset shell variable?); give a file or leave it out",
            field="database",
        )
    settings = state.runtime().settings
    # Its own file by default: an emulator serving the CLI's own database would let a
    # "cloud" test read and change the memories of the local store.
    db_path = checked_database(
        expand(database, field="database") if database is not None else settings.home / EMULATOR_DB,
        field="database" if database is not None else HOME_ENV,
    )
    local = attrs.evolve(settings, backend="local", db_path=db_path)
    factory = state.overrides.store_factory or open_default_store
    env = state.environ
    dev_keys = not (env.get("TABLESTORE_MEMORY_AK") and env.get("TABLESTORE_MEMORY_SK"))
    ak = DEV_ACCESS_KEY_ID if dev_keys else env["TABLESTORE_MEMORY_AK"]
    sk = DEV_ACCESS_KEY_SECRET if dev_keys else env["TABLESTORE_MEMORY_SK"]
    dev_api_key = not env.get("TABLESTORE_MEMORY_API_KEY", "").strip()
    api_key = DEV_API_KEY if dev_api_key else env["TABLESTORE_MEMORY_API_KEY"].strip()
    store = factory(local)
    try:
        server = EmulatorServer(
            store,
            host="127.0.0.1",
            port=port,
            access_key_id=ak,
            access_key_secret=sk,
            api_key=api_key,
            instance_name=INSTANCE_NAME,
            faults=Faults(latency_ms=latency_ms, error_rate=fail_rate),
        )
        stop = threading.Event()
        try:
            server.start()
        except OSError as exc:
            raise port_error(exc, port) from None
        previous = signal.signal(signal.SIGTERM, lambda *_: stop.set())
        try:
            _announce(state, server.url, db_path, dev_keys=dev_keys, dev_api_key=dev_api_key)
            while not stop.wait(0.5):
                pass
        finally:
            server.stop()
            signal.signal(signal.SIGTERM, previous)
    finally:
        store.close()


def _announce(
    state: CliState, url: str, db_path: Path, *, dev_keys: bool, dev_api_key: bool
) -> None:
    out = state.output
    if state.json:
        out.json_line({"url": url, "instance_name": INSTANCE_NAME, "database": str(db_path)})
    else:
        out.line(
            f"TableStore emulator listening on {url} (instance {INSTANCE_NAME}), serving {db_path}"
        )
        if dev_keys:
            out.line(
                f"keys: TABLESTORE_MEMORY_AK={DEV_ACCESS_KEY_ID} "
                f"TABLESTORE_MEMORY_SK={DEV_ACCESS_KEY_SECRET} (development keys)"
            )
        else:
            out.line("keys: TABLESTORE_MEMORY_AK/SK from the environment")
        if dev_api_key:
            out.line(f"API key: TABLESTORE_MEMORY_API_KEY={DEV_API_KEY} (development key)")
        else:
            out.line("API key: TABLESTORE_MEMORY_API_KEY from the environment")
        out.line("press Ctrl-C to stop")
    sys.stdout.flush()
