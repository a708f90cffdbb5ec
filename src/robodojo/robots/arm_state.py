"""An arm's agent-side state (TCP pose, gripper opening) from measured joint positions, by forward kinematics.

Backends that only report joints (ROS /joint_states from a real arm, Isaac Sim) get the same ArmState the embedded
world reports, computed on the model built from the URDF.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from robodojo.geometry import quat_from_matrix, wxyz_tuple, xyz_tuple
from robodojo.observation import ArmState
from robodojo.robots.config import ArmConfig
from robodojo.robots.ik import ArmKinematics


def gripper_opening(config: ArmConfig, gripper_position_m: float) -> float:
    """The opening, 0 (closed) to 1 (open), of a gripper whose driven finger joint is at ``gripper_position_m``."""
    return float(np.clip(gripper_position_m / config.gripper_max_m, 0.0, 1.0))


def arm_state_from_joints(kinematics: ArmKinematics, arm: str, q: ArrayLike, gripper_position_m: float) -> ArmState:
    """``arm`` at joint angles ``q`` [rad] with its driven finger joint at ``gripper_position_m``."""
    config = kinematics.robot.arm(arm)
    pos, R = kinematics.tcp_pose(arm, np.asarray(q, dtype=float))
    return ArmState(
        name=arm,
        joint_names=config.joints,
        joint_positions_rad=tuple(float(v) for v in np.asarray(q, dtype=float)),
        tcp_pos_m=xyz_tuple(pos),
        tcp_quat_wxyz=wxyz_tuple(quat_from_matrix(R)),
        gripper_opening=gripper_opening(config, gripper_position_m),
    )
