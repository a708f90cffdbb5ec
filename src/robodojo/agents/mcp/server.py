"""The MCP protocol side: a low-level ``mcp`` Server whose handlers hand every call to the episode's channel.

Tools and resources are listed from what is fixed when the server starts (the robot's bounds, the tool set); every
``tools/call`` and ``resources/read`` goes into the :class:`~robodojo.agents.mcp.channel.CallChannel` and its
answer comes back from the episode thread. The low-level server is used (not the decorator-based one) so that no
argument is validated, coerced or rejected by the SDK with texts of its own: the checks and their texts are the
agents'. The client's name is taken from its ``initialize`` request (or, in the 2026 protocol without a handshake,
from the client info a request carries).

Transports (:func:`serve_stdio`, :func:`serve_http`): stdio, and the SDK's streamable HTTP bound to 127.0.0.1 only.
Either ends when the client goes away (stdin closed; the HTTP session deleted) or when ``stop`` is set; the channel
is told that the client disconnected.
"""

from __future__ import annotations

import asyncio
import base64
import logging
import sys
import threading
from collections.abc import Awaitable, Callable, Mapping
from http import HTTPStatus
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import uvicorn
from mcp.server.context import CallNext, ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from starlette.types import Message, Receive, Scope, Send

from robodojo import __version__
from robodojo.agents.mcp.agent import McpAgent
from robodojo.agents.mcp.channel import Answer, CallChannel, ImagePart, RequestKind
from robodojo.agents.mcp.content import RESOURCES
from robodojo.agents.mcp.settings import LOCAL_HOST
from robodojo.agents.text_limits import clean_text
from robodojo.errors import ConfigError

SERVER_NAME = "robodojo"
HTTP_PATH = "/mcp"
MAX_CLIENT_NAME_CHARS = 200  # a client's self-chosen name, as recorded
WATCH_PERIOD_S = 0.2  # how often a transport checks whether it should stop
DISCONNECTED_STDIO = "the MCP client closed the connection (stdin)"
DISCONNECTED_HTTP = "the MCP client ended its session"
INSTRUCTIONS = (
    "You operate a robot in one episode. Read the resources (instruction, manual, cameras), call observe to look, "
    "then move with the tools. Calls run one at a time; every call counts against the call budget."
)

log = logging.getLogger(__name__)


def _client_name(info: object) -> str | None:
    """The name in a clientInfo object (raw JSON), cleaned and cut; None when there is none."""
    name = info.get("name") if isinstance(info, Mapping) else getattr(info, "name", None)
    return clean_text(name, MAX_CLIENT_NAME_CHARS).text if isinstance(name, str) else None


def _content(answer: Answer) -> list[types.ContentBlock]:
    return [
        types.ImageContent(data=base64.b64encode(p.data).decode("ascii"), mime_type=p.mime_type)
        if isinstance(p, ImagePart)
        else types.TextContent(text=p)
        for p in answer.parts
    ]


