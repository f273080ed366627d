"""``memcore mcp``: resolve the configuration, open the store, then serve until stopped.

Everything that can be wrong (config, backend, credentials, token map, a tenant name) is
found before the first byte of protocol, so it is reported as the CLI reports any error: one
line on stderr and an exit code. stdout belongs to the protocol on stdio; nothing else is
written there.
"""

from __future__ import annotations

import contextlib
import math
import shlex
import socket
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING

import anyio

from memcore.errors import ConfigError, InvalidInput, StoreNotFound, Throttled, Unavailable
from memcore_cli.settings.options import GlobalOptions
from memcore_cli.wiring.overrides import StoreFactory
from memcore_cli.wiring.runtime import Runtime
from memcore_mcp import reembed
from memcore_mcp.server import (
    MemoryServer,
    OneCredential,
    bearer_tenant,
    build_server,
    share_sessions,
    token_tenant,
)
from memcore_mcp.tenants import Tenants, server_options, tenant_scope
from memcore_mcp.tokens import TOKENS_ENV, TOKENS_FILE_ENV, TokenMap, load_tokens

if TYPE_CHECKING:
    import uvicorn
    from starlette.types import ASGIApp

TRANSPORTS = ("stdio", "http")
DEFAULT_HOST = "127.0.0.1"
DEFAULT_PORT = 8787
DEFAULT_PATH = "/mcp"
#: The sessions one tenant may hold open at once on HTTP (an MCP client holds one; the SDK
#: closes a session idle for 30 minutes). The server keeps at most the SDK's 10,000 in all.
SESSIONS_PER_TENANT = 1_000
#: The event streams one tenant may hold open at once on HTTP (a session's GET stream, a
#: ``subscriptions/listen`` request; :mod:`memcore_mcp.streams`). A client holds one per
#: session and a host runs a few sessions at once, so 32 is room for many; a tenant holding
#: all of its own takes 32 file descriptors, not every one of the process's (often 1,024).
STREAMS_PER_TENANT = 32
MAX_PORT = 65_535
#: The longest ``--busy-timeout``, in seconds, as the config's ``timeout`` allows: a tool call
#: waiting longer would look hung to the client. Checked here, before anything opens, so the
#: option is named; the store refuses what SQLite cannot keep itself.
MAX_BUSY_TIMEOUT = 600.0
#: How long a write waits for another process's lock unless ``--busy-timeout`` says.
DEFAULT_BUSY_TIMEOUT = 30.0
#: A stopping server (SIGTERM, on HTTP or stdio) waits for its running calls as long as a
#: write may wait for the lock, and this many seconds more; then it cancels what still runs
#: and exits (a call that never ended would hold it for ever).
SHUTDOWN_GRACE = 10.0


def serve(
    options: GlobalOptions,
    environ: Mapping[str, str],
    *,
    store_factory: StoreFactory | None = None,
    explicit_environ: bool = False,
    transport: str = "stdio",
    host: str | None = None,
    port: int | None = None,
    path: str | None = None,
    tokens_file: str | None = None,
    busy_timeout: float | None = None,
) -> None:
    """Serve until stopped. ``host``, ``port``, ``path`` and ``tokens_file`` are None unless
    given (then their defaults apply on HTTP); stdio refuses them."""
    if transport not in TRANSPORTS:
        raise InvalidInput(
            f"--transport must be one of {', '.join(TRANSPORTS)}, not {transport!r}",
            field="transport",
        )
    if transport == "stdio":
        _refuse_http_options(host=host, port=port, path=path, tokens=tokens_file)
    elif options.tenant is not None:  # ignored, it would hide whose memories are served
        raise InvalidInput(
            "--tenant applies to --transport stdio only; over HTTP each token names its "
            "tenant (--tokens)",
            field="tenant",
        )
    host = DEFAULT_HOST if host is None else host
    port = DEFAULT_PORT if port is None else port
    path = DEFAULT_PATH if path is None else path
    _check_busy_timeout(busy_timeout)
    _check_port(port)
    _check_path(path)
    _check_host(host)
    options = server_options(options, environ)
    runtime = Runtime(
        options,
        environ,
        store_factory,
        explicit_environ=explicit_environ,
        busy_timeout=busy_timeout,
    )
    try:
        if busy_timeout is not None and runtime.settings.backend != "local":
            raise InvalidInput(
                "--busy-timeout applies to the local backend (the embedded store) only, "
                f"not to {runtime.settings.backend}",
                field="busy_timeout",
            )
        if transport == "stdio":
            tenant_scope(options, runtime.settings, None)  # refuses a bad tenant now
            tenants = Tenants(runtime, options, lambda: None)
            server = build_server(tenants)
            _open(runtime, options)
            tenants.warm([None])
            anyio.run(server.run_stdio_async, _grace(busy_timeout))
            return
        tokens = load_tokens(tokens_file, environ)
        if tokens is None:
            raise ConfigError(
                "the HTTP transport serves nothing without tokens: give --tokens FILE, "
                f"{TOKENS_FILE_ENV} or {TOKENS_ENV} (a JSON object of tenant to token)",
                field="tokens",
            )
        for tenant in sorted(tokens.tenants):
            tenant_scope(options, runtime.settings, tenant)
        tenants = Tenants(runtime, options, token_tenant)
        _raise_descriptor_limit()
        sock = _bind(host, port)
        url = f"http://{_url_host(host)}:{sock.getsockname()[1]}"
        server = build_server(tenants, tokens=tokens, url=url)
        _open(runtime, options)
        tenants.warm(sorted(tokens.tenants))
        sys.stderr.write(
            f"memcore mcp: serving {len(tokens.tenants)} tenant(s) on {url}{path} "
            f"({runtime.settings.backend} backend)\n"
        )
        sys.stderr.flush()
        _run_http(server, sock, tokens, host=host, path=path, grace=_grace(busy_timeout))
    finally:
        runtime.close()


