"""move_eef targets: parsing and validation of the named dimensions, and the per-arm form of the robo API.

Dimensions are ``<arm>_<suffix>`` for the robot's arms (``left``/``right`` on the dual-arm robot, so 14 in all)
and the suffixes below. Unnamed dimensions keep their observed values; an arm with no named dimension does not move.
Every invalid input raises :class:`TargetError` with one message naming the dimension and the rule; these are the
only messages (see ``test_targets.py``):

- ``targets must be an object mapping dimension names to numbers``
- ``targets must name at least one dimension``
- ``unknown dimension 'left_q'; dimensions are ...``
- ``'right_x' must be a finite number``
- ``target for 'left_z' is outside [0.7, 1.565]``
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robodojo.errors import InvalidCommandError
from robodojo.motion.orientation import DownAngles, down_angles_from_quat, quat_from_down_angles
from robodojo.observation import ArmState
from robodojo.robots.config import RobotConfig

SUFFIXES = ("x", "y", "z", "pitch_deg", "roll_deg", "yaw_deg", "gripper")
ANGLE_BOUNDS_DEG = {"pitch_deg": (-180.0, 180.0), "roll_deg": (-90.0, 90.0), "yaw_deg": (-180.0, 180.0)}
GRIPPER_BOUNDS = (0.0, 1.0)


class TargetError(InvalidCommandError):
    """An invalid target; nothing moved."""


@dataclass(frozen=True)
class ArmTarget:
    """Where one arm's grasp point should go: world position [m], orientation (w, x, y, z), gripper 0..1.

    ``gripper`` None keeps the current gripper command (not the measured opening: a gripper closed on an object
    reads partly open, and re-commanding that reading would let go).
    """

    arm: str
    pos_m: tuple[float, float, float]
    quat_wxyz: tuple[float, float, float, float]
    gripper: float | None


@dataclass(frozen=True)
class MoveTarget:
    """A validated target for the arms that move (arms absent here hold still)."""

    arms: Mapping[str, ArmTarget]


def dimension_names(robot: RobotConfig) -> tuple[str, ...]:
    return tuple(f"{arm}_{suffix}" for arm in robot.arm_names for suffix in SUFFIXES)


def dimension_bounds(robot: RobotConfig) -> dict[str, tuple[float, float]]:
    """Bounds of every dimension, as quoted in errors and in the tool description."""
    bounds = {}
    for arm in robot.arm_names:
        for axis, b in robot.motion.bounds_m[arm].items():
            bounds[f"{arm}_{axis}"] = b
        for suffix, b in ANGLE_BOUNDS_DEG.items():
            bounds[f"{arm}_{suffix}"] = b
        bounds[f"{arm}_gripper"] = GRIPPER_BOUNDS
    return bounds


def observed_dimensions(robot: RobotConfig, state: ArmState) -> dict[str, float]:
    """One arm's current values of the move_eef dimensions (what the observation text prints)."""
    angles = down_angles_from_quat(state.tcp_quat_wxyz, robot.motion.zero_orientation_finger_axis)
    values = dict(zip(("x", "y", "z"), state.tcp_pos_m, strict=True))
    values.update(pitch_deg=angles.pitch_deg, roll_deg=angles.roll_deg, yaw_deg=angles.yaw_deg)
    values["gripper"] = state.gripper_opening
    return {f"{state.name}_{k}": float(v) for k, v in values.items()}


def _fmt(value: float) -> str:
    return f"{value:g}"


