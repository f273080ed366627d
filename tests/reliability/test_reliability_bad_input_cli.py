"""Every ``memcore`` command with arbitrary arguments: an exit code and one line on stderr,
never a traceback, never a hang.

Runs in-process through Typer's runner on the embedded store (``provision`` and ``emulator
serve`` are left out: one talks to a cloud control plane, the other serves until stopped).
"""

from __future__ import annotations

import threading
from collections import Counter

import reliability_rig as rig
from hypothesis import given
from hypothesis import strategies as st

from memcore.paging import every_item
from memcore_cli.app import command_paths

# provision talks to a cloud control plane; emulator serve and mcp serve until stopped.
COMMANDS = [c for c in command_paths() if c[0] not in ("provision", "emulator", "mcp")]
GLOBAL = [
    ["--json"],
    ["--tenant", "*"],
    ["--tenant", "a/b"],
    ["--agent", "../x"],
    ["--run", ""],
    ["--app", "%2A"],
    ["--backend", "nope"],
    ["--backend", "local"],
    ["--debug"],
]
TOKENS = st.one_of(
    st.sampled_from(
        [
            "-",
            "--",
            "--yes",
            "--sync",
            "--all",
            "--metadata",
            "k=v",
            "=",
            "k=",
            "=v",
            "--top-k",
            "0",
            "51",
            "-1",
            "1e9",
            "nan",
            "--limit",
            "0",
            "101",
            "--filter",
            "--status",
            "bogus",
            "--text",
            "",
            " ",
            "*",
            "a/b/c/d/e",
            "%",
            "\x00",
            "\u202e",
            "x" * 40_000,
            "界" * 11_000,
            "--operation",
            "AddMemories",
            "--messages-file",
            "missing.json",
            "--out",
            "out.jsonl",
            "top_k",
            "timeout",
            "backend",
            "tablestore_local",
            "emulator",
            "--no-rerank",
            "9" * 400,
            "--help",
        ]
    ),
    st.text(max_size=30).filter(lambda t: not t.startswith("/") and ".." not in t),
)


def _bounded_invoke(runner, app, argv, env):
    box = {}

    def run():
        box["result"] = runner.invoke(app, argv, env=env, input="")

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), f"memcore {argv!r:.200} hung"
    return box["result"]


def _state(tmp_path):
    """Every memory in the CLI's embedded store (id, text, metadata), read directly."""
    from memcore.scope import ScopePattern
    from memcore_sqlite import SqliteMemoryStore

    path = tmp_path / "home" / "memcore.db"
    if not path.exists():
        return set()
    store = SqliteMemoryStore(path)
    try:
        out = set()
        for info in store.list_stores():
            listing = every_item(
                lambda token, name=info.name: store.list_memories(
                    name, ScopePattern("*"), limit=100, next_token=token
                )
            )
            out.update(
                (info.name, m.id, m.text, tuple(sorted(m.metadata.items()))) for m in listing
            )
        return out
    finally:
        store.close()


def test_reliability_cli_arbitrary_arguments(tmp_path, monkeypatch, scenario, pick):
    from typer.testing import CliRunner

    from memcore_cli.app import app

    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    env = {"MEMCORE_HOME": str(tmp_path / "home"), "MEMCORE_BACKEND": "local", "NO_COLOR": "1"}
    stats: Counter = Counter()
    unexpected: list[str] = []
    # The first run prints where the data lives (a notice, not an error); get it out of the way.
    assert runner.invoke(app, ["list"], env=env).exit_code == 0

    @rig.fuzz_settings(pick(150, 500, 300))
    @given(
        glob=st.lists(st.sampled_from(GLOBAL), max_size=2),
        command=st.sampled_from(COMMANDS),
        args=st.lists(TOKENS, max_size=5),
    )
    def check(glob, command, args):
        # --debug asks for tracebacks on purpose, so it is left out here.
        argv = [a for g in glob for a in g if a != "--debug"] + command + args
        stats["runs"] += 1
        writes = command[0] in ("add", "update", "import")
        before = _state(tmp_path) if writes else None
        result = _bounded_invoke(runner, app, argv, env)
        if writes and result.exit_code != 0:
            stats["refused_writes"] += 1
            assert _state(tmp_path) == before, f"memcore {argv!r:.200} failed but changed the store"
        out = result.output + (result.stderr or "")
        assert "Traceback" not in out, f"memcore {argv!r:.300}: {out[-1500:]}"
        assert result.exception is None or isinstance(result.exception, SystemExit), (
            argv,
            repr(result.exception),
        )
        assert result.exit_code in (0, 1, 2, 3, 4, 5, 130), (argv, result.exit_code)
        stats[f"exit_{result.exit_code}"] += 1
        if result.exit_code != 0:
            lines = [line for line in (result.stderr or "").splitlines() if line.strip()]
            if command == ["doctor"] and not lines:
                # doctor reports its checks on stdout, one pass/fail line each, by design
                assert "FAIL" in result.stdout or '"ok": false' in result.stdout, (
                    argv,
                    result.stdout[-500:],
                )
            else:
                assert len(lines) == 1, (argv, lines[:5])
        if result.exit_code == 1:
            unexpected.append(f"{' '.join(argv)[:80]} -> {(result.stderr or '').strip()[:160]}")

    with scenario("bad input: CLI arguments", "every command with arbitrary arguments") as s:
        check()
        s.counts(issued=stats["runs"], acknowledged=stats["exit_0"], stored=0, lost=0, duplicated=0)
        s.note(
            exit_codes={k: v for k, v in stats.items() if k.startswith("exit_")},
            unexpected_errors=len(unexpected),
            unexpected_examples=sorted(set(unexpected))[:5],
            refused_writes_checked_unchanged=stats["refused_writes"],
        )
    assert stats["exit_2"] > 0


BAD_ARGVS = [
    ["get", "no-such-id"],
    ["--json", "search", ""],
    ["add", "x" * 40_000],
    ["add", "fact", "--metadata", "novalue"],
    ["search", "q", "--top-k", "51"],
    ["--backend", "nope", "list"],
    ["--tenant", "*", "list"],
    ["list", "--limit", "1e9"],
    ["import", "does-not-exist.jsonl"],
    ["config", "set", "top_k", "zero"],
    ["tasks", "get", "\u202e"],
]


def test_reliability_cli_installed_script_bad_arguments(tmp_path, subprocess_env):
    """The real console script, in its own process: still one line and no traceback."""
    import subprocess
    import sys
    from pathlib import Path

    script = Path(sys.executable).parent / "memcore"
    subprocess.run(
        [str(script), "list"],
        env=subprocess_env,
        cwd=tmp_path,
        capture_output=True,
        check=True,
        timeout=60,
    )
    for argv in BAD_ARGVS:
        proc = subprocess.run(
            [str(script), *argv],
            env=subprocess_env,
            cwd=tmp_path,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode in (2, 3, 4, 5), (argv, proc.returncode, proc.stderr)
        assert "Traceback" not in proc.stderr + proc.stdout
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        assert len(lines) == 1, (argv, lines)
