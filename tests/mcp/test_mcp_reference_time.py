"""``recall`` takes the question's time: time words in the query are read from it, a bad
value is the usual typed JSON error. Driven by the SDK's client over stdio."""

from __future__ import annotations

import json
from datetime import datetime, timezone
from pathlib import Path

import anyio
from mcp_rig import Backend, payload, run_memcore

QUESTION = "Where did I go hiking last month?"


def _at(year: int, month: int, day: int) -> float:
    return datetime(year, month, day, 12, tzinfo=timezone.utc).timestamp()


def seed_dated_hikes(backend: Backend, tmp_path: Path) -> None:
    """Two memories the search cannot tell apart but by date (March and April 2023), brought
    in by ``memcore import``, which keeps ``created_at``. Lexical search, so they tie."""
    (backend.home / "config.json").write_text(json.dumps({"embedder": "none"}), "utf-8")
    records = [
        ("I went hiking with Sam", "r1", _at(2023, 3, 12)),
        ("I went hiking with Ana", "r2", _at(2023, 4, 19)),
    ]
    lines = tmp_path / "hikes.jsonl"
    lines.write_text(
        "".join(
            json.dumps(
                {
                    "text": text,
                    "scope": {"app_id": "a", "tenant_id": "t", "agent_id": "x", "run_id": run},
                    "metadata": {},
                    "created_at": when,
                }
            )
            + "\n"
            for text, run, when in records
        ),
        "utf-8",
    )
    run_memcore(backend, "--tenant", "alice", "import", str(lines))


def test_recall_reads_time_words_from_the_reference_time(
    local_backend: Backend, tmp_path: Path
) -> None:
    seed_dated_hikes(local_backend, tmp_path)

    async def main() -> None:
        async with local_backend.stdio("--tenant", "alice") as session:
            tool = next(t for t in (await session.list_tools()).tools if t.name == "recall")
            assert "reference_time" in tool.input_schema["properties"]

            async def texts(asked: str) -> list[str]:
                answer = payload(
                    await session.call_tool("recall", {"query": QUESTION, "reference_time": asked})
                )
                return [r["text"] for r in answer["results"]][:2]

            # Asked on 22 April 2023, "last month" is March; on 20 May, April.
            assert await texts("2023-04-22T08:01:00Z") == [
                "I went hiking with Sam",
                "I went hiking with Ana",
            ]
            assert await texts("2023-05-20") == ["I went hiking with Ana", "I went hiking with Sam"]

    anyio.run(main)


def test_a_bad_reference_time_is_a_typed_json_error(local_backend: Backend) -> None:
    async def main() -> None:
        async with local_backend.stdio("--tenant", "alice") as session:
            for value in ("last Tuesday", "2023-02-30", "0001-01-01", 20230422):
                result = await session.call_tool(
                    "recall", {"query": "hiking", "reference_time": value}
                )
                assert result.is_error, value
                error = payload(result)["error"]
                assert (error["code"], error["field"]) == ("invalid_input", "reference_time")
                assert "Traceback" not in error["message"]

    anyio.run(main)


def test_each_recalled_memory_says_the_day_it_was_said(
    local_backend: Backend, tmp_path: Path
) -> None:
    """recall gave the model only seconds since 1970 (``created_at``, ``said_at``); each hit
    now also has the day the Hermes tool and recall block show (UTC)."""
    seed_dated_hikes(local_backend, tmp_path)

    async def main() -> None:
        async with local_backend.stdio("--tenant", "alice") as session:
            answer = payload(await session.call_tool("recall", {"query": "hiking with Sam"}))
            days = {r["text"]: r["date"] for r in answer["results"]}
            assert days == {
                "I went hiking with Sam": "2023-03-12",
                "I went hiking with Ana": "2023-04-19",
            }

    anyio.run(main)
