"""The MCP server: the SDK's ``MCPServer`` with memcore's tools, on stdio or streamable HTTP.

On HTTP every request needs a bearer token from the token map (the SDK's bearer middleware
answers 401 otherwise) and acts for that token's tenant; on stdio the configured tenant is
served. Arguments the SDK refuses (wrong type, out of range, unknown) come back as the same
JSON errors as every other failure.
"""

from __future__ import annotations

import inspect
import logging
import types
from collections.abc import Callable, Sequence
from typing import Any, Union, get_args, get_origin

from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.middleware.bearer_auth import AuthorizationContext
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.mcpserver.utilities.func_metadata import FuncMetadata
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager
from mcp.server.subscriptions import ListenHandler
from mcp.types import CallToolResult
from pydantic import AnyHttpUrl, ValidationError
from starlette.responses import JSONResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from memcore.errors import InvalidInput, PermissionDenied
from memcore.wording import shown
from memcore_mcp import __version__, answers, stdio
from memcore_mcp.streams import LISTEN
from memcore_mcp.tenants import Tenants
from memcore_mcp.tokens import TokenMap
from memcore_mcp.tools import INSTRUCTIONS, PROFILE_URI, MemoryTools, say_default_top_k

logger = logging.getLogger(__name__)

NAME = "memcore"
#: Scope arguments a model might try; named in the refusal so it stops trying.
_SCOPE_ARGS = frozenset({"app_id", "tenant_id", "tenant", "user_id", "user", "scope"})


class TokenTenants:
    """The SDK's ``TokenVerifier`` over a :class:`TokenMap`: a token opens its tenant only."""

    def __init__(self, tokens: TokenMap) -> None:
        self.tokens = tokens

    async def verify_token(self, token: str) -> AccessToken | None:
        tenant = self.tokens.tenant_for(token)
        if tenant is None:
            return None
        # The SDK ties a streamable HTTP session to client_id/subject: one tenant's session id
        # is refused with another tenant's token. The token itself is not kept.
        return AccessToken(
            token="redacted", client_id=f"tenant:{tenant}", scopes=[], subject=tenant
        )


