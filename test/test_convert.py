"""Message conversions of the ROS nodes and their parameter handling (needs the ROS wheels, not a running graph)."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

pytest.importorskip("sensor_msgs", reason="ROS message packages not importable: run scripts/setup_env.sh (ROS wheels)")
pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")

from builtin_interfaces.msg import Time
from sensor_msgs.msg import Image

from robodojo.errors import InvalidCommandError
from robodojo.geometry import matrix_from_quat, transform
from robodojo.motion.rejection import OutOfReach, Refused
from robodojo.motion.report import ArmReport, MoveReport, StopReason
from robodojo.nodes import convert
from robodojo.observation import CameraCalibration


def _rgb(h=5, w=7, seed=0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, size=(h, w, 3), dtype=np.uint8)


# -- images -------------------------------------------------------------------------------------------------


def test_image_round_trip_rgb8():
    rgb = _rgb()
    msg = convert.image_msg(rgb, 12.25, "head_optical")
    assert (msg.height, msg.width, msg.encoding, msg.step) == (5, 7, "rgb8", 21)
    assert msg.header.frame_id == "head_optical" and convert.seconds(msg.header.stamp) == 12.25
    out = convert.image_rgb(msg)
    assert out.dtype == np.uint8 and out.shape == (5, 7, 3)
    np.testing.assert_array_equal(out, rgb)


def test_a_non_contiguous_array_is_sent_as_its_pixels():
    rgb = _rgb(6, 8)[::2, ::2]
    np.testing.assert_array_equal(convert.image_rgb(convert.image_msg(rgb, 0.0, "cam")), rgb)


def test_bgr8_is_channel_swapped():
    rgb = _rgb()
    msg = Image(height=5, width=7, encoding="bgr8", step=21, data=rgb[..., ::-1].tobytes())
    np.testing.assert_array_equal(convert.image_rgb(msg), rgb)


@pytest.mark.parametrize("encoding", ["rgb8", "bgr8"])
def test_padded_rows_are_cut(encoding):
    rgb = _rgb()
    src = rgb if encoding == "rgb8" else rgb[..., ::-1]
    padding = np.full((5, 11), 0xAB, dtype=np.uint8)
    rows = np.concatenate([src.reshape(5, 21), padding], axis=1)
    msg = Image(height=5, width=7, encoding=encoding, step=32, data=rows.tobytes())
    np.testing.assert_array_equal(convert.image_rgb(msg), rgb)


def test_extra_bytes_after_the_last_row_are_ignored():
    rgb = _rgb()
    msg = Image(height=5, width=7, encoding="rgb8", step=21, data=rgb.tobytes() + b"\x00" * 9)
    np.testing.assert_array_equal(convert.image_rgb(msg), rgb)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"encoding": "rgb16"}, "image encoding 'rgb16' is not supported"),
        ({"encoding": "32FC1"}, "image encoding '32FC1' is not supported"),
        ({"data": bytes(104)}, "needs 105 bytes, got 104"),
        ({"data": b""}, "got 0"),
        ({"step": 20, "data": bytes(100)}, "step 20 is shorter than a row"),  # rows shorter than 3 bytes per pixel
    ],
)
def test_bad_images_raise(kwargs, message):
    fields = {"height": 5, "width": 7, "encoding": "rgb8", "step": 21, "data": bytes(105), **kwargs}
    with pytest.raises(InvalidCommandError, match=message):
        convert.image_rgb(Image(**fields))


# -- calibration and poses --------------------------------------------------------------------------------------


def _pose_T(seed=1) -> np.ndarray:
    rng = np.random.default_rng(seed)
    q = rng.normal(size=4)
    q /= np.linalg.norm(q)
    return transform(matrix_from_quat(q), rng.uniform(-2, 2, size=3))


@pytest.mark.parametrize("distortion", [(0.0, 0.0, 0.0, 0.0, 0.0), (-0.12, 0.05, 1e-3, -2e-3, 0.01)])
def test_camera_info_and_pose_round_trip(distortion):
    K = np.array([[612.3, 0.0, 319.5], [0.0, 611.7, 239.25], [0.0, 0.0, 1.0]])
    calibration = CameraCalibration(K=K, T_world_cam=_pose_T(), width=640, height=480, distortion=distortion)
    info = convert.camera_info_msg(calibration, 3.5, "head_optical")
    assert info.distortion_model == "plumb_bob" and info.header.frame_id == "head_optical"
    np.testing.assert_array_equal(np.array(info.p).reshape(3, 4), np.hstack([K, np.zeros((3, 1))]))
    np.testing.assert_array_equal(np.array(info.r).reshape(3, 3), np.eye(3))
    pose = convert.pose_stamped(calibration.T_world_cam, 3.5, "world")
    assert pose.header.frame_id == "world"
    out = convert.calibration_from(info, pose)
    assert (out.width, out.height) == (640, 480)
    np.testing.assert_allclose(out.K, K, rtol=0, atol=1e-12)
    np.testing.assert_allclose(out.distortion, distortion, rtol=0, atol=1e-12)
    assert len(out.distortion) == 5
    np.testing.assert_allclose(out.T_world_cam, calibration.T_world_cam, rtol=0, atol=1e-12)


def test_camera_info_without_distortion_reads_as_none():
    calibration = CameraCalibration(K=np.eye(3), T_world_cam=np.eye(4), width=4, height=3)
    info = convert.camera_info_msg(calibration, 0.0, "cam")
    info.d = []
    assert convert.calibration_from(info, convert.pose_stamped(np.eye(4), 0.0, "world")).distortion == (0.0,) * 5


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 10_000))
def test_pose_matrix_round_trip(seed):
    T = _pose_T(seed)
    np.testing.assert_allclose(convert.pose_matrix(convert.pose_from_matrix(T)), T, rtol=0, atol=1e-12)


# -- time -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("t", [0.0, 0.04, 1.0, 1.999999999, 1.9999999999, 2.5e-10, 123.456789012, 1e6 + 0.999999999])
def test_time_round_trip(t):
    for msg in (convert.time_msg(t), convert.duration_msg(t)):
        assert 0 <= msg.nanosec < 1_000_000_000
        assert convert.seconds(msg) == pytest.approx(t, rel=0, abs=1e-9 + 1e-15 * t)
        assert msg.sec == math.floor(t) or (msg.sec == math.floor(t) + 1 and msg.nanosec == 0)


def test_time_of_nearly_two_seconds_keeps_its_second():
    msg = convert.time_msg(1.999999999)
    assert (msg.sec, msg.nanosec) == (1, 999_999_999)


@settings(max_examples=300, deadline=None)
@given(st.floats(0.0, 2e6, allow_nan=False))
def test_time_round_trip_property(t):
    msg = convert.time_msg(t)
    assert 0 <= msg.nanosec < 1_000_000_000 and isinstance(msg, Time)
    assert abs(convert.seconds(msg) - t) <= 1e-9 + 4e-16 * t


def test_header():
    h = convert.header(7.125, "world")
    assert h.frame_id == "world" and (h.stamp.sec, h.stamp.nanosec) == (7, 125_000_000)


# -- joints ---------------------------------------------------------------------------------------------------


def test_joint_trajectory_points_are_spaced_by_dt():
    positions = np.arange(12, dtype=float).reshape(4, 3) / 10
    msg = convert.joint_trajectory_msg(("a", "b", "c"), positions, 0.04, 12.32)
    assert msg.joint_names == ["a", "b", "c"] and convert.seconds(msg.header.stamp) == pytest.approx(12.32, abs=1e-9)
    assert len(msg.points) == 4
    for k, point in enumerate(msg.points):
        assert convert.seconds(point.time_from_start) == pytest.approx((k + 1) * 0.04, abs=1e-9)
        np.testing.assert_array_equal(point.positions, positions[k])
    times = [convert.seconds(p.time_from_start) for p in msg.points]
    assert all(b > a for a, b in itertools.pairwise(times))


def test_a_one_joint_trajectory_from_a_flat_array():
    msg = convert.joint_trajectory_msg(("finger",), np.array([[0.01], [0.02]]), 0.04, 0.0)
    assert [list(p.positions) for p in msg.points] == [[0.01], [0.02]]


@pytest.mark.parametrize("empty", [np.zeros((0, 0)), np.zeros((0, 6)), []])
def test_an_empty_positions_array_gives_no_points(empty):
    msg = convert.joint_trajectory_msg([f"j{i}" for i in range(6)], empty, 0.0, 0.0)
    assert msg.points == [] and len(msg.joint_names) == 6


def test_joint_state_msg():
    msg = convert.joint_state_msg(["a", "b"], np.array([0.5, -1.0]), [0.1, 0.2], 3.0)
    assert msg.name == ["a", "b"] and list(msg.position) == [0.5, -1.0] and list(msg.velocity) == [0.1, 0.2]
    assert convert.seconds(msg.header.stamp) == 3.0


# -- MoveEef results --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def interfaces(built_interfaces):
    """agent_bringup's generated MoveEef and ArmArrival."""
    from agent_bringup.action import MoveEef
    from agent_bringup.msg import ArmArrival

    return MoveEef, ArmArrival


