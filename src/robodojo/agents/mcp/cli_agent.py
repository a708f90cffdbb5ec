"""A coding-agent CLI (Codex, opencode, Claude Code) as the MCP client of the episode's robot server: ``mcp:<cli>``.

The CLI runs whole in the shell harness's sandbox (no network, no ``robo`` command): the robot reaches it only as
MCP tools. Two Unix sockets in the sandbox's read-only run folder carry everything it may reach, each exposed on the
sandbox's own loopback by robo_shell.forward:

- ``model.sock``: the model proxy (robodojo.agents.shell.model_proxy): its model calls, answered by the episode's own
  LLM client (the key never inside; the runner's call budget, usage and record apply);
- ``mcp.sock``: this episode's MCP server (robodojo.agents.mcp.server, streamable HTTP), whose calls go through the
  :class:`~robodojo.agents.mcp.channel.CallChannel` to :class:`~robodojo.agents.mcp.agent.McpAgent`: the same tools,
  bounds, refusals and texts as ``robodojo mcp`` serves any client.

A turn is one model call of the CLI and the tool calls it makes until its next model call, as for the shell
harness's CLIs (robodojo.agents.shell.external): the runner counts model calls against the LLM-call budget. The turn
ends early when a call gives up or declares the task done, when the task succeeds or the step budget is spent (the
runner then ends the episode, and every later call is answered that it is over), and when the CLI exits.
"""

from __future__ import annotations

import shutil
import tempfile
import threading
import time
from functools import partial
from pathlib import Path
from typing import Any

import anyio

from robodojo.agents.base import EpisodeContext, LlmCaller, TurnRecord
from robodojo.agents.mcp.agent import McpAgent
from robodojo.agents.mcp.channel import CallChannel
from robodojo.agents.mcp.server import build_server, serve_http
from robodojo.agents.mcp.settings import LOCAL_HOST, McpSettings, load_mcp_settings
from robodojo.agents.mcp.tool_sets import make_tools
from robodojo.agents.mcp.toolset import CallOutcome
from robodojo.agents.shell.cli_run import (
    MODEL_NAME,
    PROXY_SOCKET,
    TASK_FILE,
    CliRun,
    CodingAgentError,
    answer_exchange,
    cli_script,
    fill_placeholders,
    require_installed,
)
from robodojo.agents.shell.model_proxy import ChatExchange, ModelProxy
from robodojo.agents.shell.sandbox import OPT, Mount, Sandbox, sandbox_boundary
from robodojo.agents.shell.settings import CodingAgentCli, ShellSettings, load_shell_settings
from robodojo.agents.text_limits import quote
from robodojo.errors import ConfigError
from robodojo.motion.report import MoveReport, StopReason

MCP_SOCKET = "mcp.sock"
POLL_S = 0.01  # how often the CLI's two channels (model calls, tool calls) are looked at while it works
SERVER_START_S = 30.0
GOAL = """{instruction}

{recipe}

You control the robot only through the tools of the MCP server "robodojo": read its resources (the instruction, the
cameras, the manual), call observe to look, and move with its tools. Calls run one at a time. Stop when the task is
done.
"""


def check_mcp_client(cli: CodingAgentCli) -> None:
    """ConfigError unless ``cli`` can run as an MCP client here (configured for it, and installed)."""
    if cli.mcp_client is None:
        raise ConfigError(f"coding agent {cli.name!r} has no mcp_client configuration (config/agents/shell.yaml)")
    require_installed(cli)


