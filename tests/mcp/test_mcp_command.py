"""``memcore mcp`` refuses a bad setup (a bad ``--busy-timeout``, ``--port`` or ``--path``, an
HTTP option on stdio, among them) before it serves: one stderr line and exit 2."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from memcore_cli.app import app
from memcore_cli.wiring.state import Overrides

#: A usable token map, so that only the option under test is wrong.
TOKENS = {"MEMCORE_MCP_TOKENS": '{"alice": "0123456789abcdef0123456789abcdef"}'}
HTTP = ["mcp", "--transport", "http"]


@pytest.mark.parametrize(
    ("argv", "env", "message"),
    [
        (["mcp", "--transport", "sse"], {}, "--transport must be one of stdio, http"),
        (["--tenant", "", "mcp"], {}, "--tenant is empty"),
        (["--tenant", "*", "mcp"], {}, "--tenant may not be '*'"),
        (["mcp"], {"MEMCORE_TENANT": "  "}, "MEMCORE_TENANT is empty"),
        # The refusal named --tenant, which was not given.
        (["mcp"], {"MEMCORE_TENANT": "*"}, "MEMCORE_TENANT may not be '*'"),
        ([*HTTP, "--port", "0"], {"MEMCORE_TENANT": "*", **TOKENS}, "MEMCORE_TENANT may not be"),
        # A byte that is not UTF-8 served a tenant of its own, where --tenant refuses it.
        (["mcp"], {"MEMCORE_TENANT": "a\udcffb"}, "MEMCORE_TENANT is not valid UTF-8 (byte 0xff"),
        (["--run", "*", "mcp"], {}, "may not be '*'"),
        (["mcp", "--transport", "http"], {}, "serves nothing without tokens"),
        (["mcp", "--transport", "http"], {"MEMCORE_MCP_TOKENS": "{"}, "not valid JSON"),
        (["mcp", "--transport", "http"], {"MEMCORE_MCP_TOKENS": "[" * 100_000}, "not valid JSON"),
        (["mcp", "--transport", "http", "--port", "70000"], TOKENS, "from 0 to 65535, not 70000"),
        (["mcp", "--transport", "http", "--path", ""], TOKENS, "--path must start with '/'"),
        (["mcp", "--transport", "http", "--host", " "], TOKENS, "--host is empty"),
        (["mcp", "--busy-timeout", "-1"], {}, "--busy-timeout must be a number of seconds"),
        (["mcp", "--busy-timeout", "nan"], {}, "from 0 to 600, not nan"),
        (["mcp", "--busy-timeout", "inf"], {}, "from 0 to 600, not inf"),
        (["mcp", "--busy-timeout", "601"], {}, "from 0 to 600, not 601"),
        (["mcp", "--busy-timeout", "soon"], {}, "Invalid value for '--busy-timeout'"),
        # A port the socket cannot take was an "unexpected OverflowError" and exit 1.
        ([*HTTP, "--port", "65536"], TOKENS, "--port must be from 0 to 65535, not 65536"),
        ([*HTTP, "--port", "-1"], TOKENS, "--port must be from 0 to 65535, not -1"),
        # A path without its leading / said "serving" at a broken URL, then failed (exit 1).
        ([*HTTP, "--port", "0", "--path", "mcp"], TOKENS, "--path must start with '/'"),
        ([*HTTP, "--port", "0", "--path", ""], TOKENS, "--path must start with '/'"),
        # A token file in an unknown user's home was an "unexpected RuntimeError", exit 1.
        ([*HTTP, "--tokens", "~no-such-user-here/t.json"], {}, "'~no-such-user-here/t.json'"),
        (
            HTTP,
            {"MEMCORE_MCP_TOKENS_FILE": "~no-such-user-here/t.json"},
            "names a home folder this system does not know (key 'MEMCORE_MCP_TOKENS_FILE')",
        ),
        # An empty --tokens (an unset shell variable) fell back to the variables' map.
        ([*HTTP, "--tokens", ""], {"MEMCORE_MCP_TOKENS": "{"}, "--tokens is empty"),
        ([*HTTP, "--tokens", "  "], {"MEMCORE_MCP_TOKENS": "{"}, "--tokens is empty"),
        # The HTTP options were ignored on stdio, so a mistyped --transport served stdio anyway.
        (["mcp", "--tokens", "tokens.json"], TOKENS, "--tokens applies to --transport http only"),
        (["mcp", "--port", "8787"], {}, "--port applies to --transport http only"),
        (["mcp", "--transport", "stdio", "--host", "0.0.0.0"], {}, "--host applies to"),
        (["mcp", "--path", "/mcp", "--port", "1"], {}, "--port applies to"),
        (["mcp", "--path", "/mcp"], {}, "--path applies to --transport http only"),
        # --tenant was ignored over HTTP, which serves the tokens' tenants, without a word.
        (["--tenant", "mallory", *HTTP], TOKENS, "--tenant applies to --transport stdio only"),
        (
            ["--backend", "tablestore", "mcp", "--busy-timeout", "5"],
            {},
            "--busy-timeout applies to the local backend",
        ),
    ],
)
def test_a_bad_setup_is_one_line_and_exit_2(tmp_path, argv, env, message) -> None:
    environ = {"MEMCORE_HOME": str(tmp_path / "home"), **env}
    result = CliRunner().invoke(
        app, argv, env=environ, obj=Overrides(environ=environ), input="", catch_exceptions=False
    )
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.startswith("memcore: error: ") and result.stderr.count("\n") == 1
    assert message in result.stderr, result.stderr
    assert result.stdout == ""


def test_a_missing_server_package_names_an_install_that_works(tmp_path, monkeypatch) -> None:
    """memcore-mcp is not on the package index: the hint named `pip install memcore-mcp`,
    which finds nothing; it names the clone's package folder, as the README does."""
    import sys

    monkeypatch.setitem(sys.modules, "memcore_mcp.serve", None)  # as if not installed
    environ = {"MEMCORE_HOME": str(tmp_path / "home")}
    result = CliRunner().invoke(
        app, ["mcp"], env=environ, obj=Overrides(environ=environ), input="", catch_exceptions=False
    )
    assert result.exit_code == 2, (result.stdout, result.stderr)
    assert result.stderr.count("\n") == 1
    assert "pip install memcore-mcp" not in result.stderr
    assert "./packages/adapter-mcp" in result.stderr, result.stderr


def test_an_empty_tokens_option_is_refused_before_a_fallback_map_is_served(tmp_path) -> None:
    """``--tokens "$UNSET"`` served the tenants of ``MEMCORE_MCP_TOKENS_FILE`` (or
    ``MEMCORE_MCP_TOKENS``), which the command line had not asked for."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    tokens = tmp_path / "tokens.json"
    tokens.write_text('{"alice": "0123456789abcdef0123456789abcdef"}', encoding="utf-8")
    tokens.chmod(0o600)
    env = {
        **os.environ,
        "HOME": str(tmp_path),
        "MEMCORE_HOME": str(tmp_path / "home"),
        "MEMCORE_MCP_TOKENS_FILE": str(tokens),
    }
    argv = [*HTTP, "--host", "127.0.0.1", "--port", "0", "--tokens", ""]
    try:
        result = subprocess.run(
            [str(Path(sys.executable).with_name("memcore")), *argv],
            env=env,
            cwd=tmp_path,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"it served instead of refusing: {exc.stderr!r}")
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.splitlines()
    assert line.startswith("memcore: error: --tokens is empty"), line
    assert not (tmp_path / "home" / "memcore.db").exists()
