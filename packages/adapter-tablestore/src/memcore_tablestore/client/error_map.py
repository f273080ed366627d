"""Service and transport failures -> memcore errors, by HTTP status and error code only.

Each mapped failure also says whether the service *refused* the request (it was not applied,
so sending it again is safe even for a write) or the outcome is unknown (a timeout, a dropped
connection, a 500: the write may or may not have happened).
"""

from __future__ import annotations

import asyncio
import http.client
import json
import sys
from collections.abc import Sequence
from typing import Any

import attrs

from memcore.errors import (
    Conflict,
    InvalidInput,
    MemcoreError,
    NotFound,
    PermissionDenied,
    ProtocolError,
    Throttled,
    Unavailable,
    Unsupported,
)

#: Error codes that decide the class on their own, whatever the status.
CODE_ERRORS: dict[str, type[MemcoreError]] = {
    "INVALID_PARAMETER": InvalidInput,
    "OTSParameterInvalid": InvalidInput,
    "OTSAuthFailed": PermissionDenied,
    "OTSNoPermissionAccess": PermissionDenied,
    "CONFLICT": Conflict,
    "OTSObjectAlreadyExist": Conflict,
    "OTSServerBusy": Throttled,
    "OTSOperationThrottled": Throttled,
    "OTSQuotaExhausted": Throttled,
    # HTTP 403, yet throttling (the SDK's retry policy resends it for any API).
    "OTSNotEnoughCapacityUnit": Throttled,
    "OTSUnsupportOperation": Unsupported,
    "JsonDecodeError": ProtocolError,
    # The typed SDK's notes: 413 for content over the limit.
    "PAYLOAD_TOO_LARGE": InvalidInput,
}
STATUS_ERRORS: dict[int, type[MemcoreError]] = {
    400: InvalidInput,
    401: PermissionDenied,
    403: PermissionDenied,
    404: NotFound,
    409: Conflict,
    429: Throttled,
    501: Unsupported,
    503: Unavailable,
}
#: Answers that mean "refused before doing anything": safe to resend any request.
REFUSED_STATUSES = frozenset({409, 429})
#: The 503s that are refusals too: the Memory Store's documented ``SERVICE_UNAVAILABLE``
#: (its scope lookup was unavailable, before anything was done) and a gateway's answer
#: (no code, or a body that is no JSON). Others are not: ``OTSTimeout`` ("Operation
#: timeout") and ``OTSServerUnavailable`` may come after the write was applied, and the
#: vendor SDK's retry policy resends them for reads only. Taken for refusals, a landed
#: ``AddMemories`` was sent again (the turn stored twice) and a landed delete answered
#: "not found".
REFUSED_503_CODES = frozenset({"SERVICE_UNAVAILABLE", "JsonDecodeError", ""})
REFUSED_CODES = frozenset(
    {
        "CONFLICT",
        "OTSServerBusy",
        "OTSOperationThrottled",
        "OTSQuotaExhausted",
        "OTSNotEnoughCapacityUnit",
    }
)
#: 409s that are final answers, not a busy index: a store that already exists, and the typed
#: SDK's ``QUOTA_EXCEEDED`` (a scope's item quota) and ``READ_ONLY_STORE`` (a read-only
#: projection). Resending them cannot succeed.
FINAL_CODES = frozenset({"OTSObjectAlreadyExist", "QUOTA_EXCEEDED", "READ_ONLY_STORE"})


@attrs.frozen
class Failure(Exception):
    """One failed attempt: the memcore error to raise and whether resending is always safe."""

    error: MemcoreError
    refused: bool = False
    #: Nothing answered at all (refused connection, unknown host, connect timeout): retried only
    #: within the connect timeout, so a down endpoint is reported in seconds.
    unreachable: bool = False

    def __str__(self) -> str:
        return str(self.error)


#: Shorter values are not real keys or tokens (those have 16 characters and more); scrubbing
#: them would cut words such as "token" out of every message.
MIN_SECRET_CHARS = 8


def _hidden(secrets: Sequence[str]) -> list[str]:
    """The secrets worth hiding, longest first (so a key inside a longer one goes with it)."""
    return sorted((s for s in secrets if len(s) >= MIN_SECRET_CHARS), key=len, reverse=True)


def scrub(text: str, secrets: Sequence[str] = ()) -> str:
    """``text`` with every secret in ``secrets`` replaced by ``***``: an answer's message is the
    service's (or a gateway's) text, and some quote the request's headers back."""
    for secret in _hidden(secrets):
        text = text.replace(secret, "***")
    return text


