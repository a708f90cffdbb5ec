"""One coding-agent CLI started in a sandbox, with the model proxy it calls: its process, its output and its end; the
placeholders of its configuration, the script it runs as, and its model calls answered by the episode's client.

Used by both ways a CLI acts: in the shell harness (robodojo.agents.shell.external) and as the MCP client of the
robot server (robodojo.agents.mcp.cli_agent).
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Mapping
from typing import Any

from robodojo.agents.base import LlmCaller
from robodojo.agents.llm.types import ChatReply, LlmError
from robodojo.agents.shell.model_proxy import ChatExchange, ModelProxy, error_body
from robodojo.agents.shell.output import PipeReader
from robodojo.agents.shell.sandbox import RUN, Sandbox
from robodojo.agents.shell.settings import CodingAgentCli, CodingAgents
from robodojo.agents.shell.workspace import KILL_GRACE_S, kill_group
from robodojo.errors import ConfigError, RobodojoError

LOG_TAIL_CHARS = 3000
PROXY_SOCKET = "model.sock"  #: the model proxy's socket, in the folder shown at /run/robo inside
TASK_FILE = "task.md"  #: the goal, in /opt/robo/etc inside
MODEL_NAME = "robodojo"  #: what the CLI is told its model is called; the episode's client decides the real one
INSTALL_HINT = "make setup installs mini-swe-agent, make agents the coding-agent CLIs from npm"
FORWARDER = "python3 -m robo_shell.forward"
FORWARDER_START_S = 0.2  # the forwarders listen before the CLI's first request
OUTPUT_DRAIN_S = 2.0  # an ended CLI's output still in its pipe is read for at most this long before it is quoted


class CodingAgentError(RobodojoError):
    """The coding agent ended before it asked its model anything, or cannot be started."""


def require_installed(cli: CodingAgentCli) -> None:
    """ConfigError unless ``cli``'s installation is there."""
    if not cli.installed:
        raise ConfigError(f"coding agent {cli.name!r} is not installed at {cli.install} ({INSTALL_HINT})")


def fill_placeholders(text: str, coding: CodingAgents) -> str:
    """A CLI's command, variable or configuration file with its placeholders filled in: {model_port}, {mcp_port}
    (the sandbox's loopback ports of the model proxy and the robot's MCP server) and {model}."""
    values = {"{model_port}": coding.model_port, "{mcp_port}": coding.mcp_port, "{model}": MODEL_NAME}
    for key, value in values.items():
        text = text.replace(key, str(value))
    return text


def cli_script(command: str, forwards: Mapping[int, str]) -> str:
    """The bash script a CLI runs as in the sandbox: a forwarder per loopback port to its socket under /run/robo
    (``forwards``: port -> socket name), then ``command``."""
    lines = [f"{FORWARDER} --listen 127.0.0.1:{port} --to {RUN}/{socket} &" for port, socket in forwards.items()]
    return "\n".join([*lines, f"sleep {FORWARDER_START_S:g}", command])


def answer_exchange(exchange: ChatExchange, llm: LlmCaller) -> ChatReply:
    """Make the CLI's model call with the episode's client and hand the answer back (a failed call: a 502 with why,
    and the LlmError raised for the runner)."""
    body = exchange.body
    tools = body.get("tools") or []
    try:
        reply = llm.chat(body["messages"], tools, tool_choice=body.get("tool_choice") or ("auto" if tools else None))
    except LlmError as exc:
        exchange.answer(error_body(f"the model call failed: {exc}", "upstream_error"), 502)
        raise
    exchange.answer(reply.raw or openai_body(reply))
    return reply


def openai_body(reply: ChatReply) -> dict[str, Any]:
    """A chat-completions response body for a reply without the upstream's own (a test double's)."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.tool_calls:
        message["tool_calls"] = [
            {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": c.arguments}}
            for c in reply.tool_calls
        ]
    return {
        "id": "robodojo",
        "object": "chat.completion",
        "model": reply.model,
        "choices": [{"index": 0, "message": message, "finish_reason": reply.finish_reason}],
        "usage": {"prompt_tokens": reply.usage.input_tokens, "completion_tokens": reply.usage.output_tokens,
                  "total_tokens": reply.usage.input_tokens + reply.usage.output_tokens},
    }  # fmt: skip


class CliRun:
    """``script`` (bash) started in ``sandbox`` now, its model calls arriving on ``proxy``; it may run until
    ``timeout_s`` has passed. Its output is read while it runs (head and tail kept)."""

    def __init__(self, sandbox: Sandbox, script: str, proxy: ModelProxy, timeout_s: float) -> None:
        self.proxy = proxy
        self.deadline_s = time.monotonic() + timeout_s  #: time.monotonic() when it is out of time
        self.process = sandbox.shell(script, stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert self.process.stdout is not None
        self._log = PipeReader(self.process.stdout, LOG_TAIL_CHARS)

    @property
    def running(self) -> bool:
        return self.process.poll() is None

    def next_request(self) -> ChatExchange | None:
        """The model request waiting at the proxy, if any."""
        return None if self.proxy.pending.empty() else self.proxy.pending.get_nowait()

    def log_tail(self) -> str:
        """The head and tail of what the CLI printed so far (all it printed, once it has ended)."""
        if not self.running:
            # Its last words may still be in the pipe, behind the exit the caller saw: read to the pipe's end (the
            # sandbox's other processes end with it) before quoting them.
            self._log.finish(OUTPUT_DRAIN_S)
        return self._log.output.text(LOG_TAIL_CHARS)

    def unasked_text(self, name: str) -> str:
        """Why a turn cannot be made: the CLI ``name`` ended without a model request waiting, and what it said."""
        return f"{name} ended before asking its model anything (exit {self.process.poll()}):\n{self.log_tail()}"

    def end_details(self) -> dict[str, Any]:
        """For the last turn's record: its exit code (None while it runs), its output, whether it ran out of time."""
        details: dict[str, Any] = {"exit_code": self.process.poll(), "log_tail": self.log_tail()}
        if self.running and time.monotonic() >= self.deadline_s:
            details["timed_out"] = True
        return details

    def close(self) -> None:
        """Kill it (its whole process group) if it still runs; stop its proxy."""
        if self.running:
            kill_group(self.process)
        self._log.finish(KILL_GRACE_S)
        self.proxy.close()
