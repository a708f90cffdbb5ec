"""Pinhole camera models with distortion: intrinsics, camera-to-world pose (REP 103 optical frame), image size.

Built from the embedded world's calibration, from CameraInfo-like YAML files (config/cameras/<robot>/*.yaml), or for
wrist cameras from the TCP pose plus a fixed hand-eye transform.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robodojo.config import Section, load_yaml
from robodojo.errors import ConfigError
from robodojo.geometry import Matrix, matrix_from_quat, transform
from robodojo.observation import CameraCalibration
from robodojo.perception.distortion import COEFFICIENT_COUNTS, PLUMB_BOB, Distortion
from robodojo.perception.distortion import distort_normalized as distort_normalized

DISTORTION_EPS = 1e-12


@dataclass(frozen=True)
class Ray:
    """A half-line in the world frame: ``origin_m`` + t * ``direction`` (unit), t > 0."""

    origin_m: NDArray[np.float64]
    direction: NDArray[np.float64]


@dataclass(frozen=True)
class CameraModel:
    """A calibrated camera. ``T_world_cam`` maps optical-frame points (z forward, x right, y down) to the world."""

    name: str
    K: NDArray[np.float64]
    T_world_cam: NDArray[np.float64]
    width: int
    height: int
    distortion: NDArray[np.float64] = field(default_factory=lambda: np.zeros(5))
    #: How ``distortion`` is to be read (robodojo.perception.distortion): plumb_bob, rational_polynomial, equidistant.
    distortion_model: str = PLUMB_BOB

    # -- construction -------------------------------------------------------------------------------------------
    @classmethod
    def from_calibration(cls, name: str, calibration: CameraCalibration) -> CameraModel:
        return cls(
            name=name,
            K=np.asarray(calibration.K, dtype=float),
            T_world_cam=np.asarray(calibration.T_world_cam, dtype=float),
            width=calibration.width,
            height=calibration.height,
            distortion=np.asarray(calibration.distortion, dtype=float),
            distortion_model=calibration.distortion_model,
        )

    @classmethod
    def from_hand_eye(cls, intrinsics: CameraModel, T_world_tcp: ArrayLike, T_tcp_cam: ArrayLike) -> CameraModel:
        """A wrist camera now: its intrinsics, the TCP pose, and the fixed TCP-to-camera (hand-eye) transform."""
        T = np.asarray(T_world_tcp, dtype=float) @ np.asarray(T_tcp_cam, dtype=float)
        return intrinsics.with_pose(T)

    def with_pose(self, T_world_cam: ArrayLike) -> CameraModel:
        return dataclasses.replace(self, T_world_cam=np.asarray(T_world_cam, dtype=float))

    @cached_property
    def lens(self) -> Distortion:
        """The distortion model and coefficients as one checked value."""
        return Distortion(self.distortion_model, tuple(float(v) for v in self.distortion))

    @cached_property
    def T_cam_world(self) -> Matrix:
        R, t = self.T_world_cam[:3, :3], self.T_world_cam[:3, 3]
        return transform(R.T, -R.T @ t)

    @property
    def position_m(self) -> NDArray[np.float64]:
        return self.T_world_cam[:3, 3].copy()

    @cached_property
    def has_distortion(self) -> bool:
        return bool(np.any(np.abs(self.distortion) > DISTORTION_EPS))

    # -- projection ---------------------------------------------------------------------------------------------
    def project_uv(self, points_world: ArrayLike) -> tuple[NDArray[np.float64], NDArray[np.bool_]]:
        """Nx3 world points -> Nx2 (u, v) = (col, row) pixels and a mask of points in front of the camera."""
        pts = np.atleast_2d(np.asarray(points_world, dtype=float))
        T = self.T_cam_world
        cam = pts @ T[:3, :3].T + T[:3, 3]
        in_front = cam[:, 2] > 1e-9
        z = np.where(in_front, cam[:, 2], 1.0)
        x, y = cam[:, 0] / z, cam[:, 1] / z
        if self.has_distortion:
            x, y = self.lens.distort(x, y)
        uv = np.stack([self.K[0, 0] * x + self.K[0, 1] * y + self.K[0, 2], self.K[1, 1] * y + self.K[1, 2]], axis=1)
        return uv, in_front

    def project(self, point_world: ArrayLike) -> tuple[float, float] | None:
        """(row, col) of one world point, or None if it is behind the camera."""
        uv, ok = self.project_uv(point_world)
        return (float(uv[0, 1]), float(uv[0, 0])) if ok[0] else None

    def in_image(self, row: float, col: float) -> bool:
        """Whether (row, col) lies on the sensor (pixel centres at integers, edges at -0.5 and size - 0.5)."""
        return -0.5 <= row < self.height - 0.5 and -0.5 <= col < self.width - 0.5

    def normalized(self, rows: ArrayLike, cols: ArrayLike) -> NDArray[np.float64]:
        """Nx2 ideal normalised image coordinates (x/z, y/z) of pixels, undistorted."""
        uv = np.stack([np.asarray(cols, dtype=float).ravel(), np.asarray(rows, dtype=float).ravel()], axis=1)
        if self.has_distortion:
            return self.lens.undistort_pixels(uv, self.K)
        K = self.K
        y = (uv[:, 1] - K[1, 2]) / K[1, 1]
        x = (uv[:, 0] - K[0, 2] - K[0, 1] * y) / K[0, 0]
        return np.stack([x, y], axis=1)

    def pixel_rays(self, rows: ArrayLike, cols: ArrayLike) -> NDArray[np.float64]:
        """Nx3 unit ray directions in the world frame through pixels (row, col)."""
        xy = self.normalized(rows, cols)
        d_cam = np.concatenate([xy, np.ones((len(xy), 1))], axis=1)
        d = d_cam @ self.T_world_cam[:3, :3].T
        return d / np.linalg.norm(d, axis=1, keepdims=True)

    def pixel_ray(self, row: float, col: float) -> Ray:
        """The world ray through one pixel (no bounds check; see back_project for checked use)."""
        return Ray(origin_m=self.position_m, direction=self.pixel_rays([row], [col])[0])


# -- CameraInfo-like config files (config/cameras/<robot>/<name>.yaml) --------------------------------------------
#
# image_width, image_height, camera_matrix {rows, cols, data}, distortion_model, distortion_coefficients {data}
# as written by ROS camera_calibration, plus one of:
#   T_world_cam: {xyz_m: [...], quat_wxyz: [...]}      a fixed camera (head)
#   T_tcp_cam:   {xyz_m: [...], quat_wxyz: [...]}      a wrist camera (hand-eye), with arm: <arm name>


@dataclass(frozen=True)
class CameraFile:
    """A camera config file: intrinsics plus either a fixed world pose or a hand-eye transform on an arm's TCP."""

    model: CameraModel  # intrinsics, and the world pose for fixed cameras (identity for wrist cameras)
    T_tcp_cam: NDArray[np.float64] | None = None
    arm: str | None = None

    @property
    def is_wrist(self) -> bool:
        return self.T_tcp_cam is not None

    def at(self, T_world_tcp: ArrayLike) -> CameraModel:
        """The wrist camera's model for a TCP pose (fixed cameras ignore it)."""
        if self.T_tcp_cam is None:
            return self.model
        return CameraModel.from_hand_eye(self.model, T_world_tcp, self.T_tcp_cam)


