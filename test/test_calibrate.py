"""robodojo calibrate's library (perception/calibrate/) on images rendered in the embedded world with the board on
its table: settings, the capture format, calibration motions, the solving steps against the world's true cameras,
and `check` holding cameras against each other. test/ros/test_calibrate_graph.py runs the same on the live graph."""

from __future__ import annotations

import dataclasses
import math
from pathlib import Path

import numpy as np
import pytest
import yaml

from robodojo.errors import ConfigError
from robodojo.geometry import rotation_angle_between, transform
from robodojo.perception.calibrate.captures import CaptureWriter, read_capture
from robodojo.perception.calibrate.check import check_cameras
from robodojo.perception.calibrate.rehearsal import RenderedRig
from robodojo.perception.calibrate.settings import load_calibration_settings, parse_calibration_settings
from robodojo.perception.calibrate.sim_board import calibration_board_pose
from robodojo.perception.calibrate.solve import board_in_world, detect_views, solve_fixed, solve_hand_eye
from robodojo.perception.calibrate.view_plan import look_at_view, plan_wrist_views
from robodojo.perception.camera import CameraFile, CameraModel, load_camera_file

SETTINGS = load_calibration_settings()
WRIST = {"fr3": "wrist", "dual_arx_x5": "left_wrist"}


def _errors(T: np.ndarray, T_true: np.ndarray) -> tuple[float, float]:
    return 1000 * float(np.linalg.norm(T[:3, 3] - T_true[:3, 3])), math.degrees(
        rotation_angle_between(T[:3, :3], T_true[:3, :3])
    )


@pytest.fixture(scope="module", params=["fr3", "dual_arx_x5"])
def wrist_capture(request, tmp_path_factory):
    """A hand-eye capture as `capture --move --look-at` takes it, rendered: (rig, capture, true T_tcp_cam)."""
    robot = request.param
    with RenderedRig(robot) as rig:
        camera = WRIST[robot]
        believed = load_camera_file(Path(f"config/cameras/{robot}/{camera}.yaml"))
        rehearsal = rig.hand_eye_capture(camera, believed, tmp_path_factory.mktemp(f"{robot}_capture"))
        yield rig, rehearsal.capture, rehearsal.T_tcp_cam_true


def test_the_shipped_settings_load_and_bad_ones_say_where() -> None:
    assert SETTINGS.board.squares_x == 7 and len(SETTINGS.motions.views) >= 6
    data = yaml.safe_load(Path("config/calibration.yaml").read_text())
    data["motions"]["views_deg"][1] = [10, 0, 0]
    with pytest.raises(ConfigError, match=r"views_deg\[1\]"):
        parse_calibration_settings(data, "calibration.yaml")
    data = yaml.safe_load(Path("config/calibration.yaml").read_text())
    data["motions"]["distance_m"] = [0.5, 0.2]
    with pytest.raises(ConfigError, match="distance_m"):
        parse_calibration_settings(data, "calibration.yaml")
    data["extra"] = 1
    with pytest.raises(ConfigError, match="unknown key"):
        parse_calibration_settings(data, "calibration.yaml")


def test_a_capture_reads_back_what_was_written_and_nothing_outside_its_folder(tmp_path) -> None:
    published = CameraModel("wrist", np.array([[3.0, 0, 1.5], [0, 3.0, 1.0], [0, 0, 1]]), np.eye(4), 4, 3,
                            np.array([0.1, 0.0, 0.0, 0.0]), "equidistant")  # fmt: skip
    writer = CaptureWriter(tmp_path / "cap", "fr3", "wrist", "arm", published)
    rgb = np.arange(36, dtype=np.uint8).reshape(3, 4, 3)
    T = transform(np.eye(3), [0.1, 0.2, 0.3])
    writer.add(rgb, 1.5, {"fr3_joint1": 0.25}, {"arm": T})
    capture = read_capture(tmp_path / "cap")
    assert capture.arm == "arm" and (capture.width, capture.height) == (4, 3)
    np.testing.assert_array_equal(capture.published.K, published.K)
    assert capture.published.distortion_model == "equidistant" and capture.published.distortion[0] == 0.1
    view = capture.views[0]
    assert view.stamp_s == 1.5 and view.joints_rad == {"fr3_joint1": 0.25}
    np.testing.assert_allclose(view.T_world_tcp["arm"], T, atol=1e-12)
    np.testing.assert_array_equal(capture.rgb(view), rgb)
    # An edited index naming a file outside the folder, or a symlink in it, reads nothing.
    (tmp_path / "secret.png").write_bytes((tmp_path / "cap" / view.image).read_bytes())
    outside = dataclasses.replace(view, image="../secret.png")
    with pytest.raises(ConfigError, match="missing or not readable"):
        capture.rgb(outside)
    (tmp_path / "cap" / "link.png").symlink_to(tmp_path / "secret.png")
    with pytest.raises(ConfigError, match="missing or not readable"):
        capture.rgb(dataclasses.replace(view, image="link.png"))