def _grace(busy_timeout: float | None) -> float:
    """How long a stopping server waits for the calls it has received: as long as a write may
    wait for the lock, and :data:`SHUTDOWN_GRACE` more."""
    return (DEFAULT_BUSY_TIMEOUT if busy_timeout is None else busy_timeout) + SHUTDOWN_GRACE


def _refuse_http_options(**given: object) -> None:
    """An HTTP option given with stdio is a mistake (most likely a forgotten ``--transport
    http``): serving stdio while it is ignored would hide that, so it is refused, named."""
    for name, value in given.items():
        if value is not None:
            raise InvalidInput(
                f"--{name} applies to --transport http only; stdio serves the process's "
                "stdin and stdout",
                field=name,
            )


def _check_busy_timeout(seconds: float | None) -> None:
    """Refuse a wait the store cannot keep (negative, not finite, too long) before anything
    opens, naming the option as given."""
    if seconds is not None and not (math.isfinite(seconds) and 0 <= seconds <= MAX_BUSY_TIMEOUT):
        raise InvalidInput(
            f"--busy-timeout must be a number of seconds from 0 to {MAX_BUSY_TIMEOUT:g}, "
            f"not {seconds:g}",
            field="busy_timeout",
        )


def _check_port(port: int) -> None:
    """Refuse a port no socket can take before anything opens (``bind`` would raise an
    ``OverflowError``, which reads as a crash rather than a bad option)."""
    if not 0 <= port <= MAX_PORT:
        raise InvalidInput(f"--port must be from 0 to {MAX_PORT}, not {port}", field="port")


def _check_host(host: str) -> None:
    """Refuse a blank address before anything opens (the SDK's settings refused it later as a
    raw validation error)."""
    if not host.strip():
        raise InvalidInput("--host is empty; give an address such as 127.0.0.1", field="host")


def _check_path(path: str) -> None:
    """Refuse an endpoint path the router cannot mount before anything opens (it asserts a
    leading ``/`` only once the server has said where it serves)."""
    if not path.startswith("/"):
        raise InvalidInput(f"--path must start with '/', not {path!r}", field="path")


def _open(runtime: Runtime, options: GlobalOptions) -> None:
    """Open the store now (credentials and address are checked before the first request),
    starting to load the model meanwhile; then give the memories that lack a current vector
    theirs in the background.

    A TableStore memory store that does not exist is not created here: a mistyped
    ``memory_store_name`` would be made empty and every read would find nothing. The server
    starts all the same and says so; reads answer ``store_not_found`` and the first
    ``remember`` creates it (:meth:`Tenants.create_store`). The embedded store makes its own
    in a new file (one that holds other stores reads a missing one as TableStore does)."""
    runtime.warm_embedder()
    try:
        runtime.ready_store(create=False)
    except StoreNotFound:
        _say_store_missing(runtime, options)
        return  # nothing to re-embed in a store that is not there
    except (Throttled, Unavailable) as exc:
        if runtime.settings.backend != "tablestore" or not exc.retryable:
            raise
        # A few seconds of throttling at launch left the client (Claude Desktop, Cursor)
        # with no memory server for its whole session, where the same answer a moment later
        # is one tool's retryable error.
        sys.stderr.write(
            f"memcore mcp: the store did not answer at start ({' '.join(exc.message.split())}); "
            "serving anyway: each tool answers the error until it does\n"
        )
        sys.stderr.flush()
        return
    reembed.start(runtime)


