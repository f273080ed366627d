"""Remember in one MCP session, recall by meaning in another: stdio and HTTP, both backends."""

from __future__ import annotations

import anyio
from mcp_rig import Backend, http_session, payload, token

FACTS = (
    "The user drinks green tea every morning",
    "The user's cat is called Miso",
    "The user works as a nurse at a hospital in Lyon",
)
#: Shares no word with the tea fact: only meaning can rank it first.
QUESTION = "favourite beverage"


async def _remember_all(session) -> list[str]:
    ids = []
    for fact in FACTS:
        answer = payload(await session.call_tool("remember", {"text": fact}))
        assert answer["memory_ids"], answer
        ids += answer["memory_ids"]
    return ids


async def _top_hit(session) -> str:
    answer = payload(await session.call_tool("recall", {"query": QUESTION, "top_k": 3}))
    return answer["results"][0]["text"]


def test_stdio_session_recalls_what_an_earlier_one_remembered(backend: Backend) -> None:
    async def main() -> None:
        async with backend.stdio("--tenant", "alice") as first:
            tools = {t.name for t in (await first.list_tools()).tools}
            assert {"remember", "recall", "list_memories", "get_memory"} <= tools
            assert {"update_memory", "forget", "dream_propose", "dream_apply"} <= tools
            await _remember_all(first)
        async with backend.stdio("--tenant", "alice") as second:
            assert await _top_hit(second) == FACTS[0]
            profile = await second.read_resource("memcore://profile")
            assert all(f in profile.contents[0].text for f in FACTS)
        async with backend.stdio("--tenant", "bob") as other:
            answer = payload(await other.call_tool("recall", {"query": QUESTION}))
            assert answer["results"] == []

    anyio.run(main)


def test_http_session_recalls_what_an_earlier_one_remembered(backend: Backend) -> None:
    alice = token()

    async def main(url: str) -> None:
        async with http_session(url, alice) as first:
            await _remember_all(first)
        async with http_session(url, alice) as second:
            assert await _top_hit(second) == FACTS[0]

    with backend.http({"alice": alice}) as url:
        anyio.run(main, url)


def test_memcore_tenant_variable_selects_the_stdio_tenant(local_backend: Backend) -> None:
    async def main() -> None:
        async with local_backend.stdio(env={"MEMCORE_TENANT": "carol"}) as session:
            payload(await session.call_tool("remember", {"text": FACTS[1]}))
        async with local_backend.stdio("--tenant", "carol") as session:
            listed = payload(await session.call_tool("list_memories", {}))
            assert [m["text"] for m in listed["memories"]] == [FACTS[1]]
            assert listed["memories"][0]["scope"]["tenant_id"] == "carol"

    anyio.run(main)
