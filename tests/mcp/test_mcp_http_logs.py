"""No value a client sent reaches the server's log lines, with ``--debug`` too: the SDK logged
a refused ``Host`` or ``Origin`` header word for word, and a session id sent with another
tenant's token, at WARNING (a header may carry a pasted token; raw text could forge lines)."""

from __future__ import annotations

from pathlib import Path

from mcp_rig import INITIALIZE, Backend, post, session_headers, token

MARK = "client-sent-marker-8c1f"


def test_refused_headers_and_sessions_are_logged_without_their_values(tmp_path: Path) -> None:
    backend = Backend("local", tmp_path / "home", {}, ["--debug"])
    alice, bob = token(), token()
    with backend.http({"alice": alice, "bob": bob}) as url:
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "Authorization": f"Bearer {alice}",
        }
        assert post(url, {**headers, "Host": f"{MARK}.example"}, INITIALIZE)[0] == 421
        origin = {**headers, "Origin": f"http://{MARK}-origin.example"}
        assert post(url, origin, INITIALIZE)[0] == 403
        theirs = session_headers(url, alice)
        session = theirs["Mcp-Session-Id"]
        ours = {**theirs, "Authorization": f"Bearer {bob}"}
        ping = {"jsonrpc": "2.0", "id": 5, "method": "ping"}
        assert post(url, ours, ping)[0] == 404
    said = backend.stderr.read_text(encoding="utf-8")
    assert "Invalid Host header" in said and "Invalid Origin header" in said, said
    assert "Rejecting request for session" in said, said
    assert MARK not in said and session not in said, said
