"""The four model-facing tools: bare function schemas and JSON-string answers.

Every failure comes back as ``{"error": {...}}``; nothing raises into the agent loop. Scope
arguments the original plugin accepted (``app_id``, ``tenant_id``) are refused: a model can
never aim a tool at another tenant.
"""

from __future__ import annotations

import json
import logging
import re
from collections.abc import Callable, Mapping
from datetime import tzinfo
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memcore.errors import MemcoreError
    from memcore_hermes.config.home import HermesHome

PROFILE = "tablestore_profile"
SEARCH = "tablestore_search"
REMEMBER = "tablestore_remember"
FORGET = "tablestore_forget"
TOOL_NAMES = (PROFILE, SEARCH, REMEMBER, FORGET)

logger = logging.getLogger(__name__)

_METADATA_SCHEMA = {
    "type": "object",
    "description": "String key/value tags (at most 16 keys).",
    "additionalProperties": {"type": "string"},
}

TOOL_SCHEMAS: list[dict[str, Any]] = [
    {
        "name": PROFILE,
        "description": (
            "List the long-term memories stored about the current user (all agents and sessions "
            "of this user). Use it to review what is known before personalising an answer."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "limit": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 100,
                    "description": "How many memories (default 20).",
                },
                "next_token": {
                    "type": "string",
                    "description": "The next_token of the previous answer, for the next page.",
                },
                "include_superseded": {
                    "type": "boolean",
                    "description": (
                        "Also list memories a newer one superseded (default false: only the "
                        "current truth)."
                    ),
                },
            },
            "required": [],
        },
    },
    {
        "name": SEARCH,
        "description": (
            "Semantic search over the user's long-term memories. Returns ids, text, score, scope and "
            "the date each memory was said. "
            "Use it when the answer may depend on something said in an earlier session."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "What to look for."},
                "top_k": {
                    "type": "integer",
                    "minimum": 1,
                    "maximum": 50,
                    "description": "How many hits (default from config).",
                },
                "enable_rerank": {
                    "type": "boolean",
                    "description": "Rerank the hits (default true).",
                },
                "metadata": {
                    **_METADATA_SCHEMA,
                    "description": "Only memories whose metadata has all these values.",
                },
                "min_similarity": {
                    "type": "number",
                    "minimum": 0,
                    "maximum": 1,
                    "description": "Drop hits whose score is lower (0 to 1).",
                },
                "include_evidence": {
                    "type": "boolean",
                    "description": "Attach the messages each memory came from (default false).",
                },
                "reference_time": {
                    "type": "string",
                    "description": (
                        "When the question is asked, ISO 8601 (2026-05-01 or "
                        "2026-05-01T09:30:00Z; without an offset, the user's local time, as "
                        "the conversation's dates). Time words in the query "
                        '("last month", "in May", "3 days ago") are read from it. Default: '
                        "the current turn's time."
                    ),
                },
                "neighbours": {
                    "type": "integer",
                    "minimum": 0,
                    "maximum": 5,
                    "description": (
                        "Turns of each hit's own conversation to include before and after it "
                        "(0 to 5; default 0), in its neighbours.before / .after, at most 1200 "
                        "characters a hit. Only the embedded store keeps the order of a "
                        "conversation's turns; others answer an unsupported error."
                    ),
                },
            },
            "required": ["query"],
        },
    },
    {
        "name": REMEMBER,
        "description": (
            "Store a durable fact or short note in long-term memory (preferences, decisions, names, "
            "project facts). Asynchronous by default; set sync to true to wait until it is stored."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "content": {
                    "type": "string",
                    "description": "The fact to remember, self-contained.",
                },
                "metadata": _METADATA_SCHEMA,
                "sync": {"type": "boolean", "description": "Wait for the backend (default false)."},
            },
            "required": ["content"],
        },
    },
    {
        "name": FORGET,
        "description": (
            "Delete one of the current user's memories by id (ids come from tablestore_search or "
            "tablestore_profile). Only memories of the current user can be deleted."
        ),
        "parameters": {
            "type": "object",
            "properties": {
                "memory_id": {"type": "string", "description": "The id of the memory to delete."},
                "agent_id": {"type": "string", "description": "Optional: the agent that wrote it."},
                "run_id": {"type": "string", "description": "Optional: the session that wrote it."},
            },
            "required": ["memory_id"],
        },
    },
]

