"""The optimizer of seed 003's repair loop: a shell agent that edits a task's tools after an episode.

After a failure it reads the episode's record (mounted read-only at /opt/robo/evidence: every command the acting
agent ran and its output, every robot command with its JSON record, the camera frames, the metrics) and the tool
code, writes its diagnosis to ``skill.md``, and adds or fixes one tool with its unit tests. After a success it adds
an entry to ``playbook.md``. It writes only under the task's tool folder (/opt/robo/tools/task, the one writable
mount besides its scratch home: a copy, brought back after the round as regular files and folders only, so no link
or FIFO it leaves is ever opened by the harness); the shared pool is read-only; there is no robot (``robo``
answers only ``done``, which ends the round). The round is checked afterwards by robodojo.agents.shell.delivery.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from robodojo.agents.base import LlmCaller
from robodojo.agents.context_budget import ContextBudget
from robodojo.agents.context_fit import chat_within_context
from robodojo.agents.conversation import Conversation
from robodojo.agents.llm.types import Usage
from robodojo.agents.shell.agent import (
    SEVERAL_TOOL_CALLS_TEXT,
    TOOL_CHOICE,
    VIEW_IMAGE,
    shell_call_validator,
    show_image,
    tool_schemas,
)
from robodojo.agents.shell.sandbox import TOOLS, Mount
from robodojo.agents.shell.settings import ShellSettings
from robodojo.agents.shell.workspace import ShellWorkspace
from robodojo.agents.text_limits import default_text_limits

EVIDENCE = "/opt/robo/evidence"
IMAGE_HORIZON = 2
NO_TOOL_CALL_TEXT = "Your reply called no tool; call exactly one tool per turn (shell or view_image); nothing ran"

SYSTEM = """\
You maintain the tools of a robot coding agent. That agent operates a robot from a shell through the `robo` command \
(its manual is in /opt/robo/etc/manual.md); tools add sub-commands to robo. Each turn call exactly one tool: \
shell(command) runs a bash command, view_image(path) shows you an image (paths under {evidence} work).

A tool is a folder {tools}/task/<name>/ with tool.py (NAME, COMMANDS, run(api, command, args) over \
robo_shell.api.EpisodeAPI), interface.md (what the agent reads; it must name neither the task nor its objects) and \
unit tests test_*.py (pytest; run them with `python3 -m pytest -q --import-mode=importlib {tools}/task`). Tools may \
import only the standard library, numpy, cv2, robo_shell and robodojo.perception/geometry/observation. A tool runs \
only when its name is in {tools}/task/enabled_tools.txt. The shared pool {tools}/pool (table_plane, pick) is \
read-only; read it for examples. You may write only under {tools}/task. There is no robot here.

When your work is done, run `robo done`. You have {calls} calls for this round."""

REPAIR_GOAL = """\
The agent failed on a layout of the task. Its episode is in {evidence}: {guide}.
Find why it failed. Write your diagnosis to {tools}/task/skill.md (append; keep earlier entries). Then add or fix \
ONE tool in {tools}/task with a unit test that fails without your fix, make the tests pass, enable the tool in \
enabled_tools.txt, and run `robo done`. Task: {instruction}"""

PLAYBOOK_GOAL = """\
The agent succeeded on a layout of the task. Its episode is in {evidence}. Append a short entry to \
{tools}/task/playbook.md on which tools worked and why, then run `robo done`. Task: {instruction}"""

RoundKind = Literal["repair", "playbook"]


@dataclass
class RoundRecord:
    """One optimizer round: its turns (command, output), calls, usage and whether it ended with ``robo done``."""

    kind: RoundKind
    turns: list[dict[str, Any]] = field(default_factory=list)
    calls: int = 0
    usage: Usage = field(default_factory=Usage)
    declared_done: bool = False
    wall_s: float = 0.0
    error: str = ""
    #: what the round left in the tool folder that was not brought back (links, FIFOs, ...: "grab/x: a FIFO")
    refused_files: list[str] = field(default_factory=list)


class Optimizer:
    """Runs optimizer rounds with one LLM; each round in a fresh sandbox."""

    def __init__(self, settings: ShellSettings, llm: LlmCaller) -> None:
        self.settings = settings
        self.llm = llm
        self.tools = tool_schemas(settings.agent.max_command_chars)
        self.text_limits = default_text_limits()

    def run_round(self, kind: RoundKind, task_tools: Path, evidence: Path, instruction: str, guide: str) -> RoundRecord:
        """One round on the episode folder ``evidence`` (mounted read-only), ``guide`` saying what its files hold."""
        record = RoundRecord(kind)
        started = time.monotonic()
        done: list[str] = []

        def handler(argv: list[str]) -> dict[str, Any]:
            if argv[:1] == ["done"]:
                done.append(" ".join(argv[1:]))
                return {"ok": True, "command": "done", "verdict": "executed", "episode_over": True}
            reason = "there is no robot in the optimizer's sandbox; only `robo done` (end the round)"
            return {"ok": False, "command": argv[0] if argv else "", "verdict": "refused", "reason": reason}

        ws = ShellWorkspace(
            self.settings,
            handler,
            task_tools=task_tools,
            task_tools_writable=True,
            extra_mounts=[Mount(evidence, EVIDENCE)],
        )
        try:
            (ws.etc_dir / "manual.md").write_text(ws.manual())
            conversation = Conversation(
                IMAGE_HORIZON, self.text_limits, ContextBudget(), max_arguments_chars=self.settings.agent.max_call_chars
            )
            calls = self.settings.optimizer.max_calls_per_round
            conversation.add({"role": "system", "content": SYSTEM.format(tools=TOOLS, evidence=EVIDENCE, calls=calls)})
            goal = REPAIR_GOAL if kind == "repair" else PLAYBOOK_GOAL
            conversation.add({"role": "user", "content": goal.format(tools=TOOLS, evidence=EVIDENCE, guide=guide,
                                                                     instruction=instruction)})  # fmt: skip
            validate = shell_call_validator(self.settings.agent.max_command_chars)
            while record.calls < calls and not done:
                _, reply = chat_within_context(conversation, self.llm, self.tools, tool_choice=TOOL_CHOICE)
                record.calls += 1
                record.usage = record.usage + reply.usage
                conversation.add_reply(reply)
                several = SEVERAL_TOOL_CALLS_TEXT.format(n=len(reply.tool_calls))
                valid, errors = conversation.accept_tool_call(
                    reply, validate, no_call_text=NO_TOOL_CALL_TEXT, several_text=several
                )
                if valid is None:
                    record.turns.append({"error": errors[0]})
                    continue
                call_id = reply.tool_calls[0].id
                if valid.name == VIEW_IMAGE:
                    path = valid.arguments["path"]
                    data, problem = ws.read_file(path, self.settings.agent.max_image_bytes)
                    text, _ = show_image(conversation, call_id, path, data, problem)
                    record.turns.append({"view_image": valid.arguments["path"], "result": text})
                    continue
                outcome = ws.run(valid.arguments["command"])
                conversation.add_tool_result(call_id, outcome.text())
                record.turns.append({"command": valid.arguments["command"], "exit_code": outcome.exit_code,
                                     "output": outcome.output})  # fmt: skip
        finally:
            try:  # no command runs now: the round's edits come back as regular files and folders, nothing else
                record.refused_files = list(ws.export_task_tools().refused)
            finally:
                ws.close()
        record.declared_done = bool(done)
        record.wall_s = time.monotonic() - started
        return record
