"""``--tools robo``: the shell harness's base commands (seed 003) as MCP tools, one tool per command.

A call's arguments are the command's flags by name (``move`` with ``{"arm": "right", "dz": -0.1}`` is
``robo move --arm right --dz -0.1``): each is checked for its JSON type here, then written as ``--name=value`` (so no
value can pose as another flag) and run by :class:`~robodojo.agents.shell.commands.BaseCommands`, which applies the
same parser, bounds, refusals and budgets as for a shell agent, and answers with the same JSON record. ``obs`` writes
its obs/ folder into a folder of the server's own (never a path the client names); ``observe`` returns the pictures.
"""

from __future__ import annotations

import json
import math
import shutil
import tempfile
import time
from collections.abc import Mapping
from dataclasses import asdict
from pathlib import Path
from typing import Any

from robo_shell.paths import MANUAL_PATH
from robodojo.agents.base import EpisodeContext
from robodojo.agents.mcp.channel import Answer
from robodojo.agents.mcp.toolset import CallOutcome, ToolSpec
from robodojo.agents.move_eef.tools import json_type
from robodojo.agents.shell.commands import AXES, DIRECTIONS, BaseCommands
from robodojo.agents.shell.route import RouteCall
from robodojo.agents.shell.settings import CommandLimits, load_shell_settings
from robodojo.agents.text_limits import TextLimits, clean_text, default_text_limits, quote
from robodojo.errors import RobodojoError
from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig

OBS_PREFIX = "robodojo-mcp-obs-"
MANUAL_PREFACE = """\
Over MCP each base command below is a tool of the same name, its flags the tool's arguments by name (`robo move \
--arm right --dz -0.1` is move with {"arm": "right", "dz": -0.1}; a switch such as --open is true). Every tool answers \
with the command's JSON record. The observe tool returns every camera's image and the status record; `obs` writes \
obs/ on the robot's side, which you may not be able to read. There is no shell and no tool of the shared pool.

"""

_JSON_TYPES = {"number": "a number", "string": "a string", "boolean": "true or false"}


def _number(description: str, limit: float | None = None) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "number", "description": description}
    if limit is not None:
        schema.update(minimum=-limit, maximum=limit)
    return schema


def _schemas(robot: RobotConfig, limits: CommandLimits) -> dict[str, tuple[str, dict[str, dict[str, Any]], list[str]]]:
    """Per command: description, argument schemas and required arguments (as the parser in shell/commands.py)."""
    arm = {"type": "string", "enum": list(robot.arm_names), "description": "which arm"}
    t, r = limits.max_translation_m, limits.max_rotation_deg
    return {
        "move": (
            f"Translate an arm's TCP in a straight line along world axes [m]; at most {t:g} m per axis.",
            {"arm": arm, **{f"d{a}": _number(f"along world {a} [m]", t) for a in "xyz"}},
            ["arm"],
        ),
        "rotate": (
            f"Turn a gripper about its TCP: roll, pitch, yaw about the world x, y, z axes [deg]; at most {r:g} each.",
            {"arm": arm, **{a: _number(f"{a} [deg]", r) for a in ("roll", "pitch", "yaw")}},
            ["arm"],
        ),
        "point": (
            "Set a gripper's orientation: fingers pointing along a direction, opening along a world axis.",
            {
                "arm": arm,
                "direction": {"type": "string", "enum": list(DIRECTIONS), "description": "where the fingers point"},
                "fingers": {"type": "string", "enum": list(AXES), "description": "the axis the fingers open along"},
            },
            ["arm", "fingers"],
        ),
        "gripper": (
            "Open, close (until it meets resistance; 'holding' says whether something is between the fingers) or "
            "set a gripper's opening; exactly one of open, close, opening.",
            {
                "arm": arm,
                "open": {"type": "boolean", "description": "open fully"},
                "close": {"type": "boolean", "description": "close until it meets resistance"},
                "opening": {"type": "number", "minimum": 0, "maximum": 1, "description": "0 closed .. 1 open"},
            },
            ["arm"],
        ),
        "home": ("Every arm to its home pose (TCP above the table, fingers down).", {}, []),
        "wait": (
            f"Hold every arm while robot time passes; at most {limits.max_wait_s:g} s.",
            {"seconds": {"type": "number", "minimum": 0, "maximum": limits.max_wait_s, "description": "[s]"}},
            ["seconds"],
        ),
        "obs": ("Refresh obs/ on the robot's side (observe returns the pictures themselves). Free.", {}, []),
        "status": ("Poses, joints, steps, the task instruction and the robot time. Free.", {}, []),
        "done": (
            "Declare the episode over. The task's own check decides success.",
            {"reason": {"type": "string", "description": "why (optional)"}},
            [],
        ),
    }