#: Each tool's arguments: exactly the properties its schema declares.
_ALLOWED_ARGS = {
    schema["name"]: frozenset(schema["parameters"]["properties"]) for schema in TOOL_SCHEMAS
}
#: Each tool's arguments' JSON types, for :func:`_as_declared`.
_ARG_TYPES = {
    schema["name"]: {k: v.get("type") for k, v in schema["parameters"]["properties"].items()}
    for schema in TOOL_SCHEMAS
}
_WHOLE_TEXT = re.compile(r"\s*[+-]?\d{1,18}\s*")
_NUMBER_TEXT = re.compile(r"\s*[+-]?(?:\d{1,18}(?:\.\d{0,18})?|\.\d{1,18})\s*")
#: Named as missing, not as sent wrong ("content must be a string, not NoneType").
_REQUIRED_ARGS = {schema["name"]: schema["parameters"]["required"] for schema in TOOL_SCHEMAS}


def dumps(data: Mapping[str, Any]) -> str:
    return json.dumps(data, ensure_ascii=False, default=str)


def error_json(error: Any) -> str:
    """``{"error": ...}`` from a memcore error (or a plain message)."""
    to_dict = getattr(error, "to_dict", None)
    body = (
        to_dict()
        if callable(to_dict)
        else {"type": "Error", "code": "error", "message": str(error)}
    )
    return dumps({"error": body})


def _memory_json(memory: Any) -> dict[str, Any]:
    from memcore_hermes.outbox.delivery import WRITE_MARKER

    return {
        "id": memory.id,
        "text": memory.text,
        "scope": str(memory.scope),
        # Without the spool's own key: noise to the model, and refused if it writes it back.
        "metadata": {k: v for k, v in memory.metadata.items() if k != WRITE_MARKER},
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
    }


def handle_tool(
    runtime: Any,
    tool_name: str,
    args: Mapping[str, Any] | None,
    *,
    absent: MemcoreError | None = None,
    home: HermesHome | None = None,
) -> str:
    """Run one tool against ``runtime``; always a JSON string. ``absent``: the error to
    answer when there is no runtime (why the start failed); ``home``: the Hermes home a
    missing store's advice points at (:meth:`HermesHome.store_advice`)."""
    from memcore.errors import InvalidInput, MemcoreError
    from memcore.wording import shown

    try:
        if tool_name not in _ALLOWED_ARGS:
            raise InvalidInput(f"unknown tool {shown(tool_name)}", field="tool")
        if args is None:
            args = {}
        if not isinstance(args, Mapping):
            raise InvalidInput("tool arguments must be an object", field="arguments")
        extra = sorted(set(args) - _ALLOWED_ARGS[tool_name])
        if extra:
            if extra[0] in ("app_id", "tenant_id"):
                raise InvalidInput(
                    f"{extra[0]} cannot be chosen: memory tools only act on the current user",
                    field=extra[0],
                )
            raise InvalidInput(
                f"unknown argument {shown(extra[0])} for {tool_name}", field=extra[0]
            )
        args = _as_declared(tool_name, args)
        for name in _REQUIRED_ARGS[tool_name]:
            if args.get(name) is None:
                raise InvalidInput(f"{name} is required", field=name)
        if runtime is None:
            from memcore.errors import Unavailable

            raise absent or Unavailable("tablestore-mem is not initialised", field="provider")
        return _HANDLERS[tool_name](runtime, args)
    except MemcoreError as exc:
        return error_json(exc if home is None else home.store_advice(exc))
    except Exception as exc:  # never raise into the agent loop
        logger.warning("tablestore-mem: %s failed with %s", tool_name, type(exc).__name__)
        return error_json(f"{tool_name} failed: {type(exc).__name__}")


