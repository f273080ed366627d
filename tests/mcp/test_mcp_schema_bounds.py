"""What ``list_tools`` advertises is what the tools take: each length and count bound a schema
names is accepted at the bound and refused one past it (the schemas named none of the limits
the service enforces, so a client that checks its arguments could not avoid a refusal)."""

from __future__ import annotations

from typing import Any

import anyio
from mcp_rig import Backend, payload


def _branch(schema: dict[str, Any], kind: str) -> dict[str, Any]:
    """The branch of a property's schema that takes ``kind`` (a nullable one has two)."""
    [branch] = [b for b in schema.get("anyOf", [schema]) if b.get("type") == kind]
    return branch


def test_each_advertised_bound_is_the_one_enforced(local_backend: Backend) -> None:
    async def main() -> None:
        async with local_backend.stdio("--tenant", "alice") as session:
            schemas = {
                t.name: t.input_schema["properties"] for t in (await session.list_tools()).tools
            }

            async def code(tool: str, arguments: dict[str, Any]) -> str | None:
                result = await session.call_tool(tool, arguments)
                return payload(result)["error"]["code"] if result.is_error else None

            text = _branch(schemas["remember"]["text"], "string")["maxLength"]
            assert await code("remember", {"text": "t" * text}) is None
            assert await code("remember", {"text": "t" * (text + 1)}) == "invalid_input"
            [memory_id] = payload(await session.call_tool("remember", {"text": "Tea, green"}))[
                "memory_ids"
            ]

            query = _branch(schemas["recall"]["query"], "string")["maxLength"]
            assert await code("recall", {"query": "q" * query}) is None
            assert await code("recall", {"query": "q" * (query + 1)}) == "invalid_input"

            longest = _branch(schemas["get_memory"]["memory_id"], "string")["maxLength"]
            assert await code("get_memory", {"memory_id": "a" * longest}) == "not_found"
            assert await code("get_memory", {"memory_id": "a" * (longest + 1)}) == "invalid_input"

            for tool in ("remember", "update_memory", "recall"):
                tags = _branch(schemas[tool]["metadata"], "object")
                keys, key, value = (
                    tags["maxProperties"],
                    tags["propertyNames"]["maxLength"],
                    tags["additionalProperties"]["maxLength"],
                )
                base = {"remember": {"text": "Tagged"}, "recall": {"query": "tea"}}.get(
                    tool, {"memory_id": memory_id}
                )
                at = [
                    {f"k{i}": "v" for i in range(keys)},
                    {"k" * key: "v"},
                    {"k": "v" * value},
                ]
                past = [
                    {f"k{i}": "v" for i in range(keys + 1)},
                    {"k" * (key + 1): "v"},
                    {"k": "v" * (value + 1)},
                ]
                for tags_at, tags_past in zip(at, past):
                    if tool == "update_memory":  # tags merge: start each case from none
                        assert await code(tool, {**base, "metadata": {}}) is None
                    assert await code(tool, {**base, "metadata": tags_at}) is None, tool
                    refused = await code(tool, {**base, "metadata": tags_past})
                    assert refused == "invalid_input", tool

            instructions = _branch(schemas["dream_propose"]["instructions"], "string")
            long = "i" * (instructions["maxLength"] + 1)
            assert await code("dream_propose", {"instructions": long}) == "invalid_input"

    anyio.run(main)
