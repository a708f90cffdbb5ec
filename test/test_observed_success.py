"""The observation-only success check (robodojo.episodes.observed): a real robot judging fr3_pick_cube from its own
joint states, with the FR3's kinematics."""

from __future__ import annotations

import numpy as np
import pytest

from robodojo.episodes.observed import HeldAndLiftedCheck
from robodojo.robots.config import load_robot_config
from robodojo.robots.ik import ArmKinematics
from robodojo.sim.tasks import get_task

ROBOT = load_robot_config("fr3")
ARM = ROBOT.arms[0]
SPEC = get_task("fr3_pick_cube").observed_success
KINEMATICS = ArmKinematics(ROBOT)
HOME = np.array(ARM.home_joints_rad)
CUBE_FINGER_M = 0.0225  # per finger, on a 4.5 cm cube


def q_raised_by(dz_m: float) -> np.ndarray:
    """Joint angles with the grasp point ``dz_m`` above home's, same orientation (the FR3's IK)."""
    pos, R = KINEMATICS.tcp_pose(ARM.name, HOME)
    solution = KINEMATICS.solve(ARM.name, pos + [0.0, 0.0, dz_m], R, HOME)
    return np.asarray(solution.q)


def state(q: np.ndarray, finger_m: float) -> dict[str, float]:
    return {**dict(zip(ARM.joints, q, strict=True)), ARM.gripper_joint: finger_m}


@pytest.fixture
def check() -> HeldAndLiftedCheck:
    assert SPEC is not None
    return HeldAndLiftedCheck(SPEC, ROBOT)


def test_a_held_cube_lifted_the_tasks_height_is_a_success(check):
    check.on_gripper_command(0.0)  # told to close, stopped on the cube
    assert not check.on_joint_state(state(HOME, CUBE_FINGER_M))
    assert not check.on_joint_state(state(q_raised_by(0.05), CUBE_FINGER_M))
    assert check.on_joint_state(state(q_raised_by(0.105), CUBE_FINGER_M))
    assert "4.5 cm held" in check.detail and "raised 10." in check.detail


@pytest.mark.parametrize(
    ("commanded_m", "finger_m", "why"),
    [
        (0.02, 0.02, "half open as told: nothing stops the fingers"),
        (0.0, 0.0, "closed on nothing"),
        (0.0, 0.039, "stopped on something far wider than the cube"),
        (None, CUBE_FINGER_M, "no gripper command seen"),
    ],
)
def test_lifting_without_holding_the_cube_is_not(check, commanded_m, finger_m, why):
    if commanded_m is not None:
        check.on_gripper_command(commanded_m)
    for dz_m in (0.0, 0.05, 0.12):
        assert not check.on_joint_state(state(q_raised_by(dz_m), finger_m)), why


def test_the_lift_counts_from_where_the_fingers_closed_and_a_drop_starts_over(check):
    check.on_gripper_command(0.0)
    assert not check.on_joint_state(state(q_raised_by(0.05), CUBE_FINGER_M))  # grasped 5 cm up
    assert not check.on_joint_state(state(q_raised_by(0.12), CUBE_FINGER_M))  # 7 cm from there
    assert not check.on_joint_state(state(q_raised_by(0.12), 0.0))  # dropped: the fingers closed
    assert not check.on_joint_state(state(q_raised_by(0.12), CUBE_FINGER_M))  # held again up here: the new start
    assert not check.on_joint_state(state(q_raised_by(0.2), CUBE_FINGER_M))  # 8 cm from there
    check.reset()  # a new episode: the gripper's command is forgotten too
    assert not check.on_joint_state(state(HOME, CUBE_FINGER_M))


def test_a_state_without_the_arm_or_its_fingers_is_ignored(check):
    check.on_gripper_command(0.0)
    assert not check.on_joint_state({"other_joint": 0.0})
    assert not check.on_joint_state(dict(zip(ARM.joints, HOME, strict=True)))
