"""``--tools move_eef``: the move_eef agent's contract (seed 002) as MCP tools.

``move_eef`` and ``give_up`` have the schemas, bounds, descriptions, validation and texts of
:mod:`robodojo.agents.move_eef.tools` (the same functions: a call is handed to ``validate_tool_call`` as the JSON the
client sent), the motion goes to the episode's motion server as the move_eef agent sends it, and the tool result is
the motion server's text (``Accepted: playing N waypoints ...``) or its rejection. ``observe`` tells the state as the
move_eef agent's observation does (:func:`~robodojo.agents.move_eef.observation.observation_text`), arrival check of
the last accepted move included. No perturbation probe applies: the client sees the world frame.
"""

from __future__ import annotations

import json
from typing import Any

from robodojo.agents.base import EpisodeContext
from robodojo.agents.llm.types import ToolCall
from robodojo.agents.mcp.channel import Answer
from robodojo.agents.mcp.toolset import CallOutcome, ToolSpec
from robodojo.agents.move_eef.agent import MoveEefConfig, arrival_text, load_move_eef_config
from robodojo.agents.move_eef.observation import observation_text, state_values
from robodojo.agents.move_eef.prompts import system_text
from robodojo.agents.move_eef.tools import GIVE_UP, GIVE_UP_TEXT, MOVE_EEF, tool_schemas, validate_tool_call
from robodojo.agents.text_limits import TextLimits, default_text_limits
from robodojo.agents.tool_calls import ToolCallError
from robodojo.errors import RobodojoError
from robodojo.motion.targets import dimension_bounds
from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig

MCP_CALL_ID = "mcp"  # validate_tool_call reads a chat tool call; its id is not used


class MoveEefTools:
    """``move_eef`` and ``give_up`` over MCP (see the module docstring)."""

    name = "move_eef"

    def __init__(
        self, robot: RobotConfig, *, text_limits: TextLimits | None = None, config: MoveEefConfig | None = None
    ) -> None:
        self.robot = robot
        self.text_limits = text_limits or default_text_limits()
        self.config = config or load_move_eef_config()
        self.bounds = dimension_bounds(robot)
        self._episode: EpisodeContext | None = None
        self.arrival: str | None = None

    def specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(s["function"]["name"], s["function"]["description"], s["function"]["parameters"])
            for s in tool_schemas(self.bounds, self.text_limits)
        ]

    def begin(self, episode: EpisodeContext) -> None:
        self._episode = episode
        self.arrival = None

    @property
    def episode(self) -> EpisodeContext:
        if self._episode is None:
            raise RobodojoError("MoveEefTools.call before begin(episode)")
        return self._episode

    def call(self, name: str, arguments: dict[str, Any]) -> CallOutcome:
        # The agent bounded the arguments' size; NaN and infinities pass through JSON as the client sent them and
        # are refused by the target parser, as for a model.
        raw = json.dumps(arguments, ensure_ascii=False)
        try:
            valid = validate_tool_call(ToolCall(MCP_CALL_ID, name, raw), self.text_limits)
        except ToolCallError as exc:
            return CallOutcome.refused(str(exc))
        notices = [n for key, c in valid.cleaned.items() if (n := c.notice(f"'{key}'"))]
        cleaned = {key: c.record() for key, c in valid.cleaned.items()}
        if valid.name == GIVE_UP:
            given_up = {"reason": valid.arguments["reason"], "hindsight": valid.arguments.get("hindsight", "")}
            return CallOutcome(
                Answer(("\n".join([GIVE_UP_TEXT, *notices]),)),
                GIVE_UP,
                gave_up=True,
                details={**given_up, **({"text_limits": cleaned} if cleaned else {})},
            )
        ctx = self.episode
        targets, note = valid.arguments["targets"], valid.arguments.get("note", "")
        report = ctx.motion.move_eef(targets, is_success=ctx.is_success, note=note)
        if report.accepted:
            self.arrival = arrival_text(report, {}) or None
        details: dict[str, Any] = {"targets": dict(targets), "note": note}
        if cleaned:
            details["text_limits"] = cleaned
        text = "\n".join([report.tool_text, *notices])
        return CallOutcome(Answer((text,), is_error=not report.accepted), MOVE_EEF, move=report, details=details)

    def state_text(self, obs: Observation) -> str:
        return observation_text(self.episode.instruction, state_values(self.robot, obs), self.robot, obs, self.arrival)

    def manual(self) -> str:
        """The move_eef agent's system text: the embodiment, the frame, the budgets."""
        ctx = self.episode
        embodiment = self.config.embodiment(self.robot)
        return system_text(self.robot, embodiment, ctx.llm_call_budget, ctx.backend.control_dt_s)

    def close(self) -> None:
        self._episode = None
