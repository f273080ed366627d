"""Nothing is served over HTTP without a valid bearer token; the server refuses to start
without a token map; tokens never reach the log."""

from __future__ import annotations

import http.client
import json
import subprocess
import urllib.error
import urllib.request
from urllib.parse import urlsplit

import anyio
import pytest
from mcp_rig import INITIALIZE, MEMCORE, Backend, http_session, payload, token


def _post(url: str, headers: dict[str, str], message: dict | None = None) -> int:
    return _exchange(url, headers, message)[0]


def _exchange(
    url: str, headers: dict[str, str], message: dict | None = None
) -> tuple[int, dict[str, str]]:
    request = urllib.request.Request(
        url,
        data=json.dumps(message or INITIALIZE).encode(),
        headers={
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            **headers,
        },
        method="POST",
    )
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            response.read()
            return int(response.status), dict(response.headers)
    except urllib.error.HTTPError as exc:
        return int(exc.code), dict(exc.headers)


def test_requests_without_a_valid_token_get_401(local_backend: Backend) -> None:
    alice = token()
    with local_backend.http({"alice": alice}) as url:
        assert _post(url, {}) == 401
        assert _post(url, {"Authorization": "Bearer " + token()}) == 401
        assert _post(url, {"Authorization": "Bearer " + alice[:-1]}) == 401
        assert _post(url, {"Authorization": "Basic " + alice}) == 401
        assert _post(url, {"Authorization": "Bearer " + alice}) == 200

        async def with_a_wrong_token() -> None:
            async with http_session(url, token()):
                pass  # pragma: no cover - initialize must fail

        with pytest.raises(BaseException):  # noqa: B017 - the SDK reports the 401 in a group
            anyio.run(with_a_wrong_token)

        async def with_the_right_one() -> None:
            async with http_session(url, alice) as session:
                listed = payload(await session.call_tool("list_memories", {}))
                assert listed["memories"] == []

        anyio.run(with_the_right_one)
    assert alice not in local_backend.stderr.read_text(encoding="utf-8")


def _post_with_authorizations(url: str, values: list[str]) -> tuple[int, bytes]:
    """A POST of ``initialize`` carrying one Authorization header per value, in that order."""
    parts = urlsplit(url)
    connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
    try:
        connection.putrequest("POST", parts.path)
        connection.putheader("Content-Type", "application/json")
        connection.putheader("Accept", "application/json, text/event-stream")
        for value in values:
            connection.putheader("Authorization", value)
        body = json.dumps(INITIALIZE).encode()
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_a_request_with_two_authorization_headers_is_refused(local_backend: Backend) -> None:
    """Which of two tokens a request acts for was the first header's, while a proxy in front
    may read the last: a request carrying two credentials is refused, whichever they are."""
    alice, bob = token(), token()
    with local_backend.http({"alice": alice, "bob": bob}) as url:
        for values in (
            [f"Bearer {alice}", f"Bearer {bob}"],
            [f"Bearer {alice}", f"Bearer {alice}"],
            [f"Bearer {alice}", "Bearer not-a-token"],
            ["Bearer not-a-token", f"Bearer {alice}"],
        ):
            status, body = _post_with_authorizations(url, values)
            assert status == 400, (status, body)
            assert json.loads(body)["error"] == "invalid_request", body
            assert alice.encode() not in body and bob.encode() not in body
        assert _post_with_authorizations(url, [f"Bearer {alice}"])[0] == 200


def test_one_tenants_session_id_is_refused_with_another_tenants_token(
    local_backend: Backend,
) -> None:
    alice, bob = token(), token()
    call = {
        "jsonrpc": "2.0",
        "id": 2,
        "method": "tools/call",
        "params": {"name": "list_memories", "arguments": {}},
    }
    initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    with local_backend.http({"alice": alice, "bob": bob}) as url:
        status, headers = _exchange(url, {"Authorization": "Bearer " + alice})
        assert status == 200
        session = {k.lower(): v for k, v in headers.items()}["mcp-session-id"]
        as_alice = {"Authorization": "Bearer " + alice, "Mcp-Session-Id": session}
        as_bob = {"Authorization": "Bearer " + bob, "Mcp-Session-Id": session}
        assert _post(url, as_alice, initialized) == 202
        assert _post(url, as_bob, call) == 404
        assert _post(url, {"Mcp-Session-Id": session}, call) == 401
        assert _post(url, as_alice, call) == 200


@pytest.mark.parametrize(
    ("tokens", "message"),
    [
        (None, "serves nothing without tokens"),
        ({"alice": "short"}, "at least 32 characters"),
        ({"alice": "x" * 40, "bob": "x" * 40}, "one token is given to two tenants"),
        ({"": "y" * 40}, "a tenant in the token map is empty"),
        ({"*": "z" * 40}, "may not be '*'"),
        ([], "must be a JSON object"),
    ],
)
def test_http_refuses_to_start_without_a_usable_token_map(
    local_backend: Backend, tokens: object, message: str
) -> None:
    argv = [MEMCORE, "mcp", "--transport", "http", "--port", "0"]
    if tokens is not None:
        path = local_backend.home / "tokens.json"
        path.write_text(json.dumps(tokens), encoding="utf-8")
        path.chmod(0o600)
        argv += ["--tokens", str(path)]
    done = subprocess.run(
        argv,
        env=local_backend.env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2, done
    assert done.stderr.count("\n") == 1 and message in done.stderr, done.stderr
    assert "x" * 40 not in done.stderr
    assert done.stdout == ""


def test_a_token_file_others_can_read_is_refused(local_backend: Backend) -> None:
    path = local_backend.home / "tokens.json"
    path.write_text(json.dumps({"alice": token()}), encoding="utf-8")
    path.chmod(0o644)
    done = subprocess.run(
        [MEMCORE, "mcp", "--transport", "http", "--port", "0", "--tokens", str(path)],
        env=local_backend.env,
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 2 and "chmod 600" in done.stderr, done
