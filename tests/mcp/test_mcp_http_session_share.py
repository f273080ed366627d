"""One tenant cannot take every session the HTTP server keeps: each tenant opens at most its
own share, so another tenant is still served while one has opened its whole share."""

from __future__ import annotations

import http.client
import json
from urllib.parse import urlsplit

from mcp_rig import INITIALIZE, Backend, token

from memcore_mcp.serve import SESSIONS_PER_TENANT


class Client:
    """Raw requests for one token on one kept-alive connection."""

    def __init__(self, url: str, secret: str) -> None:
        parts = urlsplit(url)
        self.path = parts.path
        self.connection = http.client.HTTPConnection(parts.hostname or "", parts.port, timeout=30)
        self.headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {secret}",
        }

    def send(self, method: str, body: dict | None = None, session: str | None = None) -> tuple:
        headers = dict(self.headers)
        if session is not None:
            headers["Mcp-Session-Id"] = session
            headers["Mcp-Protocol-Version"] = "2025-06-18"
        data = json.dumps(body) if body is not None else None
        self.connection.request(method, self.path, body=data, headers=headers)
        response = self.connection.getresponse()
        return response.status, response.getheader("mcp-session-id"), response.read()

    def open_session(self) -> tuple:
        return self.send("POST", INITIALIZE)


def test_a_tenant_that_opened_its_share_leaves_the_others_served(local_backend: Backend) -> None:
    alice, bob = token(), token()
    with local_backend.http({"alice": alice, "bob": bob}) as url:
        as_alice, as_bob = Client(url, alice), Client(url, bob)
        sessions = []
        for _ in range(SESSIONS_PER_TENANT):
            status, session, _ = as_alice.open_session()
            assert status == 200
            sessions.append(session)
        status, _, body = as_alice.open_session()
        assert status == 503, body
        assert json.loads(body)["error"]["message"] == "Too many open sessions"

        status, session, _ = as_bob.open_session()
        assert status == 200
        ping = {"jsonrpc": "2.0", "id": 2, "method": "ping"}
        assert as_bob.send("POST", ping, session)[0] == 200

        assert as_alice.send("DELETE", session=sessions[0])[0] == 200
        assert as_alice.open_session()[0] == 200  # a session closed frees its place