def _pose(section: Section) -> NDArray[np.float64]:
    quat = np.array(section.vector("quat_wxyz", 4))
    if abs(np.linalg.norm(quat) - 1.0) > 1e-3:
        raise ConfigError(f"{section.where}.quat_wxyz: must be a unit quaternion, got {quat.tolist()}")
    return transform(matrix_from_quat(quat), section.vector("xyz_m", 3))


def parse_camera_file(data: Mapping[str, Any], where: str, name: str) -> CameraFile:
    root = Section(data, where)
    width, height = root.integer("image_width", positive=True), root.integer("image_height", positive=True)
    K = np.array(root.section("camera_matrix").vector("data", 9)).reshape(3, 3)
    if K[0, 0] <= 0 or K[1, 1] <= 0 or K[2, 2] != 1.0 or np.any(K[1:, 0] != 0) or K[2, 1] != 0:
        raise ConfigError(f"{where}.camera_matrix: not an intrinsic matrix [[fx, s, cx], [0, fy, cy], [0, 0, 1]]")
    dist_section = root.optional_section("distortion_coefficients")
    distortion = np.array(dist_section.vector("data")) if dist_section else np.zeros(5)
    model_name = root.str("distortion_model") if "distortion_model" in data else PLUMB_BOB
    if model_name not in COEFFICIENT_COUNTS or len(distortion) not in COEFFICIENT_COUNTS[model_name]:
        counts = "; ".join(f"{m}: {' or '.join(map(str, c))}" for m, c in COEFFICIENT_COUNTS.items())
        raise ConfigError(
            f"{where}: distortion_model {model_name!r} with {len(distortion)} coefficients; models and counts: {counts}"
        )
    fixed, hand_eye = root.optional_section("T_world_cam"), root.optional_section("T_tcp_cam")
    if (fixed is None) == (hand_eye is None):
        raise ConfigError(f"{where}: give exactly one of T_world_cam (fixed camera) or T_tcp_cam (wrist camera)")
    model = CameraModel(name, K, _pose(fixed) if fixed else np.eye(4), width, height, distortion, model_name)
    if hand_eye is None:
        return CameraFile(model=model)
    return CameraFile(model=model, T_tcp_cam=_pose(hand_eye), arm=root.str("arm"))