def shows_secret(exc: BaseException, secrets: Sequence[str] = ()) -> bool:
    """Whether ``exc`` or an exception it was raised from carries any of ``secrets`` (a
    traceback prints them all)."""
    hidden = _hidden(secrets)
    seen: set[int] = set()
    current: BaseException | None = exc
    while hidden and current is not None and id(current) not in seen:
        seen.add(id(current))
        shown = f"{current}{current.args!r}"
        if any(secret in shown for secret in hidden):
            return True
        current = current.__cause__ or current.__context__
    return False


def error_for(
    status: int, code: str, message: str, *, api: str, secrets: Sequence[str] = ()
) -> Failure:
    """The memcore error for a service answer with ``status`` and ``code``; ``secrets`` are
    scrubbed from what the answer said."""
    cls = CODE_ERRORS.get(code) or STATUS_ERRORS.get(status)
    if code == "JsonDecodeError" and 400 <= status < 500 and status in STATUS_ERRORS:
        # A gateway's HTML 401/403/404 says what happened by its status: read as a garbled
        # answer it was retried for the whole timeout and ended as "unavailable" (exit 5).
        cls = STATUS_ERRORS[status]
    if cls is None:
        cls = Unavailable if status >= 500 else InvalidInput
    said = scrub(f"{code}: {message}", secrets)
    text = f"{api} failed: HTTP {status} {said}".strip()[:600]
    retryable = False if code in FINAL_CODES else None
    error = cls(text, field=None, retryable=retryable)
    refused = (
        status in REFUSED_STATUSES
        or code in REFUSED_CODES
        or (status == 503 and code in REFUSED_503_CODES)
    )
    return Failure(error, refused=refused and code not in FINAL_CODES)


def failure_from_exception(
    exc: BaseException, *, api: str, endpoint: str = "", secrets: Sequence[str] = ()
) -> Failure:
    """Classify anything the SDK call raised; unknown exceptions are not swallowed.

    A failure to connect names ``endpoint``, without any credentials written into it:
    ``cannot reach https://...: connection refused``. ``secrets`` never reach the error's text.
    """
    from tablestore.error import OTSClientError, OTSServiceError

    vendor = vendor_errors()
    if vendor is not None and isinstance(exc, vendor.OTSClientError):
        # The vendor client wraps what urllib3 raised, and a 2xx body it could not parse.
        cause = exc.__cause__
        if isinstance(cause, (UnicodeDecodeError, json.JSONDecodeError)):
            return Failure(ProtocolError(f"{api}: the service answered with an unreadable body"))
        if cause is not None:
            return failure_from_exception(cause, api=api, endpoint=endpoint, secrets=secrets)
    if isinstance(exc, OTSServiceError) or (
        vendor is not None and isinstance(exc, vendor.OTSServiceError)
    ):
        status = exc.get_http_status() if isinstance(exc.get_http_status(), int) else 0
        code = exc.get_error_code() if isinstance(exc.get_error_code(), str) else ""
        message = exc.get_error_message() if isinstance(exc.get_error_message(), str) else ""
        return error_for(status, code, message, api=api, secrets=secrets)
    if isinstance(exc, OTSClientError) or (
        vendor is not None and isinstance(exc, vendor.OTSClientError)
    ):
        # Raised before anything is sent (the request could not be encoded) or on a local
        # protocol check; either way the request was not applied.
        said = scrub(str(exc.get_error_message()), secrets)
        return Failure(InvalidInput(f"{api} could not be sent: {said}"[:600]), refused=True)
    connect = _connect_failure(exc)
    if connect is not None:
        from memcore.config import without_userinfo

        where = without_userinfo(endpoint) or "the service"  # never the URL's credentials
        return Failure(
            Unavailable(f"cannot reach {where}: {connect} ({api})"), refused=True, unreachable=True
        )
    if isinstance(exc, (UnicodeDecodeError, json.JSONDecodeError)):
        return Failure(ProtocolError(f"{api}: the service answered with undecodable bytes"))
    if isinstance(exc, (TypeError, AttributeError, ValueError)):
        # The SDK indexes the decoded body as a dict; a JSON array, string or number lands here.
        return Failure(ProtocolError(f"{api}: the service answered with a non-object JSON body"))
    if isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or _is_read_timeout(exc):
        return Failure(Unavailable(f"{api}: the service did not answer in time"))
    if _is_transport_error(exc):
        return Failure(Unavailable(f"{api}: the connection failed ({type(exc).__name__})"))
    raise exc