class McpCliAgent:
    """``mcp:<cli>``: the episode served over MCP to a coding-agent CLI in the sandbox (see the module docstring)."""

    name = "mcp"

    def __init__(
        self, cli: str, *, settings: McpSettings | None = None, shell_settings: ShellSettings | None = None
    ) -> None:
        self.settings = settings or load_mcp_settings()
        self.shell_settings = shell_settings or load_shell_settings()
        self.cli = self.shell_settings.coding_agents.get(cli)
        check_mcp_client(self.cli)
        self.agent: McpAgent | None = None
        self.channel: CallChannel | None = None
        self.run: CliRun | None = None
        self.root: Path | None = None
        self._stop = threading.Event()
        self._server: threading.Thread | None = None
        self._pending: ChatExchange | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "coding_agent": self.cli.name,
            "tools": self.settings.cli_tools,
            "transport": "http (sandbox loopback)",
            "sandbox": sandbox_boundary(self.shell_settings.sandbox),
        }

    # -- episode ---------------------------------------------------------------------------------------------------
    def begin(self, episode: EpisodeContext) -> None:
        self.close()
        self.episode = episode
        coding = self.shell_settings.coding_agents
        mode = self.cli.mcp_client
        assert mode is not None  # check_mcp_client

        def fill(text: str) -> str:
            return fill_placeholders(text, coding)

        self.root = root = Path(tempfile.mkdtemp(prefix="robodojo-mcp-cli-"))
        # sockets/ is /run/robo inside (read-only: its sockets connect all the same); work/ the CLI's home
        work, sockets, run_dir, etc = root / "work", root / "sockets", root / "run", root / "run" / "etc"
        for folder in (work, sockets, run_dir, etc):
            folder.mkdir(parents=True)
        (etc / TASK_FILE).write_text(GOAL.format(instruction=episode.instruction, recipe=episode.recipe))
        for template in (self.cli.config_template, mode.config_template):
            if template is not None:
                (etc / template.name).write_text(fill(template.read_text()))
        self.channel = CallChannel(
            idle_timeout_s=self.settings.idle_timeout_s, max_pending=self.settings.max_pending_calls
        )
        self.agent = McpAgent(
            make_tools(self.settings.cli_tools, episode.robot), self.channel, self.settings, transport="http"
        )
        self.agent.client_name = self.cli.name
        self.agent.begin(episode)
        self._start_server(sockets / MCP_SOCKET, coding.mcp_port)
        sandbox = Sandbox(
            self.shell_settings.sandbox, work, sockets, run_dir,
            tool_mounts=[Mount(self.cli.install, "/opt/agent"), Mount(etc, f"{OPT}/etc")],
            env={name: fill(value) for name, value in {**self.cli.env, **mode.env}.items()},
        )  # fmt: skip
        script = cli_script(fill(mode.command), {coding.model_port: PROXY_SOCKET, coding.mcp_port: MCP_SOCKET})
        proxy = ModelProxy(sockets / PROXY_SOCKET, model=MODEL_NAME)
        self.run = CliRun(sandbox, script, proxy, coding.run_timeout_s)
        self._pending, early = self._work_until_model_call()
        if early:
            raise CodingAgentError(f"{self.cli.name} called the robot's tools before asking its model anything")

    def _start_server(self, socket_path: Path, port: int) -> None:
        assert self.agent is not None and self.channel is not None
        server = build_server(self.agent, self.channel)
        listening = threading.Event()
        failure: list[BaseException] = []
        self._stop.clear()

        serving = partial(
            serve_http, server, self.channel, self._stop, host=LOCAL_HOST, port=port,
            idle_timeout_s=self.settings.idle_timeout_s, started=listening.set, unix_socket=socket_path,
        )  # fmt: skip

        def serve() -> None:
            try:
                anyio.run(serving)
            except BaseException as exc:  # said by begin() when it never listened
                failure.append(exc)
                listening.set()

        self._server = threading.Thread(target=serve, name="mcp-cli-server", daemon=True)
        self._server.start()
        if not listening.wait(SERVER_START_S) or failure:
            raise CodingAgentError(f"the robot's MCP server did not start: {failure[0] if failure else 'timed out'}")

    def _stopping(self, outcome: CallOutcome) -> bool:
        """Whether the turn ends after this call: the agent ended it, or the task is decided."""
        if outcome.finished or outcome.gave_up:
            return True
        return self.episode.is_success() or self.episode.backend.steps_left <= 0

    def _work_until_model_call(self) -> tuple[ChatExchange | None, list[tuple[str, CallOutcome]]]:
        """Serve the CLI's tool calls until it asks its model (that request), exits, runs past its time or ends the
        turn by a call (None); the calls served, in order."""
        assert self.agent is not None and self.channel is not None and self.run is not None
        run = self.run
        served: list[tuple[str, CallOutcome]] = []
        while time.monotonic() < run.deadline_s:
            if (exchange := run.next_request()) is not None:
                return exchange, served
            request = self.channel.poll(POLL_S)
            if request is not None:
                outcome = self.agent.handle(request)
                if outcome is not None:
                    served.append((request.name, outcome))
                    if self._stopping(outcome):
                        return None, served
                continue
            if not run.running:
                return run.next_request(), served
        return None, served

    def turn(self, llm: LlmCaller, turn: int) -> TurnRecord:
        exchange = self._pending
        if exchange is None:
            raise CodingAgentError(
                self.run.unasked_text(self.cli.name) if self.run else f"{self.cli.name} was not started"
            )
        messages = exchange.body["messages"]
        reply = answer_exchange(exchange, llm)
        self._pending, served = self._work_until_model_call()
        ended = self._pending is None
        outcomes = [outcome for _, outcome in served]
        moves = [o.move for o in outcomes if o.move is not None]
        details: dict[str, Any] = {
            "coding_agent": self.cli.name,
            "tool_calls": [{"tool": name, "refused": o.answer.is_error, **dict(o.details)} for name, o in served],
        }
        if ended and self.run is not None:
            details.update(self.run.end_details())
        texts = [f"{quote(name)}: {o.answer.text}" for name, o in served] or [
            f"{self.cli.name}: no robot tool call until its next model call"
        ]
        return TurnRecord(
            turn, list(messages), reply, texts, outcomes[-1].action if outcomes else "mcp",
            move=_telling_move(moves), gave_up=any(o.gave_up for o in outcomes),
            finished=ended and not any(o.gave_up for o in outcomes), details=details,
            robo_calls=[call for o in outcomes for call in o.robo_calls],
        )  # fmt: skip

    def close(self) -> None:
        if self.channel is not None:
            self.channel.end("the episode is over; this call was not run and nothing moved")
        if self.run is not None:
            self.run.close()
            self.run = None
        self._stop.set()
        if self._server is not None:
            self._server.join(timeout=SERVER_START_S)
            self._server = None
        if self.agent is not None:
            self.agent.close()
            self.agent = None
        self.channel = None
        if self.root is not None:
            shutil.rmtree(self.root, ignore_errors=True)
            self.root = None


def _telling_move(moves: list[MoveReport]) -> MoveReport | None:
    """The move the turn reports: one whose backend was lost (the runner ends the episode on it), else the last."""
    lost = [m for m in moves if m.stop_reason is StopReason.BACKEND_LOST]
    return (lost or moves)[-1] if moves else None
