"""move_eef targets: parsing and validation of the named dimensions, and the per-arm form of the robo API.

Dimensions are ``<arm>_<suffix>`` for the robot's arms (``left``/``right`` on the dual-arm robot, so 14 in all)
and the suffixes below. Unnamed dimensions keep their observed values; an arm with no named dimension does not move.
This module holds the one set of rules for both forms: every invalid input raises :class:`TargetError` carrying a
:mod:`~robodojo.motion.rejection` (the facts: dimension, value, bounds) whose text names the dimension or argument and
the rule. The move_eef messages (see ``test_targets.py``):

- ``targets must be an object mapping dimension names to numbers; nothing moved``
- ``targets must name at least one dimension; nothing moved``
- ``unknown dimension 'left_q'; dimensions are ...; nothing moved``
- ``dimension 'left_z' is named more than once; name each dimension once; nothing moved`` (the two-list form)
- ``targets need one value per name, got 2 names and 1 values; nothing moved`` (the two-list form)
- ``'right_x' must be a finite number; nothing moved``
- ``target for 'left_z' is outside [0.7, 1.565]; nothing moved``

Names are quoted cut (:func:`robodojo.text.cut_name`), in the text and in the rejection's facts, so a name of any
length costs a short message. The MoveEef action sends targets as two lists, ``names`` and ``values``:
:func:`parse_move_eef_pairs` takes them as they are, so a name given twice is refused instead of the last one winning.

The robo API form (one arm, ``xyz``, ``quat``, ``gripper``) quotes the bad value and lists the valid names, e.g.
``xyz must be 3 numbers [m], got 'up'`` or ``xyz z=0.5 is outside the left arm's workspace [0.7, 1.565] m``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, TypeGuard

import numpy as np
from numpy.typing import NDArray

from robodojo.errors import InvalidCommandError
from robodojo.motion.orientation import DownAngles, down_angles_from_quat, quat_from_down_angles
from robodojo.motion.rejection import (
    DuplicateDimension,
    NamesValuesMismatch,
    NoDimension,
    NotANumber,
    NotFinite,
    OutOfBounds,
    Rejection,
    SpeedScaleOutOfRange,
    TargetsNotAMapping,
    UnknownArm,
    UnknownDimension,
    WrongLength,
    WrongType,
    ZeroNorm,
    render_rejection,
)
from robodojo.observation import ArmState
from robodojo.robots.config import RobotConfig
from robodojo.text import cut_name, quote

SUFFIXES = ("x", "y", "z", "pitch_deg", "roll_deg", "yaw_deg", "gripper")
ANGLE_BOUNDS_DEG = {"pitch_deg": (-180.0, 180.0), "roll_deg": (-90.0, 90.0), "yaw_deg": (-180.0, 180.0)}
GRIPPER_BOUNDS = (0.0, 1.0)
MIN_QUAT_NORM = 1e-6


class TargetError(InvalidCommandError):
    """An invalid target; nothing moved. ``rejection`` holds the facts, the message is their text."""

    def __init__(self, rejection: Rejection) -> None:
        self.rejection = rejection
        super().__init__(render_rejection(rejection))


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
    """A validated target for the arms that move (arms absent here hold still), planned at ``speed_scale`` times the
    robot's configured speeds (see :func:`slowed`)."""

    arms: Mapping[str, ArmTarget]
    speed_scale: float = 1.0


def check_speed_scale(value: object) -> float:
    """``value`` as a speed scale in (0, 1]; TargetError (SpeedScaleOutOfRange) otherwise."""
    if not is_number(value) or not 0.0 < float(value) <= 1.0:  # NaN fails the comparison too
        raise TargetError(SpeedScaleOutOfRange(quote(value)))
    return float(value)


def slowed(target: MoveTarget, speed_scale: object) -> MoveTarget:
    """``target`` to be planned at ``speed_scale`` (validated by :func:`check_speed_scale`)."""
    return replace(target, speed_scale=check_speed_scale(speed_scale))


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


def is_number(value: object) -> TypeGuard[int | float | np.integer[Any] | np.floating[Any]]:
    """An int or float (numpy's too), not a bool."""
    return not isinstance(value, bool) and isinstance(value, int | float | np.integer | np.floating)


def check_number(argument: str, value: object) -> float:
    """``value`` as a float; TargetError (WrongType, NotFinite) naming ``argument`` otherwise."""
    if not is_number(value):
        raise TargetError(WrongType(argument, "a number", quote(value)))
    number = float(value)
    if not math.isfinite(number):
        raise TargetError(NotFinite(argument, quote(value)))
    return number


def check_vector(argument: str, value: object, n: int, what: str) -> NDArray[np.float64]:
    """``value`` as ``n`` finite floats (a sequence or array of numbers); TargetError naming ``argument`` otherwise.
    ``what`` says what the numbers are, e.g. '[m]'."""
    expected = f"{n} numbers {what}"
    if isinstance(value, str | bytes) or not isinstance(value, Sequence | np.ndarray):
        raise TargetError(WrongType(argument, expected, quote(value)))
    items = list(np.asarray(value).reshape(-1)) if isinstance(value, np.ndarray) else list(value)
    if not all(is_number(v) for v in items):
        raise TargetError(WrongType(argument, expected, quote(value)))
    if len(items) != n:
        raise TargetError(WrongLength(argument, expected, len(items), quote(value)))
    out = np.array(items, dtype=float)
    if not np.all(np.isfinite(out)):
        raise TargetError(NotFinite(argument, quote(value)))
    return out


