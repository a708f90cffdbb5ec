"""`robodojo calibrate check`: do the cameras agree with each other and with the robot?

Every camera that sees the board estimates the board's world pose through its own calibration (a fixed camera its
world pose, a wrist camera the arm's forward kinematics and its hand-eye transform). Each camera is then held
against the others: the board as the others place it, projected into this camera's image, against the corners this
camera detected [px], and the board's corners as this camera places them against where the others do [mm]. A camera
alone with the board is checked against nothing and says so. The overlay draws the projected board corners and the
grasp points of the arms (forward kinematics) on the frame, for the operator's eye.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from robodojo.perception.calibration import CharucoBoardSpec, Detection, board_pose, mean_pose
from robodojo.perception.camera import CameraModel

OVERLAY_CORNER_COLOR = (0, 255, 0)
OVERLAY_TCP_COLOR = (255, 0, 255)


@dataclass(frozen=True)
class CameraCheck:
    camera: str
    board_found: bool
    corners: int
    reprojection_px: float  # RMS, the others' board in this image against the detected corners (nan: no others)
    board_error_mm: float  # largest corner distance between this camera's board and the others' (nan: no others)
    own_rms_px: float  # this camera's own board fit (PnP)
    note: str = ""
    T_world_board: NDArray[np.float64] | None = None  # the board as this camera places it

    def passes(self, max_px: float, max_mm: float) -> bool:
        if not self.board_found:
            return False
        compared = not math.isnan(self.reprojection_px)
        return not compared or (self.reprojection_px <= max_px and self.board_error_mm <= max_mm)


def check_cameras(
    models: Mapping[str, CameraModel], detections: Mapping[str, Detection], board: CharucoBoardSpec
) -> list[CameraCheck]:
    """One check per camera in ``models`` (posed at the instant of its frame) from its board ``detections``."""
    boards: dict[str, NDArray[np.float64]] = {}
    fits: dict[str, float] = {}
    for name, model in models.items():
        detection = detections[name]
        pose = board_pose(detection, model.K, model.distortion)
        if pose.ok:
            boards[name] = model.T_world_cam @ pose.T_cam_board
            fits[name] = pose.rms_px
    corners_board = board.corner_points()
    checks = []
    for name, model in models.items():
        detection = detections[name]
        if name not in boards:
            reason = detection.reason or "the board pose did not fit"
            checks.append(CameraCheck(name, False, detection.count, math.nan, math.nan, math.nan, reason))
            continue
        others = [T for other, T in boards.items() if other != name]
        if not others:
            note = "no other camera saw the board: nothing to hold this one against"
            checks.append(CameraCheck(name, True, detection.count, math.nan, math.nan, fits[name], note, boards[name]))
            continue
        T_others = mean_pose(others)
        seen = T_others[:3, :3] @ detection.points_board.T + T_others[:3, 3:4]
        uv, _ = model.project_uv(seen.T)
        reprojection = float(np.sqrt(np.mean(np.sum((uv - detection.corners_px) ** 2, axis=1))))
        mine = boards[name][:3, :3] @ corners_board.T + boards[name][:3, 3:4]
        theirs = T_others[:3, :3] @ corners_board.T + T_others[:3, 3:4]
        error_mm = 1000 * float(np.max(np.linalg.norm(mine - theirs, axis=0)))
        checks.append(CameraCheck(name, True, detection.count, reprojection, error_mm, fits[name], "", boards[name]))
    return checks


def overlay(
    rgb: NDArray[np.uint8], model: CameraModel, T_world_board: NDArray[np.float64] | None, board: CharucoBoardSpec,
    tcp_points_m: Mapping[str, NDArray[np.float64]],
) -> NDArray[np.uint8]:  # fmt: skip
    """The frame with the board's corners (as ``T_world_board`` places them) and the grasp points drawn on it."""
    image = np.ascontiguousarray(rgb.copy())
    if T_world_board is not None:
        corners = board.corner_points()
        points = T_world_board[:3, :3] @ corners.T + T_world_board[:3, 3:4]
        uv, ok = model.project_uv(points.T)
        for (u, v), front in zip(uv, ok, strict=True):
            if front and model.in_image(v, u):
                cv2.circle(image, (round(u), round(v)), 3, OVERLAY_CORNER_COLOR, 1)
    for arm, point in tcp_points_m.items():
        uv, ok = model.project_uv(point)
        u, v = uv[0]
        if ok[0] and model.in_image(v, u):
            cv2.drawMarker(image, (round(u), round(v)), OVERLAY_TCP_COLOR, cv2.MARKER_CROSS, 14, 2)
            cv2.putText(image, arm, (round(u) + 8, round(v) - 8), cv2.FONT_HERSHEY_SIMPLEX, 0.4, OVERLAY_TCP_COLOR, 1)
    return image