def _flag_value(value: bool | int | float | str) -> str:
    if isinstance(value, float) and not math.isfinite(value):
        return repr(value)  # 'nan', 'inf': BaseCommands refuses them with its own text
    return str(value)


class RoboTools:
    """The base commands over MCP (see the module docstring)."""

    name = "robo"

    def __init__(
        self, robot: RobotConfig, *, limits: CommandLimits | None = None, text_limits: TextLimits | None = None
    ) -> None:
        self.robot = robot
        self.limits = limits or load_shell_settings().commands
        self.text_limits = text_limits or default_text_limits()
        self.schemas = _schemas(robot, self.limits)
        self.commands: BaseCommands | None = None
        self.obs_dir: Path | None = None

    def specs(self) -> list[ToolSpec]:
        return [
            ToolSpec(
                name,
                description,
                {"type": "object", "properties": properties, "required": required, "additionalProperties": False},
            )
            for name, (description, properties, required) in self.schemas.items()
        ]

    def begin(self, episode: EpisodeContext) -> None:
        self.close()
        self.obs_dir = Path(tempfile.mkdtemp(prefix=OBS_PREFIX))
        self.commands = BaseCommands(episode, self.limits, self.obs_dir)

    def _commands(self) -> BaseCommands:
        if self.commands is None:
            raise RobodojoError("RoboTools.call before begin(episode)")
        return self.commands

    def argv(self, name: str, arguments: Mapping[str, Any]) -> list[str]:
        """The command line of a call; ValueError with the text for the client when an argument is unknown or of
        the wrong JSON type."""
        _, properties, _ = self.schemas[name]
        argv = [name]
        for key, value in arguments.items():
            if key not in properties:
                known = ", ".join(properties) or "none"
                raise ValueError(f"unexpected argument {quote(key)} for {name}; its arguments: {known}; nothing moved")
            kind = properties[key]["type"]
            if json_type(value) != kind or (kind == "boolean") != isinstance(value, bool):
                raise ValueError(f"{key!r} must be {_JSON_TYPES[kind]}, got {json_type(value)}; nothing moved")
            if kind == "boolean":
                argv += [f"--{key}"] if value else []
            elif key == "reason":
                argv.append(f"--reason={clean_text(value, self.text_limits.max_reason_chars).text}")
            else:
                argv.append(f"--{key}={_flag_value(value)}")
        return argv

    def call(self, name: str, arguments: dict[str, Any]) -> CallOutcome:
        commands = self._commands()
        try:
            argv = self.argv(name, arguments)
        except ValueError as exc:
            return CallOutcome.refused(str(exc))
        started = time.monotonic()
        record = commands.run(argv)
        call = RouteCall(argv, record, started, time.monotonic() - started, answered=True)
        finished = name == "done" and commands.declared_done is not None
        details: dict[str, Any] = {"argv": argv, "verdict": record.get("verdict")}
        if finished:
            details["done_reason"] = commands.declared_done
        answer = Answer((json.dumps(record),), is_error=not record.get("ok", False))
        return CallOutcome(answer, name, finished=finished, details=details, robo_calls=(asdict(call),))

    def state_text(self, obs: Observation) -> str:
        """The ``status`` record (the pictures come beside it)."""
        return json.dumps(self._commands().run(["status"]))

    def manual(self) -> str:
        return MANUAL_PREFACE + MANUAL_PATH.read_text()

    def close(self) -> None:
        self.commands = None
        if self.obs_dir is not None:
            shutil.rmtree(self.obs_dir, ignore_errors=True)
            self.obs_dir = None
