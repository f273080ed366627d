"""``hermes memory setup tablestore-mem``: the backend choice, files written, never a hang."""

from __future__ import annotations

import json
import socket
import stat
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.backend.setup import Answers, DefaultsAsker, run_setup
from memcore_hermes.config.home import HermesHome

AK = "LTAI5tSetupKeyId"
SK = "setup-secret-9Kq2mZ"


class Scripted:
    """Answers the wizard's questions in order, and records them."""

    def __init__(self, *answers: Any) -> None:
        self.answers = list(answers)
        self.asked: list[str] = []

    def _next(self, label: str) -> Any:
        self.asked.append(label)
        return self.answers.pop(0)

    def choose(self, title: str, options: list[tuple[str, str]], default: int) -> int | None:
        picked = self._next(title)
        return None if picked is None else [name for name, _ in options].index(picked)

    def text(self, label: str, default: str) -> str:
        value = self._next(label)
        return default if value == "" else str(value)

    def secret(self, label: str) -> str:
        return str(self._next(label))


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def refused_endpoint() -> str:
    """A loopback port nobody listens on: the setup's probe names it, quickly."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{sock.getsockname()[1]}"


def assert_env_holds_our_keys(home: Path) -> None:
    """``.env`` keeps the unrelated line, holds our key pair only, and is mode 0600."""
    env = (home / ".env").read_text(encoding="utf-8").splitlines()
    assert env == [
        "OPENAI_API_KEY=keep-me",
        f"TABLESTORE_MEMORY_AK={AK}",
        f"TABLESTORE_MEMORY_SK={SK}",
    ]
    assert mode(home / ".env") == 0o600


def test_keys_the_service_refuses_make_setup_say_not_available(hermes_home: Path) -> None:
    """Setup said "tablestore-mem is available" and answered available (exit 0) while the
    endpoint's check it printed next said the service refused the keys (HTTP 403)."""
    from memcore_tablestore.testing import running_emulator

    said: list[str] = []
    with running_emulator(access_key_id=AK, access_key_secret=SK) as server:
        asker = Scripted("tablestore", AK, "a-wrong-secret", server.instance_name, server.url, "")
        result = run_setup(HermesHome(hermes_home), asker=asker, environ={}, say=said.append)
    assert result is not None and not result.available, said
    assert "refused the keys" in result.reason
    assert not any("is available" in line for line in said), said


def test_choosing_tablestore_keeps_secrets_only_in_env(hermes_home: Path) -> None:
    from memcore_tablestore.testing import running_emulator

    (hermes_home / ".env").write_text("OPENAI_API_KEY=keep-me\n", encoding="utf-8")
    said: list[str] = []
    with running_emulator(access_key_id=AK, access_key_secret=SK) as server:
        asker = Scripted("tablestore", AK, SK, server.instance_name, server.url, "")
        result = run_setup(HermesHome(hermes_home), asker=asker, environ={}, say=said.append)
        url, instance = server.url, server.instance_name
    assert result is not None and result.available and result.backend == "tablestore"
    assert f"endpoint: ✓ {url} answers" in [line.strip() for line in said]
    config_text = (hermes_home / "tablestore_memory.json").read_text(encoding="utf-8")
    assert AK not in config_text and SK not in config_text
    assert all(AK not in line and SK not in line for line in said)
    config = json.loads(config_text)
    assert config["backend"] == "tablestore" and config["instance_name"] == instance
    assert config["region"] == "cn-beijing"
    assert_env_holds_our_keys(hermes_home)
    assert mode(hermes_home / "tablestore_memory.json") == 0o600


def test_a_blank_secret_keeps_the_current_one(hermes_home: Path, kit: Any) -> None:
    kit.write_env(hermes_home, {"TABLESTORE_MEMORY_AK": AK, "TABLESTORE_MEMORY_SK": SK})
    endpoint = refused_endpoint()
    asker = Scripted("tablestore", "", "", "inst", endpoint, "")
    said: list[str] = []
    result = run_setup(HermesHome(hermes_home), asker=asker, environ={}, say=said.append)
    assert result is not None and result.available
    assert any(f"✗ cannot reach {endpoint}: connection refused" in line for line in said)
    assert "blank keeps the current one" in asker.asked[1]
    assert f"TABLESTORE_MEMORY_SK={SK}" in (hermes_home / ".env").read_text(encoding="utf-8")


