"""Perturbation probes of seed 002 (appendix D) and the one-shot demonstration (appendix C).

Every probe is active from the first turn and is never explained to the model (DESIGN.md; seed 002 appendix D):

- ``flip_vision_ud`` flips every camera image top to bottom before the model receives it;
- ``flip_vision_lr`` mirrors every camera image left to right (camera identities unchanged);
- ``no_head_camera`` masks the head camera (the two wrist views remain);
- ``right_wrist_only`` masks every camera but the right wrist one;
- ``negate_xyz`` negates x, y and z in everything coordinate-valued the model exchanges: the state it is shown, the
  targets it sends (converted back before the motion server), the bounds in the move_eef tool description
  (e.g. z in [-1.565, -0.7]) and the coordinates in rejections (rendered from their facts in this frame, see
  :attr:`Probes.frame`). The system message is left unchanged, as in the seed; the transformed bounds are the only
  stated cue;
- ``pose_jitter_m`` > 0 adds a random horizontal offset to the position of every arm whose move_eef target names a
  position dimension, resampled on each move: uniform direction in the xy plane, magnitude uniform in
  [0, 2 * pose_jitter_m] (so its mean is ``pose_jitter_m``; the seed uses 0.10 m), seeded by ``pose_jitter_seed``.
  Horizontal because a vertical offset of that size would mostly drive into the table or miss the grasp height
  without any visible cause. The jittered target is clipped to the dimension bounds; the arrival check compares the
  landing point with what the model asked for, so the miss is visible to it.

One-shot demonstration (``demonstration`` = a folder, format in :func:`load_demonstration`, or an episode record,
read by robodojo.episodes.demonstration): a successful episode of the same task recorded on another layout, inserted
as one user message right after the Goal message. Mode ``images`` shows each step's text, grasp-point pose (in the
model's frame) and camera images; mode ``text`` the same without images. Demonstration images are not observations,
so the image horizon does not remove them.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from robodojo.errors import ConfigError
from robodojo.motion.rejection import WORLD, Frame
from robodojo.robots.config import RobotConfig

DEMONSTRATION_MODES = ("images", "text")
DEFAULT_JITTER_M = 0.10  # the seed's mean offset magnitude


@dataclass(frozen=True)
class Probes:
    """Which perturbations are active (all off by default)."""

    flip_vision_ud: bool = False
    flip_vision_lr: bool = False
    no_head_camera: bool = False
    right_wrist_only: bool = False
    negate_xyz: bool = False
    pose_jitter_m: float = 0.0  # mean magnitude of the per-move offset [m]; 0 = off
    pose_jitter_seed: int = 0
    demonstration: Path | None = None  # a demonstration folder (load_demonstration) or an episode record
    demonstration_mode: str = "images"  # "images" or "text"

    def __post_init__(self) -> None:
        if not (math.isfinite(self.pose_jitter_m) and self.pose_jitter_m >= 0):
            raise ConfigError(f"pose_jitter_m must be a finite number >= 0, got {self.pose_jitter_m!r}")
        if self.demonstration_mode not in DEMONSTRATION_MODES:
            raise ConfigError(
                f"demonstration_mode must be one of {', '.join(DEMONSTRATION_MODES)}, got {self.demonstration_mode!r}"
            )

    # -- cameras ----------------------------------------------------------------------------------------------
    def visible_cameras(self, robot: RobotConfig) -> tuple[str, ...]:
        """The cameras the model sees, in the robot's order (head first, then the wrists on the dual-arm robot)."""
        wrist = {arm.wrist_camera_frame: arm.name for arm in robot.arms}
        names = []
        for cam in robot.cameras:
            arm = wrist.get(cam.frame)
            if self.right_wrist_only and arm != "right":
                continue
            if self.no_head_camera and arm is None:
                continue
            names.append(cam.name)
        return tuple(names)

    def transform_image(self, rgb: NDArray[np.uint8]) -> NDArray[np.uint8]:
        """The image as the model receives it (flipped and/or mirrored)."""
        if self.flip_vision_ud:
            rgb = rgb[::-1]
        if self.flip_vision_lr:
            rgb = rgb[:, ::-1]
        return np.ascontiguousarray(rgb)

    # -- coordinates --------------------------------------------------------------------------------------------
    @property
    def frame(self) -> Frame:
        """The frame of every coordinate the model exchanges (targets, state, bounds, rejections)."""
        return Frame(negate_xyz=True) if self.negate_xyz else WORLD

    def to_model(self, values: Mapping[str, float]) -> dict[str, float]:
        """World-frame dimension values -> the values the model sees."""
        return {k: self.frame.value(k, v) for k, v in values.items()}

    def from_model(self, targets: Mapping[str, object]) -> dict[str, object]:
        """Model targets -> world-frame targets. Non-numbers pass unchanged, so the target parser reports them."""
        out: dict[str, object] = {}
        for k, v in targets.items():
            if isinstance(k, str) and isinstance(v, int | float) and not isinstance(v, bool):
                out[k] = self.frame.value(k, v)
            else:
                out[k] = v
        return out

    def bounds_to_model(self, bounds: Mapping[str, tuple[float, float]]) -> dict[str, tuple[float, float]]:
        """Bounds as the model is told them: negated positions swap ends ([0.7, 1.565] -> [-1.565, -0.7])."""
        return {k: self.frame.bounds(k, b) for k, b in bounds.items()}

    @property
    def jitter_enabled(self) -> bool:
        return self.pose_jitter_m > 0


