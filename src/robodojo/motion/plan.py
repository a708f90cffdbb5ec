"""Plans: what a planner returns and the motion server executes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from robodojo.motion.rejection import Rejection, render_rejection
from robodojo.motion.targets import MoveTarget

#: Below this span [rad, or gripper opening] a trajectory's joint or gripper holds still: it says nothing of progress.
_STILL = 1e-6


@dataclass(frozen=True)
class ArmTrajectory:
    """One arm's joint and gripper samples, one per control period; sample 0 is the state the plan started from."""

    arm: str
    joint_names: tuple[str, ...]
    positions_rad: NDArray[np.float64]  # (N, n_joints)
    gripper: NDArray[np.float64]  # (N,) opening 0..1

    @property
    def num_points(self) -> int:
        return len(self.positions_rad)


@dataclass(frozen=True)
class Plan:
    """A validated plan, or the rejection saying why there is none (``ok`` False; then nothing may move)."""

    ok: bool
    rejection: Rejection | None = None
    target: MoveTarget | None = None
    trajectories: Mapping[str, ArmTrajectory] = field(default_factory=dict)
    #: The period of the points, the planner's (the robot's control period); a failure has no points, hence 0.
    dt_s: float = 0.0

    @property
    def num_points(self) -> int:
        """Samples including the start state; all arms share this length."""
        return max((t.num_points for t in self.trajectories.values()), default=0)

    @property
    def waypoints(self) -> int:
        """Points to execute (one env step each): every sample after the start state."""
        return max(self.num_points - 1, 0)

    @property
    def duration_s(self) -> float:
        return self.waypoints * self.dt_s

    @property
    def reason(self) -> str:
        """The rejection's text (world frame), or "" for a valid plan."""
        return render_rejection(self.rejection) if self.rejection is not None else ""

    def points_reached(
        self,
        joints_rad: Mapping[str, NDArray[np.float64] | None],
        points: int,
        gripper_openings: Mapping[str, float | None] | None = None,
    ) -> int | None:
        """How many of the first ``points`` points the arms have played, judged from their measured joints and, where
        given, gripper openings: per arm the point nearest to what moves along its trajectory (the start state counts
        as 0; a gripper-only motion is judged by its gripper), the least of the arms whose trajectory moves anything
        (0 if none does). None when an arm's joints are unknown. For results whose books are unsure (a controller
        whose reports were lost or late)."""
        reached = []
        for arm, traj in self.trajectories.items():
            q = joints_rad.get(arm)
            if q is None:
                return None
            nearest = []
            positions = traj.positions_rad[: points + 1]
            if np.ptp(positions, axis=0).max(initial=0.0) > _STILL:
                nearest.append(int(np.argmin(np.max(np.abs(positions - np.asarray(q)), axis=1))))
            opening = (gripper_openings or {}).get(arm)
            gripper = traj.gripper[: points + 1]
            if opening is not None and np.ptp(gripper) > _STILL:
                nearest.append(int(np.argmin(np.abs(gripper - opening))))
            if nearest:
                reached.append(min(nearest))
        return min(reached, default=0)

    @classmethod
    def failure(cls, rejection: Rejection, target: MoveTarget | None = None) -> Plan:
        return cls(ok=False, rejection=rejection, target=target)
