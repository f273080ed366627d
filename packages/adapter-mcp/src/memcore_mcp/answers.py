"""What a tool hands back: JSON, with stored text fenced as data, or a typed JSON error.

Memories are written by users and models, so a stored string may hold instructions; every
stored string is sanitised and the whole answer sits inside the core's recall fence
(:func:`memcore.recall.fence`), as the Hermes plugin injects recalled memories. The same JSON
goes out as ``structuredContent`` for clients that read it. Failures are
``{"error": {"type", "code", "message", "field", "retryable"}}`` with ``isError`` set; a resource
has no ``isError``, so a failed read is a JSON-RPC error with that object as its ``data``. The
text of an unexpected exception stays on the server, and no traceback ever reaches the client.
Nor does the path of the server's database (:mod:`memcore_mcp.redaction`).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Mapping
from typing import Any

from mcp.shared.exceptions import MCPError
from mcp.types import INTERNAL_ERROR, CallToolResult, TextContent

from memcore.errors import MemcoreError
from memcore.recall import fence, sanitize_recalled, shown_date
from memcore.values import MemoryRecord, SearchHit
from memcore_cli.output.records import hit_record, memory_record
from memcore_mcp.redaction import public_error

logger = logging.getLogger(__name__)


def clean(value: Any) -> Any:
    """``value`` with every string in it sanitised, so none can close the fence."""
    if isinstance(value, str):
        return sanitize_recalled(value)
    if isinstance(value, Mapping):
        return {clean(str(k)): clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [clean(v) for v in value]
    return value


def memory_json(memory: MemoryRecord) -> dict[str, Any]:
    """A memory in the CLI's public record shape, with what a dream said of it."""
    out = memory_record(memory)
    del out["score"]
    superseded_by = memory.extras.get("superseded_by")
    if superseded_by:
        out["superseded_by"] = superseded_by
    return out


def hit_json(hit: SearchHit) -> dict[str, Any]:
    """A hit in the CLI's record shape, with the day it is shown with (``date``, UTC
    ``YYYY-MM-DD``, as Hermes' search tool and recall block give it): the model reads a day,
    not seconds since 1970."""
    return {**hit_record(hit), "date": shown_date(hit)}


def dumps(data: Any) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


def fenced(data: Mapping[str, Any]) -> CallToolResult:
    """An answer holding stored data: sanitised, fenced for the model, structured for code."""
    safe = clean(data)
    return CallToolResult(
        content=[TextContent(type="text", text=fence(dumps(safe)))], structured_content=safe
    )


def fenced_text(data: Mapping[str, Any]) -> str:
    """The fenced text of :func:`fenced` alone (a resource's contents)."""
    return fence(dumps(clean(data)))


def plain(data: Mapping[str, Any]) -> CallToolResult:
    """An answer with no stored text in it (ids, counts, statuses)."""
    return CallToolResult(
        content=[TextContent(type="text", text=dumps(data))], structured_content=dict(data)
    )


def error_body(
    exc: BaseException, tool: str, *, database: str | os.PathLike[str] | None
) -> dict[str, Any]:
    """The JSON of a failure; ``database`` (the server's file) is named nowhere in it."""
    if isinstance(exc, MemcoreError):
        return public_error(exc.to_dict(), database)
    # The message of an unexpected exception may quote data or configuration: log the type only.
    logger.warning("memcore mcp: %s failed with %s", tool, type(exc).__name__)
    return {
        "type": "InternalError",
        "code": "internal_error",
        "message": f"{tool} failed unexpectedly ({type(exc).__name__}); see the server's log",
        "retryable": False,
    }


def error(
    exc: BaseException, tool: str, *, database: str | os.PathLike[str] | None
) -> CallToolResult:
    body = {"error": error_body(exc, tool, database=database)}
    return CallToolResult(
        content=[TextContent(type="text", text=dumps(body))],
        structured_content=body,
        is_error=True,
    )


def resource_error(
    exc: BaseException, resource: str, *, database: str | os.PathLike[str] | None
) -> MCPError:
    """A failed resource read, to raise from its handler: the SDK passes an ``MCPError`` on as
    it is, where any other exception reaches the client as an untyped "Error reading resource"."""
    body = error_body(exc, resource, database=database)
    return MCPError(INTERNAL_ERROR, str(body["message"]), data={"error": body})
