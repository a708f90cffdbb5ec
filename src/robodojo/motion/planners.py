"""The planners by name, as the motion server's ``planner`` parameter and the CLI choose them: ``native`` everywhere,
``moveit`` where moveit_py is installed (imported only when asked for)."""

from __future__ import annotations

from robodojo.errors import ConfigError
from robodojo.motion.planner import NativePlanner, Planner
from robodojo.motion.settings import load_motion_settings
from robodojo.robots.config import RobotConfig


def make_planner(name: str, robot: RobotConfig, dt_s: float) -> Planner:
    """The planner called ``name``: ``native``, or ``moveit`` (needs moveit_py, a ROS 2 install with MoveIt)."""
    if name == "native":
        return NativePlanner(robot, dt_s, load_motion_settings())
    if name == "moveit":
        from robodojo.motion.moveit_planner import MoveItPlanner  # imports moveit_py: only when asked for

        return MoveItPlanner(robot, dt_s, load_motion_settings())
    raise ConfigError(f"parameter 'planner' must be native or moveit, got {name!r}")
