"""Secrets: AK/SK and STS tokens never show in logs (any level), doctor output, exception
messages, reprs, the audit log or the files we write; config and spool files are 0600; and a
secrets file other users can write is refused with a clear message.
"""

from __future__ import annotations

import json
import logging
import os
import stat

import pytest
import reliability_rig as rig

AK = "LTAI5tReliabilityAkId0001"
SK = "SkReliabilitySecretValue-0123456789abcdef"
STS = "STS.ReliabilityTokenValue-zyxwvut987654"
SECRETS = (AK, SK, STS)


def _leaks(text: str) -> list[str]:
    return [name for name, value in zip(("AK", "SK", "STS"), SECRETS) if value in text]


def _secret_home(tmp_path, server, *, mode=0o600):
    keys = {
        "TABLESTORE_MEMORY_AK": AK,
        "TABLESTORE_MEMORY_SK": SK,
        "TABLESTORE_MEMORY_STS_TOKEN": STS,
    }
    return rig.hermes_home_for(tmp_path / "hermes", server.url, keys=keys, env_mode=mode)


@pytest.fixture
def secret_emulator(emulator):
    from memcore.testing import InMemoryMemoryStore

    backing = InMemoryMemoryStore()
    server = emulator(backing, access_key_id=AK, access_key_secret=SK, security_token=STS)
    return server, backing