def _as_declared(tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    """``args`` as their schema declares them, where a model sent them loosely: a whole
    number, a number or ``true``/``false`` written as a string ("3", "0.5", "true") becomes one, and a
    ``null`` is the argument left out (its default). Hermes does this for its own tools but
    hands a provider's arguments on as the model wrote them; the bundled providers read
    ``int(args.get(...))``. Anything else is left for the checks to refuse."""
    types = _ARG_TYPES[tool_name]
    out: dict[str, Any] = {}
    for name, value in args.items():
        if value is None:
            continue
        if isinstance(value, str):
            kind = types.get(name)
            if kind == "integer" and _WHOLE_TEXT.fullmatch(value):
                value = int(value)
            elif kind == "number" and _NUMBER_TEXT.fullmatch(value):
                value = float(value)
            elif kind == "boolean" and value.strip().lower() in ("true", "false"):
                value = value.strip().lower() == "true"
        out[name] = value
    return out


def _flag(args: Mapping[str, Any], name: str) -> bool | None:
    """An optional yes/no argument of a tool call (JSON ``true``/``false``)."""
    from memcore.limits import check_flag

    return check_flag(args.get(name), field=name, optional=True)


def _whole(args: Mapping[str, Any], name: str, default: object = None) -> object:
    """An integer argument as JSON Schema reads one: ``5.0`` is 5 (a model may send it so,
    and MCP's ``recall`` takes it); anything else goes to the service's check as sent."""
    value = args.get(name, default)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _profile(runtime: Any, args: Mapping[str, Any]) -> str:
    limit = _whole(args, "limit", 20)
    service = runtime.service(runtime.handle.ready())
    # A dream pass marks what a newer memory replaced; the profile shows the current truth,
    # a full page of it (the service reads past the superseded ones).
    current = not _flag(args, "include_superseded")
    page = service.profile(limit=limit, next_token=args.get("next_token"), current_only=current)
    return dumps(
        {
            "scope": str(service.profile_pattern),
            "count": len(page.items),
            "memories": [_memory_json(m) for m in page.items],
            "next_token": page.next_token,
        }
    )


def _search(runtime: Any, args: Mapping[str, Any]) -> str:
    from memcore.service import check_filters
    from memcore_hermes.session.clock import asked_at

    asked = asked_at(args.get("reference_time"), runtime.turn_time())
    # Checked here first, so an error names this tool's argument, not the service's "filters".
    filters = check_filters(args.get("metadata"), field="metadata") or None
    service = runtime.service(runtime.handle.ready())
    hits = service.search(
        args.get("query"),
        top_k=_whole(args, "top_k"),
        enable_rerank=_flag(args, "enable_rerank"),
        filters=filters,
        min_similarity=args.get("min_similarity"),
        context_scope=True,
        include_evidence=_flag(args, "include_evidence") or False,
        reference_time=asked,
        neighbours=_whole(args, "neighbours", 0),
    )
    return dumps(
        {
            "scope": str(service.search_pattern),
            "results": [hit_json(h, asked.tzinfo) for h in hits],
        }
    )


def hit_json(hit: Any, zone: tzinfo | None = None) -> dict[str, Any]:
    """One search hit as the search tool and ``hermes tablestore-mem search`` show it.

    ``date`` is the day the recall block shows the memory with (when it was said, in
    ``zone``: the question's), so that a model answering "when did I..." from the tool sees
    the same date as in its context;
    ``created_at`` and ``updated_at`` are seconds since the epoch, as MCP and the CLI give them.
    """
    from memcore.recall import shown_date

    memory = hit.memory
    return {
        "id": memory.id,
        "text": memory.text,
        "score": hit.score,
        "similarity": hit.similarity,
        "scope": str(memory.scope),
        "date": shown_date(hit, zone),
        "created_at": memory.created_at,
        "updated_at": memory.updated_at,
        # A newer memory replaced it (it is listed after that one): the model reads it as past.
        **({"superseded_by": memory.superseded_by} if memory.superseded_by else {}),
        **({"evidence": [dict(e) for e in hit.evidence]} if hit.evidence else {}),
        **({"neighbours": _turns_json(hit.neighbours)} if hit.neighbours is not None else {}),
    }


def _turns_json(context: Any) -> dict[str, list[dict[str, Any]]]:
    """A hit's turns around it (``neighbours``), each side in the order said, each turn
    ``{"role", "content", "timestamp"}`` (seconds since the epoch), as MCP ``recall`` and
    ``memcore search --json`` show them."""
    return {
        side: [
            {"role": m.role, "content": m.content, "timestamp": m.timestamp}
            for m in getattr(context, side)
        ]
        for side in ("before", "after")
    }


def _remember(runtime: Any, args: Mapping[str, Any]) -> str:
    content = args.get("content")
    metadata = args.get("metadata")
    if _flag(args, "sync"):
        receipt = runtime.remember_now(content, metadata=metadata)
        return dumps(
            {
                "status": receipt.status,
                "memory_ids": list(receipt.memory_ids),
                "task_id": receipt.task_id,
                "scope": str(runtime.scope),
                # Set when the backend accepted the write but its answer was unreadable.
                **({"problem": receipt.problem} if receipt.problem else {}),
            }
        )
    key = runtime.remember(content, metadata=metadata)
    return dumps({"status": "queued", "key": key, "scope": str(runtime.scope)})


def _forget(runtime: Any, args: Mapping[str, Any]) -> str:
    memory_id = args.get("memory_id")
    service = runtime.service(runtime.handle.ready())
    scope = service.forget(memory_id, agent_id=args.get("agent_id"), run_id=args.get("run_id"))
    runtime.clear_recall()  # the block standing in for a late search must not show it again
    return dumps({"status": "deleted", "memory_id": memory_id, "scope": str(scope)})


_HANDLERS: dict[str, Callable[[Any, Mapping[str, Any]], str]] = {
    PROFILE: _profile,
    SEARCH: _search,
    REMEMBER: _remember,
    FORGET: _forget,
}