def load_camera_file(path: str | Path) -> CameraFile:
    path = Path(path)
    return parse_camera_file(load_yaml(path), str(path), path.stem)


def camera_file_data(model: CameraModel, *, T_tcp_cam: ArrayLike | None = None, arm: str | None = None) -> dict:
    """The YAML mapping for a camera file (what :func:`write_camera_file` writes)."""
    from robodojo.geometry import quat_from_matrix

    def pose(T: NDArray[np.float64]) -> dict:
        return {"xyz_m": [float(v) for v in T[:3, 3]], "quat_wxyz": [float(v) for v in quat_from_matrix(T[:3, :3])]}

    data: dict[str, Any] = {
        "camera_name": model.name,
        "image_width": model.width,
        "image_height": model.height,
        "camera_matrix": {"rows": 3, "cols": 3, "data": [float(v) for v in model.K.ravel()]},
        "distortion_model": model.distortion_model,
        "distortion_coefficients": {
            "rows": 1,
            "cols": len(model.distortion),
            "data": [float(v) for v in model.distortion],
        },
    }
    if T_tcp_cam is None:
        data["T_world_cam"] = pose(model.T_world_cam)
    else:
        data["T_tcp_cam"] = pose(np.asarray(T_tcp_cam, dtype=float))
        data["arm"] = arm
    return data


def _rounded(value: Any, digits: int = 6) -> Any:
    """Floats rounded to ``digits`` decimals (micrometres, micro-pixels) for readable files."""
    if isinstance(value, dict):
        return {k: _rounded(v, digits) for k, v in value.items()}
    if isinstance(value, list):
        return [_rounded(v, digits) for v in value]
    return round(value, digits) if isinstance(value, float) else value


def write_camera_file(
    out_dir: str | Path,
    model: CameraModel,
    header: str,
    *,
    T_tcp_cam: ArrayLike | None = None,
    arm: str | None = None,
    record: Mapping[str, Any] | None = None,
) -> Path:
    """Write ``out_dir/<camera>.yaml`` (``header`` as comment lines; ``record``: how it was calibrated, kept under
    ``calibration:``, e.g. the date and residuals) and read it back as camera_node will."""
    import yaml

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{model.name}.yaml"
    data = camera_file_data(model, T_tcp_cam=T_tcp_cam, arm=arm)
    if record:
        data["calibration"] = dict(record)
    comment = "".join(f"# {line}\n" if line else "#\n" for line in header.splitlines())
    path.write_text(comment + yaml.safe_dump(_rounded(data), sort_keys=False, default_flow_style=None, width=120))
    load_camera_file(path)  # what the rest of the system will do: fail here, not there
    return path
