"""Why a move was refused: the facts of one rejection, and the one renderer that puts them into words.

Every refusal before anything moved is one of the frozen dataclasses below, built where the rule lives (the target
parser in :mod:`robodojo.motion.targets`, the planners, the motion server and its ROS node) and carried unchanged to
the edge: :class:`~robodojo.motion.report.MoveReport` holds it next to its text, the MoveEef action carries it as JSON,
and the agents render it with :func:`render_rejection` in the frame their model sees (the move_eef agent's negate_xyz
probe shows x, y and z negated) or turn it into the robo API's exceptions and reasons. Facts are in the world frame:
metres, degrees, joint angles in radians.

Texts end with "; nothing moved" (what did not happen), except :class:`BackendLost`: the robot stopped answering, so
whether and how far it moved is unknown.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from robodojo.text import cut_name

POSITION_AXES = ("x", "y", "z")
NOTHING_MOVED = "; nothing moved"


@dataclass(frozen=True)
class Frame:
    """The coordinates a rejection is rendered in: the world frame, or the world with x, y and z negated (what the
    move_eef agent's negate_xyz probe shows its model). Negating is its own inverse, so the same methods map back."""

    negate_xyz: bool = False

    @staticmethod
    def is_position(dimension: str) -> bool:
        """'left_z' is a position dimension, 'left_yaw_deg' is not."""
        return dimension.rsplit("_", 1)[-1] in POSITION_AXES

    def value(self, dimension: str, value: float) -> float:
        """A dimension's value in this frame."""
        return -value if self.negate_xyz and self.is_position(dimension) else value

    def bounds(self, dimension: str, bounds: tuple[float, float]) -> tuple[float, float]:
        """A dimension's bounds in this frame: negated positions swap ends ([0.7, 1.565] -> [-1.565, -0.7])."""
        low, high = bounds
        return (-high, -low) if self.negate_xyz and self.is_position(dimension) else (low, high)

    def point(self, pos_m: Sequence[float]) -> tuple[float, float, float]:
        """A world point [m] in this frame."""
        sign = -1.0 if self.negate_xyz else 1.0
        x, y, z = (sign * float(v) for v in pos_m)
        return (x, y, z)

    def height(self, z_m: float) -> float:
        """A z coordinate [m] in this frame."""
        return -z_m if self.negate_xyz else z_m


WORLD = Frame()


@dataclass(frozen=True)
class Rejection:
    """Base of the rejections: each is a frozen dataclass whose first field ``kind`` names it."""

    nothing_moved: ClassVar[bool] = True  # the robot did not move; False only when that is unknown

    @property
    def type_error(self) -> bool:
        """An argument of the wrong type (the robo API raises TypeError for it, ValueError for the others)."""
        return False

    def describe(self, frame: Frame = WORLD) -> str:
        """The facts in words, in ``frame``, without the closing "nothing moved"."""
        raise NotImplementedError


def render_rejection(rejection: Rejection, frame: Frame = WORLD) -> str:
    """The text of a rejection as the model reads it (a move_eef tool result, a robo reason or error), in ``frame``."""
    return rejection.describe(frame) + (NOTHING_MOVED if rejection.nothing_moved else "")


def _xyz(p: tuple[float, float, float]) -> str:
    return f"{p[0]:.3f}, {p[1]:.3f}, {p[2]:.3f}"


def _names(names: Sequence[str]) -> str:
    return ", ".join(repr(n) for n in names)


def _limit_note(at_lower_limit: Sequence[str], at_upper_limit: Sequence[str]) -> str:
    """', with left_joint4 at its lower limit' for the joints an IK solution was stopped by."""
    at = [f"{j} at its lower limit" for j in at_lower_limit] + [f"{j} at its upper limit" for j in at_upper_limit]
    return f", with {' and '.join(at)}" if at else ""


# -- the target (robodojo.motion.targets): malformed or out-of-bounds input ----------------------------------------
@dataclass(frozen=True)
class TargetsNotAMapping(Rejection):
    """move_eef targets that are not an object of dimension names to numbers."""

    kind: str = field(default="targets_not_a_mapping", init=False)

    def describe(self, frame: Frame = WORLD) -> str:
        return "targets must be an object mapping dimension names to numbers"


@dataclass(frozen=True)
class NoDimension(Rejection):
    """move_eef targets that name no dimension."""

    kind: str = field(default="no_dimension", init=False)

    def describe(self, frame: Frame = WORLD) -> str:
        return "targets must name at least one dimension"


@dataclass(frozen=True)
class UnknownDimension(Rejection):
    """A move_eef dimension name that does not exist; the valid ones are ``{arms}_{suffixes}``."""

    kind: str = field(default="unknown_dimension", init=False)
    name: str
    arms: tuple[str, ...]
    suffixes: tuple[str, ...]

    def describe(self, frame: Frame = WORLD) -> str:
        arms, suffixes = ",".join(self.arms), ",".join(self.suffixes)
        # The name cut (not its repr), so the quoted name stays quoted however long the model made it.
        return f"unknown dimension {cut_name(self.name)!r}; dimensions are {{{arms}}}_{{{suffixes}}}"


@dataclass(frozen=True)
class DuplicateDimension(Rejection):
    """A move_eef dimension named more than once (in the MoveEef action's name list, or as a repeated key of a
    tool call's JSON object): which of its values was meant is unknown, so none is used."""

    kind: str = field(default="duplicate_dimension", init=False)
    name: str

    def describe(self, frame: Frame = WORLD) -> str:
        return f"dimension {cut_name(self.name)!r} is named more than once; name each dimension once"


@dataclass(frozen=True)
class NamesValuesMismatch(Rejection):
    """move_eef targets as two lists (the MoveEef action's ``names`` and ``values``) of different lengths."""

    kind: str = field(default="names_values_mismatch", init=False)
    names: int
    values: int

    def describe(self, frame: Frame = WORLD) -> str:
        return f"targets need one value per name, got {self.names} names and {self.values} values"


@dataclass(frozen=True)
class NotANumber(Rejection):
    """A move_eef dimension whose value is not a finite number."""

    kind: str = field(default="not_a_number", init=False)
    dimension: str

    def describe(self, frame: Frame = WORLD) -> str:
        return f"{self.dimension!r} must be a finite number"


@dataclass(frozen=True)
class UnknownArm(Rejection):
    """An arm name that does not exist (or is not a string: then ``type_error``)."""

    kind: str = field(default="unknown_arm", init=False)
    given: str  # the repr of what was given
    arms: tuple[str, ...]
    not_a_string: bool = False

    @property
    def type_error(self) -> bool:
        return self.not_a_string

    def describe(self, frame: Frame = WORLD) -> str:
        if self.not_a_string:
            return f"arm must be a string, one of {_names(self.arms)}; got {self.given}"
        return f"unknown arm {self.given}; arms: {_names(self.arms)}"


@dataclass(frozen=True)
class WrongType(Rejection):
    """An argument of the robo API form of the wrong type, e.g. xyz = 'up'."""

    kind: str = field(default="wrong_type", init=False)
    argument: str  # 'xyz', 'quat' or 'gripper'
    expected: str  # what it must be: '3 numbers [m]', 'a number'
    given: str  # the repr of what was given (shortened)

    @property
    def type_error(self) -> bool:
        return True

    def describe(self, frame: Frame = WORLD) -> str:
        return f"{self.argument} must be {self.expected}, got {self.given}"


@dataclass(frozen=True)
class WrongLength(Rejection):
    """A vector argument with the wrong number of entries, e.g. xyz = (0, 1)."""

    kind: str = field(default="wrong_length", init=False)
    argument: str
    expected: str
    length: int
    given: str

    def describe(self, frame: Frame = WORLD) -> str:
        return f"{self.argument} must be {self.expected}, got {self.length}: {self.given}"


@dataclass(frozen=True)
class NotFinite(Rejection):
    """An argument with a NaN or infinite entry."""

    kind: str = field(default="not_finite", init=False)
    argument: str
    given: str

    def describe(self, frame: Frame = WORLD) -> str:
        return f"{self.argument} must be finite, got {self.given}"


@dataclass(frozen=True)
class SpeedScaleOutOfRange(Rejection):
    """A speed scale outside (0, 1]: a motion can be slowed, never sped past the robot's configured speeds."""

    kind: str = field(default="speed_scale_out_of_range", init=False)
    given: str

    def describe(self, frame: Frame = WORLD) -> str:
        return f"speed_scale must be in (0, 1] (1: the robot's configured speeds), got {self.given}"


@dataclass(frozen=True)
class ZeroNorm(Rejection):
    """A quaternion of (nearly) zero norm."""

    kind: str = field(default="zero_norm", init=False)
    argument: str
    given: str

    def describe(self, frame: Frame = WORLD) -> str:
        return f"{self.argument} must have a non-zero norm, got {self.given}"


@dataclass(frozen=True)
class OutOfBounds(Rejection):
    """A value outside its dimension's bounds. ``argument`` says how the caller named it: '' for a move_eef dimension,
    'xyz' or 'gripper' for the robo API form (then the text names the argument and quotes the value)."""

    kind: str = field(default="out_of_bounds", init=False)
    dimension: str  # 'left_z'
    value: float
    bounds: tuple[float, float]
    argument: str = ""

    def describe(self, frame: Frame = WORLD) -> str:
        low, high = frame.bounds(self.dimension, self.bounds)
        value = frame.value(self.dimension, self.value)
        arm, _, axis = self.dimension.partition("_")
        if self.argument == "xyz":
            return f"xyz {axis}={value:g} is outside the {arm} arm's workspace [{low:g}, {high:g}] m"
        if self.argument:
            return f"{self.argument} must be in [{low:g}, {high:g}] (0 closed, 1 open), got {value:g}"
        return f"target for {self.dimension!r} is outside [{low:g}, {high:g}]"


# -- the plan (robodojo.motion.planner and the MoveIt planner) -----------------------------------------------------
@dataclass(frozen=True)
class NoArmMoves(Rejection):
    """A target that names no arm."""

    kind: str = field(default="no_arm_moves", init=False)

    def describe(self, frame: Frame = WORLD) -> str:
        return "the target moves no arm"


@dataclass(frozen=True)
class BelowTable(Rejection):
    """A grasp-point target under the lowest allowed height (the table top plus a clearance)."""

    kind: str = field(default="below_table", init=False)
    arm: str
    z_m: float
    table_z_m: float

    def describe(self, frame: Frame = WORLD) -> str:
        return (
            f"{self.arm} target z={frame.height(self.z_m):.3f} m is below the table surface "
            f"({frame.height(self.table_z_m):.3f} m)"
        )


@dataclass(frozen=True)
class OutOfReach(Rejection):
    """A target pose with no IK solution; the nearest solution found and the joints it stopped at."""

    kind: str = field(default="out_of_reach", init=False)
    arm: str
    pos_m: tuple[float, float, float]
    nearest_mm: float
    nearest_deg: float
    at_lower_limit: tuple[str, ...] = ()
    at_upper_limit: tuple[str, ...] = ()

    def describe(self, frame: Frame = WORLD) -> str:
        return (
            f"{self.arm} target ({_xyz(frame.point(self.pos_m))}) is out of reach: the nearest pose is "
            f"{self.nearest_mm:.0f} mm and {self.nearest_deg:.1f} deg away"
            f"{_limit_note(self.at_lower_limit, self.at_upper_limit)}"
        )


@dataclass(frozen=True)
class NoIkAlongLine(Rejection):
    """A point ``point`` of ``points`` on the straight line with no IK solution close enough to the line."""

    kind: str = field(default="no_ik_along_line", init=False)
    arm: str
    point: int
    points: int
    pos_m: tuple[float, float, float]
    nearest_mm: float
    nearest_deg: float
    at_lower_limit: tuple[str, ...] = ()
    at_upper_limit: tuple[str, ...] = ()

    def describe(self, frame: Frame = WORLD) -> str:
        return (
            f"no IK solution along the straight line for {self.arm} at point {self.point} of {self.points} "
            f"({_xyz(frame.point(self.pos_m))}): the nearest pose is {self.nearest_mm:.0f} mm and "
            f"{self.nearest_deg:.1f} deg off{_limit_note(self.at_lower_limit, self.at_upper_limit)}; "
            "try an intermediate target"
        )


@dataclass(frozen=True)
class WristFlip(Rejection):
    """A straight line through a singularity or wrist flip: a joint would jump ``jump_rad`` between two points."""

    kind: str = field(default="wrist_flip", init=False)
    arm: str
    point: int
    points: int
    pos_m: tuple[float, float, float]
    jump_rad: float

    def describe(self, frame: Frame = WORLD) -> str:
        return (
            f"the straight line for {self.arm} passes a singularity or wrist flip near point {self.point} of "
            f"{self.points} ({_xyz(frame.point(self.pos_m))}; a joint would jump {self.jump_rad:.2f} rad); try an "
            "intermediate target"
        )


@dataclass(frozen=True)
class JointGoalOutsideLimits(Rejection):
    """A joint-space goal of the wrong length or outside the joint limits."""

    kind: str = field(default="joint_goal_outside_limits", init=False)
    arm: str
    goal_rad: tuple[float, ...]

    def describe(self, frame: Frame = WORLD) -> str:
        return f"{self.arm} joint goal {np.round(np.asarray(self.goal_rad), 3).tolist()} is outside the joint limits"


@dataclass(frozen=True)
class TrajectoryLimit(Rejection):
    """A planned trajectory that breaks a joint limit: ``limit`` is 'position', 'velocity' or 'acceleration'."""

    kind: str = field(default="trajectory_limit", init=False)
    arm: str
    limit: str

    def describe(self, frame: Frame = WORLD) -> str:
        if self.limit == "position":
            return f"{self.arm} trajectory leaves the joint limits"
        return f"{self.arm} trajectory exceeds a joint {self.limit} limit"


@dataclass(frozen=True)
class PathBelowTable(Rejection):
    """A planned trajectory whose grasp point would dip under the table at ``time_s`` into the motion."""

    kind: str = field(default="path_below_table", init=False)
    arm: str
    z_m: float
    time_s: float

    def describe(self, frame: Frame = WORLD) -> str:
        return (
            f"{self.arm} grasp point would pass below the table surface (z={frame.height(self.z_m):.3f} m at "
            f"{self.time_s:.2f} s)"
        )


# -- refusals in their own words (an external planner, the ROS server) ----------------------------------------------
@dataclass(frozen=True)
class Refused(Rejection):
    """A refusal given as text only: MoveIt's errors, a busy or malformed action goal. No coordinates in it."""

    kind: str = field(default="refused", init=False)
    text: str

    def describe(self, frame: Frame = WORLD) -> str:
        return self.text


@dataclass(frozen=True)
class BackendLost(Rejection):
    """The robot stopped answering (no joint states, no controller); it may have moved part of the way."""

    nothing_moved: ClassVar[bool] = False
    kind: str = field(default="backend_lost", init=False)
    text: str

    def describe(self, frame: Frame = WORLD) -> str:
        return self.text


@dataclass(frozen=True)
class DriverRefused(Rejection):
    """The robot's controller (a real arm's driver, the simulator's controllers) refused the planned trajectory before
    a point of it played: an e-stop or a fault holds the arm, the trajectory broke a limit it checks."""

    kind: str = field(default="driver_refused", init=False)
    controller: str
    reason: str

    def describe(self, frame: Frame = WORLD) -> str:
        return f"the robot refused the motion ({self.controller}: {self.reason})"


def _kind(cls: type[Rejection]) -> str:
    return next(str(f.default) for f in dataclasses.fields(cls) if f.name == "kind")


# Every kind by its name, for reading rejections back from JSON: all subclasses defined above.
REJECTION_TYPES: dict[str, type[Rejection]] = {_kind(cls): cls for cls in Rejection.__subclasses__()}


def _tuples(value: Any) -> Any:
    return tuple(_tuples(v) for v in value) if isinstance(value, list) else value


def rejection_to_json(rejection: Rejection) -> str:
    """The rejection as a JSON object: ``kind`` and its facts (what the MoveEef action result carries)."""
    return json.dumps(dataclasses.asdict(rejection))


def rejection_from_dict(data: Mapping[str, Any]) -> Rejection:
    """The rejection a :func:`rejection_to_json` object describes; ValueError for an unknown kind or wrong facts."""
    facts = dict(data)
    kind = facts.pop("kind", None)
    cls = REJECTION_TYPES.get(str(kind))
    if cls is None:
        raise ValueError(f"unknown rejection kind {kind!r}; kinds: {', '.join(REJECTION_TYPES)}")
    try:
        return cls(**{k: _tuples(v) for k, v in facts.items()})
    except TypeError as exc:
        raise ValueError(f"rejection {kind!r}: {exc}") from None


def rejection_from_json(text: str) -> Rejection:
    return rejection_from_dict(json.loads(text))
