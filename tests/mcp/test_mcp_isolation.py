"""Two bearer tokens, two tenants: the second cannot read, change or delete the first's
memories or dream tasks, and its ids answer exactly like ids that do not exist."""

from __future__ import annotations

import json
import uuid
from typing import Any

import anyio
from mcp_rig import Backend, http_session, payload, token

SECRET = "Alice's locker code is 4812"


def _as_missing(answer: dict, real_id: str, missing_id: str) -> dict:
    """The error with the id it names replaced, so two errors compare whole."""
    error = dict(answer["error"])
    error["message"] = error["message"].replace(real_id, "<id>").replace(missing_id, "<id>")
    return error


def test_a_second_token_cannot_reach_the_first_tenants_memories(backend: Backend) -> None:
    alice, bob = token(), token()
    missing = uuid.uuid4().hex

    async def main(url: str) -> None:
        async with http_session(url, alice) as a:
            written = payload(await a.call_tool("remember", {"text": SECRET}))
            memory_id = written["memory_ids"][0]
            payload(await a.call_tool("remember", {"text": SECRET + "."}))
            task = await a.call_tool("dream_propose", {})
            assert not task.is_error, payload(task)
            task_id = payload(task)["task_id"]

        async with http_session(url, bob) as b:
            found = payload(await b.call_tool("recall", {"query": "locker code"}))
            assert found["results"] == []
            listed = payload(await b.call_tool("list_memories", {"include_superseded": True}))
            assert listed["memories"] == []
            profile = await b.read_resource("memcore://profile")
            assert "4812" not in profile.contents[0].text

            calls = [
                ("get_memory", {}),
                ("update_memory", {"text": "Bob was here"}),
                ("forget", {}),
            ]
            for tool, extra in calls:
                theirs = await b.call_tool(tool, {"memory_id": memory_id, **extra})
                nobody = await b.call_tool(tool, {"memory_id": missing, **extra})
                assert theirs.is_error and nobody.is_error, tool
                assert payload(theirs)["error"]["code"] == "not_found", payload(theirs)
                assert _as_missing(payload(theirs), memory_id, missing) == _as_missing(
                    payload(nobody), memory_id, missing
                ), tool
            for tool, extra in (("dream_status", {}), ("dream_apply", {"action_ids": ["x"]})):
                theirs = await b.call_tool(tool, {"task_id": task_id, **extra})
                nobody = await b.call_tool(tool, {"task_id": missing, **extra})
                assert payload(theirs)["error"]["code"] == "not_found", payload(theirs)
                assert _as_missing(payload(theirs), task_id, missing) == _as_missing(
                    payload(nobody), task_id, missing
                ), tool

        async with http_session(url, alice) as a:
            kept = payload(await a.call_tool("get_memory", {"memory_id": memory_id}))
            assert kept["memory"]["text"] == SECRET
            status = payload(await a.call_tool("dream_status", {"task_id": task_id}))
            assert status["task_id"] == task_id

    with backend.http({"alice": alice, "bob": bob}) as url:
        anyio.run(main, url)
    log = backend.stderr.read_text(encoding="utf-8")
    assert alice not in log and bob not in log


async def _finished(session: Any, task: dict) -> dict:
    """The dream task's answer once it lists its actions (it has finished)."""
    for _ in range(100):
        if "actions" in task:
            return task
        await anyio.sleep(0.1)
        task = payload(await session.call_tool("dream_status", {"task_id": task["task_id"]}))
    raise AssertionError(task)