class _Collector(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@pytest.mark.slow
def test_reliability_secrets_never_leak(secret_emulator, tmp_path, caplog, capsys, scenario):
    from memcore_hermes.commands.doctor import run_doctor
    from memcore_hermes.config.home import HermesHome
    from memcore_tablestore.emulator import Faults

    server, backing = secret_emulator
    home = _secret_home(tmp_path, server)
    caplog.set_level(logging.DEBUG)
    logging.getLogger().setLevel(logging.DEBUG)
    # Collect straight from our packages' loggers too: an in-process Hermes run earlier in the
    # session reconfigures the root logger, and this check must not depend on test order.
    collector = _Collector()
    prefixes = (
        "memcore",
        "memcore_hermes",
        "memcore_tablestore",
        "tablestore",
        "urllib3",
        "aiohttp",
    )
    names = set(prefixes) | {
        n for n in logging.root.manager.loggerDict if n.split(".")[0] in prefixes
    }
    watched = [logging.getLogger(n) for n in sorted(names)]
    saved = [(lg.level, lg.disabled) for lg in watched]
    for lg in watched:
        lg.addHandler(collector)
        lg.setLevel(logging.DEBUG)
        lg.disabled = False
    surfaces: dict[str, str] = {}
    with scenario(
        "secrets never leak",
        "AK/SK/STS grepped in logs (DEBUG), doctor, errors, reprs, audit log, files",
    ) as s:
        provider = rig.new_provider(home)
        try:
            assert provider.runtime.wait_idle(30)
            for i in range(5):
                provider.sync_turn(f"secret test turn {i}", "ok")
            answers = [
                provider.handle_tool_call("tablestore_remember", {"content": "fact", "sync": True}),
                provider.handle_tool_call("tablestore_search", {"query": "fact"}),
                provider.handle_tool_call("tablestore_profile", {}),
                provider.handle_tool_call("tablestore_forget", {"memory_id": "nope"}),
            ]
            assert rig.drain(provider)
            server.set_faults(Faults(error_rate=1.0, error_status=503, seed=1))
            answers.append(provider.handle_tool_call("tablestore_search", {"query": "fact"}))
            server.set_faults(Faults())
            surfaces["tool answers"] = "\n".join(answers)
            surfaces["reprs"] = "\n".join(
                repr(x)
                for x in (
                    provider,
                    provider.runtime.handle.store,
                    provider.runtime.spool,
                    provider.runtime.config,
                )
            )
            surfaces["system prompt"] = provider.system_prompt_block()
        finally:
            provider.shutdown()
        # Wrong secret: the 403 error message and its repr.
        from memcore_tablestore import Credentials, TableStoreMemoryStore

        bad = TableStoreMemoryStore(
            server.url, "emulator", Credentials(AK, SK + "x", STS), timeout=2.0
        )
        try:
            bad.list_stores()
        except Exception as exc:
            surfaces["auth error"] = f"{exc!s}\n{exc!r}\n{getattr(exc, 'to_dict', lambda: {})()}"
        surfaces["credentials repr"] = repr(Credentials(AK, SK, STS)) + str(
            Credentials(AK, SK, STS)
        )
        surfaces["bad store repr"] = repr(bad)
        bad.close()
        surfaces["doctor"] = json.dumps(run_doctor(HermesHome(home), environ={}), default=str)
        surfaces["audit log"] = "\n".join(
            repr(r) for r in backing.list_requests("hermes_mem", limit=100).items
        )
        spool_bytes = (home / "tablestore_memory_spool.sqlite3").read_bytes()
        surfaces["spool file"] = spool_bytes.decode("latin-1")
        surfaces["config file"] = (home / "tablestore_memory.json").read_text()
        for lg, (level, disabled) in zip(watched, saved):
            lg.removeHandler(collector)
            lg.setLevel(level)
            lg.disabled = disabled
        records = {id(r): r for r in [*caplog.records, *collector.records]}.values()
        surfaces["logs"] = "\n".join(
            f"{r.name} {r.levelname} {r.getMessage()} {r.exc_text or ''} {logging.Formatter().format(r)}"
            for r in records
        )
        captured = capsys.readouterr()
        surfaces["stdout/stderr"] = captured.out + captured.err
        leaks = {name: _leaks(text) for name, text in surfaces.items() if _leaks(text)}
        s.counts(issued=len(surfaces), acknowledged=len(surfaces), stored=0, lost=0, duplicated=0)
        s.note(surfaces_checked=sorted(surfaces), log_records=len(records), leaks=leaks)
        assert len(records) > 10
        assert not leaks, leaks


def test_reliability_secrets_cli_doctor_and_config_show(secret_emulator, tmp_path):
    from typer.testing import CliRunner

    from memcore_cli.app import app

    server, _ = secret_emulator
    mhome = tmp_path / "mhome"
    mhome.mkdir()
    (mhome / "config.json").write_text(
        json.dumps({"endpoint": server.url, "instance_name": "emulator", "timeout": 2.0})
    )
    env = {
        "MEMCORE_HOME": str(mhome),
        "TABLESTORE_MEMORY_AK": AK,
        "TABLESTORE_MEMORY_SK": SK,
        "TABLESTORE_MEMORY_STS_TOKEN": STS,
    }
    runner = CliRunner()
    outputs = []
    for argv in (
        ["--backend", "tablestore", "doctor"],
        ["--backend", "tablestore", "--json", "doctor"],
        ["--backend", "tablestore", "config", "show"],
        ["--backend", "tablestore", "--debug", "get", "nope"],
        ["--backend", "tablestore", "--json", "search", "x"],
    ):
        result = runner.invoke(app, argv, env=env)
        outputs.append(result.output + (result.stderr or ""))
    joined = "\n".join(outputs)
    assert not _leaks(joined), _leaks(joined)


def test_reliability_secrets_files_are_0600(tmp_path, monkeypatch):
    """Created 0600 whatever the umask (a permissive umask must not widen them)."""
    from typer.testing import CliRunner

    from memcore_cli.app import app
    from memcore_hermes import MemcoreMemoryProvider

    # The home is the user's own folder (a folder every user can write is refused outright);
    # what memcore creates in it under a permissive umask is what is checked.
    home = rig.make_hermes_home(tmp_path / "hermes", rig.LOCAL_CONFIG)
    old = os.umask(0o000)
    try:
        provider = MemcoreMemoryProvider(environ={})
        provider.save_config({"top_k": "7", "backend": "local"}, str(home))
        provider.initialize("s", hermes_home=str(home), user_id="u")
        provider.sync_turn("hello", "world")
        provider.runtime.flush(10)
        provider.shutdown()
        mhome = tmp_path / "mhome"
        result = CliRunner().invoke(
            app, ["config", "set", "top_k", "9"], env={"MEMCORE_HOME": str(mhome)}
        )
        assert result.exit_code == 0, result.output
    finally:
        os.umask(old)
    files = {
        "tablestore_memory.json": home / "tablestore_memory.json",
        "spool": home / "tablestore_memory_spool.sqlite3",
        "cli config.json": mhome / "config.json",
    }
    for side in ("-wal", "-shm"):
        p = home / f"tablestore_memory_spool.sqlite3{side}"
        if p.exists():
            files[f"spool{side}"] = p
    modes = {name: stat.S_IMODE(p.stat().st_mode) for name, p in files.items()}
    assert all(m == 0o600 for m in modes.values()), {k: oct(v) for k, v in modes.items()}


@pytest.mark.parametrize("mode", [0o620, 0o602, 0o666])
def test_reliability_secrets_writable_env_file_is_refused(secret_emulator, tmp_path, mode):
    from memcore.errors import ConfigError
    from memcore_hermes import MemcoreMemoryProvider

    server, _ = secret_emulator
    home = _secret_home(tmp_path, server, mode=mode)
    provider = MemcoreMemoryProvider(environ={})
    with pytest.raises(ConfigError) as info:
        provider.initialize("s", hermes_home=str(home), user_id="u")
    message = str(info.value)
    assert "chmod 600" in message and ".env" in message
    assert not _leaks(message)
    assert provider.runtime is None