def test_calibration_poses_stay_within_the_bounds_they_were_given() -> None:
    with RenderedRig("fr3") as robot:
        shipped = load_camera_file(Path("config/cameras/fr3/wrist.yaml"))
        assert shipped.T_tcp_cam is not None
        q = np.array(robot.robot.arm("arm").home_joints_rad)
        center = robot.board_center
        start = look_at_view(robot.robot, robot.kinematics, "arm", q, shipped.T_tcp_cam, center, 0.4, (60.0, 89.0))
        assert not isinstance(start, str)
        plan = plan_wrist_views(robot.robot, robot.kinematics, "arm", start.q_rad, shipped.T_tcp_cam, center,
                                SETTINGS.motions)  # fmt: skip
        assert len(plan.views) >= 6
        pos, R = robot.kinematics.tcp_pose("arm", start.q_rad)
        for view in plan.views:
            assert np.linalg.norm(view.T_world_tcp[:3, 3] - pos) <= SETTINGS.motions.max_travel_m
            assert math.degrees(rotation_angle_between(view.T_world_tcp[:3, :3], R)) <= SETTINGS.motions.max_turn_deg
        tight = dataclasses.replace(SETTINGS.motions, max_travel_m=0.01)
        tight_plan = plan_wrist_views(
            robot.robot, robot.kinematics, "arm", start.q_rad, shipped.T_tcp_cam, center, tight
        )
        assert len(tight_plan.views) < len(plan.views) and any(
            "from the start" in reason for reason in tight_plan.skipped
        )
        assert all(np.linalg.norm(v.T_world_tcp[:3, 3] - pos) <= 0.01 for v in tight_plan.views)


def test_hand_eye_and_the_board_it_places_match_the_simulated_truth(wrist_capture) -> None:
    _, capture, T_tcp_cam_true = wrist_capture
    detections = detect_views(capture, SETTINGS.board)
    assert sum(d.found for d in detections) >= 6
    model = load_camera_file(Path(f"config/cameras/{capture.robot}/{capture.camera}.yaml")).model
    for flat in (False, True):
        result = solve_hand_eye(capture, detections, model, board_flat=flat)
        assert result.ok, result.reason
        mm, deg = _errors(result.T_tcp_cam, T_tcp_cam_true)
        assert mm < 1.5 and deg < 0.3, (flat, mm, deg)
        camera = CameraFile(model, result.T_tcp_cam, capture.arm)
        placed = board_in_world(capture, detections, camera, board_flat=flat)
        mm, deg = _errors(placed.T_world_board, calibration_board_pose(capture.robot))
        assert placed.ok and mm < 1.5 and deg < 0.2, (flat, mm, deg)


def test_a_fixed_camera_from_the_placed_board_and_check_finds_a_moved_camera(wrist_capture) -> None:
    rig, capture, _ = wrist_capture
    robot = capture.robot
    truth = rig.truth("head")
    head_file = load_camera_file(Path(f"config/cameras/{robot}/head.yaml"))
    wrist_model = load_camera_file(Path(f"config/cameras/{robot}/{capture.camera}.yaml")).model
    wrist_detections = detect_views(capture, SETTINGS.board)
    hand_eye = solve_hand_eye(capture, wrist_detections, wrist_model, board_flat=True)
    placed = board_in_world(capture, wrist_detections, CameraFile(wrist_model, hand_eye.T_tcp_cam, capture.arm),
                            board_flat=True)  # fmt: skip
    head_capture = rig.fixed_capture("head", Path(capture.folder).parent / "head")
    (detection,) = detect_views(head_capture, SETTINGS.board)
    assert detection.found
    result = solve_fixed(head_capture, [detection], head_file.model, placed.T_world_board)
    mm, deg = _errors(result.T_world_cam, truth.T_world_cam)
    assert result.ok and mm < 2.0 and deg < 0.3, (mm, deg)

    # check: the head against a second camera that sees the board (the true head, standing in for a wrist camera).
    models = {"head": head_file.model.with_pose(result.T_world_cam), "other": truth}
    detections = {"head": detection, "other": detection}
    limits = SETTINGS.check
    assert all(c.passes(limits.max_reprojection_px, limits.max_board_error_mm) for c in check_cameras(
        models, detections, SETTINGS.board))  # fmt: skip
    moved = {**models, "head": models["head"].with_pose(transform(np.eye(3), [0.0, 0.0, 0.02]) @ result.T_world_cam)}
    checks = {c.camera: c for c in check_cameras(moved, detections, SETTINGS.board)}
    assert checks["head"].board_error_mm > limits.max_board_error_mm
    assert not checks["head"].passes(limits.max_reprojection_px, limits.max_board_error_mm)
