"""``EmulatorServer``: the Memory Store wire protocol on 127.0.0.1, for offline development.

The unmodified ``OTSClient``/``AsyncOTSClient`` talk to it as to the cloud: signed
``POST /<ApiName>`` with a JSON body, answered with JSON and an ``x-ots-requestid`` header.
Requests carrying ``x-acs-action`` go to the control-plane twin. ``/__admin/faults`` reads
(GET) or replaces (POST) the :class:`Faults` while the server runs.
"""

from __future__ import annotations

import base64
import concurrent.futures
import datetime as _dt
import hashlib
import ipaddress
import json
import logging
import random
import socket
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import attrs

from memcore.errors import ConfigError, InvalidInput, MemcoreError
from memcore.ports import MemoryStore
from memcore_tablestore.emulator.apis.handlers import DATA_PLANE_APIS, TABLE
from memcore_tablestore.emulator.audit import audited
from memcore_tablestore.emulator.auth import (
    AuthError,
    Identity,
    response_authorization,
    verify,
)
from memcore_tablestore.emulator.context import Answer, Call, Handler, Service
from memcore_tablestore.emulator.faults import Faults
from memcore_tablestore.emulator.ledger import Ledger
from memcore_tablestore.emulator.service_errors import (
    INVALID_PARAMETER,
    ServiceError,
    from_memcore,
    initialising,
)

log = logging.getLogger(__name__)

#: Bodies larger than this are refused before they are parsed.
MAX_BODY_BYTES = 8 * 1024 * 1024
ADMIN_PREFIX = "/__admin/"


def _is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


