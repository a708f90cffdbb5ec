"""The episode API that tools run over (seed 003, section 3.3): joints, TCP poses, the three RGB images with their
calibration, and the base motion primitives, all through the same command route the ``robo`` command uses.

A tool gets an :class:`EpisodeAPI` and may use nothing else of the robot: observations come from the obs/ folder the
harness refreshes (``observe()`` asks for a refresh first), motions are base commands and answer their records.
Commands that move nothing cost no env steps; every executed motion step counts against the task's limit.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np
from numpy.typing import NDArray

from robo_shell import CAMERAS_FILE, OBS_ENV, STATE_FILE, protocol
from robodojo.observation import CameraCalibration
from robodojo.perception.camera import CameraModel


class CommandFailed(RuntimeError):
    """A base command answered ok=false (refused, or an error): its record is attached."""

    def __init__(self, record: dict[str, Any]) -> None:
        super().__init__(f"robo {record.get('command', '?')}: {record.get('reason') or record.get('verdict')}")
        self.record = record


@dataclass(frozen=True)
class ArmPose:
    """One arm as the obs folder reports it."""

    tcp_pos_m: NDArray[np.float64]
    tcp_quat_wxyz: NDArray[np.float64]
    gripper_opening: float
    joint_names: tuple[str, ...]
    joint_positions_rad: tuple[float, ...]


@dataclass(frozen=True)
class ObsFolder:
    """The obs/ folder read back: images (RGB uint8), calibrated camera models, arm poses, step counts."""

    images: dict[str, NDArray[np.uint8]]
    cameras: dict[str, CameraModel]
    arms: dict[str, ArmPose]
    step: int
    steps_left: int


def read_obs(folder: Path) -> ObsFolder:
    """Read an obs/ folder written by the harness (``robo obs``)."""
    cameras_doc = json.loads((folder / CAMERAS_FILE).read_text())
    state = json.loads((folder / STATE_FILE).read_text())
    images, cameras = {}, {}
    for name, cam in cameras_doc.items():
        bgr = cv2.imread(str(folder / cam["image"]), cv2.IMREAD_COLOR)
        if bgr is None:
            raise FileNotFoundError(f"{folder / cam['image']}: missing or unreadable")
        images[name] = np.ascontiguousarray(bgr[:, :, ::-1])
        calibration = CameraCalibration(
            K=np.asarray(cam["K"], dtype=float),
            T_world_cam=np.asarray(cam["T_world_cam"], dtype=float),
            width=int(cam["width"]),
            height=int(cam["height"]),
            distortion=tuple(float(v) for v in cam["distortion"]),
            distortion_model=str(cam.get("distortion_model", "plumb_bob")),  # folders written before the field
        )
        cameras[name] = CameraModel.from_calibration(name, calibration)
    arms = {
        name: ArmPose(
            tcp_pos_m=np.asarray(a["tcp_pos_m"], dtype=float),
            tcp_quat_wxyz=np.asarray(a["tcp_quat_wxyz"], dtype=float),
            gripper_opening=float(a["gripper_opening"]),
            joint_names=tuple(a["joint_names"]),
            joint_positions_rad=tuple(float(q) for q in a["joint_positions_rad"]),
        )
        for name, a in state["arms"].items()
    }
    return ObsFolder(images, cameras, arms, int(state["step"]), int(state["steps_left"]))


class EpisodeAPI:
    """The robot as a tool sees it. Motion methods return the base command's record and raise
    :class:`CommandFailed` when it was refused (``check=False`` returns the record instead)."""

    def __init__(self, route: str | None = None, obs_dir: str | Path | None = None) -> None:
        self.route = route
        self.obs_dir = Path(obs_dir or os.environ.get(OBS_ENV, "obs"))

    # -- the route ---------------------------------------------------------------------------------------------
    def command(self, *argv: object, check: bool = True) -> dict[str, Any]:
        """Run one base command (``api.command("move", "--arm", "left", "--dz", 0.05)``) and return its record."""
        record = protocol.call([str(a) for a in argv], path=self.route)
        if check and not record.get("ok"):
            raise CommandFailed(record)
        return record

    # -- state and images (free: no env steps) ---------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """TCP poses, grippers, joints, steps used and left, and whether the task reports done."""
        return self.command("status")

    def observe(self) -> ObsFolder:
        """Refresh obs/ (``robo obs``) and read it: all camera images with calibration, arm poses."""
        self.command("obs")
        return read_obs(self.obs_dir)

    # -- motion primitives (each executed step costs one env step) -------------------------------------------------
    def move(self, arm: str, dx: float = 0.0, dy: float = 0.0, dz: float = 0.0, *, check: bool = True) -> dict:
        """Translate the arm's TCP along world axes [m] (each at most the harness's max_translation_m)."""
        return self.command("move", "--arm", arm, "--dx", dx, "--dy", dy, "--dz", dz, check=check)

    def move_to(
        self, arm: str, xyz: Sequence[float], *, max_leg_m: float = 0.2, check: bool = True
    ) -> list[dict[str, Any]]:
        """Move the TCP to world point ``xyz`` in straight legs of at most ``max_leg_m`` per axis (base moves);
        stops at the first leg that is refused or falls short. Returns the legs' records."""
        records: list[dict[str, Any]] = []
        pos = np.asarray(self.status()["arms"][arm]["tcp_pos_m"], dtype=float)
        delta = np.asarray(xyz, dtype=float) - pos
        legs = max(1, math.ceil(float(np.max(np.abs(delta))) / max_leg_m - 1e-9))
        for _ in range(legs):
            step = delta / legs
            record = self.move(arm, *step, check=check)
            records.append(record)
            if not record.get("ok") or not record.get("reached", True):
                break
        return records

    def rotate(self, arm: str, roll_deg: float = 0.0, pitch_deg: float = 0.0, yaw_deg: float = 0.0, *,
               check: bool = True) -> dict[str, Any]:  # fmt: skip
        """Turn the gripper about its TCP: roll, pitch, yaw about the world x, y, z axes [deg]."""
        return self.command(
            "rotate", "--arm", arm, "--roll", roll_deg, "--pitch", pitch_deg, "--yaw", yaw_deg, check=check
        )

    def point(self, arm: str, direction: str = "down", fingers: str = "x", *, check: bool = True) -> dict[str, Any]:
        """Set the gripper orientation from the named set: fingers pointing ``direction``, opening along world
        axis ``fingers``."""
        return self.command("point", "--arm", arm, "--direction", direction, "--fingers", fingers, check=check)

    def close(self, arm: str, *, check: bool = True) -> dict[str, Any]:
        """Close a gripper until it meets resistance; the record's ``holding`` says whether something is held."""
        return self.command("gripper", "--arm", arm, "--close", check=check)

    def open(self, arm: str, *, check: bool = True) -> dict[str, Any]:
        """Open a gripper fully (a held object is let go)."""
        return self.command("gripper", "--arm", arm, "--open", check=check)

    def gripper(self, arm: str, opening: float, *, check: bool = True) -> dict[str, Any]:
        """Set a gripper's opening from 0 (closed) to 1 (open) where the arm stands."""
        return self.command("gripper", "--arm", arm, "--opening", opening, check=check)

    def home(self, *, check: bool = True) -> dict[str, Any]:
        """Every arm to its home pose."""
        return self.command("home", check=check)

    def wait(self, seconds: float, *, check: bool = True) -> dict[str, Any]:
        """Hold every arm while robot time passes."""
        return self.command("wait", "--seconds", seconds, check=check)
