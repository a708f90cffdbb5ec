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


def _fr3_state(stamp_s: float, q: float) -> JointState:
    from builtin_interfaces.msg import Time

    arm = load_robot_config("fr3").arms[0]
    names = [*arm.joints, arm.gripper_joint]
    msg = JointState(name=names, position=[q] * len(names))
    msg.header.stamp = Time(sec=int(stamp_s), nanosec=round((stamp_s % 1) * 1e9))
    return msg


def test_the_arm_speed_is_judged_over_a_window_of_joint_states(built_interfaces):
    """The motion server's view of an arm's speed (robots.joint_speed): unknown until the joint states span a window,
    and a repeated reading amid a motion is no rest."""
    from robodojo.nodes.controller_topics import RobotState
    from robodojo.robots.joint_speed import SPEED_WINDOW_S

    fr3 = load_robot_config("fr3")
    state = RobotState(fr3, ArmKinematics(fr3))
    state.on_joint_state(_fr3_state(10.00, 0.1000))
    state.on_joint_state(_fr3_state(10.01, 0.1050))
    assert state.speed_of_rad_s(["arm"]) == math.inf  # 10 ms of joint states: too short to judge
    steps = round(SPEED_WINDOW_S / 0.01)
    for k in range(2, steps + 2):
        state.on_joint_state(_fr3_state(10.00 + 0.01 * k, 0.1 + 0.005 * k))  # 0.5 rad/s
    assert state.speed_of_rad_s(["arm"]) == pytest.approx(0.5)
    last = steps + 1
    state.on_joint_state(_fr3_state(10.01 + 0.01 * last, 0.1 + 0.005 * last))  # the same reading again: the
    # robot's state did not update since the driver last read it
    assert state.speed_of_rad_s(["arm"]) > 0.4


def test_a_wait_for_news_ends_with_the_news_that_came_after_its_mark_even_before_it_began(built_interfaces):
    """The motion server's follow loop waits on news (joint states, reports, stops), never sleeps: news that came
    while it looked (after its mark, before its wait) ends the wait at once; a wait without news times out."""
    import threading

    from agent_bringup.msg import TrajectoryStatus

    from robodojo.nodes.controller_topics import RobotState, TrajectoryBoard

    state = RobotState(DUAL, ArmKinematics(DUAL))
    board = TrajectoryBoard(on_change=state.wake)

    def waiter(mark: int) -> threading.Thread:
        thread = threading.Thread(target=state.wait_for_news, args=(mark, 600.0), daemon=True)
        thread.start()
        return thread

    mark = state.news_mark()
    state.on_joint_state(joint_state("left", "right"))  # arrives between the mark and the wait
    early = waiter(mark)
    early.join(60.0)
    assert not early.is_alive()  # a notification missed would keep it waiting for 600 s

    late = waiter(state.news_mark())
    late.join(0.2)
    assert late.is_alive()  # nothing new yet: still waiting
    board.on_status(TrajectoryStatus(controller="left_arm_controller"))  # a controller's report wakes it
    late.join(60.0)
    assert not late.is_alive()
    state.wait_for_news(state.news_mark(), timeout_s=0.01)  # no news: returns at its timeout
