"""Camera calibration (robodojo.perception.calibration, scripts/calibrate_cameras.py) recovers the embedded world's
cameras from ChArUco boards rendered there: intrinsics, the head camera's pose, the wrist cameras' hand-eye."""

from __future__ import annotations

import dataclasses
import importlib.util
import math
import sys

import cv2
import numpy as np
import pytest

from robodojo import PACKAGE_ROOT
from robodojo.geometry import matrix_from_quat, rotation_about_axis, rotation_angle_between, transform
from robodojo.perception.calibration import (
    CharucoBoardSpec,
    board_image,
    board_pose,
    calibrate_intrinsics,
    detect_charuco,
    hand_eye,
    head_extrinsics,
)
from robodojo.perception.camera import load_camera_file


def _load_script():
    path = PACKAGE_ROOT / "scripts" / "calibrate_cameras.py"
    spec = importlib.util.spec_from_file_location("calibrate_cameras", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault("calibrate_cameras", module)
    spec.loader.exec_module(module)
    return module


cc = _load_script()
DEFAULT_BOARD, WRIST_BOARD = cc.DEFAULT_BOARD, cc.SIM_WRIST_BOARD
# The dual arm's head camera sees the table at about 2 mm per pixel, 1.5x coarser than DEFAULT_BOARD is sized for.
HEAD_BOARD = dataclasses.replace(
    DEFAULT_BOARD, square_m=DEFAULT_BOARD.square_m * 1.5, marker_m=DEFAULT_BOARD.marker_m * 1.5
)


def _pose_error(T, T_true):
    return float(np.linalg.norm(T[:3, 3] - T_true[:3, 3])), math.degrees(
        rotation_angle_between(T[:3, :3], T_true[:3, :3])
    )


def _assert_intrinsics(K, truth):
    assert K[0, 0] == pytest.approx(truth.K[0, 0], rel=0.005)
    assert K[1, 1] == pytest.approx(truth.K[1, 1], rel=0.005)
    assert abs(K[0, 2] - truth.K[0, 2]) < 2.0 and abs(K[1, 2] - truth.K[1, 2]) < 2.0


@pytest.fixture(scope="module")
def scene():
    s = cc.SimCalibrationScene("dual_arx_x5")
    assert s.boards == {"head_board": HEAD_BOARD, "wrist_board": WRIST_BOARD}
    yield s
    s.close()


@pytest.fixture(scope="module")
def head_views(scene):
    return scene.held_board_views("head", "head_board")


@pytest.fixture(scope="module")
def head_intrinsics(scene, head_views):
    detections = [detect_charuco(v.image, HEAD_BOARD) for v in head_views]
    return calibrate_intrinsics(detections, (640, 480))


@pytest.fixture(scope="module")
def left_views(scene):
    return scene.hand_eye_views("left", "wrist_board")


# -- the board and its rendering ------------------------------------------------------------------------------------
def test_board_image_is_detected_completely():
    image = board_image(DEFAULT_BOARD, pixels_per_m=2000, margin_m=0.02)
    assert image.shape == (5 * 80 + 80, 7 * 80 + 80) and image.dtype == np.uint8
    detection = detect_charuco(image, DEFAULT_BOARD)
    assert detection.found and detection.count == DEFAULT_BOARD.corner_count == 24
    # Pixel = (board point + margin) * pixels_per_m: the board frame's x runs along columns, y along rows.
    expected = (detection.points_board[:, :2] + 0.02) * 2000
    np.testing.assert_allclose(detection.corners_px, expected, atol=1.0)


def test_rendered_board_sits_where_the_scene_says(scene):
    """The harness is right: corners detected in a render project from the board pose within a fraction of a pixel."""
    view = scene.table_board_view("head", "head_board")
    truth = scene.truth("head")
    detection = detect_charuco(view.image, HEAD_BOARD)
    assert detection.found and detection.count == 24
    T_cam_board = np.linalg.inv(truth.T_world_cam) @ view.T_world_board
    uv, _ = truth.project_uv((view.T_world_board[:3, :3] @ detection.points_board.T).T + view.T_world_board[:3, 3])
    assert np.sqrt(np.mean(np.sum((uv - detection.corners_px) ** 2, axis=1))) < 0.2
    pose = board_pose(detection, truth.K, truth.distortion)
    assert pose.ok
    pos_err, rot_err = _pose_error(pose.T_cam_board, T_cam_board)
    assert pos_err < 0.002 and rot_err < 0.2


# -- recovery of the world's calibration ----------------------------------------------------------------------------
def test_head_intrinsics_are_recovered(scene, head_intrinsics):
    assert head_intrinsics.ok, head_intrinsics.reason
    assert head_intrinsics.views_used == 10 and head_intrinsics.rms_px < 0.3
    _assert_intrinsics(head_intrinsics.K, scene.truth("head"))
    assert np.all(np.abs(head_intrinsics.distortion) < 0.05)


def test_head_extrinsics_are_recovered(scene, head_intrinsics):
    view = scene.table_board_view("head", "head_board")
    result = head_extrinsics(
        detect_charuco(view.image, HEAD_BOARD), head_intrinsics.K, head_intrinsics.distortion, view.T_world_board
    )
    assert result.ok, result.reason
    pos_err, rot_err = _pose_error(result.T_world_cam, scene.truth("head").T_world_cam)
    assert pos_err < 0.005 and rot_err < 0.5


def test_wrist_intrinsics_and_hand_eye_are_recovered(scene, left_views):
    assert len(left_views) >= 8
    detections = [detect_charuco(v.image, WRIST_BOARD) for v in left_views]
    assert all(d.found for d in detections)
    intrinsics = calibrate_intrinsics(detections, (640, 480))
    assert intrinsics.ok, intrinsics.reason
    _assert_intrinsics(intrinsics.K, scene.truth("left_wrist"))
    poses = [board_pose(d, intrinsics.K, intrinsics.distortion) for d in detections]
    assert all(p.ok for p in poses)
    result = hand_eye([v.T_world_tcp for v in left_views], [p.T_cam_board for p in poses])
    assert result.ok, result.reason
    # The truth at any arm pose: home here.
    T_true = np.linalg.inv(scene.T_world_tcp("left")) @ scene.truth("left_wrist").T_world_cam
    pos_err, rot_err = _pose_error(result.T_tcp_cam, T_true)
    assert pos_err < 0.005 and rot_err < 1.0
    pos_err, rot_err = _pose_error(result.T_world_board, left_views[0].T_world_board)
    assert pos_err < 0.005 and rot_err < 1.0
    assert result.residual_m < 0.002 and result.residual_deg < 0.5


def test_hand_eye_is_exact_on_exact_poses():
    rng = np.random.default_rng(3)

    def random_pose(scale):
        return transform(rotation_about_axis(rng.normal(size=3), rng.uniform(0.2, 0.8)), rng.normal(size=3) * scale)

    T_tcp_cam, T_world_board = random_pose(0.05), random_pose(0.5)
    tcp = [random_pose(0.3) for _ in range(6)]
    boards = [np.linalg.inv(T_tcp_cam) @ np.linalg.inv(T) @ T_world_board for T in tcp]
    for method in (None, "tsai", "park"):
        result = hand_eye(tcp, boards, method=method)
        assert result.ok and result.residual_m < 1e-6
        np.testing.assert_allclose(result.T_tcp_cam, T_tcp_cam, atol=1e-6)


# -- the script: files from images, and the sim mode ----------------------------------------------------------------
def test_cli_writes_camera_files_that_reproduce_the_world(scene, head_views, left_views, tmp_path, capsys):
    images, out = tmp_path / "images", tmp_path / "cameras"
    cc.save_views(images / "intrinsics", head_views, "head")
    table = scene.table_board_view("head", "head_board")
    cc.save_views(images / "extrinsics", [table], "head")
    names = cc.save_views(images / "hand_eye", left_views, "left_wrist")
    cc.save_tcp_poses(images / "tcp_poses.yaml", names, left_views)
    board_pose_args = [f"{v:.9f}" for v in cc.pose_to_xyz_quat(table.T_world_board)]
    wrist_board = ["--squares", "6", "4", "--square-m", "0.025", "--marker-m", "0.019"]
    out_args = ["--out", str(out)]
    head_board = ["--square-m", repr(HEAD_BOARD.square_m), "--marker-m", repr(HEAD_BOARD.marker_m)]
    intrinsics_args = ["--images", str(images / "intrinsics"), "--camera", "head", *head_board]
    assert cc.main(["intrinsics", *intrinsics_args, *out_args]) == 0
    extrinsics_args = ["--images", str(images / "extrinsics"), "--board-pose", *board_pose_args, *head_board]
    assert cc.main(["head", *extrinsics_args, *out_args]) == 0
    hand_eye_args = ["--images", str(images / "hand_eye"), "--tcp-poses", str(images / "tcp_poses.yaml")]
    assert cc.main(["hand-eye", *hand_eye_args, "--arm", "left", *wrist_board, *out_args]) == 0
    capsys.readouterr()

    head = load_camera_file(out / "head.yaml")
    truth = scene.truth("head")
    assert not head.is_wrist and (head.model.width, head.model.height) == (640, 480)
    _assert_intrinsics(head.model.K, truth)
    pos_err, rot_err = _pose_error(head.model.T_world_cam, truth.T_world_cam)
    assert pos_err < 0.005 and rot_err < 0.5
    # The model projects like the world's camera: a table point lands within a pixel or two.
    point = table.T_world_board[:3, 3]
    assert np.linalg.norm(head.model.project_uv(point)[0] - truth.project_uv(point)[0]) < 2.0

    wrist = load_camera_file(out / "left_wrist.yaml")
    assert wrist.is_wrist and wrist.arm == "left"
    for view in left_views[::3]:  # at several arm poses
        scene.pose_arms({"left": view.q})
        model = wrist.at(scene.T_world_tcp("left"))
        pos_err, rot_err = _pose_error(model.T_world_cam, scene.truth("left_wrist").T_world_cam)
        assert pos_err < 0.005 and rot_err < 1.0
    scene.pose_arms()


# Each robot's cameras and the conftest fixture holding its embedded world.
ROBOT_CAMERAS = {"dual_arx_x5": ("head", "left_wrist", "right_wrist"), "fr3": ("head", "wrist")}
WORLD_FIXTURES = {"dual_arx_x5": "dual_world", "fr3": "fr3_world"}


@pytest.mark.parametrize("robot", ROBOT_CAMERAS)
def test_sim_mode_writes_all_cameras(robot, tmp_path, capsys):
    assert cc.main(["--sim", "--robot", robot, "--out", str(tmp_path)]) == 0
    text = capsys.readouterr().out
    assert text.count("error vs truth") == len(ROBOT_CAMERAS[robot])
    for camera in ROBOT_CAMERAS[robot]:
        loaded = load_camera_file(tmp_path / f"{camera}.yaml")
        assert loaded.is_wrist == (camera != "head")
        assert "re-calibrated" in (tmp_path / f"{camera}.yaml").read_text().split("camera_name")[0]


def test_files_go_to_the_robots_folder_unless_out_is_given(tmp_path):
    parse = cc.build_parser().parse_args
    assert cc.output_folder(parse(["sim"])) == PACKAGE_ROOT / "config" / "cameras" / "dual_arx_x5"
    assert cc.output_folder(parse(["sim", "--robot", "fr3"])) == PACKAGE_ROOT / "config" / "cameras" / "fr3"
    assert cc.output_folder(parse(["sim", "--robot", "fr3", "--out", str(tmp_path)])) == tmp_path


@pytest.mark.parametrize("robot", ROBOT_CAMERAS)
def test_shipped_camera_files_match_the_simulated_robot(robot, request):
    """config/cameras/<robot>/*.yaml (from the sim run) agree with the embedded world's cameras."""
    world = request.getfixturevalue(WORLD_FIXTURES[robot])
    assert sorted(p.stem for p in (PACKAGE_ROOT / "config" / "cameras" / robot).glob("*.yaml")) == sorted(
        ROBOT_CAMERAS[robot]
    )
    for camera in ROBOT_CAMERAS[robot]:
        loaded = load_camera_file(PACKAGE_ROOT / "config" / "cameras" / robot / f"{camera}.yaml")
        truth = world.calibration(camera)
        _assert_intrinsics(loaded.model.K, truth)
        if loaded.arm is None:
            T = loaded.model.T_world_cam
        else:
            state = world.arm_state(loaded.arm)
            T = loaded.at(transform(matrix_from_quat(state.tcp_quat_wxyz), state.tcp_pos_m)).T_world_cam
        pos_err, rot_err = _pose_error(T, truth.T_world_cam)
        assert pos_err < 0.005 and rot_err < 1.0, camera


# -- bad input ------------------------------------------------------------------------------------------------------
def test_blank_and_partial_images_are_not_detections():
    blank = detect_charuco(np.full((480, 640, 3), 200, np.uint8), HEAD_BOARD)
    assert not blank.found and "blank" in blank.reason and blank.count == 0
    noise = detect_charuco(np.random.default_rng(0).integers(0, 255, (480, 640), dtype=np.uint8), HEAD_BOARD)
    assert not noise.found and noise.reason
    assert not detect_charuco(np.zeros((3, 3)), HEAD_BOARD).found
    # Only one column of squares in view: too few corners.
    image = board_image(DEFAULT_BOARD, pixels_per_m=2000, margin_m=0.02)
    corner = detect_charuco(image[:, :140], DEFAULT_BOARD)
    assert not corner.found and "corners" in corner.reason
    pose = board_pose(blank, np.eye(3), np.zeros(5))
    assert not pose.ok and "no board" in pose.reason
    extrinsics = head_extrinsics([blank], np.eye(3), np.zeros(5), np.eye(4))
    assert not extrinsics.ok and "not found" in extrinsics.reason


def test_too_few_or_too_similar_views_are_rejected(head_views):
    detections = [detect_charuco(v.image, HEAD_BOARD) for v in head_views]
    few = calibrate_intrinsics(detections[:3], (640, 480))
    assert not few.ok and "only 3 usable views" in few.reason
    blank = detect_charuco(np.zeros((480, 640), np.uint8), HEAD_BOARD)
    assert not calibrate_intrinsics([blank] * 6, (640, 480)).ok
    same = calibrate_intrinsics([detections[0]] * 6, (640, 480))
    assert not same.ok and "too similar" in same.reason
    wrong_size = calibrate_intrinsics(detections, (1280, 720))
    assert not wrong_size.ok and "size" in wrong_size.reason
    with pytest.raises(ValueError, match="dictionary"):
        CharucoBoardSpec(7, 5, 0.04, 0.03, "DICT_NOPE")


def test_degenerate_hand_eye_poses_are_rejected():
    base = transform(rotation_about_axis((1, 0, 0), math.pi), (0.0, -0.2, 0.9))
    board = np.eye(4)
    two = hand_eye([base, base], [board, board])
    assert not two.ok and "only 2 poses" in two.reason
    shifted = [base @ transform(None, (0.02 * i, 0.01 * i, 0.0)) for i in range(5)]
    translations = hand_eye(shifted, [board] * 5)
    assert not translations.ok and "degenerate" in translations.reason
    turned = [base @ transform(rotation_about_axis((0, 0, 1), 0.2 * i), (0.02 * i, 0.0, 0.0)) for i in range(5)]
    one_axis = hand_eye(turned, [board] * 5)
    assert not one_axis.ok and "one axis" in one_axis.reason
    mismatched = hand_eye(turned, [board] * 4)
    assert not mismatched.ok and "5 TCP poses but 4" in mismatched.reason
    # Rotations about several axes, board poses consistent with T_tcp_cam = I and the board at the world origin...
    tilted = [base @ transform(rotation_about_axis((1, i % 2, i), 0.15 * i)) for i in range(5)]
    boards = [np.linalg.inv(T) for T in tilted]
    assert hand_eye(tilted, boards).ok
    boards[2] = transform(None, (0.03, 0.0, 0.0)) @ boards[2]  # ... except one, 3 cm off
    moved = hand_eye(tilted, boards)
    assert not moved.ok and "inconsistent views" in moved.reason
    not_rigid = hand_eye([*turned[:4], np.diag([2.0, 1.0, 1.0, 1.0])], [board] * 5)
    assert not not_rigid.ok and "rigid" in not_rigid.reason


def test_detection_accepts_bgr_and_gray_files(tmp_path):
    image = board_image(WRIST_BOARD, pixels_per_m=4000, margin_m=0.0125)
    path = tmp_path / "board.png"
    cv2.imwrite(str(path), cv2.cvtColor(image, cv2.COLOR_GRAY2BGR))
    detection = detect_charuco(cc.read_image(path), WRIST_BOARD)
    assert detection.found and detection.count == WRIST_BOARD.corner_count