def test_without_a_terminal_and_without_keys_the_default_is_offline(hermes_home: Path) -> None:
    said: list[str] = []
    result = run_setup(HermesHome(hermes_home), asker=DefaultsAsker(), environ={}, say=said.append)
    assert result is not None and result.available and result.backend == "local"
    assert json.loads((hermes_home / "tablestore_memory.json").read_text())["backend"] == "local"
    assert any("available: local backend" in line for line in said)
    assert MemcoreMemoryProvider(environ={}).is_available()


def test_cancel_saves_nothing(hermes_home: Path) -> None:
    assert run_setup(HermesHome(hermes_home), asker=Scripted(None), environ={}, say=print) is None
    assert not (hermes_home / "tablestore_memory.json").exists()


def test_the_backend_variable_chooses_without_asking(hermes_home: Path) -> None:
    asker = Scripted("", "", "", "", "", "")  # only the TableStore settings are asked
    said: list[str] = []
    result = run_setup(
        HermesHome(hermes_home),
        asker=asker,
        environ={"TABLESTORE_MEMORY_BACKEND": "tablestore"},
        say=said.append,
    )
    assert result is not None and not result.available
    assert "missing TABLESTORE_MEMORY_AK and TABLESTORE_MEMORY_SK" in result.reason
    assert not any("Where should memories live" in q for q in asker.asked)
    assert any("offline local store" in line for line in said)


def test_flags_answer_the_questions(hermes_home: Path) -> None:
    answers = Answers(backend="local", tenant_id="  team-a  ")
    result = run_setup(
        HermesHome(hermes_home), answers=answers, asker=Scripted(), environ={}, say=lambda _m: None
    )
    assert result is not None and result.available
    assert json.loads((hermes_home / "tablestore_memory.json").read_text())["tenant_id"] == "team-a"


def test_setup_keeps_the_user_id_alone_as_the_tenant_when_asked(
    hermes_home: Path, capsys: pytest.CaptureFixture[str], kit: Any
) -> None:
    import argparse

    from memcore_hermes.commands.cli import register_cli, tablestore_mem_command

    parser = argparse.ArgumentParser()
    register_cli(parser)
    tablestore_mem_command(
        parser.parse_args(["setup", "--backend", "local", "--tenant-scope", "user"])
    )
    capsys.readouterr()  # what setup said
    saved = json.loads((hermes_home / "tablestore_memory.json").read_text())
    assert saved["tenant_scope"] == "user"
    code, listed = kit.run_cli(capsys, "list", "--user-id", "12345")
    assert code == 0 and listed["scope"] == "hermes/12345/*/*"


