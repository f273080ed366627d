"""The error answers of the Memory Store: ``{"code", "message"}`` with an HTTP status.

Documented codes (vendor documentation, typed SDK notes): ``INVALID_PARAMETER`` 400,
``CONFLICT`` 409 (a capability such as a new store's index is still initialising: retry later)
and ``SERVICE_UNAVAILABLE`` 503. The vendor names no code for a missing store, memory or task,
nor for a duplicate store; the emulator answers ``NOT_FOUND`` 404 and ``OTSObjectAlreadyExist``
409, so clients must decide by HTTP status first. This mapping is the emulator's own, not the
client's ``error_map``, so the two cannot drift together.
"""

from __future__ import annotations

import attrs

from memcore.errors import (
    Conflict,
    InvalidInput,
    MemcoreError,
    NotFound,
    Throttled,
    Unavailable,
    Unsupported,
)

INVALID_PARAMETER = "INVALID_PARAMETER"
CONFLICT = "CONFLICT"
SERVICE_UNAVAILABLE = "SERVICE_UNAVAILABLE"
NOT_FOUND = "NOT_FOUND"
ALREADY_EXISTS = "OTSObjectAlreadyExist"


@attrs.frozen
class ServiceError(Exception):
    """An answer other than 200, raised by a handler."""

    status: int
    code: str
    message: str

    def __str__(self) -> str:
        return f"{self.status} {self.code}: {self.message}"

    def body(self) -> dict[str, str]:
        return {"code": self.code, "message": self.message}


def invalid(message: str) -> ServiceError:
    return ServiceError(400, INVALID_PARAMETER, message)


def not_found(message: str) -> ServiceError:
    return ServiceError(404, NOT_FOUND, message)


def initialising(store: str) -> ServiceError:
    return ServiceError(409, CONFLICT, f"memory store {store!r} is initialising; retry later")


def from_memcore(error: MemcoreError) -> ServiceError:
    """How the service reports a failure of the backing store."""
    if isinstance(error, InvalidInput):
        return invalid(error.message)
    if isinstance(error, NotFound):
        return not_found(error.message)
    if isinstance(error, Conflict):
        code = CONFLICT if error.retryable else ALREADY_EXISTS
        return ServiceError(409, code, error.message)
    if isinstance(error, Throttled):
        return ServiceError(429, "OTSOperationThrottled", error.message)
    if isinstance(error, Unsupported):
        return ServiceError(501, "OTSUnsupportOperation", error.message)
    if isinstance(error, Unavailable):
        return ServiceError(503, SERVICE_UNAVAILABLE, error.message)
    return ServiceError(500, "OTSInternalServerError", "internal error")
