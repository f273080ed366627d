"""The emulator answers every golden request with the golden shape, over real HTTP.

Requests are signed and sent by the unmodified ``tablestore`` SDK's raw JSON path
(``protocol.make_json_request`` + ``connection.send_receive``) and the raw body is read as it
came off the wire, so neither our client nor the SDK's ``requestId`` injection is involved.
The golden files are written by hand from the vendor's typed SDK (see golden/README.md).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from tablestore import OTSClient
from tablestore.auth import RequestContext

from memcore.testing import InMemoryMemoryStore
from memcore_tablestore.emulator import EmulatorServer
from memcore_tablestore.emulator.shapes import shape_mismatches

GOLDEN_DIR = Path(__file__).parent.parent.joinpath("golden")
GOLDEN = {p.stem: json.loads(p.read_text("utf-8")) for p in sorted(GOLDEN_DIR.glob("*.json"))}
#: Example ids in the golden requests -> the names of the ids the emulator hands out.
EXAMPLE_IDS = {
    "1b88d0d65a5b6c0d9142e9b7c7347048": "memory",
    "4b41a912f8c8a66202896e880a505d4a": "request",
    "2a528008111f5dc3500c73fd965089f7": "dream",
    "968768529cdfde8d56686a71e1c28227": "action",
}
S1 = {"appId": "app-001", "tenantId": "user-001", "agentId": "assistant", "runId": "session-001"}


class RawClient:
    """Signed JSON calls through the SDK's transport; answers are (status, raw JSON body)."""

    def __init__(self, server: EmulatorServer) -> None:
        identity = server.identity
        self.sdk = OTSClient(
            server.url, identity.access_key_id, identity.access_key_secret, server.instance_name
        )

    def call(self, api: str, body: dict[str, Any]) -> tuple[int, dict[str, Any], dict[str, str]]:
        context = RequestContext(self.sdk.credentials_provider.get_credentials())
        query, headers, payload = self.sdk.protocol.make_json_request(
            api, self.sdk._signer, body, context
        )
        status, _, reply_headers, reply = self.sdk.connection.send_receive(query, headers, payload)
        return status, json.loads(reply), dict(reply_headers)


def expand(value: Any) -> Any:
    """The ``@repeat...`` placeholders of golden/README.md, expanded."""
    if isinstance(value, dict):
        return {k: expand(v) for k, v in value.items()}
    if isinstance(value, list):
        return [expand(v) for v in value]
    if not isinstance(value, str) or not value.startswith("@repeat"):
        return value
    head, _, count = value.rpartition(":")
    n = int(count)
    if head.startswith("@repeat:"):
        return head[len("@repeat:") :] * n
    return {
        "@repeat-message": [{"role": "user", "content": f"message {i}"} for i in range(n)],
        "@repeat-map": {f"k{i}": "v" for i in range(n)},
        "@repeat-scope": [{"appId": "app-001", "tenantId": f"t{i}"} for i in range(n)],
        "@repeat-id": [f"id{i}" for i in range(n)],
    }[head]


def substitute(value: Any, ids: dict[str, str]) -> Any:
    if isinstance(value, dict):
        return {k: substitute(v, ids) for k, v in value.items()}
    if isinstance(value, list):
        return [substitute(v, ids) for v in value]
    if isinstance(value, str) and value in EXAMPLE_IDS and EXAMPLE_IDS[value] in ids:
        return ids[EXAMPLE_IDS[value]]
    return value


class Replay:
    """Runs every golden request (and error request) in an order that makes them meaningful."""

    def __init__(self, client: RawClient) -> None:
        self.client = client
        self.ids: dict[str, str] = {}
        self.answers: dict[str, list[tuple[int, dict[str, Any]]]] = {}
        self.errors: dict[tuple[str, int], tuple[int, dict[str, Any]]] = {}
        self.headers: dict[str, dict[str, str]] = {}

    def send(self, api: str, body: dict[str, Any]) -> dict[str, Any]:
        status, answer, headers = self.client.call(api, substitute(copy.deepcopy(body), self.ids))
        self.answers.setdefault(api, []).append((status, answer))
        self.headers.setdefault(api, headers)
        return answer

    def golden(self, api: str) -> dict[str, Any]:
        answer = self.send(api, GOLDEN[api]["request"])
        for extra in GOLDEN[api].get("requests", []):
            self.send(api, extra)
        return answer

    def golden_errors(self, api: str) -> None:
        for i, case in enumerate(GOLDEN[api]["errors"]):
            if "request" in case:
                body = substitute(expand(case["request"]), self.ids)
                status, answer, _ = self.client.call(api, body)
                self.errors[(api, i)] = (status, answer)

    def run(self) -> None:
        g = self.golden
        g("CreateMemoryStore")
        g("GetMemoryStore")
        g("UpdateMemoryStore")
        g("ListMemoryStores")
        added = g("AddMemories")
        self.ids["memory"], self.ids["request"] = added["memoryIds"][0], added["requestId"]
        g("SearchMemories")
        g("ListMemories")
        g("GetMemory")
        g("UpdateMemory")
        # A near-duplicate of the updated memory, so the dream has something to merge.
        duplicate = "the user writes scripts ONLY in python 3"
        self.send(
            "AddMemories", {"memoryStoreName": "agent_memory", "scope": S1, "text": duplicate}
        )
        g("ListMemoryStoreMessages")
        g("ListMemoryStoreRequests")
        g("ListMemoryStoreScopes")
        g("GetMemoryTask")
        g("ListMemoryTasks")
        skill = {"memoryStoreName": "agent_memory", "scopes": [S1], "taskType": "skill"}
        self.send("CreateMemoryDreamTask", skill)
        self.ids["dream"] = g("CreateMemoryDreamTask")["dreamId"]
        g("GetMemoryDreamTask")
        g("ListMemoryDreamTasks")
        self.ids["action"] = g("ListMemoryDreamActions")["actions"][0]["actionId"]
        g("ApplyMemoryDreamActions")
        g("CancelMemoryDreamTask")
        for api in GOLDEN:
            if api != "DeleteMemoryStore":
                self.golden_errors(api)
        g("DeleteMemory")
        g("DeleteMemoryStore")
        self.golden_errors("DeleteMemoryStore")


