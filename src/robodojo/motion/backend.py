"""The robot backend interface the motion server and the agents see, whatever the robot is.

In one process it is the embedded MuJoCo world (:mod:`robodojo.sim`; agents get its agent-side view,
:class:`robodojo.sim.agent_side.AgentSideBackend`). On the ROS graph the motion server's is
:class:`robodojo.nodes.controller_topics.ControllerTopicsBackend` (state from /joint_states, the trajectory controllers
of sim_node, the Isaac bridge or a real arm's driver behind it), and the agents' is
:class:`robodojo.nodes.agent_graph.TopicObservationBackend`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Protocol

from numpy.typing import ArrayLike

from robodojo.observation import Observation
from robodojo.robots.config import RobotConfig


class RobotBackend(Protocol):
    """One control step per :meth:`step`; every step is one 25 Hz trajectory point."""

    robot: RobotConfig

    @property
    def control_dt_s(self) -> float:
        """Control period [s] (0.04 at 25 Hz)."""
        ...

    @property
    def steps_left(self) -> int:
        """Env steps left in the episode's budget."""
        ...

    def observe(self, cameras: Iterable[str] | None = None) -> Observation:
        """The agent-side view; ``cameras=()`` for state only."""
        ...

    def step(
        self,
        joint_targets: Mapping[str, ArrayLike] | None = None,
        gripper_targets: Mapping[str, float] | None = None,
    ) -> None:
        """Send position targets and advance one control step."""
        ...

    def hold(self) -> None:
        """Command every arm to hold its measured joint positions (no step is consumed)."""
        ...
