"""The installed ``memcore`` console script, run as a user would, in fresh homes."""

from __future__ import annotations

import json
import os
import select
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

SCRIPT = Path(sys.executable).with_name("memcore")
REPO = Path(__file__).resolve().parents[2]


def _env(home: Path, **extra: str) -> dict[str, str]:
    return {
        "PATH": f"{SCRIPT.parent}{os.pathsep}/usr/bin:/bin",
        "HOME": str(home.parent / "user-home"),
        "MEMCORE_HOME": str(home),
        "ALIBABA_CLOUD_ECS_METADATA_DISABLED": "true",
        "LANG": "C.UTF-8",
        **extra,
    }


def _memcore(
    env: dict[str, str], *args: str, timeout: float = 120
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(SCRIPT), *args], capture_output=True, text=True, env=env, timeout=timeout, check=False
    )


def test_console_script_is_installed():
    assert SCRIPT.exists() or shutil.which("memcore")


def _launcher(kind: str) -> list[str]:
    """The installed script itself, or the README's ``uv run memcore`` (without a re-sync)."""
    if kind == "script":
        return [str(SCRIPT)]
    uv = os.environ.get("UV") or shutil.which("uv")
    if not uv:
        pytest.skip("uv is not on PATH")
    return [uv, "run", "--no-sync", "--project", str(REPO), "memcore"]


@pytest.mark.parametrize("kind", ["script", "uv run"])
def test_readme_main_job_finds_the_memory(tmp_path, kind):
    """Exactly the quickstart: add, then search with words the memory does not contain."""
    env = _env(tmp_path / "home", UV_NO_CACHE="1")
    memcore = _launcher(kind)
    run = {
        "capture_output": True,
        "text": True,
        "env": env,
        "timeout": 120,
        "check": False,
        "cwd": REPO,
    }
    added = subprocess.run([*memcore, "add", "User prefers concise answers"], **run)
    assert added.returncode == 0, added.stderr
    assert "first run" in added.stderr
    assert str(tmp_path / "home") in added.stderr
    found = subprocess.run([*memcore, "search", "answer style"], **run)
    assert found.returncode == 0, found.stderr
    assert "User prefers concise answers" in found.stdout
    assert "first run" not in found.stderr


def test_main_job_also_works_on_a_lexical_only_install(tmp_path):
    """Without embeddings the FTS5 index still matches: Porter stemming makes 'answer' match
    'answers', and the query falls back from AND to OR."""
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
    env = _env(home)
    assert _memcore(env, "add", "User prefers concise answers").returncode == 0
    hits = json.loads(_memcore(env, "--json", "search", "answer style").stdout)
    assert [h["text"] for h in hits] == ["User prefers concise answers"]


def test_hybrid_search_finds_a_paraphrase_that_lexical_search_cannot(tmp_path):
    home = tmp_path / "home"
    env = _env(home)
    for text in (
        "User prefers concise answers",
        "The user's cat is called Miso",
        "Deploys happen on Fridays",
        "User lives in Hangzhou",
    ):
        assert _memcore(env, "add", text).returncode == 0
    doctor = json.loads(_memcore(env, "--json", "doctor").stdout)
    mode = next(c["detail"] for c in doctor["checks"] if c["name"] == "search mode")
    assert mode.startswith("hybrid"), mode
    hybrid = json.loads(_memcore(env, "--json", "search", "how long should replies be").stdout)
    assert hybrid[0]["text"] == "User prefers concise answers"
    (home / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
    assert json.loads(_memcore(env, "--json", "search", "how long should replies be").stdout) == []


def test_exit_codes_through_the_real_process(tmp_path):
    env = _env(tmp_path / "home")
    assert _memcore(env, "add", "").returncode == 2
    missing = _memcore(env, "get", "does-not-exist")
    assert missing.returncode == 3
    assert missing.stderr.strip().splitlines()[-1].startswith("memcore: error:")
    assert "Traceback" not in missing.stderr


def _read_line(proc: subprocess.Popen[str], timeout: float) -> str:
    deadline = time.monotonic() + timeout
    assert proc.stdout is not None
    while time.monotonic() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 0.2)
        if ready:
            return proc.stdout.readline()
        if proc.poll() is not None:
            break
    raise AssertionError(f"emulator did not start: {proc.stderr.read() if proc.stderr else ''}")


