"""``robodojo mcp``: one episode of the embedded world served to an MCP client (robodojo.agents.mcp).

Two threads: this one serves the MCP transport (stdio or streamable HTTP, asyncio); the episode thread builds the
world, waits for the client to introduce itself, and runs the episode with the normal runner
(:func:`~robodojo.episodes.runner.run_episode`), the :class:`~robodojo.agents.mcp.agent.McpAgent` taking the
client's calls one at a time. When the episode ends, every later call is answered with why; the server stops once
the client is gone (or silent for the idle timeout).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from typing import Protocol

import anyio

from robodojo.agents.mcp.agent import McpAgent, McpClientModel
from robodojo.agents.mcp.channel import CallChannel
from robodojo.agents.mcp.server import build_server, check_host, serve_http, serve_stdio
from robodojo.agents.mcp.settings import LOCAL_HOST, TOOL_SETS, TRANSPORTS, McpSettings, load_mcp_settings
from robodojo.agents.mcp.tool_sets import make_tools
from robodojo.episodes.clock import PAUSED_CLOCK, ClockSetting
from robodojo.episodes.hosts import EpisodeHost, WorldHost
from robodojo.episodes.runner import run_episode
from robodojo.episodes.spec import EpisodeResult, EpisodeSpec
from robodojo.errors import ConfigError
from robodojo.robots.config import RobotConfig, load_robot_config
from robodojo.sim.tasks import get_task
from robodojo.sim.world import EmbeddedWorld

SERVER_FAILED = "the episode ended with an error of the robot server; nothing moved"
SERVER_STOPPED = "the robot server stopped"
INTERRUPT_POLL_S = 0.2  # how often the interruption is looked at (it is also the stop's latency)


@dataclass(frozen=True)
class McpPlan:
    """One ``robodojo mcp`` run."""

    spec: EpisodeSpec  #: its llm_call_budget is the call budget
    tools: str  #: robo | move_eef
    transport: str  #: stdio | http
    out: Path  #: the episode record goes under here
    host: str = LOCAL_HOST
    port: int = 0  #: http: 0 picks a free port (printed on stderr)
    clock: ClockSetting = PAUSED_CLOCK  #: the world time each of the client's decisions costs (robodojo.episodes.clock)

    def __post_init__(self) -> None:
        if self.tools not in TOOL_SETS:
            raise ConfigError(f"unknown tool set {self.tools!r}; tool sets: {', '.join(TOOL_SETS)}")
        if self.transport not in TRANSPORTS:
            raise ConfigError(f"unknown transport {self.transport!r}; transports: {', '.join(TRANSPORTS)}")
        if self.transport == "http":
            check_host(self.host)


def ended_text(result: EpisodeResult) -> str:
    """What a call after the episode gets."""
    outcome = "success" if result.success else "no success"
    return (
        f"the episode is over (ended by {result.end_reason.value}: {outcome}, score {result.score:.2f}); "
        "this call was not run and nothing moved"
    )


@contextmanager
def embedded_host(robot: RobotConfig) -> Iterator[EpisodeHost]:
    """The embedded world of ``robot`` in this process, closed after the episode."""
    world = EmbeddedWorld(robot.name)
    try:
        yield WorldHost(world)
    finally:
        world.close()


class Interruption(Protocol):
    """What tells a server to stop early (the agent node's ShutdownNotice)."""

    def wait(self, timeout_s: float) -> bool: ...


def serve_episode(
    plan: McpPlan,
    settings: McpSettings | None = None,
    *,
    open_host: Callable[[RobotConfig], AbstractContextManager[EpisodeHost]] = embedded_host,
    interrupted: Interruption | None = None,
) -> EpisodeResult | None:
    """Serve one episode to an MCP client until it is over and the client is gone; its result (None if the episode
    thread never got to run it). ``open_host`` gives the episode's host (default: the embedded world; the agent node
    passes the graph's); ``interrupted``, once it fires, ends a running episode as interrupted, with its record, and
    stops the server."""
    settings = settings or load_mcp_settings()
    robot = load_robot_config(get_task(plan.spec.task).robot)
    channel = CallChannel(idle_timeout_s=settings.idle_timeout_s, max_pending=settings.max_pending_calls)
    agent = McpAgent(make_tools(plan.tools, robot), channel, settings, transport=plan.transport)
    server = build_server(agent, channel)
    stop = threading.Event()
    outcome: dict[str, EpisodeResult | BaseException] = {}

    def episode() -> None:
        try:
            with open_host(robot) as host:
                try:
                    client = channel.wait_client(settings.idle_timeout_s) or ""
                    agent.client_name = client
                    llm = McpClientModel(plan.transport, client)
                    result = run_episode(host, agent, llm, plan.spec, plan.out, model=client, clock=plan.clock)
                    outcome["result"] = result
                    channel.end(ended_text(result))
                finally:
                    agent.close()
            channel.wait_gone()
        except BaseException as exc:
            outcome["error"] = exc
            channel.end(SERVER_FAILED)
        finally:
            stop.set()

    def watch() -> None:
        while not stop.is_set():
            if interrupted is not None and interrupted.wait(INTERRUPT_POLL_S):
                channel.disconnect(SERVER_STOPPED)  # the episode ends as interrupted, its record written
                return

    if interrupted is not None:
        threading.Thread(target=watch, name="mcp-interruption", daemon=True).start()
    thread = threading.Thread(target=episode, name="mcp-episode", daemon=True)
    started = thread.start  # once the transport holds stdout: nothing the world prints reaches the protocol
    try:
        if plan.transport == "stdio":
            anyio.run(partial(serve_stdio, server, channel, stop, started=started))
        else:
            serve = partial(serve_http, server, channel, stop, host=plan.host, port=plan.port, started=started)
            anyio.run(partial(serve, idle_timeout_s=settings.idle_timeout_s))
    finally:
        channel.disconnect(SERVER_STOPPED)
        if thread.ident is not None:
            thread.join()
    error = outcome.get("error")
    if isinstance(error, BaseException):
        raise error
    result = outcome.get("result")
    return result if isinstance(result, EpisodeResult) else None
