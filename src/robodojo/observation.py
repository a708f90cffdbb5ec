"""The agent-side view of a robot: what a real robot gives, and nothing else (DESIGN.md principle 2).

Every backend (embedded world, Isaac Sim, real arms) produces these types; agents and perception consume them.
Frames: world frame of DESIGN.md section 5; camera poses are REP 103 optical frames (z forward, x right, y down).
Quaternions are (w, x, y, z).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from robodojo.errors import UnknownNameError


@dataclass(frozen=True)
class CameraCalibration:
    """Pinhole calibration: pixel (u=col, v=row) ~ K @ (R_cam_world @ p + t). Pixel centres at integer coordinates."""

    K: NDArray[np.float64]  # 3x3 intrinsics
    T_world_cam: NDArray[np.float64]  # 4x4 optical frame -> world
    width: int
    height: int
    distortion: tuple[float, ...] = (0.0, 0.0, 0.0, 0.0, 0.0)  # OpenCV plumb_bob k1 k2 p1 p2 k3
    #: How ``distortion`` is read: plumb_bob, rational_polynomial or equidistant (robodojo.perception.distortion).
    distortion_model: str = "plumb_bob"

    def project(self, points_world: NDArray[np.float64]) -> NDArray[np.float64]:
        """Nx3 world points -> Nx2 pixels (col, row). Points behind the camera give NaN."""
        pts = np.atleast_2d(np.asarray(points_world, dtype=float))
        T_cam_world = np.linalg.inv(self.T_world_cam)
        cam = pts @ T_cam_world[:3, :3].T + T_cam_world[:3, 3]
        with np.errstate(divide="ignore", invalid="ignore"):
            uv = (cam @ self.K.T)[:, :2] / cam[:, 2:3]
        uv[cam[:, 2] <= 0] = np.nan
        return uv


@dataclass(frozen=True)
class CameraFrame:
    """One camera's image at one instant, with its calibration at that instant (wrist cameras move)."""

    name: str
    rgb: NDArray[np.uint8]  # HxWx3
    calibration: CameraCalibration
    depth_m: NDArray[np.float32] | None = None  # HxW, z along the optical axis; simulator or RGB-D only
    segmentation: NDArray[np.int32] | None = None  # HxW object ids (-1 background); simulator only


@dataclass(frozen=True)
class ArmState:
    """One arm: joint angles, grasp-point (TCP) pose in the world frame, gripper opening 0 (closed) .. 1 (open)."""

    name: str
    joint_names: tuple[str, ...]
    joint_positions_rad: tuple[float, ...]
    tcp_pos_m: tuple[float, float, float]
    tcp_quat_wxyz: tuple[float, float, float, float]
    gripper_opening: float

    @property
    def T_world_tcp(self) -> NDArray[np.float64]:
        """The grasp point's pose as a 4x4 homogeneous transform."""
        from robodojo.geometry import matrix_from_quat, transform

        return transform(matrix_from_quat(np.asarray(self.tcp_quat_wxyz, dtype=float)), self.tcp_pos_m)


@dataclass(frozen=True)
class EpisodeState:
    """What the episode status topic says: the episode, its budget and its verdict so far."""

    episode_id: str
    task: str
    variant: str
    seed: int
    instruction: str
    recipe: str
    steps_used: int
    step_limit: int
    steps_left: int
    success: bool
    score: float


@dataclass(frozen=True)
class Observation:
    """Everything an agent may see at one control step."""

    step: int
    steps_left: int
    time_s: float
    arms: Mapping[str, ArmState]
    cameras: Mapping[str, CameraFrame] = field(default_factory=dict)

    def arm(self, name: str) -> ArmState:
        try:
            return self.arms[name]
        except KeyError:
            raise UnknownNameError("arm", name, self.arms) from None

    def camera(self, name: str) -> CameraFrame:
        try:
            return self.cameras[name]
        except KeyError:
            raise UnknownNameError("camera", name, self.cameras) from None
