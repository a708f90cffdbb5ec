"""The tool sets an MCP client may be served, by the name ``--tools`` and config/agents/mcp.yaml give them."""

from __future__ import annotations

from robodojo.agents.mcp.move_eef_tools import MoveEefTools
from robodojo.agents.mcp.robo_tools import RoboTools
from robodojo.agents.mcp.toolset import ToolSet
from robodojo.robots.config import RobotConfig


def make_tools(name: str, robot: RobotConfig) -> ToolSet:
    """A fresh tool set for ``robot``: ``move_eef`` (the move_eef contract) or ``robo`` (the shell's commands)."""
    return MoveEefTools(robot) if name == "move_eef" else RoboTools(robot)