def vendor_errors() -> Any:
    """The ``tablestore-agent-storage`` errors module when an API-key store loaded it, else None:
    nothing else raises its errors, and importing it (with ``oss2``) costs about 0.4 s."""
    return sys.modules.get("tablestore_agent_storage.errors")


def connect_failure_in(exc: BaseException) -> str | None:
    """Why nothing answered, when a connect failure is anywhere in ``exc``'s chain (another
    SDK's wrappers around what urllib3 raised): "connection refused", "host name not found",
    "connect timed out"; None when the service was reached."""
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        why = _connect_failure(cause)
        if why is not None:
            return why
        cause = cause.__cause__ or cause.__context__
    return None


def _connect_failure(exc: BaseException) -> str | None:
    """Why the service could not be reached at all (nothing was sent, nothing applied)."""
    import urllib3.exceptions as u3

    if isinstance(exc, u3.MaxRetryError):
        reason = exc.reason
        if isinstance(
            reason, (u3.NewConnectionError, u3.ConnectTimeoutError, u3.NameResolutionError)
        ):
            return _why(reason)
        return None
    if isinstance(exc, (u3.NewConnectionError, u3.ConnectTimeoutError)):
        return _why(exc)
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    try:
        import aiohttp
    except ImportError:  # pragma: no cover - aiohttp comes with the SDK
        return None
    if isinstance(exc, aiohttp.ClientConnectorError):
        return _why(exc.os_error) if exc.os_error is not None else "cannot connect"
    return None


def _why(exc: BaseException) -> str:
    """Connect failures in words (the OS error underneath, when there is one)."""
    import socket

    import urllib3.exceptions as u3

    if isinstance(exc, (u3.NameResolutionError, socket.gaierror)):
        return "host name not found"
    timed_out = isinstance(exc, (TimeoutError, asyncio.TimeoutError)) or (
        # urllib3's NewConnectionError is a ConnectTimeoutError too: look underneath first
        isinstance(exc, u3.ConnectTimeoutError) and not isinstance(exc, u3.NewConnectionError)
    )
    if timed_out:
        return "connect timed out"
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, ConnectionRefusedError):
            return "connection refused"
        if isinstance(cause, socket.gaierror):
            return "host name not found"
        if isinstance(cause, OSError) and cause.strerror:
            return cause.strerror.lower()
        cause = cause.__cause__ or cause.__context__
    text = str(exc).lower()
    if "refused" in text:
        return "connection refused"
    return type(exc).__name__


def _is_read_timeout(exc: BaseException) -> bool:
    import urllib3.exceptions as u3

    if isinstance(exc, u3.MaxRetryError):
        return isinstance(exc.reason, u3.ReadTimeoutError)
    return isinstance(exc, (u3.ReadTimeoutError, u3.TimeoutError))


def _is_transport_error(exc: BaseException) -> bool:
    import urllib3.exceptions as u3

    if isinstance(exc, (u3.HTTPError, http.client.HTTPException, OSError)):
        return True
    try:
        import aiohttp
    except ImportError:  # pragma: no cover
        return False
    return isinstance(exc, aiohttp.ClientError)


#: The reverse direction, for the emulator: memcore error -> (status, service code).
ERROR_STATUS: tuple[tuple[type[MemcoreError], int, str], ...] = (
    (InvalidInput, 400, "OTSParameterInvalid"),
    (PermissionDenied, 403, "OTSNoPermissionAccess"),
    (NotFound, 404, "OTSObjectNotExist"),
    (Conflict, 409, "CONFLICT"),
    (Throttled, 429, "OTSOperationThrottled"),
    (Unsupported, 501, "OTSUnsupportOperation"),
    # The Memory Store's documented code: the emulator's Unavailable is a refusal.
    (Unavailable, 503, "SERVICE_UNAVAILABLE"),
)


def status_for(error: MemcoreError) -> tuple[int, str]:
    """How the service would report ``error``."""
    if isinstance(error, Conflict) and not error.retryable:
        return 409, "OTSObjectAlreadyExist"
    for cls, status, code in ERROR_STATUS:
        if isinstance(error, cls):
            return status, code
    return 500, "OTSInternalServerError"
