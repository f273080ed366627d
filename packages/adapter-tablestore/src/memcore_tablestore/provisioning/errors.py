"""Control-plane failures as memcore errors, classified by HTTP status and error code.

The service's own code, its ``Recommend`` advice and the request id travel with the error, so
a user can act on it (or quote it to support) without reading a stack trace.
"""

from __future__ import annotations

from collections.abc import Iterable

from memcore.errors import (
    Conflict,
    InvalidInput,
    MemcoreError,
    NotFound,
    PermissionDenied,
    Throttled,
    Unavailable,
)

#: Codes that mean "these credentials may not do this", whatever HTTP status carries them
#: (the OpenAPI gateway answers 400 for a bad signature and 404 for an unknown key id).
AUTH_CODES = frozenset(
    {
        "IncompleteSignature",
        "InvalidAccessKeyId",
        "InvalidAccessKeyId.Inactive",
        "InvalidAccessKeyId.NotFound",
        "InvalidSecurityToken.Expired",
        "InvalidSecurityToken.Malformed",
        "InvalidSecurityToken.MismatchWithAccessKey",
        "MissingAuthorization",
        "SignatureDoesNotMatch",
        "SignatureNonceUsed",
        "Forbidden",
        "Forbidden.AccessDenied",
        "Forbidden.RAM",
        "NoPermission",
        "OTSAuthFailed",
        "OTSNoPermissionAccess",
        "Unauthorized",
    }
)
THROTTLE_CODES = frozenset(
    {
        "Throttling",
        "Throttling.Api",
        "Throttling.User",
        "Throttling.Resource",
        "ServiceUnavailable",
        "OTSServerBusy",
        "OTSOperationThrottled",
    }
)
CONFLICT_CODES = frozenset(
    {"OTSObjectAlreadyExist", "InstanceAlreadyExist", "InvalidInstanceName.Duplicate"}
)
NOT_FOUND_CODES = frozenset(
    {"InvalidInstanceName.NotFound", "OTSObjectNotExist", "InstanceNotFound"}
)


class ControlPlaneError(MemcoreError):
    """A failed control-plane call; mixed into the memcore error that says what kind it is."""

    def __init__(
        self,
        message: str,
        *,
        action: str,
        service_code: str | None = None,
        status: int | None = None,
        recommend: str | None = None,
        request_id: str | None = None,
        field: str | None = None,
    ) -> None:
        super().__init__(message, field=field)
        self.action = action
        self.service_code = service_code
        self.status = status
        self.recommend = recommend
        self.request_id = request_id

    def to_dict(self) -> dict[str, object]:
        out = super().to_dict()
        out["action"] = self.action
        for key in ("service_code", "status", "recommend", "request_id"):
            value = getattr(self, key)
            if value is not None:
                out[key] = value
        return out


class ControlPlaneDenied(ControlPlaneError, PermissionDenied):
    """The credentials were refused or lack a permission."""


class ControlPlaneInvalid(ControlPlaneError, InvalidInput):
    """The control plane refused a parameter."""


class ControlPlaneNotFound(ControlPlaneError, NotFound):
    """The instance does not exist (in this region)."""


class ControlPlaneConflict(ControlPlaneError, Conflict):
    """The instance already exists or is busy."""


class InstanceUnusable(ControlPlaneError, Conflict):
    """The instance exists but its status (``forbidden``, ``Deleting``) rules out using it."""

    retryable = False


class ControlPlaneThrottled(ControlPlaneError, Throttled):
    """The control plane asked us to slow down."""


class ControlPlaneUnavailable(ControlPlaneError, Unavailable):
    """The control plane failed or could not be reached."""


class ControlPlaneUnreachable(ControlPlaneUnavailable):
    """Nothing answered at the control endpoint (a refused connection, a host name that does
    not resolve, a connect timeout): nothing was sent, so nothing was bought. Not a busy
    service: tried again for a few seconds only."""

    def __init__(self, message: str, *, action: str, endpoint: str, reason: str) -> None:
        super().__init__(message, action=action)
        self.endpoint = endpoint
        self.reason = reason


def classify(
    status: int | None, code: str | None, *, throttled: bool = False
) -> type[ControlPlaneError]:
    """Pick the error class from the error code first, then the HTTP status."""
    if code in AUTH_CODES:
        return ControlPlaneDenied
    if throttled or code in THROTTLE_CODES:
        return ControlPlaneThrottled
    if code in CONFLICT_CODES:
        return ControlPlaneConflict
    if code in NOT_FOUND_CODES:
        return ControlPlaneNotFound
    if code is not None and code.startswith(("InvalidParameter", "Missing")):
        return ControlPlaneInvalid
    if status in (401, 403):
        return ControlPlaneDenied
    if status == 404:
        return ControlPlaneNotFound
    if status == 409:
        return ControlPlaneConflict
    if status == 429:
        return ControlPlaneThrottled
    if status is not None and 400 <= status < 500:
        return ControlPlaneInvalid
    return ControlPlaneUnavailable