def _say_store_missing(runtime: Runtime, options: GlobalOptions) -> None:
    """Said on stderr, which stays on this machine: the create command carries the flags
    that chose the store (``--backend``, ``--config``, ``--hermes-home``), since without them
    it reaches the configured default, often the embedded store."""
    name = runtime.store_name
    create = shlex.join(["memcore", *options.store_argv(), "stores", "create", name])
    if runtime.settings.config.auto_create_store:
        said = (
            f"memory store {name!r} does not exist yet; the first remember creates it "
            "(until then every other tool answers store_not_found)"
        )
    else:
        said = (
            f"memory store {name!r} does not exist and auto_create_store is off: every tool "
            f"answers store_not_found until it is created ({create})"
        )
    sys.stderr.write(f"memcore mcp: {said}\n")
    sys.stderr.flush()


def _raise_descriptor_limit() -> None:
    """Raise the soft limit on open files to the hard one, as servers do: each connection
    holds a descriptor, and the usual soft limit (1,024) was reached by about 30 tenants
    holding their 32 streams, or 30 s of connections without a token at 35 a second. Past
    the limit uvicorn stops accepting for a moment and the client waits; nothing running is
    cut. Left as it is where no hard limit is set, or it cannot be raised."""
    try:
        import resource
    except ImportError:  # Windows: no such limit
        return
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if hard == resource.RLIM_INFINITY or soft == resource.RLIM_INFINITY or soft >= hard:
        return
    with contextlib.suppress(ValueError, OSError):  # macOS caps it below an "unlimited" hard
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


def _url_host(host: str) -> str:
    return f"[{host}]" if ":" in host else host


def _bind(host: str, port: int) -> socket.socket:
    """The listening socket, bound here so port 0 works and a busy port is a clean error."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((host, port))
    except OSError as exc:
        sock.close()
        raise Unavailable(
            f"cannot listen on {host}:{port} ({exc.strerror})", field="port", retryable=False
        ) from None
    sock.listen(128)
    return sock


def _run_http(
    server: MemoryServer,
    sock: socket.socket,
    tokens: TokenMap,
    *,
    host: str,
    path: str,
    grace: float,
) -> None:
    from memcore_mcp.distinct import DistinctIds
    from memcore_mcp.redaction import keep_client_values_out_of_logs
    from memcore_mcp.stopping import DrainingServer
    from memcore_mcp.streams import StreamBudget

    # Answers as plain JSON, not as a server-sent event stream: on SIGTERM uvicorn waits for
    # the responses still running, but the SDK's event streams are cut at once, so a write that
    # landed while the server stopped reached the client as an empty answer.
    app = server.streamable_http_app(streamable_http_path=path, host=host, json_response=True)
    share_sessions(server.session_manager, SESSIONS_PER_TENANT)
    keep_client_values_out_of_logs()
    tenant_of = bearer_tenant(tokens)
    served = OneCredential(StreamBudget(DistinctIds(app, tenant_of), tenant_of, STREAMS_PER_TENANT))
    http = DrainingServer(http_config(served, grace=grace), server.end_listening)
    http.serve_until_stopped(sock)


def http_config(app: ASGIApp, *, grace: float) -> uvicorn.Config:
    """uvicorn's settings for ``app``: quiet, waiting ``grace`` seconds for running calls when
    stopped, and closing a connection whose request does not arrive in time
    (:mod:`memcore_mcp.deadline`; uvicorn's own limits leave it open for ever)."""
    import uvicorn

    from memcore_mcp.deadline import RequestDeadline

    return uvicorn.Config(
        app,
        http=RequestDeadline,
        log_level="warning",
        access_log=False,
        lifespan="on",
        timeout_graceful_shutdown=math.ceil(grace),
    )


__all__ = [
    "DEFAULT_HOST",
    "DEFAULT_PATH",
    "DEFAULT_BUSY_TIMEOUT",
    "DEFAULT_PORT",
    "MAX_BUSY_TIMEOUT",
    "SESSIONS_PER_TENANT",
    "SHUTDOWN_GRACE",
    "STREAMS_PER_TENANT",
    "TRANSPORTS",
    "serve",
]