def check_arm(robot: RobotConfig, arm: object) -> str:
    """``arm`` if it names one of the robot's arms; TargetError (UnknownArm) listing them otherwise."""
    if not isinstance(arm, str):
        raise TargetError(UnknownArm(quote(arm), robot.arm_names, not_a_string=True))
    if arm not in robot.arm_names:
        raise TargetError(UnknownArm(quote(arm), robot.arm_names))
    return arm


def _check_bounds(dimension: str, value: float, bounds: tuple[float, float], argument: str = "") -> None:
    low, high = bounds
    if not low <= value <= high:
        raise TargetError(OutOfBounds(dimension, value, bounds, argument))


def _dimension_value(name: str, value: object) -> float:
    if not is_number(value) or not math.isfinite(float(value)):
        raise TargetError(NotANumber(name))
    return float(value)


def parse_move_eef(targets: object, robot: RobotConfig, state: Mapping[str, ArmState]) -> MoveTarget:
    """Validate move_eef ``targets`` (a mapping of dimension names to numbers) against the observed ``state``."""
    if not isinstance(targets, Mapping):
        raise TargetError(TargetsNotAMapping())
    return _parse_pairs(targets.items(), robot, state)


def parse_move_eef_pairs(
    names: Sequence[object], values: Sequence[object], robot: RobotConfig, state: Mapping[str, ArmState]
) -> MoveTarget:
    """Validate move_eef targets given as two lists (the MoveEef action's ``names`` and ``values``): the rules of
    :func:`parse_move_eef`, and a name given twice is refused (DuplicateDimension), as are lists of different lengths
    (NamesValuesMismatch). The checks stop at the first bad name, so their cost is bounded however long the lists."""
    if len(names) != len(values):
        raise TargetError(NamesValuesMismatch(len(names), len(values)))
    return _parse_pairs(zip(names, values, strict=True), robot, state)


def _parse_pairs(
    pairs: Iterable[tuple[object, object]], robot: RobotConfig, state: Mapping[str, ArmState]
) -> MoveTarget:
    """The targets of (name, value) pairs, checked in order: name, repetition, value, bounds."""
    names = dimension_names(robot)
    bounds = dimension_bounds(robot)
    values: dict[str, float] = {}
    for name, value in pairs:
        if not isinstance(name, str) or name not in names:
            given = cut_name(name) if isinstance(name, str) else quote(name)
            raise TargetError(UnknownDimension(given, robot.arm_names, SUFFIXES))
        if name in values:
            raise TargetError(DuplicateDimension(name))
        number = _dimension_value(name, value)
        _check_bounds(name, number, bounds[name])
        values[name] = number
    if not values:
        raise TargetError(NoDimension())

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


@dataclass(frozen=True)
class ArmPose:
    """Validated arguments of the robo API form: one arm's grasp point [m] inside its bounds, an orientation
    (w, x, y, z) of non-zero norm as given (None keeps the observed one), a gripper opening 0..1 (None keeps the
    current command)."""

    arm: str
    pos_m: tuple[float, float, float]
    quat_wxyz: tuple[float, float, float, float] | None
    gripper: float | None


def check_arm_pose(
    robot: RobotConfig, arm: object, xyz: object, quat_wxyz: object = None, gripper: object = None
) -> ArmPose:
    """Validate the robo API form (``robo.move_to`` and the motion server's ``move_to``); TargetError naming the
    argument, quoting the bad value and listing the valid names."""
    arm = check_arm(robot, arm)
    pos = check_vector("xyz", xyz, 3, "[m]")
    bounds = dimension_bounds(robot)
    for axis, value in zip("xyz", pos, strict=True):
        _check_bounds(f"{arm}_{axis}", float(value), bounds[f"{arm}_{axis}"], "xyz")
    quat = None
    if quat_wxyz is not None:
        q = check_vector("quat", quat_wxyz, 4, "(w, x, y, z)")
        if np.linalg.norm(q) < MIN_QUAT_NORM:
            raise TargetError(ZeroNorm("quat", quote(quat_wxyz)))
        quat = (float(q[0]), float(q[1]), float(q[2]), float(q[3]))
    opening = None
    if gripper is not None:
        opening = check_number("gripper", gripper)
        _check_bounds(f"{arm}_gripper", opening, GRIPPER_BOUNDS, "gripper")
    return ArmPose(arm, (float(pos[0]), float(pos[1]), float(pos[2])), quat, opening)


def arm_pose_target(
    robot: RobotConfig,
    state: Mapping[str, ArmState],
    arm: object,
    xyz: object,
    quat_wxyz: object = None,
    gripper: object = None,
) -> MoveTarget:
    """The robo API form as a target: one arm to ``xyz`` [m], optionally orientation (w, x, y, z) and gripper 0..1.

    Unset orientation keeps the observed one, unset gripper the current command. Raises TargetError as
    :func:`check_arm_pose`.
    """
    pose = check_arm_pose(robot, arm, xyz, quat_wxyz, gripper)
    if pose.quat_wxyz is None:
        quat: NDArray[np.float64] = np.asarray(state[pose.arm].tcp_quat_wxyz, dtype=float)
    else:
        quat = np.asarray(pose.quat_wxyz, dtype=float)
        quat = quat / np.linalg.norm(quat)
    w, x, y, z = (float(v) for v in quat)
    return MoveTarget(arms={pose.arm: ArmTarget(pose.arm, pose.pos_m, (w, x, y, z), pose.gripper)})
