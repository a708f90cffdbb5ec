"""A robot's camera with its calibration file: intrinsics, URDF optical frame, and world pose now.

A fixed camera's pose comes from its file; a wrist camera's pose is the arm's TCP pose composed with the file's hand-eye
transform. Loading checks that the file belongs to the camera (fixed vs wrist, the right arm), because a copied or
mixed-up file would otherwise produce plausible but wrong poses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robodojo.config import CONFIG_DIR
from robodojo.errors import ConfigError, InvalidCommandError
from robodojo.observation import CameraCalibration
from robodojo.perception.camera import CameraFile, load_camera_file
from robodojo.robots.config import CameraConfig, RobotConfig

CAMERAS_DIR = CONFIG_DIR / "cameras"  # one folder per robot: the same camera name means another camera elsewhere


def calibration_dir(robot: str) -> Path:
    """The folder of ``robot``'s calibration files: config/cameras/<robot>/."""
    return CAMERAS_DIR / robot


def default_calibration_path(robot: str, camera: str) -> Path:
    """Where ``robot``'s ``camera`` keeps its calibration: config/cameras/<robot>/<camera>.yaml."""
    return calibration_dir(robot) / f"{camera}.yaml"


@dataclass(frozen=True)
class MountedCamera:
    """One camera of a robot: its config (URDF optical frame) and its calibration file."""

    config: CameraConfig
    file: CameraFile
    path: Path

    @property
    def name(self) -> str:
        return self.config.name

    @property
    def frame(self) -> str:
        """The camera's REP 103 optical frame in the robot's URDF."""
        return self.config.frame

    @property
    def arm(self) -> str | None:
        """The arm carrying a wrist camera; None for a fixed camera."""
        return self.file.arm

    @property
    def width(self) -> int:
        return self.file.model.width

    @property
    def height(self) -> int:
        return self.file.model.height

    def T_world_cam(self, T_world_tcp: ArrayLike | None = None) -> NDArray[np.float64]:
        """The optical frame's world pose; a wrist camera needs its arm's TCP pose ``T_world_tcp``."""
        if self.file.is_wrist:
            if T_world_tcp is None:
                raise InvalidCommandError(f"camera {self.name!r} is on arm {self.arm!r}: its pose needs the TCP pose")
            return self.file.at(T_world_tcp).T_world_cam
        return self.file.model.T_world_cam

    def calibration(self, T_world_tcp: ArrayLike | None = None) -> CameraCalibration:
        """Intrinsics and world pose as the agent-side CameraCalibration."""
        m = self.file.model
        return CameraCalibration(
            K=m.K,
            T_world_cam=self.T_world_cam(T_world_tcp),
            width=m.width,
            height=m.height,
            distortion=tuple(float(v) for v in m.distortion),
            distortion_model=m.distortion_model,
        )


def load_mounted_camera(robot: RobotConfig, camera: str, calibration_file: str | Path = "") -> MountedCamera:
    """``robot``'s ``camera`` with its calibration (``calibration_file``, or config/cameras/<robot>/<camera>.yaml when
    empty).

    Raises ConfigError naming the camera when the robot has no such camera, or the file is missing, invalid or
    describes a different mount (fixed vs wrist, another arm).
    """
    if camera not in robot.camera_names:
        raise ConfigError(f"robot {robot.name!r} has no camera {camera!r}; cameras: {', '.join(robot.camera_names)}")
    config = robot.camera(camera)
    # a given path is relative to the working directory, as on any command line
    if str(calibration_file):
        path = Path(calibration_file).expanduser()
    else:
        path = default_calibration_path(robot.name, camera)
    try:
        file = load_camera_file(path)
    except ConfigError as exc:
        raise ConfigError(f"camera {camera!r}: {exc}") from None  # exc names the file
    carrier = robot.camera_arm(camera)
    if file.is_wrist:
        if file.arm not in robot.arm_names:
            raise ConfigError(
                f"camera {camera!r}: {path} puts it on arm {file.arm!r}; arms of {robot.name!r}: "
                f"{', '.join(robot.arm_names)}"
            )
        if carrier != file.arm:
            where = f"on arm {carrier!r}" if carrier else "fixed"
            raise ConfigError(
                f"camera {camera!r}: {path} is a wrist camera on arm {file.arm!r}, but the robot's camera "
                f"(frame {config.frame}) is {where}"
            )
    elif carrier is not None:
        raise ConfigError(
            f"camera {camera!r}: {path} gives a fixed T_world_cam, but the camera (frame {config.frame}) "
            f"rides on arm {carrier!r}; a wrist camera needs T_tcp_cam and arm"
        )
    return MountedCamera(config=config, file=file, path=path)
