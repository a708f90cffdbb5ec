"""The embedded world as an agent may see it: observe, step, hold, steps left and the control period.

:class:`AgentSideBackend` is the :class:`~robodojo.motion.backend.RobotBackend` that in-process agents and their
motion server get instead of the :class:`~robodojo.sim.world.EmbeddedWorld`: it has no ``privileged()``, no MuJoCo
model or data and no task object, so task ground truth is not reachable through anything an agent is handed. (It is
a boundary for the project's code, not for hostile code: model-written cells run in a separate kernel process.)
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING

from numpy.typing import ArrayLike

from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig

if TYPE_CHECKING:
    from robodojo.sim.world import EmbeddedWorld


class AgentSideBackend:
    """A narrow view of one embedded world; see the module docstring for what it leaves out and why."""

    __slots__ = ("__world", "robot")

    def __init__(self, world: EmbeddedWorld) -> None:
        self.__world = world
        self.robot: RobotConfig = world.robot

    @property
    def control_dt_s(self) -> float:
        """Control period [s]: one executed trajectory point per env step."""
        return self.__world.control_dt_s

    @property
    def steps_left(self) -> int:
        """Env steps left in the episode's budget."""
        return self.__world.steps_left

    def observe(self, cameras: Iterable[str] | None = None, *, depth: bool = False) -> Observation:
        """Images with calibration (all cameras by default; ``()`` for state only), joint and TCP state, steps left.
        ``depth`` adds each camera's depth image [m] (the embedded world has depth; real cameras may not)."""
        return self.__world.observe(cameras, depth=depth)

    def step(
        self,
        joint_targets: Mapping[str, ArrayLike] | None = None,
        gripper_targets: Mapping[str, float] | None = None,
    ) -> None:
        """Send joint position targets [rad] and gripper openings (0..1) and advance one counted control step."""
        self.__world.step(joint_targets, gripper_targets)

    def hold(self) -> None:
        """Command every arm to hold its measured joint positions (no step is consumed)."""
        self.__world.hold()
