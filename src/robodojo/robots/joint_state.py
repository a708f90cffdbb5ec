"""The latest joint angles of a robot assembled from joint-state messages that each carry any subset of its joints.

Real drivers publish /joint_states per arm (or per gripper), Isaac Sim publishes them all at once; consumers that need
one arm's full vector (TCP pose, wrist camera pose) keep the latest position per name here. Importable without ROS.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from robodojo.robots.config import RobotConfig


@dataclass(frozen=True)
class JointUpdate:
    """What one message changed: the arms it touched and what was wrong with it (empty when it was clean)."""

    arms: tuple[str, ...]
    unknown: tuple[str, ...] = ()
    error: str = ""  # set when the whole message was rejected


class JointPositions:
    """Latest position and receive time per joint name; per-arm vectors once every joint of the arm is known."""

    def __init__(self, robot: RobotConfig, known_joints: Iterable[str] | None = None) -> None:
        """``known_joints``: every joint name a message may legitimately carry (default: the arms' and grippers')."""
        self.robot = robot
        self._arm_joints = {a.name: a.joints for a in robot.arms}
        names = set(known_joints) if known_joints is not None else set()
        for arm in robot.arms:
            names.update(arm.joints)
            names.add(arm.gripper_joint)
        self.known = frozenset(names)
        self._position: dict[str, float] = {}
        self._received_s: dict[str, float] = {}

    def update(self, names: Sequence[str], positions: Sequence[float], received_s: float) -> JointUpdate:
        """Take one message's positions, received at ``received_s`` (any monotonic clock).

        A message with a non-finite position, mismatched lengths or a repeated name is rejected whole, so an arm's
        vector never mixes a bad reading with good ones. Unknown names are ignored and reported.
        """
        if len(names) != len(positions):
            return JointUpdate((), error=f"{len(names)} joint names but {len(positions)} positions")
        if len(set(names)) != len(names):
            return JointUpdate((), error="a joint name appears more than once")
        bad = [n for n, p in zip(names, positions, strict=True) if not math.isfinite(p)]
        if bad:
            return JointUpdate((), error=f"non-finite position for {', '.join(bad)}")
        unknown = tuple(n for n in names if n not in self.known)
        touched = set()
        for name, position in zip(names, positions, strict=True):
            if name in self.known:
                self._position[name] = float(position)
                self._received_s[name] = received_s
                touched.add(name)
        arms = tuple(arm for arm, joints in self._arm_joints.items() if touched.intersection(joints))
        return JointUpdate(arms, unknown)

    def arm_q(self, arm: str) -> NDArray[np.float64] | None:
        """The arm's joint angles in its joint order, or None while any of them has never been received."""
        joints = self._arm_joints[arm]
        if not all(j in self._position for j in joints):
            return None
        return np.array([self._position[j] for j in joints])

    def arm_age_s(self, arm: str, now_s: float) -> float:
        """Time since the oldest of the arm's joints was last received (inf while any is missing)."""
        joints = self._arm_joints[arm]
        if not all(j in self._received_s for j in joints):
            return math.inf
        return now_s - min(self._received_s[j] for j in joints)

    def position(self, joint: str) -> float | None:
        """The latest position of one joint (a gripper's driven finger, say), or None if never received."""
        return self._position.get(joint)
