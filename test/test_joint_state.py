"""Joint positions assembled from partial joint-state messages, and the arm state computed from them by FK."""

from __future__ import annotations

import math

import mujoco
import numpy as np
import pytest

from robodojo.geometry import quat_from_matrix
from robodojo.robots.arm_state import arm_state_from_joints
from robodojo.robots.config import load_robot_config
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.joint_state import JointPositions

DUAL = load_robot_config("dual_arx_x5")
LEFT, RIGHT = DUAL.arm("left"), DUAL.arm("right")
Q_LEFT = [0.1, 1.2, 1.0, -0.5, 0.2, -0.3]
Q_RIGHT = [-0.2, 1.4, 1.3, -1.0, 0.1, 0.4]


@pytest.fixture
def joints() -> JointPositions:
    return JointPositions(DUAL)


def _snapshot(jp: JointPositions, now: float = 10.0):
    return {
        arm: (None if (q := jp.arm_q(arm)) is None else q.tolist(), jp.arm_age_s(arm, now)) for arm in DUAL.arm_names
    }, {name: jp.position(name) for name in jp.known}


# -- JointPositions -------------------------------------------------------------------------------------------


def test_partial_messages_assemble_an_arm_vector_once_every_joint_is_known(joints):
    update = joints.update(LEFT.joints[:3], Q_LEFT[:3], 1.0)
    assert update.arms == ("left",) and update.unknown == () and update.error == ""
    assert joints.arm_q("left") is None and joints.arm_q("right") is None
    # The rest of the left arm, in reverse order, with the gripper and one right joint in the same message.
    names = [*reversed(LEFT.joints[3:]), LEFT.gripper_joint, RIGHT.joints[0]]
    positions = [*reversed(Q_LEFT[3:]), 0.02, Q_RIGHT[0]]
    update = joints.update(names, positions, 2.0)
    assert set(update.arms) == {"left", "right"}
    np.testing.assert_array_equal(joints.arm_q("left"), Q_LEFT)
    assert joints.arm_q("right") is None
    assert joints.position(LEFT.gripper_joint) == 0.02
    joints.update(RIGHT.joints, Q_RIGHT, 3.0)
    np.testing.assert_array_equal(joints.arm_q("right"), Q_RIGHT)


def test_a_gripper_only_message_touches_no_arm(joints):
    update = joints.update([LEFT.gripper_joint, RIGHT.gripper_joint], [0.01, 0.03], 1.0)
    assert update.arms == () and update.error == ""
    assert joints.position(RIGHT.gripper_joint) == 0.03


def test_later_messages_replace_earlier_positions(joints):
    joints.update(LEFT.joints, Q_LEFT, 1.0)
    joints.update(LEFT.joints[2:3], [0.7], 2.0)
    expected = list(Q_LEFT)
    expected[2] = 0.7
    np.testing.assert_array_equal(joints.arm_q("left"), expected)


def test_unknown_names_are_ignored_and_reported(joints):
    update = joints.update(["camera_tilt", *LEFT.joints, "wheel"], [9.0, *Q_LEFT, 8.0], 1.0)
    assert update.unknown == ("camera_tilt", "wheel") and update.error == "" and update.arms == ("left",)
    np.testing.assert_array_equal(joints.arm_q("left"), Q_LEFT)
    assert joints.position("camera_tilt") is None and joints.position("wheel") is None
    assert joints.update(["wheel"], [1.0], 2.0).arms == ()


def test_extra_known_joints_are_kept_without_being_reported():
    joints = JointPositions(DUAL, known_joints=["left_finger_right_joint"])
    update = joints.update(["left_finger_right_joint"], [0.01], 1.0)
    assert update.unknown == () and update.arms == ()
    assert joints.position("left_finger_right_joint") == 0.01


@pytest.mark.parametrize(
    ("names", "positions", "message"),
    [
        ([*LEFT.joints[:5], RIGHT.joints[0]], [*Q_LEFT[:4], math.nan, 0.3], "non-finite position for left_joint5"),
        (LEFT.joints, [*Q_LEFT[:5], math.inf], "non-finite position for left_joint6"),
        (LEFT.joints, Q_LEFT[:5], "6 joint names but 5 positions"),
        ([*LEFT.joints, RIGHT.joints[0]], Q_LEFT, "7 joint names but 6 positions"),
        ([*LEFT.joints[:5], LEFT.joints[0]], [0.5] * 6, "more than once"),
    ],
)
def test_a_bad_message_is_rejected_whole_and_changes_nothing(joints, names, positions, message):
    joints.update(LEFT.joints, Q_LEFT, 1.0)
    joints.update(RIGHT.joints[1:], Q_RIGHT[1:], 1.5)
    before = _snapshot(joints)
    update = joints.update(names, positions, 5.0)
    assert message in update.error and update.arms == ()
    assert _snapshot(joints) == before


