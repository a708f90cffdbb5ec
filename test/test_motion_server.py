"""The motion server end to end in the embedded world."""

from __future__ import annotations

import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robodojo.geometry import quat_from_matrix
from robodojo.motion.rejection import DuplicateDimension, NamesValuesMismatch
from robodojo.motion.report import StopReason
from robodojo.motion.server import MotionServer
from robodojo.sim.scripted import plan_top_down_grasp


@pytest.fixture
def server(dual_world):
    dual_world.reset("general_pickup", seed=3)
    return MotionServer(dual_world)


def _snapshot(world):
    return world.data.qpos.copy(), world.data.ctrl.copy(), world.step_count


def _unchanged(world, before):
    after = _snapshot(world)
    np.testing.assert_array_equal(before[0], after[0])
    np.testing.assert_array_equal(before[1], after[1])
    assert before[2] == after[2]


REACHABLE = [
    {"left_x": -0.25, "left_y": -0.15, "left_z": 0.85},
    {"right_x": 0.35, "right_y": -0.25, "right_z": 0.95, "right_yaw_deg": 40},
    {"left_pitch_deg": 20, "left_z": 0.9},
    {"left_x": -0.2, "right_x": 0.2, "left_z": 0.83, "right_z": 0.83},
    {"right_roll_deg": -15, "right_y": -0.15},
    {"left_x": -0.1, "left_y": -0.3, "left_z": 0.8, "left_gripper": 0.3},
]


def test_reachable_targets_arrive_within_tolerance(server):
    for targets in REACHABLE:
        report = server.move_eef(targets)
        assert report.accepted, report.tool_text
        assert report.tool_text.startswith(f"Accepted: playing {report.waypoints} waypoints (")
        assert report.tool_text.endswith("The next observation reports how close the grasp point landed.")
        assert report.stop_reason is StopReason.COMPLETED and report.steps_used == report.waypoints
        named_arms = {k.split("_")[0] for k in targets}
        assert set(report.arms) == named_arms
        for arm_report in report.arms.values():
            assert arm_report.reached and arm_report.pos_error_mm < 10 and arm_report.rot_error_deg < 5
            assert arm_report.arrival_text == (
                f"{arm_report.arm} {arm_report.pos_error_mm:.0f} mm and {arm_report.rot_error_deg:.1f} deg away"
            )


def test_unreachable_and_below_table_targets_leave_the_robot_unmoved(server, dual_world):
    for targets, reason in [
        ({"left_y": 0.3, "left_z": 0.8}, "is out of reach"),
        ({"right_z": 0.72}, "below the table surface"),
    ]:
        before = _snapshot(dual_world)
        report = server.move_eef(targets)
        assert not report.accepted and reason in report.tool_text
        assert report.stop_reason is StopReason.PLAN_FAILED and report.steps_used == 0
        assert all(not r.planned and not r.reached for r in report.arms.values())
        _unchanged(dual_world, before)


@settings(max_examples=300, deadline=None)
@given(
    st.dictionaries(
        st.sampled_from(["left_x", "right_z", "left_gripper", "left_q", "", "x"]),
        st.none() | st.text(max_size=3) | st.floats(allow_nan=True, allow_infinity=True) | st.floats(-50, -2),
        max_size=3,
    )
    | st.lists(st.integers(), max_size=2)
    | st.none()
)
def test_invalid_targets_never_move_the_robot(dual_world, targets):
    if dual_world.task is None or dual_world.steps_left < 100:
        dual_world.reset("general_pickup", seed=3)
    server = MotionServer(dual_world)
    before = _snapshot(dual_world)
    report = server.move_eef(targets)
    if report.accepted:  # a valid combination (only in-bound values): it may move, and that is not this test
        return
    assert report.tool_text and report.steps_used == 0
    _unchanged(dual_world, before)


def test_a_move_longer_than_the_budget_is_truncated_and_says_so(server, dual_world):
    dual_world.step_count = dual_world.task.step_limit - 5
    report = server.move_eef({"left_x": -0.1, "left_y": -0.3, "left_z": 0.8})
    assert report.accepted and report.stop_reason is StopReason.BUDGET_EXHAUSTED
    assert report.steps_used == 5 and report.waypoints > 5
    assert "Accepted: playing 5 waypoints (0.20s). The env step budget allows only these of the" in report.tool_text
    assert dual_world.steps_left == 0 and not report.arms["left"].reached


def test_home_returns_to_the_configured_joints(server, dual_world):
    server.move_eef({"left_x": -0.2, "left_z": 0.85, "right_y": -0.3})
    report = server.home()
    assert report.accepted and set(report.arms) == {"left", "right"}
    for arm in dual_world.robot.arms:
        np.testing.assert_allclose(dual_world.arm_state(arm.name).joint_positions_rad, arm.home_joints_rad, atol=0.01)