def build_server(agent: McpAgent, channel: CallChannel) -> Server[Any]:
    """The MCP server of one episode: ``agent``'s tools, the resources, every call through ``channel``."""
    tools = [
        types.Tool(name=s.name, description=s.description, input_schema=dict(s.input_schema)) for s in agent.specs()
    ]
    resources = [
        types.Resource(uri=uri, name=name, description=description, mime_type=mime)
        for uri, (name, description, mime) in RESOURCES.items()
    ]

    async def list_tools(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        return types.ListToolsResult(tools=tools)

    async def call_tool(ctx: ServerRequestContext[Any], params: types.CallToolRequestParams) -> types.CallToolResult:
        answer = await asyncio.wrap_future(channel.submit(RequestKind.TOOL, params.name, params.arguments))
        return types.CallToolResult(content=_content(answer), is_error=answer.is_error)

    async def list_resources(
        ctx: ServerRequestContext[Any], params: types.PaginatedRequestParams | None
    ) -> types.ListResourcesResult:
        return types.ListResourcesResult(resources=resources)

    async def read_resource(
        ctx: ServerRequestContext[Any], params: types.ReadResourceRequestParams
    ) -> types.ReadResourceResult:
        uri = str(params.uri)
        if uri not in RESOURCES:  # refused here: an unknown URI needs nothing of the episode
            raise MCPError(
                code=types.INVALID_PARAMS, message=f"unknown resource; the resources are {', '.join(RESOURCES)}"
            )
        answer = await asyncio.wrap_future(channel.submit(RequestKind.RESOURCE, uri, None))
        if answer.is_error:
            raise MCPError(code=types.INVALID_PARAMS, message=answer.text)
        return types.ReadResourceResult(
            contents=[types.TextResourceContents(uri=uri, mime_type=answer.mime_type, text=answer.text)]
        )

    async def hello(ctx: ServerRequestContext[Any, Any], call_next: CallNext) -> Any:
        """Take the client's name from a successful initialize (or from the client info a request carries)."""
        result = await call_next(ctx)
        params = ctx.params or {}
        name = _client_name(params.get("clientInfo")) if ctx.method == "initialize" else None
        if name is None and ctx.session.client_params is not None:
            name = _client_name(ctx.session.client_params.client_info)
        if name is not None:
            channel.hello(name)
        return result

    server: Server[Any] = Server(
        SERVER_NAME,
        version=__version__,
        instructions=INSTRUCTIONS,
        on_list_tools=list_tools,
        on_call_tool=call_tool,
        on_list_resources=list_resources,
        on_read_resource=read_resource,
    )
    server.middleware.append(hello)
    return server


async def _watch(
    stop: threading.Event, scope: anyio.CancelScope | None, on_stop: Callable[[], None] | None = None
) -> None:
    while not stop.is_set():
        await anyio.sleep(WATCH_PERIOD_S)
    if on_stop is not None:
        on_stop()
    if scope is not None:
        scope.cancel()


async def serve_stdio(
    server: Server[Any], channel: CallChannel, stop: threading.Event, *, started: Callable[[], None]
) -> None:
    """Serve over stdin/stdout until the client closes stdin or ``stop`` is set; ``started()`` once stdout is held
    (stray output of this process goes to stderr from then on)."""
    async with anyio.create_task_group() as group:
        group.start_soon(_watch, stop, group.cancel_scope)
        async with stdio_server() as (read_stream, write_stream):
            started()
            await server.run(read_stream, write_stream, server.create_initialization_options())
        channel.disconnect(DISCONNECTED_STDIO)
        group.cancel_scope.cancel()


def check_host(host: str) -> None:
    """ConfigError unless ``host`` is the loopback address the server binds to."""
    if host != LOCAL_HOST:
        raise ConfigError(f"--host must be {LOCAL_HOST}: the robot is served to this machine only (got {host!r})")


def _watch_deletes(app: Callable[[Scope, Receive, Send], Awaitable[None]], channel: CallChannel) -> Any:
    """``app``, telling ``channel`` when a DELETE (the client ending its session) was answered with success."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope.get("method") != "DELETE":
            await app(scope, receive, send)
            return
        status: list[int] = []

        async def watching(message: Message) -> None:
            if message["type"] == "http.response.start":
                status.append(int(message["status"]))
            await send(message)

        await app(scope, receive, watching)
        if status and status[0] < 300:
            channel.disconnect(DISCONNECTED_HTTP)

    return wrapped


def _close_after_refusals(app: Callable[[Scope, Receive, Send], Awaitable[None]]) -> Any:
    """``app``, closing the connection after it refuses a body as too large (413): uvicorn would otherwise go on
    reading a sender's refused body to its end (keeping the connection alive), the reading the refusal is for
    sparing."""

    async def wrapped(scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await app(scope, receive, send)
            return

        async def closing(message: Message) -> None:
            if message["type"] == "http.response.start" and message["status"] == HTTPStatus.REQUEST_ENTITY_TOO_LARGE:
                message = {**message, "headers": [*message.get("headers", []), (b"connection", b"close")]}
            await send(message)

        await app(scope, receive, closing)

    return wrapped


async def serve_http(
    server: Server[Any],
    channel: CallChannel,
    stop: threading.Event,
    *,
    host: str,
    port: int,
    idle_timeout_s: float,
    started: Callable[[], None],
    unix_socket: Path | None = None,
) -> None:
    """Serve streamable HTTP on ``host``:``port`` (127.0.0.1 only; port 0: a free one) until ``stop`` is set. One
    session at a time; the URL is printed on stderr and ``started()`` called once the socket listens. With
    ``unix_socket`` it listens there instead (a sandbox reaches it through its own loopback: robo_shell.forward),
    and ``host``:``port`` is only what the client's requests name."""
    check_host(host)
    app = server.streamable_http_app(
        streamable_http_path=HTTP_PATH, host=host, max_sessions=1, session_idle_timeout=idle_timeout_s
    )
    where: dict[str, Any] = {"host": host, "port": port} if unix_socket is None else {"uds": str(unix_socket)}
    served = _close_after_refusals(_watch_deletes(app, channel))
    config = uvicorn.Config(served, **where, log_level="warning", lifespan="on")
    web = uvicorn.Server(config)

    def stop_web() -> None:
        web.should_exit = True

    async def announce() -> None:
        while not web.started:
            await anyio.sleep(WATCH_PERIOD_S / 10)
        if unix_socket is None:
            bound = web.servers[0].sockets[0].getsockname()[1]
            print(f"robodojo mcp: serving http://{host}:{bound}{HTTP_PATH}", file=sys.stderr, flush=True)
        started()

    async with anyio.create_task_group() as group:
        group.start_soon(_watch, stop, None, stop_web)
        group.start_soon(announce)
        await web.serve()
        group.cancel_scope.cancel()