def test_arm_age_is_the_age_of_the_oldest_joint(joints):
    assert joints.arm_age_s("left", 0.0) == math.inf
    joints.update(LEFT.joints, Q_LEFT, 1.0)
    assert joints.arm_age_s("left", 3.5) == pytest.approx(2.5)
    joints.update(LEFT.joints[:5], Q_LEFT[:5], 3.0)
    assert joints.arm_age_s("left", 3.5) == pytest.approx(2.5)  # joint 6 is still from t=1
    joints.update(LEFT.joints[5:], Q_LEFT[5:], 3.25)
    assert joints.arm_age_s("left", 3.5) == pytest.approx(0.5)
    joints.update(RIGHT.joints[:5], Q_RIGHT[:5], 3.0)
    assert joints.arm_age_s("right", 3.5) == math.inf


def test_position_of_a_joint(joints):
    assert joints.position(LEFT.joints[0]) is None
    joints.update([LEFT.joints[0]], [0.25], 1.0)
    assert joints.position(LEFT.joints[0]) == 0.25
    assert isinstance(joints.position(LEFT.joints[0]), float)


# -- arm_state_from_joints against the embedded world --------------------------------------------------------

# Joint angles away from home (inside every limit) and the driven finger partly open.
CASES = {
    "dual_arx_x5": (
        "general_pickup",
        {"left": ([0.3, 1.0, 0.9, -0.6, 0.4, -0.7], 0.3), "right": ([-0.5, 1.7, 1.2, -1.2, -0.3, 1.1], 0.8)},
    ),
    "fr3": ("fr3_pick_cube", {"arm": ([0.2, -0.4, 0.3, -2.1, 0.1, 1.9, 0.5], 0.45)}),
}


def _quat_close(a, b, tol):
    a, b = np.asarray(a), np.asarray(b)
    return min(np.max(np.abs(a - b)), np.max(np.abs(a + b))) <= tol


@pytest.mark.parametrize("robot", ["dual_arx_x5", "fr3"])
def test_arm_state_from_joints_matches_the_embedded_world(robot, dual_world, fr3_world):
    world = {"dual_arx_x5": dual_world, "fr3": fr3_world}[robot]
    task, poses = CASES[robot]
    world.reset(task, seed=0)
    kinematics = ArmKinematics(world.robot)
    m, d = world.model, world.data
    for arm, (q, opening) in poses.items():
        config = world.robot.arm(arm)
        for name, value in zip(config.joints, q, strict=True):
            lower, upper, _ = world.joint_limits[name]
            assert lower <= value <= upper, name
        d.qpos[world.arm_qpos_adr[arm]] = q
        d.qpos[world.gripper_qpos_adr[arm]] = opening * config.gripper_max_m
    mujoco.mj_forward(m, d)
    for arm, (q, opening) in poses.items():
        config = world.robot.arm(arm)
        expected = world.arm_state(arm)
        # The pose really moved away from home, so the comparison is not trivially at the home pose.
        home_pos, _ = kinematics.tcp_pose(arm, np.array(config.home_joints_rad))
        assert np.linalg.norm(np.array(expected.tcp_pos_m) - home_pos) > 0.02
        state = arm_state_from_joints(kinematics, arm, q, opening * config.gripper_max_m)
        assert state.name == arm and state.joint_names == config.joints
        np.testing.assert_allclose(state.joint_positions_rad, expected.joint_positions_rad, rtol=0, atol=1e-12)
        np.testing.assert_allclose(state.tcp_pos_m, expected.tcp_pos_m, rtol=0, atol=1e-9)
        assert _quat_close(state.tcp_quat_wxyz, expected.tcp_quat_wxyz, 1e-9), (state, expected)
        assert state.gripper_opening == pytest.approx(expected.gripper_opening, abs=1e-9)
        assert state.gripper_opening == pytest.approx(opening, abs=1e-9)


def test_arm_state_from_joints_clips_the_gripper_opening():
    kinematics = ArmKinematics(DUAL)
    q = LEFT.home_joints_rad
    assert arm_state_from_joints(kinematics, "left", q, 2 * LEFT.gripper_max_m).gripper_opening == 1.0
    assert arm_state_from_joints(kinematics, "left", q, -0.001).gripper_opening == 0.0
    pos, R = kinematics.tcp_pose("left", np.array(q))
    state = arm_state_from_joints(kinematics, "left", q, 0.0)
    np.testing.assert_allclose(state.tcp_pos_m, pos, atol=0)
    assert _quat_close(state.tcp_quat_wxyz, quat_from_matrix(R), 0)