@pytest.mark.slow
def test_emulator_serve_backs_the_tablestore_backend(tmp_path):
    served = tmp_path / "served"
    served.mkdir()
    (served / "config.json").write_text('{"embedder": "none"}', encoding="utf-8")
    proc = subprocess.Popen(
        [str(SCRIPT), "--json", "emulator", "serve", "--port", "0", "--latency-ms", "5"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(served),
    )
    try:
        ready = json.loads(_read_line(proc, 60))
        assert ready["url"].startswith("http://127.0.0.1:")
        client_home = tmp_path / "client"
        client_home.mkdir()
        (client_home / "config.json").write_text(
            json.dumps(
                {"endpoint": ready["url"], "instance_name": ready["instance_name"], "timeout": 10.0}
            ),
            encoding="utf-8",
        )
        env = _env(
            client_home,
            MEMCORE_BACKEND="tablestore",
            TABLESTORE_MEMORY_AK="memcore-emulator",
            TABLESTORE_MEMORY_SK="memcore-emulator-secret",
        )
        added = _memcore(env, "--json", "add", "--sync", "User prefers concise answers")
        assert added.returncode == 0, added.stderr
        hits = json.loads(_memcore(env, "--json", "search", "concise").stdout)
        assert [h["text"] for h in hits] == ["User prefers concise answers"]
        wrong = _memcore({**env, "TABLESTORE_MEMORY_SK": "wrong"}, "search", "concise")
        assert wrong.returncode == 4, wrong.stderr
        # The development API key the emulator prints, instead of the pair.
        keyed = {k: v for k, v in env.items() if not k.startswith("TABLESTORE_MEMORY_")}
        keyed["TABLESTORE_MEMORY_API_KEY"] = "memcore-emulator-api-key"
        hits = json.loads(_memcore(keyed, "--json", "search", "concise").stdout)
        assert [h["text"] for h in hits] == ["User prefers concise answers"]
        bad_key = _memcore({**keyed, "TABLESTORE_MEMORY_API_KEY": "wrong-key"}, "search", "x")
        assert bad_key.returncode == 4, bad_key.stderr
        assert "wrong-key" not in bad_key.stdout + bad_key.stderr
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    assert proc.returncode == 0
    # The emulator served its own database in that home, not the home's local store.
    local = _memcore(_env(served), "--json", "list")
    assert json.loads(local.stdout)["items"] == []
    from memcore.scope import ScopePattern
    from memcore_sqlite import SqliteMemoryStore

    with SqliteMemoryStore(served / "emulator.db") as store:
        [name] = [s.name for s in store.list_stores()]
        page = store.list_memories(name, ScopePattern("hermes", "__default__"))
    assert [m.text for m in page.items] == ["User prefers concise answers"]


@pytest.mark.slow
def test_emulator_fail_rate_makes_the_client_exit_5(tmp_path):
    served = tmp_path / "served"
    proc = subprocess.Popen(
        [
            str(SCRIPT),
            "--json",
            "emulator",
            "serve",
            "--port",
            "0",
            "--fail-rate",
            "1",
            "--database",
            ":memory:",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(served, MEMCORE_BACKEND="local"),
    )
    try:
        ready = json.loads(_read_line(proc, 60))
        client_home = tmp_path / "client"
        client_home.mkdir()
        (client_home / "config.json").write_text(
            json.dumps({"endpoint": ready["url"], "instance_name": "emulator", "timeout": 2.0}),
            encoding="utf-8",
        )
        env = _env(
            client_home,
            TABLESTORE_MEMORY_AK="memcore-emulator",
            TABLESTORE_MEMORY_SK="memcore-emulator-secret",
        )
        result = _memcore(env, "--backend", "tablestore", "search", "anything")
        assert result.returncode == 5, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_emulator_serve_stopped_with_ctrl_c_exits_130(tmp_path):
    """Ctrl-C ended the emulator with exit code 0 and no word, where every other command
    stopped by it says ``memcore: interrupted`` and exits 130, as the exit-code table says;
    SIGTERM, a service manager's stop, is the clean one (exit 0, above)."""
    served = tmp_path / "served"
    proc = subprocess.Popen(
        [str(SCRIPT), "--json", "emulator", "serve", "--port", "0", "--database", ":memory:"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=_env(served, MEMCORE_BACKEND="local"),
        # As from a terminal: a child started in the background would ignore SIGINT.
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert json.loads(_read_line(proc, 60))["url"].startswith("http://127.0.0.1:")
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=30)
    assert proc.returncode == 130, err
    error = json.loads(err)["error"]  # --json: a JSON object, as every failure's
    assert (error["code"], error["message"], error["exit_code"]) == (
        "interrupted",
        "interrupted",
        130,
    )


def test_emulator_serve_rejects_bad_fault_settings(tmp_path):
    env = _env(tmp_path / "home")
    bad = _memcore(env, "emulator", "serve", "--port", "0", "--fail-rate", "2")
    assert bad.returncode == 2
    assert "--fail-rate" in bad.stderr


def test_shell_completion_completes_commands(tmp_path):
    env = _env(
        tmp_path / "home",
        _MEMCORE_COMPLETE="complete_bash",
        COMP_WORDS="memcore dr",
        COMP_CWORD="1",
    )
    result = _memcore(env)
    assert result.returncode == 0
    assert result.stdout.split() == ["dream"]