@pytest.mark.slow
def test_hermes_memory_setup_without_a_terminal_ends_available(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    (hermes_home / "config.yaml").write_text("{}\n", encoding="utf-8")
    setup = kit.run_hermes(hermes_home, "memory", "setup", "tablestore-mem", timeout=120)
    assert setup.returncode == 0, setup.stderr[-2000:]
    assert "available: local backend" in setup.stdout, setup.stdout
    assert "tablestore-mem" in (hermes_home / "config.yaml").read_text(encoding="utf-8")
    status = kit.run_hermes(hermes_home, "memory", "status").stdout
    assert "available ✓" in status and "search: hybrid" in status, status


def test_an_untrusted_env_file_is_neither_offered_nor_carried_over(
    hermes_home: Path, kit: Any
) -> None:
    theirs = {
        "TABLESTORE_MEMORY_AK": "LTAIsomeoneElsesKey",
        "TABLESTORE_MEMORY_SK": "someone-elses-secret",
        "TABLESTORE_MEMORY_STS_TOKEN": "someone-elses-token",
        "OPENAI_API_KEY": "keep-me",
    }
    kit.write_env(hermes_home, theirs, mode=0o666)
    endpoint = refused_endpoint()
    asker = Scripted("tablestore", AK, SK, "inst", endpoint, "")
    said: list[str] = []
    run_setup(HermesHome(hermes_home), asker=asker, environ={}, say=said.append)
    assert "blank keeps the current one" not in asker.asked[1]
    assert any("writable by other users" in line for line in said)
    assert_env_holds_our_keys(hermes_home)
    assert not any(value in line for line in said for value in (*theirs.values(), AK, SK))


def test_an_api_key_instead_of_a_pair_is_saved_and_used(hermes_home: Path) -> None:
    """No pair given: the wizard asks for an API key, keeps it in .env only, and the endpoint
    probe reaches the emulator with it (the vendor client, x-ots-apikey)."""
    from memcore_tablestore.testing import running_emulator

    key = "setup-api-key-7Hw3pQ9"
    said: list[str] = []
    with running_emulator(api_key=key) as server:
        asker = Scripted("tablestore", "", "", key, server.instance_name, server.url, "")
        result = run_setup(HermesHome(hermes_home), asker=asker, environ={}, say=said.append)
        url = server.url
    assert "API key" in asker.asked[3]
    assert result is not None and result.available and result.backend == "tablestore"
    assert f"endpoint: ✓ {url} answers" in [line.strip() for line in said]
    assert (hermes_home / ".env").read_text(encoding="utf-8").splitlines() == [
        f"TABLESTORE_MEMORY_API_KEY={key}"
    ]
    assert key not in (hermes_home / "tablestore_memory.json").read_text(encoding="utf-8")
    assert all(key not in line for line in said)


def test_an_api_key_alone_needs_an_existing_instance(hermes_home: Path, kit: Any) -> None:
    from memcore_hermes.config.readiness import check_readiness

    kit.write_env(hermes_home, {"TABLESTORE_MEMORY_API_KEY": "only-a-key-123456"})
    kit.write_config(hermes_home, backend="tablestore")
    readiness = check_readiness(HermesHome(hermes_home), {})
    assert not readiness.available
    assert "existing instance" in readiness.reason and "only-a-key" not in readiness.reason


def test_new_keys_replace_every_line_that_set_them(hermes_home: Path) -> None:
    """A ``.env`` that sets a key twice is read last-line-wins; setup rewrote only the first
    line, so the old key (the later line) stayed the one in use after "Keys saved"."""
    from memcore_hermes.config.credentials import load_access_keys

    (hermes_home / ".env").write_text(
        "TABLESTORE_MEMORY_AK=old-id-1\nOPENAI_API_KEY=keep-me\nexport TABLESTORE_MEMORY_AK=old-id-2\n"
        "TABLESTORE_MEMORY_SK=old-secret\n",
        encoding="utf-8",
    )
    (hermes_home / ".env").chmod(0o600)
    asker = Scripted("tablestore", AK, SK, "inst", refused_endpoint(), "")
    run_setup(HermesHome(hermes_home), asker=asker, environ={}, say=lambda _line: None)
    keys = load_access_keys(hermes_home / ".env", {})
    assert keys is not None
    assert (keys.access_key_id, keys.access_key_secret) == (AK, SK)
    text = (hermes_home / ".env").read_text(encoding="utf-8")
    assert "old-id" not in text and "old-secret" not in text and "OPENAI_API_KEY=keep-me" in text


def test_setup_never_offers_an_endpoints_password_as_the_default(hermes_home: Path) -> None:
    """A hand-written endpoint with ``user:password@`` loads, and the wizard offers the current
    endpoint as the default of its question, printed in the prompt: the password was shown
    there (and, taken as it was, could not be saved). It is offered without it."""

    class Recording(Scripted):
        def __init__(self, *answers: Any) -> None:
            super().__init__(*answers)
            self.defaults: list[str] = []

        def text(self, label: str, default: str) -> str:
            self.defaults.append(default)
            return super().text(label, default)

    endpoint = refused_endpoint()
    with_password = endpoint.replace("http://", "http://LTAIurlUser:UrlPasswordCanary@")
    (hermes_home / "tablestore_memory.json").write_text(
        json.dumps({"backend": "tablestore", "endpoint": with_password, "instance_name": "inst"}),
        encoding="utf-8",
    )
    said: list[str] = []
    asker = Recording("tablestore", AK, SK, "", "", "")
    run_setup(HermesHome(hermes_home), asker=asker, environ={}, say=said.append)
    shown = "\n".join([*asker.defaults, *said])
    assert "UrlPasswordCanary" not in shown and "LTAIurlUser" not in shown, shown
    assert endpoint in asker.defaults
    saved = json.loads((hermes_home / "tablestore_memory.json").read_text(encoding="utf-8"))
    assert saved["endpoint"] == endpoint


def test_ctrl_c_in_hermes_memory_setup_is_one_line_and_exit_130(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Ctrl-C at one of the wizard's prompts (``hermes memory setup tablestore-mem``) printed
    Hermes' whole traceback; ``hermes tablestore-mem setup`` said one line, exit 130."""
    import memcore_hermes.backend.setup as setup

    def interrupted(*_: Any, **__: Any) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(setup, "run_setup", interrupted)
    with pytest.raises(SystemExit) as stopped:
        MemcoreMemoryProvider(environ={}).post_setup(str(hermes_home), {})
    assert stopped.value.code == 130
    assert capsys.readouterr().err.strip() == "tablestore-mem: interrupted"
