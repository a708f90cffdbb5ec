"""The result types of the robo API: what every robo call returns (to a code cell, the shell harness, a test).

Frozen dataclasses with plain fields (floats, tuples, strings, numpy arrays). The code-cell kernel process unpickles
them, so this module imports only the standard library and numpy: never mujoco, robodojo.sim, robodojo.motion or
robodojo.robots (a test checks it).

Conventions, stated once: world frame x across the table (the left arm at negative x), y away from the robot, z up;
metres and degrees; quaternions (w, x, y, z); pixels (row, col) as in numpy images, (0, 0) at the top-left.
Every ``__repr__`` is short: floats rounded, small arrays printed, large arrays summarised by shape, masks by area.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
from numpy.typing import NDArray

from robodojo.text import trim_text

MAX_REASON_CHARS = 400  # longer reasons keep head and tail in the repr (the field keeps the whole text)
SMALL_ARRAY_SIZE = 16  # arrays up to this many elements are printed in full, larger ones as shape and dtype
DECIMALS = 4  # metres, quaternions, openings: 0.1 mm
COARSE_DECIMALS = 1  # fields in degrees, pixels or millimetres
COARSE_SUFFIXES = ("_deg", "_px", "_mm")


def _round(value: float, decimals: int) -> float | int:
    if not math.isfinite(value):
        return value
    rounded = round(value, decimals)
    return 0.0 if rounded == 0 else rounded  # no -0.0


def _format(value: Any, decimals: int) -> str:
    if isinstance(value, bool) or value is None or isinstance(value, int | str):
        return _format_str(value) if isinstance(value, str) else repr(value)
    if isinstance(value, float | np.floating):
        return repr(_round(float(value), decimals))
    if isinstance(value, np.ndarray):
        if value.dtype == bool and value.ndim == 2:
            return f"<mask {value.shape[0]}x{value.shape[1]}, area {int(value.sum())} px>"
        if value.size <= SMALL_ARRAY_SIZE and value.dtype.kind in "fiub":
            return repr(np.round(value.astype(float), decimals).tolist())
        return f"<array {'x'.join(str(n) for n in value.shape)} {value.dtype}>"
    if isinstance(value, tuple | list):
        inner = ", ".join(_format(v, decimals) for v in value)
        return f"({inner},)" if isinstance(value, tuple) and len(value) == 1 else f"({inner})"
    return repr(value)


def _format_str(text: str) -> str:
    return repr(trim_text(text, MAX_REASON_CHARS, separator=" "))


def _short_repr(obj: Any, skip_none: tuple[str, ...] = ()) -> str:
    """``Name(field=value, ...)`` with rounded numbers; fields named in ``skip_none`` are left out while None."""
    parts = []
    for f in fields(obj):
        if not f.repr:
            continue
        value = getattr(obj, f.name)
        if f.name in skip_none and value is None:
            continue
        if f.name == "reason" and value == "":
            continue
        decimals = COARSE_DECIMALS if f.name.endswith(COARSE_SUFFIXES) else DECIMALS
        parts.append(f"{f.name}={_format(value, decimals)}")
    return f"{type(obj).__name__}({', '.join(parts)})"


class _Result:
    """Shared repr of the result types (a mixin; each subclass is a frozen dataclass)."""

    _skip_none: tuple[str, ...] = ()

    def __repr__(self) -> str:
        return _short_repr(self, self._skip_none)

    __str__ = __repr__


Vec3 = tuple[float, float, float]
Quat = tuple[float, float, float, float]


@dataclass(frozen=True, repr=False)
class ArmState(_Result):
    """One arm now.

    Fields:
        name: the arm's name ('left', 'right', or 'arm' on a single-arm robot).
        tcp_pos: grasp point (TCP, the point between the fingertip pads) in the world frame [m]. move_to targets it.
        tcp_quat: TCP orientation (w, x, y, z); its z axis is the approach direction (out of the fingers), its y axis
            the direction the fingers open along.
        eef_pos: flange (where the gripper is mounted on the wrist) in the world frame [m]; it sits behind the TCP,
            eef_pos = tcp_pos - d * approach with d the flange-to-TCP distance (0.125 m on the ARX X5).
        eef_quat: flange orientation (w, x, y, z).
        gripper: measured opening, 0 closed .. 1 fully open. A gripper closed on an object stops part open.
        approach: unit vector of the TCP z axis in the world frame ((0, 0, -1) when the fingers point down).
        joints: joint angles [rad], base to wrist.
    """

    name: str
    tcp_pos: Vec3
    tcp_quat: Quat
    eef_pos: Vec3
    eef_quat: Quat
    gripper: float
    approach: Vec3
    joints: tuple[float, ...]


@dataclass(frozen=True, repr=False)
class State(_Result):
    """The robot now: every arm's state, the env steps left and the task's success signal.

    Fields:
        arms: arm name -> ArmState. Read one arm as ``state.left`` / ``state.right`` or ``state.arm('left')``;
            on a single-arm robot the arm's fields are also read directly (``state.tcp_pos``).
        steps_left: env steps (25 Hz control steps) left in the episode; every executed waypoint uses one.
        done: the benchmark's success signal: True once the task is solved.
        time_s: the robot's clock [s] (simulated time in simulation): how far things that move by themselves
            have gone since an earlier state.
    """

    arms: Mapping[str, ArmState]
    steps_left: int
    done: bool
    time_s: float

    def arm(self, name: str | None = None) -> ArmState:
        """One arm's state; ``name`` may be left out on a single-arm robot."""
        if name is None and len(self.arms) == 1:
            return next(iter(self.arms.values()))
        if name is None or name not in self.arms:
            raise ValueError(f"unknown arm {name!r}; arms: {', '.join(repr(a) for a in self.arms)}")
        return self.arms[name]

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name == "arms":  # unpickling and copying look these up before arms exists
            raise AttributeError(name)
        arms = self.arms
        if name in arms:
            return arms[name]
        if len(arms) == 1 and name in ArmState.__dataclass_fields__:
            return getattr(next(iter(arms.values())), name)
        raise AttributeError(
            f"State has no field {name!r}; fields: arms, steps_left, done, time_s, and the arms "
            f"{', '.join(repr(a) for a in arms)}"
        )

    def __repr__(self) -> str:
        arms = ", ".join(f"{name}={state!r}" for name, state in self.arms.items())
        return f"State({arms}, steps_left={self.steps_left}, done={self.done}, time_s={self.time_s:.2f})"

    __str__ = __repr__


