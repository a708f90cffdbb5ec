"""Success a real robot sees for itself: a task's observation-only check, from the joint states alone.

A real scene gives no object poses, so the check reads what the robot measures: its finger width against what the
gripper was last told (fingers told to close further than they are stopped on something), and its grasp point's
height by forward kinematics. It only ever says "success"; a failure stays the operator's call.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from robodojo.robots.config import RobotConfig
from robodojo.robots.ik import ArmKinematics
from robodojo.sim.tasks.base import HeldAndLifted

#: The fingers count as stopped on something when told to close at least this much further than they are [m/finger].
BLOCKED_M = 0.002


class HeldAndLiftedCheck:
    """Watches one arm for :class:`~robodojo.sim.tasks.base.HeldAndLifted`: while its fingers are stopped on
    something of the task's width, the lowest grasp point is the reference; success once the grasp point rose the
    task's ``lift_m`` above it, still holding."""

    def __init__(self, spec: HeldAndLifted, robot: RobotConfig) -> None:
        arm = robot.arm(spec.arm)
        self.spec = spec
        self._joints = arm.joints
        self._finger = arm.gripper_joint
        self._kinematics = ArmKinematics(robot)
        self._commanded_finger_m: float | None = None
        self._grasp_z_m: float | None = None
        self.detail = ""  #: what was seen, once it succeeded

    def reset(self) -> None:
        """A new episode: forget the grasp and the gripper's command."""
        self._commanded_finger_m = None
        self._grasp_z_m = None
        self.detail = ""

    def on_gripper_command(self, finger_m: float) -> None:
        """Where the gripper was last told to go [m per finger]: the last point of its trajectory."""
        self._commanded_finger_m = finger_m

    def on_joint_state(self, positions: Mapping[str, float]) -> bool:
        """One joint state (joint name -> position); True when it shows the task done."""
        try:
            q = np.array([positions[j] for j in self._joints], dtype=float)
            finger_m = float(positions[self._finger])
        except KeyError:
            return False  # another arm's message, or no gripper reading in it
        low, high = self.spec.held_width_m
        blocked = self._commanded_finger_m is not None and self._commanded_finger_m < finger_m - BLOCKED_M
        if not (blocked and low <= 2.0 * finger_m <= high):
            self._grasp_z_m = None
            return False
        z_m = float(self._kinematics.tcp_pose(self.spec.arm, q)[0][2])
        self._grasp_z_m = z_m if self._grasp_z_m is None else min(self._grasp_z_m, z_m)
        rose_m = z_m - self._grasp_z_m
        if rose_m < self.spec.lift_m:
            return False
        self.detail = (
            f"seen by the robot: {2.0 * finger_m * 100:.1f} cm held between the fingers, raised {rose_m * 100:.1f} cm"
        )
        return True