def test_a_second_token_cannot_apply_or_see_the_first_tenants_dream_actions(
    dream_backend: Backend,
) -> None:
    """Bob hands Alice's action ids to his own dream task and Alice's task id to every dream
    tool: each answer is the answer for an id that does not exist, and Alice's task and
    memories are as they were."""
    alice, bob = token(), token()
    missing = uuid.uuid4().hex

    async def main(url: str) -> None:
        async with http_session(url, alice) as a:
            for text in ("Alice likes green tea", "alice likes  GREEN tea"):
                payload(await a.call_tool("remember", {"text": text}))
            theirs = await _finished(a, payload(await a.call_tool("dream_propose", {})))
            action_ids = [x["id"] for x in theirs["actions"] if x["status"] == "proposed"]
            assert action_ids, theirs
            before = sorted(
                m["text"] for m in payload(await a.call_tool("list_memories", {}))["memories"]
            )

        async with http_session(url, bob) as b:
            for text in ("Bob owns a red bicycle", "bob owns a  RED bicycle"):
                payload(await b.call_tool("remember", {"text": text}))
            own = await _finished(b, payload(await b.call_tool("dream_propose", {})))
            assert not set(action_ids) & {x["id"] for x in own["actions"]}, own
            for action_id in action_ids:
                foreign = await b.call_tool(
                    "dream_apply", {"task_id": own["task_id"], "action_ids": [action_id]}
                )
                nobody = await b.call_tool(
                    "dream_apply", {"task_id": own["task_id"], "action_ids": [missing]}
                )
                seen = json.dumps(payload(foreign)).replace(action_id, "<id>")
                assert seen == json.dumps(payload(nobody)).replace(missing, "<id>"), seen
                assert "applied" not in seen, seen
            calls = [
                ("dream_status", {}),
                ("dream_apply", {"action_ids": action_ids}),
                ("dream_apply", {"action_ids": [missing]}),
            ]
            for tool, extra in calls:
                foreign = await b.call_tool(tool, {"task_id": theirs["task_id"], **extra})
                nobody = await b.call_tool(tool, {"task_id": missing, **extra})
                assert payload(foreign)["error"]["code"] == "not_found", payload(foreign)
                assert _as_missing(payload(foreign), theirs["task_id"], missing) == _as_missing(
                    payload(nobody), theirs["task_id"], missing
                ), tool

        async with http_session(url, alice) as a:
            after = payload(await a.call_tool("dream_status", {"task_id": theirs["task_id"]}))
            assert after["actions"] == theirs["actions"], after
            listed = payload(await a.call_tool("list_memories", {}))["memories"]
            assert sorted(m["text"] for m in listed) == before

    with dream_backend.http({"alice": alice, "bob": bob}) as url:
        anyio.run(main, url)


def test_a_tenant_with_no_memories_reads_its_own_dream_and_no_other_can(
    dream_backend: Backend,
) -> None:
    """A dream of a tenant with nothing to read expands to no scope (TableStore's Get then
    names none): the tenant that proposed it reads it; another tenant's answer for its id is
    the answer for an id that does not exist."""
    alice, bob = token(), token()
    missing = uuid.uuid4().hex

    async def main(url: str) -> None:
        async with http_session(url, bob) as b:  # the store holds memories, none of alice's
            payload(await b.call_tool("remember", {"text": "Bob owns a red bicycle"}))
        async with http_session(url, alice) as a:
            proposed = await a.call_tool("dream_propose", {})
            assert not proposed.is_error, payload(proposed)
            task = await _finished(a, payload(proposed))
            assert task["actions"] == [], task

        async with http_session(url, bob) as b:
            for tool, extra in (("dream_status", {}), ("dream_apply", {"action_ids": ["x"]})):
                foreign = await b.call_tool(tool, {"task_id": task["task_id"], **extra})
                nobody = await b.call_tool(tool, {"task_id": missing, **extra})
                assert payload(foreign)["error"]["code"] == "not_found", payload(foreign)
                assert _as_missing(payload(foreign), task["task_id"], missing) == _as_missing(
                    payload(nobody), task["task_id"], missing
                ), tool

    with dream_backend.http({"alice": alice, "bob": bob}) as url:
        anyio.run(main, url)


def test_concurrent_sessions_of_two_tenants_never_mix(local_backend: Backend) -> None:
    """The tenant is read from each request's own token: calls of two tenants interleaved on
    one server each land in, and read from, their own tenant only."""
    tokens = {"alice": token(), "bob": token()}

    async def user(url: str, name: str, seen: dict[str, list[str]]) -> None:
        async with http_session(url, tokens[name]) as session:
            async with anyio.create_task_group() as group:
                for i in range(6):
                    text = f"{name} note {i}"
                    group.start_soon(session.call_tool, "remember", {"text": text})
            listed = payload(await session.call_tool("list_memories", {"limit": 100}))
            seen[name] = sorted(m["text"] for m in listed["memories"])

    async def main(url: str) -> dict[str, list[str]]:
        seen: dict[str, list[str]] = {}
        async with anyio.create_task_group() as group:
            group.start_soon(user, url, "alice", seen)
            group.start_soon(user, url, "bob", seen)
        return seen

    with local_backend.http(tokens) as url:
        seen = anyio.run(main, url)
    for name in tokens:
        assert seen[name] == sorted(f"{name} note {i}" for i in range(6)), seen