@pytest.fixture(scope="module")
def replay() -> Iterator[Replay]:
    with EmulatorServer(InMemoryMemoryStore()) as server:
        run = Replay(RawClient(server))
        run.run()
        yield run


def _nonempty_lists(expected: Any, actual: Any, path: str = "") -> list[str]:
    """Lists the golden answer fills must come back filled, or the item check proves nothing."""
    out: list[str] = []
    if isinstance(expected, dict) and isinstance(actual, dict):
        for key, value in expected.items():
            if key in actual:
                out += _nonempty_lists(value, actual[key], f"{path}.{key}")
    elif isinstance(expected, list) and isinstance(actual, list) and expected:
        if not actual:
            out.append(f"{path}: empty")
        elif isinstance(expected[0], (dict, list)):
            out += _nonempty_lists(expected[0], actual[0], f"{path}[]")
    return out


def test_there_is_one_golden_file_per_api() -> None:
    from memcore_tablestore.emulator.apis.handlers import TABLE

    assert len(GOLDEN) == 22
    assert set(GOLDEN) == set(TABLE)
    for name, golden in GOLDEN.items():
        assert golden["api"] == name
        assert golden["source"].startswith("memory.d.ts")


@pytest.mark.parametrize("api", sorted(GOLDEN))
def test_the_emulator_answers_the_golden_shape(replay: Replay, api: str) -> None:
    golden = GOLDEN[api]
    answers = replay.answers[api]
    assert answers, f"{api} was never called"
    for status, answer in answers:
        assert status == 200, (api, answer)
        problems = shape_mismatches(
            golden["response"],
            answer,
            optional=golden.get("optional", ()),
            maps=golden.get("maps", ()),
            nullable=golden.get("nullable", ()),
        )
        assert problems == [], (api, answer)
    # The golden request itself (the first call) must exercise every list of the shape.
    assert _nonempty_lists(golden["response"], answers[0][1]) == [], answers[0][1]


@pytest.mark.parametrize(
    "api,index",
    [
        (api, i)
        for api, golden in sorted(GOLDEN.items())
        for i, case in enumerate(golden["errors"])
        if "request" in case
    ],
)
def test_the_emulator_answers_the_golden_errors(replay: Replay, api: str, index: int) -> None:
    case = GOLDEN[api]["errors"][index]
    status, answer = replay.errors[(api, index)]
    assert (status, answer.get("code")) == (case["status"], case["body"]["code"]), answer
    assert isinstance(answer.get("message"), str) and answer["message"]


def test_the_add_request_id_is_the_header_request_id(replay: Replay) -> None:
    """SDK 6.4.8 overwrites the body's requestId with x-ots-requestid: they must agree."""
    (_, first), *_ = replay.answers["AddMemories"]
    assert replay.headers["AddMemories"]["x-ots-requestid"] == first["requestId"]
    task = replay.answers["GetMemoryTask"][0][1]["task"]
    assert task["requestId"] == first["requestId"]
    assert task["derivedUnitIds"] == first["memoryIds"]


def test_the_dream_flow_merges_the_near_duplicate(replay: Replay) -> None:
    actions = replay.answers["ListMemoryDreamActions"][0][1]["actions"]
    assert [a["action"] for a in actions] == ["MERGE"]
    assert len(actions[0]["sourceMemoryIds"]) == 2
    applied = replay.answers["ApplyMemoryDreamActions"][0][1]
    assert (applied["applied"], applied["failed"], applied["notFound"]) == (1, 0, 1)
    assert [r["status"] for r in applied["results"]] == ["applied", "not_found"]
    skills = replay.answers["ListMemoryDreamActions"][1][1]
    assert "dreamId" not in skills
    assert {a["action"] for a in skills["actions"]} == {"EMIT_SKILL"}