def _arm(arm: str, reason: StopReason, offset: float) -> ArmReport:
    q = np.array([0.9, 0.1 + offset, -0.3, 0.2])
    q /= np.linalg.norm(q)
    return ArmReport(
        arm=arm, planned=True, reached=reason is StopReason.COMPLETED, pos_error_mm=3.25 + offset,
        rot_error_deg=1.5 - offset, final_pos_m=(0.1 + offset, -0.25, 0.83), final_quat_wxyz=tuple(q),
        waypoints=31, steps_used=17, stop_reason=reason,
    )  # fmt: skip


@pytest.mark.parametrize("accepted", [True, False])
def test_move_report_round_trip(interfaces, accepted):
    MoveEef, ArmArrival = interfaces
    arms = {"left": _arm("left", StopReason.COMPLETED, 0.0), "right": _arm("right", StopReason.STOPPED, 0.125)}
    if accepted:
        report = MoveReport(
            True, "Accepted: playing 31 waypoints (1.24s).", arms, 31, 17, StopReason.STOPPED,
            stop_detail="the goal was cancelled", holding=False,
        )  # fmt: skip
    else:
        unreachable = OutOfReach("left", (0.35, -0.255, 0.885), 136.2, 13.3, ("left_joint4",), ("left_joint3",))
        report = MoveReport.rejected(unreachable, arms)
    result = MoveEef.Result()
    convert.fill_move_result(result, report, 0.04, ArmArrival)
    assert result.error == ("" if accepted else report.tool_text)
    assert result.duration_s == pytest.approx(report.steps_used * 0.04)
    assert [a.arm for a in result.arms] == ["left", "right"]
    assert (result.rejection == "") is accepted
    back = convert.move_report(result)
    assert back == report
    assert list(back.arms) == ["left", "right"]


def test_a_rejection_without_facts_keeps_its_text(interfaces):
    MoveEef, _ = interfaces
    result = MoveEef.Result(accepted=False, error="busy", tool_text="busy", stop_reason="plan_failed")
    assert convert.move_report(result).rejection == Refused("busy")


def test_every_stop_reason_survives_the_message(interfaces):
    MoveEef, ArmArrival = interfaces
    for reason in StopReason:
        report = MoveReport(True, "t", {"arm": _arm("arm", reason, 0.0)}, 31, 17, reason)
        result = MoveEef.Result()
        convert.fill_move_result(result, report, 0.04, ArmArrival)
        assert result.stop_reason == reason.value
        assert convert.move_report(result) == report
