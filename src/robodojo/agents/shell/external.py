"""A coding-agent command line (mini-swe-agent, Codex CLI, ...) as the shell harness's acting agent (seed 003).

The whole CLI runs inside the episode's sandbox (robodojo.agents.shell.workspace): it runs its own command loop, and
its commands reach the robot through ``robo`` like the built-in agent's. Its model calls go to
``http://127.0.0.1:<model_port>/v1`` on the sandbox's loopback; robo_shell.forward pipes them to the harness's
:class:`~robodojo.agents.shell.model_proxy.ModelProxy`, and the episode's own LLM client answers them. So the API
key never enters the sandbox, and the episode runner sees every model call as a turn: its budget, usage and record
apply unchanged.

A turn is one model call of the CLI plus everything the CLI did until its next call: the call is made, its answer
handed back, and the robot commands the CLI sends are served until it asks again, exits, or runs ``robo done``.
"""

from __future__ import annotations

from dataclasses import asdict
from pathlib import Path
from typing import Any

from robodojo.agents.base import EpisodeContext, LlmCaller, TurnRecord
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
from robodojo.agents.shell.commands import BaseCommands
from robodojo.agents.shell.model_proxy import ChatExchange, ModelProxy
from robodojo.agents.shell.prompts import GOAL_TEMPLATE
from robodojo.agents.shell.sandbox import Mount, sandbox_boundary
from robodojo.agents.shell.settings import CodingAgentCli, ShellSettings, load_shell_settings
from robodojo.agents.shell.workspace import ShellWorkspace

__all__ = ["CodingAgentError", "ExternalShellAgent"]


class ExternalShellAgent:
    """A coding-agent CLI, configured in config/agents/shell.yaml (``coding_agents``), run in the sandbox."""

    name = "shell"

    def __init__(self, cli: str, *, settings: ShellSettings | None = None, tools_root: Path | None = None) -> None:
        self.settings = settings or load_shell_settings()
        self.cli: CodingAgentCli = self.settings.coding_agents.get(cli)
        require_installed(self.cli)
        self.tools_root = tools_root
        self.workspace: ShellWorkspace | None = None
        self.run: CliRun | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "coding_agent": self.cli.name,
            "tools_root": str(self.tools_root) if self.tools_root else None,
            "sandbox": sandbox_boundary(self.settings.sandbox),
        }

    # -- episode ---------------------------------------------------------------------------------------------------
    def begin(self, episode: EpisodeContext) -> None:
        self.close()
        self.episode = episode
        coding = self.settings.coding_agents

        def fill(text: str) -> str:
            return fill_placeholders(text, coding)

        task_tools = self.tools_root / episode.task if self.tools_root is not None else None
        self.workspace = ws = ShellWorkspace(
            self.settings,
            lambda argv: self.commands.run(argv),
            task_tools=task_tools,
            extra_mounts=[Mount(self.cli.install, "/opt/agent")],
            extra_env={name: fill(value) for name, value in self.cli.env.items()},
        )
        self.commands = BaseCommands(episode, self.settings.commands, ws.obs_dir, obs_note=ws.obs_note)
        goal = GOAL_TEMPLATE.format(instruction=episode.instruction, recipe=episode.recipe)
        (ws.etc_dir / TASK_FILE).write_text(f"{goal}\n\n{ws.manual()}")
        if self.cli.config_template is not None:
            (ws.etc_dir / self.cli.config_template.name).write_text(fill(self.cli.config_template.read_text()))
        script = cli_script(fill(self.cli.command), {coding.model_port: PROXY_SOCKET})
        proxy = ModelProxy(ws.route.path.parent / PROXY_SOCKET, model=MODEL_NAME)
        self.run = CliRun(ws.sandbox, script, proxy, coding.run_timeout_s)
        self._pending = self._next_exchange()
        self._early_calls = ws.route.take_calls()  # robot commands before the first model call

    def _next_exchange(self) -> ChatExchange | None:
        """Serve robot commands until the CLI asks its model (the request), exits or declares done (None)."""
        assert self.workspace is not None and self.run is not None
        run = self.run

        def waiting() -> bool:
            return run.proxy.pending.empty() and run.running and self.commands.declared_done is None

        self.workspace.route.serve_while(waiting, run.deadline_s)
        return run.next_request() if self.commands.declared_done is None else None

    def turn(self, llm: LlmCaller, turn: int) -> TurnRecord:
        assert self.workspace is not None
        exchange = self._pending
        if exchange is None:
            raise CodingAgentError(
                self.run.unasked_text(self.cli.name) if self.run else f"{self.cli.name} was not started"
            )
        messages = exchange.body["messages"]
        reply = answer_exchange(exchange, llm)
        self._pending = self._next_exchange()
        calls = [*self._early_calls, *self.workspace.route.take_calls()]
        self._early_calls = []
        ended = self._pending is None
        details: dict[str, Any] = {"coding_agent": self.cli.name, "robot_commands": len(calls)}
        if ended:
            details.update(self._end_details())
        texts = [f"{self.cli.name}: {len(calls)} robot command(s) until its next model call"]
        return TurnRecord(
            turn, list(messages), reply, texts, "shell", finished=ended, details=details,
            robo_calls=[asdict(c) for c in calls],
        )  # fmt: skip

    def _end_details(self) -> dict[str, Any]:
        assert self.run is not None
        details = self.run.end_details()
        if self.commands.declared_done is not None:
            details["done_reason"] = self.commands.declared_done
            details.pop("timed_out", None)
        return details

    def close(self) -> None:
        if self.run is not None:
            self.run.close()
            self.run = None
        if self.workspace is not None:
            self.workspace.close()
            self.workspace = None
