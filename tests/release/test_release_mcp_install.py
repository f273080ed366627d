"""The README's `pip install` line for the MCP server gives a `memcore mcp` that an MCP client
starts by name, as the Claude Code and Cursor examples do: the CLI's line alone leaves it out
(`memcore mcp` then exits 2 saying what to install)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

pytestmark = pytest.mark.slow

# Each before the package that needs it: the MCP server needs the CLI and both stores.
MCP_INSTALL = (
    "./packages/memcore",
    "./packages/adapter-sqlite[semantic]",
    "./packages/adapter-tablestore",
    "./packages/adapter-cli",
    "./packages/adapter-mcp",
)


def test_release_mcp_install_line_is_in_the_readme(repo_root: Path) -> None:
    lines = [
        ln
        for ln in (repo_root / "README.md").read_text(encoding="utf-8").splitlines()
        if ln.startswith("pip install ") and "./packages/adapter-mcp" in ln
    ]
    assert [tuple(shlex.split(ln)[2:]) for ln in lines] == [MCP_INSTALL], lines


@pytest.fixture(scope="module")
def mcp_venv(tmp_path_factory: pytest.TempPathFactory, new_venv: Callable[..., Any]) -> Any:
    venv = new_venv(tmp_path_factory.mktemp("mcp") / "venv")
    venv.uv_pip_install(*MCP_INSTALL, pip_semantics=True, timeout=300)
    return venv


def test_release_mcp_install_serves_memcore_mcp_by_name(mcp_venv: Any, tmp_path: Path) -> None:
    env = mcp_venv.env(MEMCORE_HOME=str(tmp_path / "home"), MEMCORE_TENANT="alice")
    params = StdioServerParameters(command="memcore", args=["mcp"], env=env)

    async def main() -> tuple[list[str], str]:
        with (tmp_path / "server-stderr.log").open("w", encoding="utf-8") as errlog:
            async with (
                stdio_client(params, errlog=errlog) as (read, write),
                ClientSession(read, write) as session,
            ):
                await session.initialize()
                tools = [tool.name for tool in (await session.list_tools()).tools]
                await session.call_tool("remember", {"text": "Alice drinks oat milk"})
                found = await session.call_tool("recall", {"query": "oat milk"})
                return tools, found.content[0].text

    tools, found = anyio.run(main)
    assert {"remember", "recall", "forget"} <= set(tools), tools
    assert "Alice drinks oat milk" in found, found