def test_stop_from_another_thread_holds_the_arm(server, dual_world):
    def stop_at_step_5(world):
        if world.step_count == 5:
            worker = threading.Thread(target=server.stop)
            worker.start()
            worker.join()

    dual_world.step_observers.append(stop_at_step_5)
    try:
        report = server.move_eef({"left_x": -0.1, "left_y": -0.3, "left_z": 0.8})
    finally:
        dual_world.step_observers.clear()
    assert report.stop_reason is StopReason.STOPPED and report.steps_used == 5 < report.waypoints
    held = dual_world.arm_state("left").joint_positions_rad
    for _ in range(10):
        dual_world.step()
    np.testing.assert_allclose(dual_world.arm_state("left").joint_positions_rad, held, atol=0.02)


def test_grasp_close_and_lift_through_the_server_with_task_success(server, dual_world):
    grasp = plan_top_down_grasp(dual_world, "target")
    quat = quat_from_matrix(grasp.rotation)
    truth = dual_world.privileged()
    assert server.move_to(grasp.arm, grasp.pregrasp_pos_m, quat, gripper=1.0).arms[grasp.arm].reached
    assert server.move_to(grasp.arm, grasp.grasp_pos_m, quat).arms[grasp.arm].reached
    closing = server.move_to(grasp.arm, grasp.grasp_pos_m, quat, gripper=0.0)
    assert closing.accepted and server.gripper_command[grasp.arm] == 0.0
    # The gripper is not named in the lift: it keeps its command (closed), not the partly-open reading.
    lift = server.move_to(grasp.arm, grasp.grasp_pos_m + np.array([0, 0, 0.15]), quat, is_success=truth.success)
    assert lift.stop_reason is StopReason.TASK_SUCCESS and lift.steps_used < lift.waypoints
    assert truth.success()


def test_move_eef_pairs_refuses_a_repeated_name_and_moves_nothing(server, dual_world):
    before = _snapshot(dual_world)
    report = server.move_eef_pairs(["left_z", "left_x", "left_z"], [0.85, -0.25, 0.95])
    assert not report.accepted and report.stop_reason is StopReason.PLAN_FAILED
    assert report.rejection == DuplicateDimension("left_z")
    assert report.tool_text == "dimension 'left_z' is named more than once; name each dimension once; nothing moved"
    assert server.move_eef_pairs(["left_z"], [0.85, 0.9]).rejection == NamesValuesMismatch(1, 2)
    _unchanged(dual_world, before)
    moved = server.move_eef_pairs(["left_z"], [0.85])
    assert moved.accepted and moved.stop_reason is StopReason.COMPLETED


def test_the_log_line_cuts_a_long_note_and_a_long_name(server):
    report = server.move_eef_pairs(["q" * 10_000], [1.0], note="n" * 10_000)
    line = report.log_text("n" * 10_000)
    assert line.startswith("rejected: plan_failed, 0/0 points; unknown dimension 'qqq")
    assert line.endswith("..., 10000 characters)") and len(line) < 500
    assert report.log_text() == line[: line.index(" (note:")]
    assert report.log_text("above the cube").endswith(" (note: 'above the cube')")


@pytest.mark.parametrize("scale", [0.0, -0.5, 1.5, float("nan"), float("inf"), "slow", None, True])
def test_a_speed_scale_outside_zero_to_one_is_rejected_and_moves_nothing(server, dual_world, scale):
    before = _snapshot(dual_world)
    for report in (
        server.move_eef({"left_z": 0.85}, speed_scale=scale),
        server.move_to("left", (-0.2, -0.1, 0.85), speed_scale=scale),
        server.home(speed_scale=scale),
    ):
        assert not report.accepted and report.rejection.kind == "speed_scale_out_of_range", report.tool_text
        assert report.tool_text.startswith("speed_scale must be in (0, 1]")
    _unchanged(dual_world, before)


def test_a_slowed_move_takes_longer_and_lands_alike(server, dual_world):
    state = dual_world.arm_state("left")
    goal = np.array(state.tcp_pos_m) + np.array([0.0, -0.08, -0.06])
    fast = server.move_to("left", goal)
    server.move_to("left", state.tcp_pos_m)
    slow = server.move_to("left", goal, speed_scale=0.4)
    assert fast.stop_reason is StopReason.COMPLETED and slow.stop_reason is StopReason.COMPLETED
    assert slow.waypoints >= 2 * fast.waypoints
    assert slow.arms["left"].reached and slow.arms["left"].pos_error_mm < 10
