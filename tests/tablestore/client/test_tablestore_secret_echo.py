"""An answer that quotes the request back (a gateway, a proxy, a verbose service) must not carry
the credentials into memcore's errors or their tracebacks."""

from __future__ import annotations

import json
import threading
import traceback
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from memcore.errors import MemcoreError, PermissionDenied
from memcore.scope import Scope
from memcore_tablestore.credentials import ApiKey, Credentials
from memcore_tablestore.stores.async_store import AsyncTableStoreMemoryStore
from memcore_tablestore.stores.sync_store import TableStoreMemoryStore

AK, SK, TOKEN = "LTAI5tEchoedKeyId01", "EchoedSecret0123456789", "EchoedStsToken-abcdef"
KEY = "echoed-api-key-0123456789"
A1 = Scope("app", "tenant_a", "agent1", "run1")


class _Echo(BaseHTTPRequestHandler):
    """Refuses every call with 403, quoting the request's headers and body in the message."""

    protocol_version = "HTTP/1.1"

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("content-length") or 0))
        quoted = {"headers": dict(self.headers.items()), "body": body.decode("utf-8", "replace")}
        payload = json.dumps({"code": "OTSAuthFailed", "message": f"refused {quoted}"}).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("x-ots-requestid", "echo-request")
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


@pytest.fixture
def echo() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Echo)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()


def _shown(error: MemcoreError) -> str:
    """Everything a host could print or log about the error."""
    return "".join(traceback.format_exception(error)) + repr(error) + json.dumps(error.to_dict())


@pytest.mark.parametrize(
    ("credentials", "secrets"),
    [(Credentials(AK, SK, TOKEN), (AK, SK, TOKEN)), (ApiKey(KEY), (KEY,))],
    ids=["access-key", "api-key"],
)
def test_a_refusal_quoting_the_request_does_not_carry_the_credentials(
    echo: str, credentials: Credentials | ApiKey, secrets: tuple[str, ...]
) -> None:
    store = TableStoreMemoryStore(echo, "inst", credentials, timeout=2.0, retry=False)
    with store, pytest.raises(PermissionDenied) as caught:
        store.get_memory("s", A1, "m1")
    shown = _shown(caught.value)
    assert "OTSAuthFailed" in shown and "403" in shown
    assert [s for s in secrets if s in shown] == []


def test_the_async_store_does_not_carry_them_either(echo: str) -> None:
    import asyncio

    async def run() -> MemcoreError:
        store = AsyncTableStoreMemoryStore(echo, "inst", Credentials(AK, SK, TOKEN), timeout=2.0)
        try:
            await store.add_text("s", A1, "hello")
        except MemcoreError as exc:
            return exc
        finally:
            await store.close()
        raise AssertionError("the refusal was not raised")

    shown = _shown(asyncio.run(run()))
    assert "OTSAuthFailed" in shown
    assert [s for s in (AK, SK, TOKEN) if s in shown] == []


def test_an_endpoints_user_and_password_are_never_sent_nor_quoted_back(echo: str) -> None:
    """TableStore signs with the keys, never with an endpoint's ``user:password@`` (a
    hand-written one loads): the sync client dropped it, but the async one sent it as a Basic
    ``Authorization`` header, which an answer quoting the request carried, in base64, into
    the error. Neither store sends it now."""
    import asyncio
    import base64

    endpoint = echo.replace("http://", "http://urlUser:UrlPasswordCanary@")
    basic = base64.b64encode(b"urlUser:UrlPasswordCanary").decode()

    async def run() -> MemcoreError:
        store = AsyncTableStoreMemoryStore(
            endpoint, "inst", Credentials(AK, SK, TOKEN), timeout=2.0
        )
        try:
            await store.add_text("s", A1, "hello")
        except MemcoreError as exc:
            return exc
        finally:
            await store.close()
        raise AssertionError("the refusal was not raised")

    errors = [asyncio.run(run())]
    store = TableStoreMemoryStore(endpoint, "inst", Credentials(AK, SK, TOKEN), timeout=2.0)
    with store, pytest.raises(PermissionDenied) as caught:
        store.get_memory("s", A1, "m1")
    errors.append(caught.value)
    for error in errors:
        shown = _shown(error)
        assert "OTSAuthFailed" in shown and "x-ots-signature" in shown.lower()
        assert "Authorization" not in shown and basic not in shown, shown
        assert "UrlPasswordCanary" not in shown and "urlUser" not in shown, shown