@dataclass(frozen=True, repr=False)
class MoveResult(_Result):
    """What one motion did (move_to, grasp, release, home).

    Fields:
        planned: False when the motion was refused before anything moved (unreachable target, joint limits, a path
            through the table): ``reason`` says why. Change the target; repeating it fails again.
        reached: the grasp point ended within 10 mm and 5 deg of the target (for home: of the home pose).
        final_dist_m: distance [m] from the grasp point to the target after the motion (largest over moving arms).
        final_angle_deg: orientation error [deg] after the motion (largest over moving arms).
        waypoints: 25 Hz trajectory points planned (0 if not planned).
        steps_used: env steps executed (waypoints played plus any waiting for the fingers).
        stop_reason: 'completed' (reached), 'off_target' (every point played but the grasp point ended outside the
            tolerance), 'task_success' (the task was solved mid-motion and the motion stopped there),
            'budget_exhausted' (the env steps ran out), 'plan_failed' or 'refused' (nothing moved), 'stopped',
            'aborted' (cut short) or 'backend_lost' (the robot stopped answering).
        terminated: the episode is over (task solved or no env steps left): stop acting.
        reason: why the motion failed or fell short, and what to do; empty when it went as planned.
        gripper: grasp and release only: the measured opening after the fingers stopped (0 closed .. 1 open).
        holding: grasp only: True when the fingers stopped part open (something is between them), False when they
            closed fully (nothing grasped: look again and re-aim).
    """

    _skip_none = ("gripper", "holding")

    planned: bool
    reached: bool
    final_dist_m: float
    final_angle_deg: float
    waypoints: int
    steps_used: int
    stop_reason: str
    terminated: bool
    reason: str = ""
    gripper: float | None = None
    holding: bool | None = None


@dataclass(frozen=True, repr=False)
class CameraInfo(_Result):
    """A calibrated camera at the moment of the call (wrist cameras move with their arm).

    Fields:
        name: the camera's name.
        K: 3x3 intrinsics: pixel (col, row) ~ K @ p_cam, fx = K[0, 0], fy = K[1, 1], centre (K[1, 2], K[0, 2]) as
            (row, col).
        T_world_cam: 4x4 camera-to-world transform of the optical frame (z forward, x right, y down in the image);
            the camera's position is T_world_cam[:3, 3].
        width: image width [px].
        height: image height [px].
    """

    name: str
    K: NDArray[np.float64]
    T_world_cam: NDArray[np.float64]
    width: int
    height: int

    def __repr__(self) -> str:
        pos = tuple(_round(float(v), 3) for v in self.T_world_cam[:3, 3])
        view = tuple(_round(float(v), 3) for v in self.T_world_cam[:3, 2])
        return (
            f"CameraInfo(name={self.name!r}, width={self.width}, height={self.height}, "
            f"fx={_round(float(self.K[0, 0]), 1)}, fy={_round(float(self.K[1, 1]), 1)}, "
            f"position={pos}, looking_along={view})"
        )

    __str__ = __repr__


