"""The motion server's view of the robot (RobotState): how fresh its joints are, per arm."""

from __future__ import annotations

import math
import re
import time

import pytest

pytest.importorskip("sensor_msgs", reason="ROS message packages not importable: run scripts/setup_env.sh (ROS wheels)")
pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")

from sensor_msgs.msg import JointState

from robodojo.robots.config import load_robot_config
from robodojo.robots.ik import ArmKinematics

DUAL = load_robot_config("dual_arx_x5")


@pytest.fixture(scope="module")
def state(built_interfaces):
    """A RobotState of the dual X5 (controller_topics imports agent_bringup's messages)."""
    from robodojo.nodes.controller_topics import RobotState

    return RobotState(DUAL, ArmKinematics(DUAL))


def joint_state(*arms: str) -> JointState:
    names = [j for arm in arms for j in (*DUAL.arm(arm).joints, DUAL.arm(arm).gripper_joint)]
    return JointState(name=names, position=[0.1] * len(names))


def test_an_arm_left_out_of_the_joint_states_goes_stale_while_the_other_keeps_coming(state):
    assert state.age_s() == math.inf  # nothing yet
    state.on_joint_state(joint_state("left", "right"))
    assert state.age_s() < 0.1
    time.sleep(0.3)
    state.on_joint_state(joint_state("right"))  # a driver that no longer knows the left arm's joints
    assert state.arm_ages_s()["right"] < 0.1
    assert state.age_s() >= 0.3  # the left arm's last joints: not fresh, though messages keep arriving
    assert state.stale_text(0.2).endswith("(the left arm's)")
    state.on_joint_state(joint_state("left", "right"))
    assert state.age_s() < 0.1


def test_a_one_arm_robot_s_stale_joint_states_are_told_without_the_arm_s_name(built_interfaces):
    from robodojo.nodes.controller_topics import RobotState

    fr3 = load_robot_config("fr3")
    state = RobotState(fr3, ArmKinematics(fr3))
    arm = fr3.arms[0]
    state.on_joint_state(JointState(name=[*arm.joints, arm.gripper_joint], position=[0.1] * (len(arm.joints) + 1)))
    time.sleep(0.05)
    assert re.fullmatch(r"\d+\.\d\d s", state.stale_text(0.01)), state.stale_text(0.01)  # not "(the arm arm's)"
