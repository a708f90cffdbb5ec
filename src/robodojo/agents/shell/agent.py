"""The built-in shell agent (seed 003's acting agent, minimal): the model runs shell commands in the sandbox.

Each turn is one LLM call with two tools: ``shell(command)`` runs ``bash -c command`` in the episode's sandbox (the
robot is reached only through ``robo``; see robodojo.agents.shell.workspace) and returns the exit status and output;
``view_image(path)`` returns an image from the working folder as a picture (obs/head.png after ``robo obs``).
``robo done`` ends the episode. Every robot command a shell command sent is logged with its record and handed to
the episode record with its turn (robo_calls.jsonl).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from robodojo.agents.base import EpisodeContext, LlmCaller, TurnRecord
from robodojo.agents.context_budget import ContextBudget
from robodojo.agents.context_fit import chat_within_context
from robodojo.agents.conversation import Conversation
from robodojo.agents.llm.client import image_part
from robodojo.agents.llm.types import ChatReply, Message, ToolCall
from robodojo.agents.shell.commands import BaseCommands
from robodojo.agents.shell.prompts import goal_message, system_message
from robodojo.agents.shell.sandbox import sandbox_boundary
from robodojo.agents.shell.settings import ShellSettings, load_shell_settings
from robodojo.agents.shell.workspace import ShellWorkspace
from robodojo.agents.text_limits import TextLimits, default_text_limits, quote
from robodojo.agents.tool_calls import ToolCallError, ValidCall, decode_arguments

SHELL, VIEW_IMAGE = "shell", "view_image"
NO_TOOL_CALL_TEXT = "Your reply called no tool; call exactly one tool per turn (shell or view_image); nothing ran"
SEVERAL_TOOL_CALLS_TEXT = "Your reply called {n} tools; call exactly one tool per turn; none was run"
IMAGE_HORIZON = 2  # turns whose viewed images stay in the context
TOOL_CHOICE = "required"


def tool_schemas(max_command_chars: int) -> list[dict[str, Any]]:
    def tool(name: str, description: str, arg: str, arg_description: str) -> dict[str, Any]:
        return {
            "type": "function",
            "function": {
                "name": name,
                "description": description,
                "parameters": {
                    "type": "object",
                    "properties": {arg: {"type": "string", "description": arg_description}},
                    "required": [arg],
                    "additionalProperties": False,
                },
            },
        }

    return [
        tool(SHELL, "Run a bash command in your working folder; returns its exit status and output.", "command",
             f"the command line (at most {max_command_chars} characters)"),
        tool(VIEW_IMAGE, "Look at an image file from your working folder (PNG or JPEG).", "path",
             "path relative to your working folder, e.g. obs/head.png"),
    ]  # fmt: skip


def validate_shell_call(call: ToolCall, limits: TextLimits, max_command_chars: int) -> ValidCall:
    """Check one call; raises ToolCallError with the text to return to the model (nothing ran)."""
    expected = {SHELL: "command", VIEW_IMAGE: "path"}
    if call.name not in expected:
        raise ToolCallError(f"unknown tool {quote(call.name)}; the tools are shell and view_image; nothing ran")
    args = decode_arguments(call)
    key = expected[call.name]
    if not isinstance(args, dict) or not isinstance(args.get(key), str) or not args[key].strip():
        raise ToolCallError(f"{call.name} needs {quote(key)}, a non-empty string; nothing ran")
    extra = set(args) - {key}
    if extra:
        raise ToolCallError(f"unexpected argument {quote(sorted(extra)[0])} for {call.name}; nothing ran")
    if call.name == SHELL and len(args[key]) > max_command_chars:
        raise ToolCallError(
            f"the command has {len(args[key])} characters, more than {max_command_chars}; write long scripts to a "
            "file in steps; nothing ran"
        )
    return ValidCall(call.name, args)


def shell_call_validator(max_command_chars: int) -> Callable[[ToolCall, TextLimits], ValidCall]:
    """:func:`validate_shell_call` with the command bound, as Conversation.accept_tool_call takes it."""
    return lambda call, limits: validate_shell_call(call, limits, max_command_chars)


def show_image(
    conversation: Conversation, call_id: str, path: str, data: bytes | None, problem: str
) -> tuple[str, str]:
    """Answer a view_image call: ``data``, the file's bytes as the sandbox read them
    (:meth:`~robodojo.agents.shell.workspace.ShellWorkspace.read_file`, None with its ``problem`` when it could
    not), as a picture after the tool result. Returns (tool result text, problem), the problem empty when the
    picture was added."""
    bgr = None
    if data is not None:
        bgr = cv2.imdecode(np.frombuffer(data, np.uint8), cv2.IMREAD_COLOR)
        if bgr is None:
            problem = f"{quote(path)} is not an image OpenCV can read"
    elif "does not exist" in problem:
        problem += " (run `robo obs` to refresh obs/)"
    if bgr is None:
        return conversation.add_tool_result(call_id, f"view_image: {problem}"), problem
    text = conversation.add_tool_result(call_id, f"{path}: {bgr.shape[1]}x{bgr.shape[0]} image follows")
    conversation.add_observation(
        {"role": "user", "content": [{"type": "text", "text": f"{path}:"}, image_part(bgr[:, :, ::-1])]}
    )
    return text, ""


class ShellAgent:
    """shell(command) + view_image(path) over a sandboxed shell with the robo command."""

    name = "shell"

    def __init__(
        self,
        *,
        settings: ShellSettings | None = None,
        tools_root: Path | None = None,
        image_horizon: int | None = IMAGE_HORIZON,
        text_limits: TextLimits | None = None,
        context: ContextBudget | None = None,
    ) -> None:
        """``tools_root``: the folder of task tool folders (``<tools_root>/<task>/``, with its enabled_tools.txt);
        without one, the configured default tools of the shared pool are enabled."""
        self.settings = settings or load_shell_settings()
        self.tools_root = tools_root
        self.image_horizon = image_horizon
        self.text_limits = text_limits or default_text_limits()
        self.context = context or ContextBudget()
        self.tools = tool_schemas(self.settings.agent.max_command_chars)
        self.workspace: ShellWorkspace | None = None

    def describe(self) -> dict[str, Any]:
        return {
            "image_horizon": self.image_horizon,
            "tools_root": str(self.tools_root) if self.tools_root else None,
            "tool_choice": TOOL_CHOICE,
            "sandbox": sandbox_boundary(self.settings.sandbox),
        }

    def begin(self, episode: EpisodeContext) -> None:
        self.close()
        self.episode = episode
        task_tools = self.tools_root / episode.task if self.tools_root is not None else None
        self.workspace = ShellWorkspace(self.settings, self._command, task_tools=task_tools)
        ws = self.workspace
        self.commands = BaseCommands(episode, self.settings.commands, ws.obs_dir, obs_note=ws.obs_note)
        self.conversation = Conversation(
            self.image_horizon,
            self.text_limits,
            self.context,
            max_arguments_chars=self.settings.agent.max_call_chars,
        )
        label = f"robodojo-{episode.robot.name.replace('_', '-')}"
        self.conversation.add(
            system_message(episode, self.workspace.manual(), label, self.settings.agent.command_timeout_s)
        )
        self.conversation.add(goal_message(episode))

    def _command(self, argv: list[str]) -> dict[str, Any]:
        return self.commands.run(argv)

    def turn(self, llm: LlmCaller, turn: int) -> TurnRecord:
        assert self.workspace is not None
        request, reply = chat_within_context(self.conversation, llm, self.tools, tool_choice=TOOL_CHOICE)
        self.conversation.add_reply(reply)
        valid, errors = self.conversation.accept_tool_call(
            reply,
            shell_call_validator(self.settings.agent.max_command_chars),
            no_call_text=NO_TOOL_CALL_TEXT,
            several_text=SEVERAL_TOOL_CALLS_TEXT.format(n=len(reply.tool_calls)),
        )
        if valid is None:
            return self._error(turn, request, reply, errors)
        call = reply.tool_calls[0]
        if valid.name == VIEW_IMAGE:
            return self._view_image(turn, request, reply, call.id, valid.arguments["path"])
        outcome = self.workspace.run(valid.arguments["command"])
        text = self.conversation.add_tool_result(call.id, outcome.text())
        details = {
            "command": valid.arguments["command"],
            "exit_code": outcome.exit_code,
            "timed_out": outcome.timed_out,
            "command_wall_s": round(outcome.wall_s, 3),
        }
        finished = self.commands.declared_done is not None
        if finished:
            details["done_reason"] = self.commands.declared_done
        return TurnRecord(
            turn,
            request,
            reply,
            [text],
            SHELL,
            finished=finished,
            details=self.conversation.turn_details(details),
            robo_calls=[asdict(c) for c in outcome.calls],
        )

    def _view_image(self, turn: int, request: list[Message], reply: ChatReply, call_id: str, path: str) -> TurnRecord:
        assert self.workspace is not None
        data, problem = self.workspace.read_file(path, self.settings.agent.max_image_bytes)
        text, problem = show_image(self.conversation, call_id, path, data, problem)
        if problem:
            details = self.conversation.turn_details({"error": problem, "path": path})
            return TurnRecord(turn, request, reply, [text], "error", details=details)
        details = self.conversation.turn_details({"path": path})
        return TurnRecord(turn, request, reply, [text], VIEW_IMAGE, details=details)

    def close(self) -> None:
        if self.workspace is not None:
            self.workspace.close()
            self.workspace = None

    def _error(self, turn: int, request: list[Message], reply: ChatReply, texts: list[str]) -> TurnRecord:
        details = self.conversation.turn_details({"error": texts[0]})
        return TurnRecord(turn, request, reply, texts, "error", details=details)