@dataclass(frozen=True, repr=False)
class PlaneHit(_Result):
    """Where a pixel's ray meets a horizontal plane.

    Fields:
        found: False when the ray misses the plane (points away from it, runs parallel) or the pixel is unusable.
        xyz: the world point [m] (z = the plane's height).
        distance_m: from the camera to the point along the ray [m].
        reason: why nothing was found.
    """

    _skip_none = ("xyz", "distance_m")

    found: bool
    xyz: Vec3 | None = None
    distance_m: float | None = None
    reason: str = ""


@dataclass(frozen=True, repr=False)
class Triangulated(_Result):
    """One world point seen at given pixels in two or more camera views.

    Fields:
        found: False when the views cannot fix the point (rays nearly parallel, the pixels show different points).
        xyz: the world point [m] (also given when found is False because the pixels disagree, for diagnosis).
        reprojection_px: worst distance [px] between a given pixel and the point projected into its view.
        ray_gap_mm: widest gap [mm] between two views' rays (0 when they meet exactly).
        reason: why nothing was found.
    """

    _skip_none = ("xyz", "reprojection_px", "ray_gap_mm")

    found: bool
    xyz: Vec3 | None = None
    reprojection_px: float | None = None
    ray_gap_mm: float | None = None
    reason: str = ""


@dataclass(frozen=True, repr=False)
class TableHeight(_Result):
    """The table top's measured height.

    Fields:
        found: False when the cameras could not measure it (reason says why).
        z: the table top's height in the world frame [m].
        reason: why nothing was found.
    """

    _skip_none = ("z",)

    found: bool
    z: float | None = None
    reason: str = ""


@dataclass(frozen=True, repr=False)
class Segment(_Result):
    """The object under a pixel: its mask in the image and where it stands on the table.

    Fields:
        found: False when there is no measurable object there (table, background, too small, cut off, not upright).
        mask: HxW bool array of the object's pixels (may be given when found is False, for diagnosis).
        centroid_px: (row, col) centre of the mask.
        area_px: pixels in the mask.
        world_xyz: centre of the object's top face [m]: x, y on its vertical axis, z = top_z.
        top_z: height of the top face [m].
        height_m: top_z minus the table height [m]; the body centre of a box or cylinder is at
            (x, y, top_z - height_m / 2).
        footprint_xy: Nx2 array, the top face's outline on the table [m] (its principal axis gives the yaw).
        touches_border: the mask reaches the image edge: part of the object may be cut off (less accurate 3D).
        reason: why nothing was found.
    """

    _skip_none = ("mask", "centroid_px", "world_xyz", "top_z", "height_m", "footprint_xy")

    found: bool
    mask: NDArray[np.bool_] | None = None
    centroid_px: tuple[float, float] | None = None
    area_px: int = 0
    world_xyz: Vec3 | None = None
    top_z: float | None = None
    height_m: float | None = None
    footprint_xy: NDArray[np.float64] | None = None
    touches_border: bool = False
    reason: str = ""


@dataclass(frozen=True, repr=False)
class WorldMap(_Result):
    """The world point [m] seen at every pixel of one camera, from its depth image.

    Fields:
        ok: False when the camera has no depth (reason says what to use instead).
        xyz: HxWx3 float array of world coordinates [m] per pixel; NaN where there is no depth reading.
            ``xyz[row, col]`` is the point seen at that pixel; ``xyz[..., 2]`` the height map.
        reason: why there is no map.
    """

    _skip_none = ("xyz",)

    ok: bool
    xyz: NDArray[np.float64] | None = None
    reason: str = ""


@dataclass(frozen=True, repr=False)
class TaskInfo(_Result):
    """The episode's task.

    Fields:
        name: the task's name.
        instruction: the official instruction of this episode.
        recipe: how the task is usually done and how partial progress is scored.
    """

    name: str
    instruction: str
    recipe: str = field(default="")


RESULT_TYPES = (
    ArmState,
    State,
    MoveResult,
    CameraInfo,
    PlaneHit,
    Triangulated,
    TableHeight,
    Segment,
    WorldMap,
    TaskInfo,
)
