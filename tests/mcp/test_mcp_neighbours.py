"""``recall`` with ``neighbours``: each match carries the turns of its own conversation said
around it; a store that cannot (TableStore) answers the usual typed JSON error. Driven by the
SDK's client over stdio; the conversation is written by ``memcore add --messages-file``."""

from __future__ import annotations

import json
from pathlib import Path

import anyio
from mcp_rig import Backend, payload, run_memcore

TURNS = [
    ("user", "Which trail should we take on Saturday?"),
    ("assistant", "Take the ridge trail above Lake Bled, it is dry this week."),
    ("user", "I booked the mountain hut near Triglav for the night"),
    ("assistant", "Good: the hut serves dinner until eight."),
    ("user", "Remind me to pack the blue rain jacket."),
]


def seed_conversation(backend: Backend, tmp_path: Path) -> None:
    (backend.home / "config.json").write_text(json.dumps({"embedder": "none"}), "utf-8")
    turns = tmp_path / "turns.json"
    turns.write_text(json.dumps([{"role": r, "content": c} for r, c in TURNS]), "utf-8")
    run_memcore(backend, "--tenant", "alice", "add", "--sync", "--messages-file", str(turns))


def test_recall_returns_each_hits_neighbouring_turns(
    local_backend: Backend, tmp_path: Path
) -> None:
    seed_conversation(local_backend, tmp_path)

    async def main() -> None:
        async with local_backend.stdio("--tenant", "alice") as session:
            tool = next(t for t in (await session.list_tools()).tools if t.name == "recall")
            assert tool.input_schema["properties"]["neighbours"]["maximum"] == 5
            query = {"query": "mountain hut Triglav", "top_k": 1}
            plain = payload(await session.call_tool("recall", query))["results"][0]
            assert plain["text"] == TURNS[2][1] and "neighbours" not in plain

            hit = payload(await session.call_tool("recall", {**query, "neighbours": 1}))
            [result] = hit["results"]
            assert result["text"] == TURNS[2][1]
            around = result["neighbours"]
            assert [(t["role"], t["content"]) for t in around["before"]] == [TURNS[1]]
            assert [(t["role"], t["content"]) for t in around["after"]] == [TURNS[3]]

            two = payload(await session.call_tool("recall", {**query, "neighbours": 2}))
            around = two["results"][0]["neighbours"]
            assert [t["content"] for t in around["before"]] == [TURNS[0][1], TURNS[1][1]]
            assert [t["content"] for t in around["after"]] == [TURNS[3][1], TURNS[4][1]]

            for bad in (6, -1, "two"):
                result = await session.call_tool("recall", {**query, "neighbours": bad})
                assert result.is_error, bad
                error = payload(result)["error"]
                assert (error["code"], error["field"]) == ("invalid_input", "neighbours")

    anyio.run(main)


def test_neighbours_on_tablestore_are_a_typed_unsupported_error(
    tablestore_backend: Backend,
) -> None:
    async def main() -> None:
        async with tablestore_backend.stdio("--tenant", "alice") as session:
            payload(await session.call_tool("remember", {"text": "Alice hikes near Triglav"}))
            result = await session.call_tool("recall", {"query": "Triglav", "neighbours": 1})
            assert result.is_error
            error = payload(result)["error"]
            assert (error["code"], error["field"]) == ("unsupported", "neighbours")
            assert "Traceback" not in error["message"]
            # Without neighbours the same store answers as before.
            assert payload(await session.call_tool("recall", {"query": "Triglav"}))["results"]

    anyio.run(main)
