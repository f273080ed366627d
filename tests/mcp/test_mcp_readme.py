"""The README's token-map steps, run as written in a new user's home, give a file the
server accepts: the folder they write into did not exist there, so `cat >` failed."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

from memcore_mcp.tokens import load_tokens

README = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")


@pytest.mark.skipif(shutil.which("openssl") is None, reason="the steps call openssl")
def test_the_token_map_steps_work_in_a_fresh_home(tmp_path: Path) -> None:
    [block] = [b for b in re.findall(r"```bash\n(.*?)```", README, re.S) if "mcp-tokens.json" in b]
    steps = "\n".join(ln for ln in block.splitlines() if not ln.startswith("memcore mcp"))
    home = tmp_path / "home"
    home.mkdir()
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "/usr/bin:/bin")}
    done = subprocess.run(
        ["bash", "-e", "-c", steps], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 0, done.stderr
    path = home / ".config" / "memcore" / "mcp-tokens.json"
    assert path.stat().st_mode & 0o777 == 0o600
    tokens = load_tokens(str(path), {})
    assert tokens is not None and tokens.tenants == {"alice", "bob"}
    assert len(tokens.entries) == 3


def _documented_signatures(start: str, end: str) -> dict[str, list[tuple[str, bool]]]:
    """Each ``name(arg, arg?)`` of the README paragraph from ``start`` to ``end``: its
    arguments in order, with whether each is marked optional."""
    paragraph = README[README.index(start) :]
    paragraph = paragraph[: paragraph.index(end)]
    return {
        name: [(a.strip().rstrip("?"), a.strip().endswith("?")) for a in args.split(",") if a]
        for name, args in re.findall(r"`(\w+)\(([^)]*)\)`", paragraph)
    }


def test_the_readme_gives_every_tool_with_its_arguments() -> None:
    """The README's list of tools is the server's: every tool, every argument in order, and
    which may be left out, so a tool or argument added or renamed shows in the docs too."""
    import inspect

    from memcore_mcp.tools import MemoryTools

    served: dict[str, list[tuple[str, bool]]] = {}

    def add_tool(fn, *, name, **_):  # type: ignore[no-untyped-def]
        served[name] = [
            (p.name, p.default is not inspect.Parameter.empty)
            for p in inspect.signature(fn).parameters.values()
        ]

    MemoryTools.__new__(MemoryTools).register(add_tool)
    assert served, "no tool registered"
    assert _documented_signatures("Tools, for the model:", "the resource `memcore://") == served


def test_the_readme_gives_the_profile_resource_its_limit() -> None:
    """The profile holds one page of memories, not all of them: the README says how many."""
    from memcore_mcp.tools import PROFILE_LIMIT

    paragraph = README[README.index("the resource `memcore://profile`") :].split(". ", 1)[0]
    assert f"at most {PROFILE_LIMIT}" in " ".join(paragraph.split())