class PoseJitter:
    """Seeded per-move horizontal offsets (see the module docstring)."""

    def __init__(self, mean_m: float, seed: int) -> None:
        self.mean_m = mean_m
        self._rng = np.random.default_rng(seed)

    def sample(self) -> NDArray[np.float64]:
        """One offset [m] (x, y, 0)."""
        angle = self._rng.uniform(0.0, 2 * math.pi)
        magnitude = self._rng.uniform(0.0, 2 * self.mean_m)
        return np.array([magnitude * math.cos(angle), magnitude * math.sin(angle), 0.0])


# -- one-shot demonstrations ---------------------------------------------------------------------------------------
DEMONSTRATION_FILE = "turns.jsonl"


@dataclass(frozen=True)
class DemonstrationStep:
    """One recorded step: what happened (text), the world-frame grasp-point pose, camera images (name -> RGB)."""

    text: str
    pose: Mapping[str, float]
    images: Mapping[str, NDArray[np.uint8]]


def read_rgb(path: Path) -> NDArray[np.uint8] | None:
    """An image file (JPEG or PNG) as RGB, or None when it cannot be read."""
    bgr = cv2.imread(str(path), cv2.IMREAD_COLOR)
    return None if bgr is None else cv2.cvtColor(bgr, cv2.COLOR_BGR2RGB)


def load_demonstration(folder: str | Path) -> list[DemonstrationStep]:
    """Read a demonstration folder.

    Format: ``<folder>/turns.jsonl``, one JSON object per step, in order::

        {"text": "open the left gripper above the red block",
         "pose": {"left_x": -0.21, ..., "right_gripper": 1.0},
         "images": {"head": "images/000_head.jpg", "left_wrist": "images/000_left_wrist.jpg"}}

    ``pose`` (required) maps move_eef dimension names to world-frame values (metres, degrees, gripper 0..1), as the
    observation after that step showed them; ``text`` (optional) is the model's note or a description of the move;
    ``images`` (optional) maps camera names to image files relative to the folder (JPEG or PNG). Other keys are
    ignored. An episode record (a recorded successful episode passed as it is) is read by
    robodojo.episodes.demonstration, which make_agent uses.
    """
    root = Path(folder)
    path = root / DEMONSTRATION_FILE
    if not path.is_file():
        raise ConfigError(f"demonstration: {path} not found")
    steps = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        where = f"{path}:{number}"
        try:
            item = json.loads(line)
        except json.JSONDecodeError as exc:
            raise ConfigError(f"{where}: not valid JSON: {exc}") from None
        if not isinstance(item, dict):
            raise ConfigError(f"{where}: expected a JSON object")
        pose = item.get("pose")
        if (
            not isinstance(pose, dict)
            or not pose
            or not all(
                isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v) for v in pose.values()
            )
        ):
            raise ConfigError(f"{where}: 'pose' must be an object of dimension names to finite numbers")
        text = item.get("text", "")
        if not isinstance(text, str):
            raise ConfigError(f"{where}: 'text' must be a string")
        images_spec = item.get("images", {})
        if not isinstance(images_spec, dict) or not all(isinstance(v, str) for v in images_spec.values()):
            raise ConfigError(f"{where}: 'images' must be an object of camera names to file paths")
        images = {}
        for camera, rel in images_spec.items():
            rgb = read_rgb(root / rel)
            if rgb is None:
                raise ConfigError(f"{where}: cannot read image {root / rel}")
            images[camera] = rgb
        steps.append(DemonstrationStep(text=text, pose={k: float(v) for k, v in pose.items()}, images=images))
    if not steps:
        raise ConfigError(f"demonstration: {path} has no steps")
    return steps


def write_demonstration(folder: str | Path, steps: list[DemonstrationStep]) -> Path:
    """Write ``steps`` in the format of :func:`load_demonstration` (images as JPEG under images/)."""
    root = Path(folder)
    (root / "images").mkdir(parents=True, exist_ok=True)
    lines = []
    for i, step in enumerate(steps):
        images = {}
        for camera, rgb in step.images.items():
            rel = f"images/{i:03d}_{camera}.jpg"
            cv2.imwrite(str(root / rel), cv2.cvtColor(np.asarray(rgb), cv2.COLOR_RGB2BGR))
            images[camera] = rel
        lines.append(json.dumps({"text": step.text, "pose": dict(step.pose), "images": images}))
    path = root / DEMONSTRATION_FILE
    path.write_text("\n".join(lines) + "\n")
    return root
