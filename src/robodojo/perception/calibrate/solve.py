"""The solving steps of `robodojo calibrate` on capture folders: intrinsics, a wrist camera's hand-eye transform, a
fixed camera's pose, and the board's world pose as a calibrated wrist camera measured it.

Each returns the library's result (robodojo.perception.calibration) and never raises on bad views: the result says
why it failed. The files they lead to are written by the caller (perception.camera.write_camera_file).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import cv2
import numpy as np
from numpy.typing import NDArray

from robodojo.errors import ConfigError
from robodojo.geometry import transform
from robodojo.perception.calibrate.captures import Capture
from robodojo.perception.calibration import (
    CharucoBoardSpec,
    Detection,
    ExtrinsicsResult,
    HandEyeResult,
    IntrinsicsResult,
    board_pose,
    board_scatter,
    calibrate_intrinsics,
    detect_charuco,
    hand_eye,
    head_extrinsics,
)
from robodojo.perception.camera import CameraFile, CameraModel


@dataclass(frozen=True)
class BoardInWorld:
    """The board's world pose as a calibrated wrist camera saw it over a capture's views."""

    ok: bool
    T_world_board: NDArray[np.float64]
    views_used: int
    scatter_m: float
    scatter_deg: float
    reason: str = ""


def detect_views(capture: Capture, board: CharucoBoardSpec) -> list[Detection]:
    """The board in every view of the capture (a view without it gives a Detection with ``found`` false)."""
    return [detect_charuco(capture.rgb(view), board) for view in capture.views]


def check_size(model: CameraModel, capture: Capture) -> None:
    """ConfigError when the capture's frames are not the size the camera's intrinsics are for."""
    if (capture.width, capture.height) != (model.width, model.height):
        raise ConfigError(
            f"{capture.folder}: frames are {capture.width} x {capture.height} but {model.name}'s intrinsics are for "
            f"{model.width} x {model.height}: capture again, or calibrate the intrinsics from this capture"
        )


def solve_intrinsics(capture: Capture, detections: Sequence[Detection]) -> IntrinsicsResult:
    return calibrate_intrinsics(detections, (capture.width, capture.height))


def _arm_of(capture: Capture) -> str:
    if capture.arm is None:
        raise ConfigError(f"{capture.folder}: camera {capture.camera} is not on an arm (a fixed camera: use `head`)")
    return capture.arm


def solve_hand_eye(
    capture: Capture,
    detections: Sequence[Detection],
    model: CameraModel,
    *,
    board_flat: bool = False,
    refine: bool = True,
) -> HandEyeResult:
    """T_tcp_cam from the views of a board fixed on the table, the arm at a different pose in each.

    OpenCV's closed-form solvers start it; a least-squares refinement of T_tcp_cam and the board's world pose
    together over every detected corner of every view finishes it (the closed forms work on per-view board poses,
    whose depth is the least certain part; the corners' pixels are what was measured). ``board_flat``: the board
    lies face up on a level table, its normal the world's -z (a turn about the vertical and a position left free).
    ``refine`` false: the closed form alone (the benchmark's baseline).
    """
    arm = _arm_of(capture)
    tcp, boards, used = [], [], []
    for view, detection in zip(capture.views, detections, strict=True):
        pose = board_pose(detection, model.K, model.distortion)
        if pose.ok:
            tcp.append(view.T_world_tcp[arm])
            boards.append(pose.T_cam_board)
            used.append(detection)
    start = hand_eye(tcp, boards)
    if not start.ok or not refine:
        return start
    board = BoardFreedom(start.T_world_board, board_flat)
    x0 = np.concatenate([_pose_vector(start.T_tcp_cam), board.start])
    x = _refine(model, tcp, used, lambda x: (_vector_pose(x[:6]), board.pose(x[6:])), x0)
    T_tcp_cam, T_world_board = _vector_pose(x[:6]), board.pose(x[6:])
    _, scatter_m, scatter_deg = board_scatter(tcp, boards, T_tcp_cam)
    method = f"{start.method}+refined" + (", board flat" if board_flat else "")
    return replace(start, T_tcp_cam=T_tcp_cam, T_world_board=T_world_board, method=method,
                   residual_m=scatter_m, residual_deg=scatter_deg)  # fmt: skip


def _pose_vector(T: NDArray[np.float64]) -> NDArray[np.float64]:
    return np.concatenate([cv2.Rodrigues(T[:3, :3])[0].ravel(), T[:3, 3]])


def _vector_pose(v: NDArray[np.float64]) -> NDArray[np.float64]:
    return transform(cv2.Rodrigues(np.asarray(v[:3], dtype=float))[0], v[3:])


FACE_UP = np.diag([1.0, -1.0, -1.0])  # a board lying face up, unturned: its z axis (into the board) points down


class BoardFreedom:
    """How the board's world pose is parametrised in a refinement: free (6 numbers: rotation vector, position) or
    lying flat (4: a turn about the vertical, position)."""

    def __init__(self, T_world_board: NDArray[np.float64], flat: bool) -> None:
        self.flat = flat
        if flat:
            x = T_world_board[:3, 0]
            self.start = np.array([math.atan2(x[1], x[0]), *T_world_board[:3, 3]])
        else:
            self.start = _pose_vector(T_world_board)

    def pose(self, v: NDArray[np.float64]) -> NDArray[np.float64]:
        if not self.flat:
            return _vector_pose(v)
        c, s = math.cos(v[0]), math.sin(v[0])
        return transform(np.array([[c, -s, 0.0], [s, c, 0.0], [0.0, 0.0, 1.0]]) @ FACE_UP, v[1:4])


def _refine(
    model: CameraModel,
    T_world_tcp: Sequence[NDArray[np.float64]],
    detections: Sequence[Detection],
    unpack: Callable[[NDArray[np.float64]], tuple[NDArray[np.float64], NDArray[np.float64]]],
    x0: NDArray[np.float64],
) -> NDArray[np.float64]:
    """The parameters ``x`` (``unpack(x)`` = T_tcp_cam, T_world_board) minimising the corners' reprojection error
    over all views [px], from ``x0``."""
    from scipy.optimize import least_squares

    def residuals(x: NDArray[np.float64]) -> NDArray[np.float64]:
        X, B = unpack(x)
        out = []
        for T_tcp, detection in zip(T_world_tcp, detections, strict=True):
            T_cam_board = np.linalg.inv(T_tcp @ X) @ B
            rvec = cv2.Rodrigues(T_cam_board[:3, :3])[0]
            uv, _ = cv2.projectPoints(detection.points_board, rvec, T_cam_board[:3, 3], model.K, model.distortion)
            out.append((uv.reshape(-1, 2) - detection.corners_px).ravel())
        return np.concatenate(out)

    return np.asarray(least_squares(residuals, x0, method="lm").x)


def board_in_world(
    capture: Capture, detections: Sequence[Detection], camera: CameraFile, *, board_flat: bool = False
) -> BoardInWorld:
    """The board's world pose from a wrist camera's capture and its calibration file (T_tcp_cam); ``board_flat`` as
    for :func:`solve_hand_eye`."""
    arm = _arm_of(capture)
    if camera.T_tcp_cam is None:
        return BoardInWorld(False, np.eye(4), 0, np.inf, np.inf, f"{camera.model.name} has no hand-eye calibration")
    tcp, boards, used = [], [], []
    for view, detection in zip(capture.views, detections, strict=True):
        pose = board_pose(detection, camera.model.K, camera.model.distortion)
        if pose.ok:
            tcp.append(view.T_world_tcp[arm])
            boards.append(pose.T_cam_board)
            used.append(detection)
    if not boards:
        return BoardInWorld(False, np.eye(4), 0, np.inf, np.inf, "the board was found in none of the views")
    T_mean, scatter_m, scatter_deg = board_scatter(tcp, boards, camera.T_tcp_cam)
    board, T_tcp_cam = BoardFreedom(T_mean, board_flat), camera.T_tcp_cam
    x = _refine(camera.model, tcp, used, lambda x: (T_tcp_cam, board.pose(x)), board.start)
    return BoardInWorld(True, board.pose(x), len(boards), scatter_m, scatter_deg)


def solve_fixed(
    capture: Capture, detections: Sequence[Detection], model: CameraModel, T_world_board: NDArray[np.float64]
) -> ExtrinsicsResult:
    """A fixed camera's pose from its views of the board at a known world pose (all views solved together)."""
    return head_extrinsics(list(detections), model.K, model.distortion, T_world_board)