class OneCredential:
    """ASGI middleware: a request with more than one ``Authorization`` header is refused (400,
    RFC 6750's ``invalid_request``). The SDK's bearer check reads the first one, while a proxy
    in front may read the last: two tokens, perhaps of two tenants, would leave it open which
    tenant the request acts for."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            given = [name for name, _ in scope["headers"] if name.lower() == b"authorization"]
            if len(given) > 1:
                description = "send one Authorization header, not several"
                response = JSONResponse(
                    {"error": "invalid_request", "error_description": description},
                    status_code=400,
                    headers={
                        "WWW-Authenticate": (
                            f'Bearer error="invalid_request", error_description="{description}"'
                        )
                    },
                )
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)


def share_sessions(manager: StreamableHTTPSessionManager, per_tenant: int) -> None:
    """Let each tenant hold at most ``per_tenant`` of ``manager``'s sessions: past that its
    new session is refused (503, as the SDK refuses one past its own limit for all), so one
    tenant cannot take every session and lock the others out until theirs expire. The SDK
    records the owner of each session (to refuse one tenant's session id to another); the
    owners are counted there, so a session closed or expired frees its place. Private to the
    SDK, whose version is pinned."""
    admit = manager._admit_session

    def admit_within_share(requestor: AuthorizationContext | None) -> Any:
        owners = manager._session_owners.values()
        if requestor is not None and sum(o == requestor for o in owners) >= per_tenant:
            return None
        return admit(requestor)

    manager._admit_session = admit_within_share  # type: ignore[method-assign]


def bearer_tenant(tokens: TokenMap) -> Callable[[str], str | None]:
    """The tenant of an ``Authorization`` header's bearer token, read as the SDK's bearer
    middleware reads it (None: no valid token)."""

    def tenant_of(header: str) -> str | None:
        if not header.lower().startswith("bearer "):
            return None
        return tokens.tenant_for(header[len("bearer ") :])

    return tenant_of


def token_tenant() -> str:
    """The tenant of the running HTTP request's token (set by the SDK's auth middleware)."""
    token = get_access_token()
    if token is None or token.subject is None:  # the middleware answers 401 before this
        raise PermissionDenied("a valid bearer token is required", field="authorization")
    return token.subject


class TextAsSent(FuncMetadata):
    """The SDK's argument handling, but a string sent for a parameter that takes a string
    stays that string. The SDK reads a string as JSON wherever the parameter is not exactly
    ``str`` (for clients that send a list as JSON text), so for ``text: str | None`` the text
    "null" became no text at all and '["a"]' a list, refused."""

    def pre_parse_json(self, data: dict[str, Any]) -> dict[str, Any]:
        parsed = super().pre_parse_json(data)
        fields = self.arg_model.model_fields
        for key, value in data.items():
            field = fields.get(key)
            if isinstance(value, str) and field is not None and _takes_text(field.annotation):
                parsed[key] = value
        return parsed


def _takes_text(annotation: object) -> bool:
    if annotation is str:
        return True
    return get_origin(annotation) in (Union, types.UnionType) and str in get_args(annotation)


def _reason(problem: Any) -> str:
    """pydantic's message for one argument, without the "Value error, " it puts before the
    words of a validator of ours (``must be a number, not str``)."""
    error = problem.get("ctx", {}).get("error")
    if problem["type"] == "value_error" and isinstance(error, ValueError):
        return str(error)
    return str(problem["msg"])


def memory_tool(fn: Any, **kwargs: Any) -> Tool:
    """The SDK's tool for ``fn`` (``kwargs`` as for ``add_tool``), its text taken as sent. Its
    schema allows no other argument, as :meth:`MemoryServer.call_tool` refuses any other (JSON
    Schema allows any unless it says so)."""
    tool = Tool.from_function(fn, **kwargs)
    tool.parameters = {**tool.parameters, "additionalProperties": False}
    meta = tool.fn_metadata
    tool.fn_metadata = TextAsSent(
        arg_model=meta.arg_model,
        output_schema=meta.output_schema,
        output_model=meta.output_model,
        wrap_output=meta.wrap_output,
    )
    return tool


class MemoryServer(MCPServer[Any]):
    """``MCPServer`` over ``tools`` (see :func:`memory_tool`) whose refused arguments answer
    as JSON errors, like the tools' own; ``database`` is the server's file, which no answer
    names."""

    def __init__(
        self,
        *args: Any,
        tools: Sequence[Tool] = (),
        database: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init__(*args, tools=list(tools), **kwargs)
        self.database = database
        self._arguments: dict[str, frozenset[str]] = {
            tool.name: frozenset(inspect.signature(tool.fn).parameters) for tool in tools
        }

    async def call_tool(
        self, name: str, arguments: dict[str, Any], context: Context[Any, Any] | None = None
    ) -> Any:
        allowed = self._arguments.get(name)
        if allowed is None:
            return self._error(InvalidInput(f"unknown tool {shown(name)}", field="name"), name)
        extra = sorted(set(arguments) - allowed)
        if extra:
            if extra[0] in _SCOPE_ARGS:
                message = f"{extra[0]} cannot be chosen: these tools act on the current user only"
            else:
                message = f"unknown argument {shown(extra[0])} for {name}"
            return self._error(InvalidInput(message, field=extra[0]), name)
        try:
            return await super().call_tool(name, arguments, context)
        except ToolError as exc:
            cause = exc.__cause__
            if isinstance(cause, ValidationError):
                problem = cause.errors()[0]
                field = ".".join(str(part) for part in problem["loc"]) or "arguments"
                return self._error(InvalidInput(f"{field}: {_reason(problem)}", field=field), name)
            return self._error(cause or exc, name)

    async def run_stdio_async(self, grace: float = 0.0) -> None:
        """The SDK's stdio loop over :func:`stdio.streams`, which answers every line (and on
        SIGTERM the calls already read, for ``grace`` seconds at most)."""
        lowlevel = self._lowlevel_server
        async with stdio.streams(grace) as (read_stream, write_stream):
            await lowlevel.run(read_stream, write_stream, lowlevel.create_initialization_options())

    def end_listening(self) -> None:
        """End every open ``subscriptions/listen`` stream as the protocol ends one on purpose
        (its result as the last frame). Such a stream runs until the client goes: a stopping
        server waited the whole grace for it, then cut it. The SDK keeps its handler under
        the method's name; its version is pinned."""
        entry = self._lowlevel_server.get_request_handler(LISTEN)
        if entry is not None and isinstance(entry.handler, ListenHandler):
            entry.handler.close()

    def _error(self, exc: BaseException, tool: str) -> CallToolResult:
        return answers.error(exc, tool, database=self.database)


def build_server(
    tenants: Tenants, *, tokens: TokenMap | None = None, url: str | None = None
) -> MemoryServer:
    """The server with every tool and the profile resource; ``tokens`` turns bearer auth on
    (``url`` is then this server's own address, which the SDK's auth settings want)."""
    auth: dict[str, Any] = {}
    if tokens is not None:
        auth = {
            "auth": AuthSettings(
                issuer_url=AnyHttpUrl(url or "http://127.0.0.1"), resource_server_url=None
            ),
            "token_verifier": TokenTenants(tokens),
        }
    tools = MemoryTools(tenants)
    registered: list[Tool] = []
    tools.register(lambda fn, **kwargs: registered.append(memory_tool(fn, **kwargs)))
    for tool in registered:
        if tool.name == "recall":
            say_default_top_k(tool, tenants.runtime.settings.config.top_k)
    server = MemoryServer(
        NAME,
        tools=registered,
        database=tenants.database,
        title="memcore long-term memory",
        instructions=INSTRUCTIONS,
        version=__version__,
        log_level="WARNING",
        **auth,
    )
    server.resource(
        PROFILE_URI,
        name="profile",
        title="What is known about the user",
        description="The user's current long-term memories (up to 100), as fenced JSON data.",
        mime_type="text/plain",
    )(tools.profile)
    return server