@attrs.frozen
class _Signed:
    """A request whose signature checked out: its answer is signed back."""

    request_id: str
    api: str
    headers: Mapping[str, str]


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    # The default backlog of 5 makes concurrent clients wait for SYN retries.
    request_queue_size = 256

    def __init__(self, address: tuple[str, int], emulator: EmulatorServer) -> None:
        self.emulator = emulator
        self.open_sockets: set[socket.socket] = set()
        self.sockets_lock = threading.Lock()
        super().__init__(address, _Handler)

    def process_request(self, request: Any, client_address: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.add(request)
        super().process_request(request, client_address)

    def shutdown_request(self, request: Any) -> None:
        with self.sockets_lock:
            self.open_sockets.discard(request)
        super().shutdown_request(request)

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that hangs up (its own timeout) is routine, not a traceback on stderr."""
        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError)):
            log.debug("client %s went away: %s", client_address, type(exc).__name__)
            return
        log.warning("emulator request from %s failed", client_address, exc_info=True)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server_version = "memcore-emulator"
    sys_version = ""
    # Headers and body go out in two writes; without this, Nagle plus delayed ACKs add 40 ms.
    disable_nagle_algorithm = True
    server: _HTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: request lines may carry names the caller considers private."""

    def _serve(self) -> None:
        self.server.emulator._handle(self)

    do_POST = do_GET = do_PUT = do_DELETE = do_PATCH = _serve


class EmulatorServer:
    """A loopback Memory Store over ``store`` (any :class:`MemoryStore`).

    Clients must sign with ``access_key_id``/``access_key_secret`` for ``instance_name``
    (and send ``security_token`` when one is set), or send ``api_key`` in ``x-ots-apikey``
    when one is set. ``region`` pins SignV4 to that region.
    ``record_requests`` keeps the last 10,000 (api, body) pairs in :attr:`recorded`.
    ``ledger`` holds what the service keeps beyond the store's data (audit, tasks, dreams):
    hand the same one to a restarted server to keep them. A new store answers 409 CONFLICT
    on data-plane calls for ``faults.init_seconds`` (default 0).
    """

    def __init__(
        self,
        store: MemoryStore,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        access_key_id: str = "emu-ak",
        access_key_secret: str = "emu-sk",
        instance_name: str = "emulator",
        security_token: str | None = None,
        region: str | None = None,
        api_key: str | None = None,
        faults: Faults | None = None,
        envelope: bool = False,
        record_requests: bool = False,
        control_plane: Any = None,
        ledger: Ledger | None = None,
    ) -> None:
        if not _is_loopback(host):
            raise ConfigError("the emulator only listens on a loopback address", field="host")
        if isinstance(port, bool) or not isinstance(port, int) or not 0 <= port <= 65535:
            raise ConfigError("port must be from 0 to 65535", field="port")
        self.store = store
        self.host = host
        self._requested_port = port
        self.identity = Identity(
            access_key_id, access_key_secret, instance_name, security_token, region, api_key
        )
        self.envelope = envelope
        self.recorded: deque[tuple[str, dict[str, Any]]] = deque(maxlen=10_000)
        self._record = record_requests
        self._lock = threading.Lock()
        self._faults = faults or Faults()
        self._bursts = [self._faults.error_burst, self._faults.drop_burst]
        self._rng = random.Random(self._faults.seed)
        self._control_plane = control_plane
        self.ledger = ledger or Ledger()
        self.service = Service(
            store, self.ledger, instance_name, init_seconds=lambda: self._faults.init_seconds
        )
        # One worker: the backing store sees one call at a time, on one thread, whatever it is.
        self._executor: concurrent.futures.ThreadPoolExecutor | None = None
        self._server: _HTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ----------------------------------------------------------------------
    def start(self) -> EmulatorServer:
        if self._server is not None:
            return self
        self._executor = concurrent.futures.ThreadPoolExecutor(
            max_workers=1, thread_name_prefix="emulator-store"
        )
        self._server = _HTTPServer((self.host, self._requested_port), self)
        self._thread = threading.Thread(
            target=self._server.serve_forever,
            kwargs={"poll_interval": 0.05},
            name="emulator-http",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        server, self._server = self._server, None
        if server is None:
            return
        server.shutdown()
        with server.sockets_lock:
            sockets = list(server.open_sockets)
        for sock in sockets:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._executor is not None:
            self._executor.shutdown(wait=True)

    def __enter__(self) -> EmulatorServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        if self._server is None:
            raise ConfigError("the emulator is not running", field="port")
        return int(self._server.server_address[1])

    @property
    def url(self) -> str:
        return f"http://{self.host}:{self.port}"

    @property
    def instance_name(self) -> str:
        return self.identity.instance_name

    @property
    def control_plane(self) -> Any:
        """The control-plane twin, created on first use. The first instance it creates is the
        one this server's data plane serves, so a config bootstrapped here works here."""
        with self._lock:
            if self._control_plane is None:
                from memcore_tablestore.emulator.control_plane import ControlPlane

                self._control_plane = ControlPlane(instance_names=[self.instance_name])
                self._control_plane.dns_delay = self._faults.dns_delay_s
            return self._control_plane

    # -- faults -------------------------------------------------------------------------
    @property
    def faults(self) -> Faults:
        return self._faults

    def set_faults(self, faults: Faults) -> None:
        """Replace the faults; bursts restart from their new counts."""
        if not isinstance(faults, Faults):
            raise InvalidInput("faults must be a Faults", field="faults")
        with self._lock:
            self._faults = faults
            self._bursts = [faults.error_burst, faults.drop_burst]
            self._rng = random.Random(faults.seed)
            control = self._control_plane
        if control is not None and hasattr(control, "dns_delay"):
            control.dns_delay = faults.dns_delay_s

    def _draw(self, faults: Faults) -> tuple[bool, bool, bool]:
        """(drop, error, chaos) for one request, consuming bursts first."""
        with self._lock:
            drop = error = False
            if self._bursts[1] > 0:
                self._bursts[1] -= 1
                drop = True
            elif self._bursts[0] > 0:
                self._bursts[0] -= 1
                error = True
            else:
                drop = faults.drop_rate > 0 and self._rng.random() < faults.drop_rate
                error = (
                    not drop and faults.error_rate > 0 and self._rng.random() < faults.error_rate
                )
            chaos = faults.chaos and not (drop or error) and self._rng.random() < faults.chaos_rate
            return drop, error, chaos

    # -- request handling ---------------------------------------------------------------
    def _handle(self, http: _Handler) -> None:
        request_id = uuid.uuid4().hex
        headers = {k.lower(): v for k, v in http.headers.items()}
        try:
            length = int(headers.get("content-length") or 0)
        except ValueError:
            length = -1
        if not 0 <= length <= MAX_BODY_BYTES:
            http.close_connection = True
            self._send_error(
                http, request_id, 413, "OTSRequestBodyTooLarge", "request body too large or unsized"
            )
            return
        body = http.rfile.read(length) if length else b""
        path, _, query = http.path.partition("?")
        if "x-acs-action" in headers:
            self._control(http, path, query, body)
        elif path.startswith(ADMIN_PREFIX):
            self._admin(http, request_id, path, body)
        elif http.command != "POST":
            self._send_error(
                http, request_id, 405, "OTSMethodNotAllowed", "the data plane answers POST only"
            )
        else:
            self._data(http, request_id, path.lstrip("/"), headers, body)

    def _control(self, http: _Handler, path: str, query: str, body: bytes) -> None:
        try:
            control = self.control_plane
        except ImportError:
            self._send(
                http, 501, {"Content-Type": "application/json"}, b'{"Code":"NotImplemented"}'
            )
            return
        from memcore_tablestore.emulator.control_plane import LostAnswer, hang_up

        try:
            status, reply_headers, payload = control.handle(
                http.command, path, query, dict(http.headers.items()), body
            )
        except LostAnswer as lost:
            hang_up(http, lost.hold)
            return
        self._send(http, status, dict(reply_headers), payload)

    def _admin(self, http: _Handler, request_id: str, path: str, body: bytes) -> None:
        if path == ADMIN_PREFIX + "health":
            self._send_json(http, request_id, 200, {"status": "ok"})
            return
        if path != ADMIN_PREFIX + "faults":
            self._send_error(http, request_id, 404, "OTSObjectNotExist", "no such admin endpoint")
            return
        if http.command == "POST":
            try:
                data = json.loads(body or b"{}")
                if not isinstance(data, dict):
                    raise InvalidInput("faults must be a JSON object", field="faults")
                self.set_faults(Faults.from_dict(data))
            except (ValueError, MemcoreError) as exc:
                self._send_error(http, request_id, 400, INVALID_PARAMETER, str(exc))
                return
        self._send_json(http, request_id, 200, self.faults.to_dict())

    def _data(
        self, http: _Handler, request_id: str, api: str, headers: Mapping[str, str], body: bytes
    ) -> None:
        faults = self._faults
        affected = faults.applies_to(api)
        if affected and faults.latency_ms:
            time.sleep(faults.latency_ms / 1000.0)
        drop, error, chaos = self._draw(faults) if affected else (False, False, False)
        if drop and not faults.drop_after_apply:
            self._drop(http, request_id)
            return
        try:
            verify(api, headers, body, self.identity)
        except AuthError as exc:
            self._send_error(http, request_id, 403, "OTSAuthFailed", str(exc))
            return
        # An API-key request has no secret to sign the answer with.
        signed: str | _Signed = (
            request_id if "x-ots-apikey" in headers else _Signed(request_id, api, headers)
        )
        if error:
            self._send_error(
                http, signed, faults.error_status, faults.error_code, "injected failure"
            )
            return
        if chaos:
            self._chaos(http, request_id)
            return
        handler = TABLE.get(api)
        if handler is None:
            self._send_error(
                http, signed, 501, "OTSUnsupportOperation", f"unsupported API {api[:64]!r}"
            )
            return
        try:
            parsed = json.loads(body.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            self._send_error(http, signed, 400, INVALID_PARAMETER, "the body is not JSON")
            return
        if not isinstance(parsed, dict):
            self._send_error(http, signed, 400, INVALID_PARAMETER, "the body is not a JSON object")
            return
        if self._record:
            self.recorded.append((api, parsed))
        status, answer = self._dispatch(Call(api, parsed, request_id), handler)
        if drop:
            self._drop(http, request_id)
            return
        if status != 200:
            self._send_error(http, signed, status, answer["code"], answer["message"])
            return
        if self.envelope:
            answer = {"code": "OK", "data": answer, "message": "", "requestId": request_id}
        self._send_json(http, signed, 200, answer)

    def _dispatch(self, call: Call, handler: Handler) -> tuple[int, Answer]:
        started = time.perf_counter()
        name = call.body.get("memoryStoreName")
        assert self._executor is not None
        try:
            if (
                call.api in DATA_PLANE_APIS
                and isinstance(name, str)
                and self.ledger.initialising(name)
            ):
                raise initialising(name)
            status, answer = 200, self._executor.submit(handler, self.service, call).result()
        except ServiceError as exc:
            status, answer = exc.status, exc.body()
        except MemcoreError as exc:
            error = from_memcore(exc)
            status, answer = error.status, error.body()
        except Exception:
            if self._server is None:  # stopping: the backing store may be closed under us
                return 503, {"code": "SERVICE_UNAVAILABLE", "message": "the emulator is stopping"}
            log.exception("the backing store failed on %s", call.api)
            status, answer = 500, {"code": "OTSInternalServerError", "message": "internal error"}
        if isinstance(name, str):
            self._audit(call, name, status, answer, started)
        return status, answer

    def _store_exists(self, name: str) -> bool:
        assert self._executor is not None
        try:
            self._executor.submit(self.store.describe_store, name).result()
        except Exception:
            return False
        return True

    def _audit(self, call: Call, name: str, status: int, answer: Answer, started: float) -> None:
        """One MemoryStoreRequestRecord per data-plane call on an existing store."""
        if call.api not in DATA_PLANE_APIS or call.api == "ListMemoryStoreRequests":
            return
        if status != 200 and not self._store_exists(name):
            return
        self.ledger.record(name, audited(call, status, answer, started))

    # -- answers ------------------------------------------------------------------------
    def _headers(self, request_id: str, payload: bytes) -> dict[str, str]:
        return {
            "Content-Type": "application/json",
            # Lower-case on purpose: the SDK looks the request id up by this exact key.
            "x-ots-requestid": request_id,
            "x-ots-date": _dt.datetime.now(_dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.000Z"),
            "x-ots-contentmd5": base64.b64encode(hashlib.md5(payload).digest()).decode(),
            "x-ots-contenttype": "application/json",
        }

    def _send(
        self, http: _Handler, status: int, headers: Mapping[str, str], payload: bytes
    ) -> None:
        http.send_response(status)
        for key, value in headers.items():
            if key.lower() not in ("content-length", "connection", "transfer-encoding"):
                http.send_header(key, value)
        http.send_header("Content-Length", str(len(payload)))
        http.end_headers()
        http.wfile.write(payload)

    def _send_json(self, http: _Handler, request: str | _Signed, status: int, data: object) -> None:
        """``request``: the request id, or the verified request to sign the answer for."""
        payload = json.dumps(data, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
        signed = request if isinstance(request, _Signed) else None
        request_id = signed.request_id if signed is not None else str(request)
        headers = self._headers(request_id, payload)
        if signed is not None:
            headers["Authorization"] = response_authorization(
                signed.api, headers, signed.headers, self.identity
            )
        self._send(http, status, headers, payload)

    def _send_error(
        self, http: _Handler, request: str | _Signed, status: int, code: str, message: str
    ) -> None:
        request_id = request.request_id if isinstance(request, _Signed) else request
        body = {"code": code, "message": message, "requestId": request_id}
        self._send_json(http, request, status, body)

    def _drop(self, http: _Handler, request_id: str) -> None:
        """Start a response, send part of the body, then hang up."""
        payload = json.dumps({"memories": [{"id": "x" * 64, "text": "y" * 512}]}).encode()
        http.send_response(200)
        for key, value in self._headers(request_id, payload).items():
            http.send_header(key, value)
        http.send_header("Content-Length", str(len(payload)))
        http.end_headers()
        http.wfile.write(payload[: len(payload) // 3])
        http.wfile.flush()
        http.close_connection = True
        try:
            http.connection.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass

    def _chaos(self, http: _Handler, request_id: str) -> None:
        """Answer 200 with something that is not the protocol."""
        with self._lock:
            kind = self._rng.randrange(9)
        payloads: list[bytes] = [
            b"[1,2,3]",
            b'"just a string"',
            b"42",
            b"null",
            b'{"memories":[{"id":"x","te',
            json.dumps(
                {"memories": [{"id": i, "text": None, "scope": "everyone"} for i in range(15_000)]}
            ).encode(),
            json.dumps(
                {
                    "memory": {"id": 7, "text": ["x"], "scope": {"appId": "*"}},
                    "memories": "nope",
                    "taskId": 5,
                    "status": 7,
                    "memoryStore": [1],
                    "task": "t",
                    "memoryIds": {"a": 1},
                    "scopes": [{"appId": 1}],
                }
            ).encode(),
            b"\xff\xfe\x00{not utf-8}",
            b'{"code":"InternalFailure","data":null,"message":"envelope says no"}',
        ]
        payload = payloads[kind]
        self._send(http, 200, self._headers(request_id, payload), payload)
