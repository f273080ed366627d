"""``memcore mcp`` as a client sees it, through the MCP SDK's own client. Prints JSON.

On a local store of 1,000 memories (hybrid search when the semantic extra is installed):
the wall time from starting ``memcore mcp`` over stdio to the first tool answer (a
``list_memories``, which loads no model) and to the first ``recall`` (which does), median of
``--runs`` starts; then ``recall`` over streamable HTTP on 127.0.0.1, one session, ``--queries``
calls after a warm-up (p50/p95), beside the same searches in process (``Memory.search``).

    uv run python -m benchmarks mcp_server [--runs N] [--queries N]
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client

from benchmarks._sqlite_corpus import Corpus
from benchmarks._stats import summary_ms

SCRIPT = str(Path(sys.executable).with_name("memcore"))
TENANT = "bench"


def _seed(env: dict[str, str], root: Path, texts: list[str]) -> None:
    scope = {"app_id": "hermes", "tenant_id": TENANT, "agent_id": "mcp", "run_id": "__default__"}
    data = root / "memories.jsonl"
    data.write_text(
        "".join(json.dumps({"text": t, "scope": scope, "metadata": {}}) + "\n" for t in texts),
        encoding="utf-8",
    )
    subprocess.run(
        [SCRIPT, "--tenant", TENANT, "import", str(data)], env=env, check=True, capture_output=True
    )


async def _stdio_start(env: dict[str, str], query: str) -> tuple[float, float]:
    params = StdioServerParameters(command=SCRIPT, args=["--tenant", TENANT, "mcp"], env=env)
    started = time.perf_counter()
    with open(os.devnull, "w") as errlog:
        async with (
            stdio_client(params, errlog=errlog) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            result = await session.call_tool("list_memories", {"limit": 1})
            first = time.perf_counter() - started
            assert not result.is_error
            result = await session.call_tool("recall", {"query": query})
            recall = time.perf_counter() - started
            assert not result.is_error
    return first, recall


async def _http_recalls(url: str, token: str, queries: list[str], warm: int) -> list[float]:
    client = create_mcp_http_client(headers={"Authorization": f"Bearer {token}"})
    seconds: list[float] = []
    async with (
        client,
        streamable_http_client(url, http_client=client) as (read, write),
        ClientSession(read, write) as session,
    ):
        await session.initialize()
        for i, query in enumerate(queries):
            started = time.perf_counter()
            result = await session.call_tool("recall", {"query": query})
            elapsed = time.perf_counter() - started
            assert not result.is_error
            if i >= warm:
                seconds.append(elapsed)
    return seconds


def _in_process(home: Path, queries: list[str], warm: int) -> list[float]:
    """The same searches without the server: what the transport and the tool layer add."""
    from memcore import Memory
    from memcore.config import MemcoreConfig

    seconds: list[float] = []
    with Memory.open(
        config=MemcoreConfig(tenant_id=TENANT), agent_id="mcp", path=home / "memcore.db"
    ) as memory:
        for i, query in enumerate(queries):
            started = time.perf_counter()
            memory.search(query)
            if i >= warm:
                seconds.append(time.perf_counter() - started)
    return seconds


def _serve_http(env: dict[str, str], root: Path, token: str) -> tuple[subprocess.Popen[Any], str]:
    tokens = root / "tokens.json"
    tokens.write_text(json.dumps({TENANT: token}), encoding="utf-8")
    tokens.chmod(0o600)
    log = root / "http.log"
    proc = subprocess.Popen(
        [SCRIPT, "mcp", "--transport", "http", "--port", "0", "--tokens", str(tokens)],
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=log.open("w"),
    )
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:
        for line in log.read_text().splitlines():
            if line.startswith("memcore mcp: serving"):
                return proc, line.split(" on ", 1)[1].split()[0]
        if proc.poll() is not None:
            break
        time.sleep(0.05)
    proc.kill()
    raise SystemExit(f"the HTTP server did not start: {log.read_text()}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--queries", type=int, default=200)
    parser.add_argument("--memories", type=int, default=1000)
    args = parser.parse_args()
    corpus = Corpus()
    texts = corpus.texts(args.memories)
    queries = corpus.queries(texts, args.queries + 20)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(
            MEMCORE_HOME=str(root / "home"),
            MEMCORE_MODEL_CACHE=str(root / "models"),
            PYTHONPYCACHEPREFIX=str(root / "pycache"),
        )
        _seed(env, root, texts)
        anyio.run(_stdio_start, env, queries[0])  # writes the byte-code and model caches
        starts = [anyio.run(_stdio_start, env, queries[i]) for i in range(args.runs)]
        token = secrets.token_hex(24)
        proc, url = _serve_http(env, root, token)
        try:
            recalls = anyio.run(_http_recalls, url, token, queries, 20)
        finally:
            proc.terminate()
            proc.wait(timeout=30)
        os.environ["MEMCORE_MODEL_CACHE"] = env["MEMCORE_MODEL_CACHE"]
        direct = _in_process(root / "home", queries, 20)
    print(
        json.dumps(
            {
                "benchmark": "mcp_server",
                "memories": args.memories,
                "stdio_start_to_first_answer_s": round(statistics.median(s[0] for s in starts), 3),
                "stdio_start_to_first_recall_s": round(statistics.median(s[1] for s in starts), 3),
                "stdio_runs": args.runs,
                "http_recall": summary_ms(recalls),
                "in_process_search": summary_ms(direct),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