def redact(text: str, secrets: Iterable[str | None]) -> str:
    """Remove every secret value from ``text`` (messages may echo request details)."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "***")
    return text


def from_sdk_error(
    exc: BaseException, *, action: str, endpoint: str, secrets: Iterable[str | None] = ()
) -> MemcoreError:
    """Map an exception raised by the control-plane SDK into a memcore error."""
    from alibabacloud_credentials.exceptions import CredentialException
    from alibabacloud_tea_openapi.exceptions import AlibabaCloudException, ThrottlingException
    from darabonba.exceptions import (
        RequiredArgumentException,
        RetryError,
        UnretryableException,
        ValidateException,
    )

    hidden = list(secrets)
    if isinstance(exc, AlibabaCloudException):
        data = exc.data if isinstance(exc.data, dict) else {}
        code = _text(data.get("Code")) or _text(exc.code)
        service_message = _text(data.get("Message")) or "no message"
        recommend = _text(data.get("Recommend"))
        request_id = _text(data.get("RequestId")) or _text(exc.request_id)
        status = exc.status_code if isinstance(exc.status_code, int) else None
        kind = classify(status, code, throttled=isinstance(exc, ThrottlingException))
        parts = [f"{action} failed: {code or 'unknown error'} (HTTP {status}): {service_message}"]
        if recommend:
            parts.append(f"Recommend: {recommend}")
        if request_id:
            parts.append(f"RequestId: {request_id}")
        # Every field the answer fills may quote the signed request (a gateway that echoes
        # it), not only its message.
        shown_code = redact(code, hidden) if code else None
        return kind(
            redact(". ".join(parts), hidden),
            action=action,
            service_code=shown_code,
            status=status,
            recommend=redact(recommend, hidden) if recommend else None,
            request_id=redact(request_id, hidden) if request_id else None,
            field=_parameter(shown_code),
        )
    inner = getattr(exc, "inner_exception", None) if isinstance(exc, UnretryableException) else None
    if isinstance(exc, CredentialException) or isinstance(inner, CredentialException):
        return ControlPlaneDenied(
            f"{action} failed: no usable Alibaba Cloud credentials were found "
            "(set TABLESTORE_MEMORY_AK/TABLESTORE_MEMORY_SK or ALIBABA_CLOUD_ACCESS_KEY_ID/"
            "ALIBABA_CLOUD_ACCESS_KEY_SECRET, or configure a profile or RAM role)",
            action=action,
        )
    if isinstance(exc, UnretryableException):
        if inner is not None and not isinstance(inner, (OSError, RetryError)):
            # Not the network's (requests' errors are OSErrors, which the SDK's transport
            # turns into RetryError): the SDK could not parse what came back, such as a
            # proxy's HTML page; the control plane was reached.
            return ControlPlaneUnavailable(
                redact(
                    f"{action} failed: the control plane at {endpoint} answered, but its answer "
                    f"could not be read ({type(inner).__name__}); a proxy in between may have "
                    "answered instead",
                    hidden,
                ),
                action=action,
            )
        from memcore_tablestore.client.error_map import connect_failure_in

        unreachable = connect_failure_in(inner) if isinstance(inner, RetryError) else None
        if unreachable is not None:
            return ControlPlaneUnreachable(
                redact(
                    f"{action} failed: nothing answers at the control plane {endpoint} "
                    f"({unreachable})",
                    hidden,
                ),
                action=action,
                endpoint=endpoint,
                reason=unreachable,
            )
        detail = (
            "no connection"
            if isinstance(inner, RetryError)
            else type(inner).__name__
            if inner is not None
            else "no answer"
        )
        return ControlPlaneUnavailable(
            redact(
                f"{action} failed: the control plane at {endpoint} could not be reached ({detail})",
                hidden,
            ),
            action=action,
        )
    if isinstance(exc, (RequiredArgumentException, ValidateException)):
        return ControlPlaneInvalid(
            redact(f"{action} was refused before sending: {exc}", hidden), action=action
        )
    if isinstance(exc, (ValueError, KeyError, TypeError, AttributeError)):
        return ControlPlaneUnavailable(
            f"{action} failed: the control plane's answer could not be read ({type(exc).__name__})",
            action=action,
        )
    return ControlPlaneUnavailable(
        f"{action} failed unexpectedly ({type(exc).__name__})", action=action
    )


def _parameter(code: str | None) -> str | None:
    """The request parameter an error code is about (``InvalidParameter.VCU``, ``MissingVCU``)."""
    if code is None:
        return None
    if code.startswith("InvalidParameter."):
        return code.split(".", 1)[1] or None
    if code.startswith("Missing") and len(code) > len("Missing") and "." not in code:
        return code[len("Missing") :]
    return None


def _text(value: object) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text if text and text != "None" else None


__all__ = [
    "AUTH_CODES",
    "CONFLICT_CODES",
    "NOT_FOUND_CODES",
    "THROTTLE_CODES",
    "ControlPlaneConflict",
    "ControlPlaneDenied",
    "ControlPlaneError",
    "ControlPlaneInvalid",
    "ControlPlaneNotFound",
    "ControlPlaneThrottled",
    "ControlPlaneUnavailable",
    "ControlPlaneUnreachable",
    "InstanceUnusable",
    "classify",
    "from_sdk_error",
    "redact",
]
