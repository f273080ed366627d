"""The Memory Store transport envelope: what every answer passes through before its decoder.

Requests use the service's camelCase keys (``memoryStoreName``, ``scope.appId``, ``topK``);
the per-API decoders live in :mod:`memcore_tablestore.protocol.answers`.
"""

from __future__ import annotations

from typing import Any

from memcore.errors import ProtocolError
from memcore_tablestore.protocol.answer_fields import WIRE_LEVELS, scope_to_wire

#: Envelope ``code`` values that mean success.
_OK_CODES = frozenset({"", "OK", "Ok", "ok", "Success", "success", "SUCCESS", "0", "200"})


def unwrap(body: object) -> dict[str, Any]:
    """The response object, with a ``{code, data, message}`` envelope removed.

    The SDK stores the ``x-ots-requestid`` header as ``requestId``; it is carried over into
    the unwrapped object so it is never lost, and it never replaces a ``taskId``.
    """
    if not isinstance(body, dict):
        raise ProtocolError("the service answered with something that is not a JSON object")
    if "data" in body and "code" in body:
        code = body.get("code")
        if str(code) not in _OK_CODES:
            raise ProtocolError(
                f"the service answered with an envelope carrying code {str(code)[:64]!r}"
            )
        data = body.get("data")
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise ProtocolError("the envelope's data is not a JSON object")
        out = dict(data)
        if "requestId" in body:
            out.setdefault("requestId", body["requestId"])
        return out
    return body


__all__ = ["WIRE_LEVELS", "scope_to_wire", "unwrap"]
