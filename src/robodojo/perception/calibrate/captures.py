"""A capture: the views `robodojo calibrate capture` took of one camera, as a folder the solving steps read.

    <folder>/capture.yaml     robot, camera, arm (wrist cameras), image size, the intrinsics the graph published
                              (CameraInfo: K, distortion model and coefficients),
                              and per view: image file, stamp, joint positions, every arm's TCP pose
    <folder>/<camera>_NNN.png the frames, as the camera published them (RGB saved as PNG)

This module is the one place that reads and writes that format.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
import yaml
from numpy.typing import NDArray

from robodojo.config import Section, load_yaml, reject_unknown_keys
from robodojo.errors import ConfigError
from robodojo.geometry import matrix_from_quat, quat_from_matrix, transform
from robodojo.perception.camera import CameraModel
from robodojo.perception.distortion import COEFFICIENT_COUNTS

INDEX = "capture.yaml"
MAX_VIEWS = 500  # a capture folder is operator-made but may be edited: a bound on what is read


@dataclass(frozen=True)
class CapturedView:
    """One frame and the robot's state while the arm was at rest."""

    image: str  # file name inside the capture folder
    stamp_s: float
    joints_rad: dict[str, float]
    T_world_tcp: dict[str, NDArray[np.float64]]  # per arm


@dataclass(frozen=True)
class Capture:
    robot: str
    camera: str
    arm: str | None  # the arm that carries the camera; None for a fixed camera
    published: CameraModel  # the camera's CameraInfo at capture time (intrinsics only: what the graph believed)
    views: tuple[CapturedView, ...]
    folder: Path

    @property
    def width(self) -> int:
        return self.published.width

    @property
    def height(self) -> int:
        return self.published.height

    def rgb(self, view: CapturedView) -> NDArray[np.uint8]:
        """The view's image (RGB); ConfigError if it is missing or unreadable."""
        path = self.folder / Path(view.image).name  # a name only: an edited index cannot reach outside the folder
        bgr = cv2.imread(str(path), cv2.IMREAD_COLOR) if path.is_file() and not path.is_symlink() else None
        if bgr is None:
            raise ConfigError(f"{self.folder / INDEX}: image {view.image} missing or not readable")
        return cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def _pose_data(T: NDArray[np.float64]) -> dict:
    return {"xyz_m": [float(v) for v in T[:3, 3]], "quat_wxyz": [float(v) for v in quat_from_matrix(T[:3, :3])]}


def _pose(section: Section) -> NDArray[np.float64]:
    quat = np.array(section.vector("quat_wxyz", 4))
    norm = float(np.linalg.norm(quat))
    if abs(norm - 1.0) > 1e-3:
        raise ConfigError(f"{section.where}.quat_wxyz: not a unit quaternion")
    return transform(matrix_from_quat(quat / norm), section.vector("xyz_m", 3))


class CaptureWriter:
    """Writes a capture folder view by view; the index is rewritten after each, so an interrupted capture keeps
    what it took."""

    def __init__(self, folder: Path, robot: str, camera: str, arm: str | None, published: CameraModel) -> None:
        self.folder = Path(folder)
        self.folder.mkdir(parents=True, exist_ok=True)
        self.head = {
            "robot": robot, "camera": camera, "arm": arm,
            "image_width": published.width, "image_height": published.height,
            "published_intrinsics": {
                "K": [float(v) for v in published.K.ravel()], "distortion_model": published.distortion_model,
                "distortion": [float(v) for v in published.distortion],
            },
        }  # fmt: skip
        self.views: list[dict] = []

    def add(self, rgb: NDArray[np.uint8], stamp_s: float, joints: dict[str, float], tcp: dict[str, NDArray]) -> Path:
        name = f"{self.head['camera']}_{len(self.views):03d}.png"
        path = self.folder / name
        if not cv2.imwrite(str(path), cv2.cvtColor(np.ascontiguousarray(rgb), cv2.COLOR_RGB2BGR)):
            raise OSError(f"could not write {path}")
        self.views.append({
            "image": name, "stamp_s": float(stamp_s), "joints_rad": {k: float(v) for k, v in joints.items()},
            "T_world_tcp": {arm: _pose_data(T) for arm, T in tcp.items()},
        })  # fmt: skip
        text = yaml.safe_dump({**self.head, "views": self.views}, sort_keys=False, default_flow_style=None, width=120)
        (self.folder / INDEX).write_text(text)
        return path


def read_capture(folder: str | Path) -> Capture:
    """The capture in ``folder``; ConfigError naming the file and key when it does not parse."""
    folder = Path(folder)
    where = str(folder / INDEX)
    data = load_yaml(folder / INDEX)
    keys = ("robot", "camera", "arm", "image_width", "image_height", "published_intrinsics", "views")
    reject_unknown_keys(data, keys, where)
    root = Section(data, where)
    entries = data.get("views")
    if not isinstance(entries, list) or not 0 < len(entries) <= MAX_VIEWS:
        raise ConfigError(f"{where}: views: expected a list of 1 to {MAX_VIEWS} views")
    views = []
    for i, entry in enumerate(entries):
        view = Section(entry, f"{where}.views[{i}]")
        joints = view.section("joints_rad")
        tcp = view.section("T_world_tcp")
        views.append(
            CapturedView(
                image=view.str("image"),
                stamp_s=view.number("stamp_s"),
                joints_rad={name: joints.number(name) for name in joints.names()},
                T_world_tcp={arm: _pose(tcp.section(arm)) for arm in tcp.names()},
            )
        )
    arm = data.get("arm")
    intrinsics = root.section("published_intrinsics")
    model = intrinsics.str("distortion_model")
    published = CameraModel(
        root.str("camera"), np.array(intrinsics.vector("K", 9)).reshape(3, 3), np.eye(4),
        root.integer("image_width", positive=True), root.integer("image_height", positive=True),
        np.array(intrinsics.vector("distortion")), model,
    )  # fmt: skip
    if model not in COEFFICIENT_COUNTS or len(published.distortion) not in COEFFICIENT_COUNTS[model]:
        raise ConfigError(f"{intrinsics.where}: distortion model {model!r} with {len(published.distortion)} values")
    return Capture(
        robot=root.str("robot"), camera=root.str("camera"), arm=None if arm is None else str(arm),
        published=published, views=tuple(views), folder=folder,
    )  # fmt: skip
