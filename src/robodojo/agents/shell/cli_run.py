"""One coding-agent CLI started in a sandbox, with the model proxy it calls: its process, its output and its end.

Used by both ways a CLI acts: in the shell harness (robodojo.agents.shell.external) and as the MCP client of the
robot server (robodojo.agents.mcp.cli_agent).
"""

from __future__ import annotations

import subprocess
import time
from typing import Any

from robodojo.agents.shell.model_proxy import ChatExchange, ModelProxy
from robodojo.agents.shell.output import PipeReader
from robodojo.agents.shell.sandbox import Sandbox
from robodojo.agents.shell.workspace import KILL_GRACE_S, kill_group

LOG_TAIL_CHARS = 3000


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
        """The head and tail of what the CLI printed so far."""
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
