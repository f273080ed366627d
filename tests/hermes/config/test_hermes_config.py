"""Availability, configuration files and secrets handling."""

from __future__ import annotations

import json
import logging
import os
import stat
from pathlib import Path
from typing import Any

import pytest

from memcore.errors import ConfigError
from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.config.credentials import load_access_keys
from memcore_hermes.config.envfile import parse_env_text

SECRET = "sk-very-secret-value-123456"


def test_unavailable_without_keys_or_local_backend(hermes_home: Path) -> None:
    assert MemcoreMemoryProvider().is_available() is False


def test_available_with_both_keys_in_the_environment(
    hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TABLESTORE_MEMORY_AK", "ak")
    assert MemcoreMemoryProvider().is_available() is False
    monkeypatch.setenv("TABLESTORE_MEMORY_SK", SECRET)
    assert MemcoreMemoryProvider().is_available() is True


def test_available_with_keys_in_the_env_file(hermes_home: Path, kit: Any) -> None:
    kit.write_env(hermes_home, {"TABLESTORE_MEMORY_AK": "ak", "TABLESTORE_MEMORY_SK": SECRET})
    assert MemcoreMemoryProvider().is_available() is True


def test_available_offline_with_the_local_backend(hermes_home: Path, kit: Any) -> None:
    kit.write_config(hermes_home, backend="local")
    assert MemcoreMemoryProvider().is_available() is True


def test_a_secrets_file_others_can_write_is_refused(hermes_home: Path, kit: Any) -> None:
    env = kit.write_env(
        hermes_home, {"TABLESTORE_MEMORY_AK": "ak", "TABLESTORE_MEMORY_SK": SECRET}, mode=0o666
    )
    assert MemcoreMemoryProvider().is_available() is False
    with pytest.raises(ConfigError) as info:
        load_access_keys(env)
    message = str(info.value)
    assert "writable by other users" in message and "chmod 600" in message
    assert SECRET not in message


def test_initialize_refuses_an_unsafe_secrets_file(
    hermes_home: Path, kit: Any, caplog: pytest.LogCaptureFixture
) -> None:
    kit.write_env(
        hermes_home, {"TABLESTORE_MEMORY_AK": "ak", "TABLESTORE_MEMORY_SK": SECRET}, mode=0o620
    )
    provider = MemcoreMemoryProvider()
    with caplog.at_level(logging.DEBUG), pytest.raises(ConfigError):
        provider.initialize("s1", hermes_home=str(hermes_home))
    assert "chmod 600" in caplog.text
    assert SECRET not in caplog.text


def test_access_keys_never_show_in_a_repr(hermes_home: Path, kit: Any) -> None:
    env = kit.write_env(
        hermes_home, {"TABLESTORE_MEMORY_AK": "ak-visible?", "TABLESTORE_MEMORY_SK": SECRET}
    )
    keys = load_access_keys(env)
    assert keys is not None
    assert SECRET not in repr(keys) and "ak-visible?" not in repr(keys)


def test_env_file_parsing() -> None:
    parsed = parse_env_text("# c\nexport A=1\nB=\"two words\"\nC=3 # note\n\nbad line\nD='q'\n")
    assert parsed == {"A": "1", "B": "two words", "C": "3", "D": "q"}


def test_a_quoted_env_value_with_a_comment_after_it_loses_its_quotes() -> None:
    """``KEY="secret"  # rotated`` kept its quotes (the pair was then refused by the service
    as a wrong signature for ``memcore --hermes-home``), where Hermes' own loader, which
    fills the environment of its sessions, reads ``secret``; so did a tab before a comment."""
    parsed = parse_env_text(
        'E="abc"  # rotated 2026-12\nF="abc"#c\nG=\'abc\' # c\nH=x\t# tab\nI="a # b"\nJ=p#q\n'
    )
    assert parsed == {"E": "abc", "F": "abc", "G": "abc", "H": "x", "I": "a # b", "J": "p#q"}


def test_config_schema_marks_the_secrets() -> None:
    schema = MemcoreMemoryProvider().get_config_schema()
    secrets = {f["key"] for f in schema if f.get("secret")}
    assert secrets == {"api_key", "access_key_id", "access_key_secret"}
    # Hermes' dashboard saves a secret to .env only through its env_var.
    assert {f["key"]: f.get("env_var") for f in schema if f.get("secret")} == {
        "api_key": "TABLESTORE_MEMORY_API_KEY",
        "access_key_id": "TABLESTORE_MEMORY_AK",
        "access_key_secret": "TABLESTORE_MEMORY_SK",
    }
    assert not any(f.get("env_var") for f in schema if not f.get("secret"))
    assert schema[0]["key"] == "backend"  # setup asks it first: the secrets depend on it
    for field in schema:
        when = field.get("when", {})
        assert set(when) <= {"backend"}
    keys = {f["key"] for f in schema if not f.get("secret")}
    assert {
        "backend",
        "endpoint",
        "instance_name",
        "memory_store_name",
        "app_id",
        "tenant_id",
    } <= keys


def test_the_schema_is_given_before_the_dependencies_are_installed_with_an_endpoint_saved(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Hermes asks for the schema (``hermes memory setup`` lists the providers) before it
    installs a plugin's dependencies, without which memcore cannot be imported. A saved
    endpoint was offered through memcore's config module, so setup stopped with an
    ImportError before it could install them; the other saved settings are offered still."""
    import sys

    kit.write_config(
        hermes_home,
        backend="tablestore",
        endpoint="https://urlUser:UrlPasswordCanary@inst.cn-beijing.ots.aliyuncs.com",
        instance_name="inst",
    )
    for name in ("memcore", "memcore.config", "memcore.errors"):
        monkeypatch.setitem(sys.modules, name, None)  # importing it raises ImportError

    fields = {f["key"]: f for f in MemcoreMemoryProvider().get_config_schema()}

    assert fields["instance_name"]["default"] == "inst"
    # Without memcore the endpoint is not offered as a default (setup asks for it after the
    # installation, where it is offered without user:password@).
    assert "default" not in fields["endpoint"]
    assert "UrlPasswordCanary" not in json.dumps(list(fields.values()))


def test_save_config_merges_atomically_with_mode_0600(hermes_home: Path, kit: Any) -> None:
    path = kit.write_config(hermes_home, app_id="team", top_k=7)
    path.chmod(0o644)
    MemcoreMemoryProvider().save_config(
        {"backend": "local", "enable_rerank": "false", "top_k": "9", "tenant_id": ""},
        str(hermes_home),
    )
    data = json.loads(path.read_text())
    assert data["app_id"] == "team"  # kept
    assert data["backend"] == "local" and data["enable_rerank"] is False and data["top_k"] == 9
    assert "tenant_id" not in data
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert [p.name for p in hermes_home.iterdir() if p.name.endswith(".tmp")] == []


def test_save_config_writes_through_a_symlinked_config(
    hermes_home: Path, tmp_path: Path, kit: Any
) -> None:
    kept = tmp_path / "dotfiles" / "tablestore_memory.json"
    kept.parent.mkdir()
    kept.write_text(json.dumps({"app_id": "team"}), encoding="utf-8")
    (hermes_home / "tablestore_memory.json").symlink_to(kept)
    MemcoreMemoryProvider().save_config({"top_k": "9"}, str(hermes_home))
    assert (hermes_home / "tablestore_memory.json").is_symlink()
    data = json.loads(kept.read_text(encoding="utf-8"))
    assert data["app_id"] == "team" and data["top_k"] == 9


def test_a_config_that_is_a_pipe_is_refused_and_left_alone(
    hermes_home: Path, tmp_path: Path
) -> None:
    """A named pipe at the config's path hung Hermes' start (``is_available`` reads the
    config) and ``save_config`` replaced it, or a device behind a link, with a file. The
    null device reads as no settings."""
    pipe = tmp_path / "pipe"
    os.mkfifo(pipe)
    (hermes_home / "tablestore_memory.json").symlink_to(pipe)
    provider = MemcoreMemoryProvider()
    assert provider.is_available() is False
    with pytest.raises(ConfigError, match="named pipe"):
        provider.save_config({"top_k": "9"}, str(hermes_home))
    with pytest.raises(ConfigError, match="named pipe"):
        provider.initialize("s1", hermes_home=str(hermes_home))
    assert stat.S_ISFIFO(pipe.stat().st_mode)
    (hermes_home / "tablestore_memory.json").unlink()
    (hermes_home / "tablestore_memory.json").symlink_to(os.devnull)
    assert provider.get_config_schema() and provider.is_available() is False
    assert stat.S_ISCHR(os.stat(os.devnull).st_mode)


def test_save_config_never_writes_secrets(hermes_home: Path) -> None:
    MemcoreMemoryProvider().save_config(
        {"access_key_secret": SECRET, "backend": "local"}, str(hermes_home)
    )
    assert SECRET not in (hermes_home / "tablestore_memory.json").read_text()


def test_save_config_refuses_an_endpoint_holding_a_password(hermes_home: Path) -> None:
    """``hermes memory setup`` (or ``setup --endpoint``) never puts a password in the JSON file
    through the endpoint's ``user:password@`` either; the error does not quote it."""
    endpoint = f"https://LTAIuser:{SECRET}@inst.cn-hangzhou.ots.aliyuncs.com"
    with pytest.raises(ConfigError) as info:
        MemcoreMemoryProvider().save_config({"endpoint": endpoint}, str(hermes_home))
    assert info.value.field == "endpoint"
    assert SECRET not in str(info.value) and "LTAIuser" not in str(info.value)
    assert not (hermes_home / "tablestore_memory.json").exists()


def test_save_config_rejects_a_bad_value_naming_the_key(hermes_home: Path) -> None:
    with pytest.raises(ConfigError) as info:
        MemcoreMemoryProvider().save_config({"top_k": "500"}, str(hermes_home))
    assert info.value.field == "top_k"
    assert not (hermes_home / "tablestore_memory.json").exists()


def test_a_bad_config_file_fails_initialize_with_the_key(hermes_home: Path, kit: Any) -> None:
    kit.write_config(hermes_home, backend="local", access_key_secret="nope")
    with pytest.raises(ConfigError) as info:
        MemcoreMemoryProvider().initialize("s1", hermes_home=str(hermes_home))
    assert info.value.field == "access_key_secret"
    assert "tablestore_memory.json" in str(info.value)


def test_without_keys_the_tablestore_backend_explains_what_to_set(
    hermes_home: Path, kit: Any
) -> None:
    kit.write_config(
        hermes_home, backend="tablestore", endpoint="http://127.0.0.1:9", instance_name="emulator"
    )
    with pytest.raises(ConfigError) as info:
        MemcoreMemoryProvider().initialize("s1", hermes_home=str(hermes_home))
    assert "TABLESTORE_MEMORY_AK" in str(info.value)


def test_the_local_model_is_read_from_the_given_environment_not_the_process(
    hermes_home: Path, kit: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from memcore_hermes.commands.doctor import run_doctor
    from memcore_hermes.config.home import HermesHome

    kit.write_config(hermes_home, backend="local", embedder="none")
    monkeypatch.setenv("MEMCORE_MODEL_BASE_URL", "http://127.0.0.1:9/v1")  # MEMCORE_MODEL unset
    assert "backend_error" not in run_doctor(HermesHome(hermes_home), environ={})
    given = {"MEMCORE_MODEL_BASE_URL": "http://127.0.0.1:9/v1"}
    report = run_doctor(HermesHome(hermes_home), environ=given)
    assert report["backend_error"]["field"] == "MEMCORE_MODEL"


def test_the_local_model_is_read_from_the_env_file(hermes_home: Path, kit: Any) -> None:
    from memcore_hermes.commands.doctor import run_doctor
    from memcore_hermes.config.home import HermesHome

    kit.write_config(hermes_home, backend="local", embedder="none")
    kit.write_env(hermes_home, {"MEMCORE_MODEL_BASE_URL": "http://127.0.0.1:9/v1"})
    report = run_doctor(HermesHome(hermes_home), environ={})
    assert report["backend_error"]["field"] == "MEMCORE_MODEL"


@pytest.mark.skipif(
    not hasattr(os, "lchown") or os.geteuid() != 0, reason="making a link of another user"
)
@pytest.mark.parametrize("name", ["tablestore_memory.json", ".env"])
def test_save_never_follows_a_file_another_user_left_in_a_shared_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str
) -> None:
    """A linked config has its target replaced; in a shared folder (sticky, writable by all)
    a link another user left there named a file of their choosing, which saving replaced."""
    from memcore.errors import PermissionDenied
    from memcore_hermes.backend.setup import write_env_values
    from memcore_hermes.config.home import HermesHome

    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o1777)
    monkeypatch.setenv("HERMES_HOME", str(shared))
    victim = tmp_path / "victim"
    victim.write_text("{}", encoding="utf-8")
    (shared / name).symlink_to(victim)
    os.lchown(shared / name, 65534, 65534)
    with pytest.raises(PermissionDenied, match="another user left in a shared folder"):
        if name == ".env":
            write_env_values(HermesHome(shared), {"TABLESTORE_MEMORY_AK": "x"})
        else:
            MemcoreMemoryProvider().save_config({"top_k": "9"}, str(shared))
    assert victim.read_text(encoding="utf-8") == "{}"
    assert sorted(p.name for p in shared.iterdir()) == [name]