def _check_number(name: str, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise TargetError(f"{name!r} must be a finite number")
    return float(value)


def _check_bounds(name: str, value: float, bounds: tuple[float, float]) -> None:
    low, high = bounds
    if not low <= value <= high:
        raise TargetError(f"target for {name!r} is outside [{_fmt(low)}, {_fmt(high)}]")


def parse_move_eef(targets: object, robot: RobotConfig, state: Mapping[str, ArmState]) -> MoveTarget:
    """Validate move_eef ``targets`` (a mapping of dimension names to numbers) against the observed ``state``."""
    if not isinstance(targets, Mapping):
        raise TargetError("targets must be an object mapping dimension names to numbers")
    if not targets:
        raise TargetError("targets must name at least one dimension")
    names = dimension_names(robot)
    bounds = dimension_bounds(robot)
    values: dict[str, float] = {}
    for name, value in targets.items():
        if name not in names:
            shown = repr(name) if isinstance(name, str) else repr(str(name))
            raise TargetError(
                f"unknown dimension {shown}; dimensions are {{{','.join(robot.arm_names)}}}_{{{','.join(SUFFIXES)}}}"
            )
        number = _check_number(name, value)
        _check_bounds(name, number, bounds[name])
        values[name] = number

    arms = {}
    for arm in robot.arm_names:
        named = {k[len(arm) + 1 :]: v for k, v in values.items() if k.startswith(arm + "_")}
        if not named:
            continue
        current = {k[len(arm) + 1 :]: v for k, v in observed_dimensions(robot, state[arm]).items()}
        merged = {**current, **named}
        gripper = named.get("gripper")
        angles = DownAngles(merged["pitch_deg"], merged["roll_deg"], merged["yaw_deg"])
        if {"pitch_deg", "roll_deg", "yaw_deg"} & named.keys():
            quat = quat_from_down_angles(angles, robot.motion.zero_orientation_finger_axis)
        else:
            quat = np.asarray(state[arm].tcp_quat_wxyz)  # exactly the observed orientation
        arms[arm] = ArmTarget(
            arm=arm,
            pos_m=(merged["x"], merged["y"], merged["z"]),
            quat_wxyz=tuple(float(v) for v in quat),  # type: ignore[arg-type]
            gripper=gripper,
        )
    return MoveTarget(arms=arms)


def arm_pose_target(
    robot: RobotConfig,
    state: Mapping[str, ArmState],
    arm: str,
    xyz: ArrayLike,
    quat_wxyz: ArrayLike | None = None,
    gripper: float | None = None,
) -> MoveTarget:
    """The robo API form: one arm to ``xyz`` [m], optionally orientation (w, x, y, z) and gripper 0..1.

    Unset orientation keeps the observed one, unset gripper the current command. Raises TargetError naming the
    argument and the rule.
    """
    if arm not in robot.arm_names:
        raise TargetError(f"unknown arm {arm!r}; arms are {', '.join(robot.arm_names)}")
    try:
        pos = np.asarray(xyz, dtype=float).reshape(-1)
    except (TypeError, ValueError):
        raise TargetError(f"xyz must be 3 finite numbers [m], got {xyz!r}") from None
    if pos.shape != (3,) or not np.all(np.isfinite(pos)):
        raise TargetError(f"xyz must be 3 finite numbers [m], got {xyz!r}")
    bounds = dimension_bounds(robot)
    for axis, value in zip("xyz", pos, strict=True):
        _check_bounds(f"{arm}_{axis}", float(value), bounds[f"{arm}_{axis}"])
    if quat_wxyz is None:
        quat: NDArray[np.float64] = np.asarray(state[arm].tcp_quat_wxyz, dtype=float)
    else:
        try:
            quat = np.asarray(quat_wxyz, dtype=float).reshape(-1)
        except (TypeError, ValueError):
            raise TargetError(f"quat must be 4 finite numbers (w, x, y, z), got {quat_wxyz!r}") from None
        if quat.shape != (4,) or not np.all(np.isfinite(quat)) or np.linalg.norm(quat) < 1e-6:
            raise TargetError(f"quat must be 4 finite numbers (w, x, y, z) with a non-zero norm, got {quat_wxyz!r}")
        quat = quat / np.linalg.norm(quat)
    opening = None
    if gripper is not None:
        opening = _check_number("gripper", gripper)
        _check_bounds(f"{arm}_gripper", opening, GRIPPER_BOUNDS)
    return MoveTarget(
        arms={
            arm: ArmTarget(
                arm=arm,
                pos_m=tuple(float(v) for v in pos),  # type: ignore[arg-type]
                quat_wxyz=tuple(float(v) for v in quat),  # type: ignore[arg-type]
                gripper=opening,
            )
        }
    )
