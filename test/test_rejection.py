"""Rejections (robodojo.motion.rejection): the texts rendered from their facts, in the world frame and in the negated
frame of the negate_xyz probe, and their JSON form (what the MoveEef action carries)."""

from __future__ import annotations

import json

import pytest

from robodojo.motion import rejection as rj
from robodojo.motion.rejection import WORLD, Frame, render_rejection

NEGATED = Frame(negate_xyz=True)
ARMS = ("left", "right")

# (rejection, text in the world frame, text in the negated frame) for every kind.
CASES = [
    (rj.TargetsNotAMapping(), "targets must be an object mapping dimension names to numbers; nothing moved", None),
    (rj.NoDimension(), "targets must name at least one dimension; nothing moved", None),
    (
        rj.UnknownDimension("left_q", ARMS, ("x", "gripper")),
        "unknown dimension 'left_q'; dimensions are {left,right}_{x,gripper}; nothing moved",
        None,
    ),
    (rj.NotANumber("right_x"), "'right_x' must be a finite number; nothing moved", None),
    (
        rj.DuplicateDimension("left_z"),
        "dimension 'left_z' is named more than once; name each dimension once; nothing moved",
        None,
    ),
    (
        rj.NamesValuesMismatch(2, 1),
        "targets need one value per name, got 2 names and 1 values; nothing moved",
        None,
    ),
    (rj.UnknownArm("'middle'", ARMS), "unknown arm 'middle'; arms: 'left', 'right'; nothing moved", None),
    (
        rj.UnknownArm("3", ARMS, not_a_string=True),
        "arm must be a string, one of 'left', 'right'; got 3; nothing moved",
        None,
    ),
    (rj.WrongType("xyz", "3 numbers [m]", "'up'"), "xyz must be 3 numbers [m], got 'up'; nothing moved", None),
    (
        rj.WrongLength("xyz", "3 numbers [m]", 2, "(0, 1)"),
        "xyz must be 3 numbers [m], got 2: (0, 1); nothing moved",
        None,
    ),
    (rj.NotFinite("gripper", "nan"), "gripper must be finite, got nan; nothing moved", None),
    (rj.ZeroNorm("quat", "(0, 0, 0, 0)"), "quat must have a non-zero norm, got (0, 0, 0, 0); nothing moved", None),
    (
        rj.SpeedScaleOutOfRange("1.5"),
        "speed_scale must be in (0, 1] (1: the robot's configured speeds), got 1.5; nothing moved",
        None,
    ),
    (
        rj.OutOfBounds("left_z", 0.5, (0.7, 1.565)),
        "target for 'left_z' is outside [0.7, 1.565]; nothing moved",
        "target for 'left_z' is outside [-1.565, -0.7]; nothing moved",
    ),
    (
        rj.OutOfBounds("right_x", -0.6, (-0.5, 1.1), "xyz"),
        "xyz x=-0.6 is outside the right arm's workspace [-0.5, 1.1] m; nothing moved",
        "xyz x=0.6 is outside the right arm's workspace [-1.1, 0.5] m; nothing moved",
    ),
    (
        rj.OutOfBounds("left_roll_deg", 95.0, (-90.0, 90.0)),
        "target for 'left_roll_deg' is outside [-90, 90]; nothing moved",
        "target for 'left_roll_deg' is outside [-90, 90]; nothing moved",  # angles are not negated
    ),
    (
        rj.OutOfBounds("left_gripper", 2.0, (0.0, 1.0), "gripper"),
        "gripper must be in [0, 1] (0 closed, 1 open), got 2; nothing moved",
        None,
    ),
    (rj.NoArmMoves(), "the target moves no arm; nothing moved", None),
    (
        rj.BelowTable("right", 0.75, 0.765),
        "right target z=0.750 m is below the table surface (0.765 m); nothing moved",
        "right target z=-0.750 m is below the table surface (-0.765 m); nothing moved",
    ),
    (
        rj.OutOfReach("right", (-0.11, -0.236, 0.913), 61.2, 17.04, ("right_joint4",)),
        "right target (-0.110, -0.236, 0.913) is out of reach: the nearest pose is 61 mm and 17.0 deg away, with "
        "right_joint4 at its lower limit; nothing moved",
        "right target (0.110, 0.236, -0.913) is out of reach: the nearest pose is 61 mm and 17.0 deg away, with "
        "right_joint4 at its lower limit; nothing moved",
    ),
    (
        rj.OutOfReach("left", (0.35, -0.255, 0.885), 136.0, 13.3, ("left_joint4",), ("left_joint3",)),
        "left target (0.350, -0.255, 0.885) is out of reach: the nearest pose is 136 mm and 13.3 deg away, with "
        "left_joint4 at its lower limit and left_joint3 at its upper limit; nothing moved",
        "left target (-0.350, 0.255, -0.885) is out of reach: the nearest pose is 136 mm and 13.3 deg away, with "
        "left_joint4 at its lower limit and left_joint3 at its upper limit; nothing moved",
    ),
    (
        rj.NoIkAlongLine("left", 3, 7, (0.1, 0.0, 0.9), 12.4, 3.25),
        "no IK solution along the straight line for left at point 3 of 7 (0.100, 0.000, 0.900): the nearest pose is "
        "12 mm and 3.2 deg off; try an intermediate target; nothing moved",
        "no IK solution along the straight line for left at point 3 of 7 (-0.100, -0.000, -0.900): the nearest pose "
        "is 12 mm and 3.2 deg off; try an intermediate target; nothing moved",
    ),
    (
        rj.WristFlip("right", 2, 5, (0.2, -0.3, 1.0), 1.234),
        "the straight line for right passes a singularity or wrist flip near point 2 of 5 (0.200, -0.300, 1.000; a "
        "joint would jump 1.23 rad); try an intermediate target; nothing moved",
        "the straight line for right passes a singularity or wrist flip near point 2 of 5 (-0.200, 0.300, -1.000; a "
        "joint would jump 1.23 rad); try an intermediate target; nothing moved",
    ),
    (
        rj.JointGoalOutsideLimits("left", (0.0, 5.0, 0.12345)),
        "left joint goal [0.0, 5.0, 0.123] is outside the joint limits; nothing moved",
        None,
    ),
    (rj.TrajectoryLimit("left", "position"), "left trajectory leaves the joint limits; nothing moved", None),
    (rj.TrajectoryLimit("left", "velocity"), "left trajectory exceeds a joint velocity limit; nothing moved", None),
    (
        rj.PathBelowTable("right", 0.7601, 1.2),
        "right grasp point would pass below the table surface (z=0.760 m at 1.20 s); nothing moved",
        "right grasp point would pass below the table surface (z=-0.760 m at 1.20 s); nothing moved",
    ),
    (rj.Refused("MoveIt found no plan for arms: PLANNING_FAILED (-1)"), None, None),
    (rj.BackendLost("no joint states on /joint_states for 5.0 s"), "no joint states on /joint_states for 5.0 s", None),
    (
        rj.DriverRefused("left_arm_controller", "the e-stop holds the arm (/hardware/estop called); release it first"),
        "the robot refused the motion (left_arm_controller: the e-stop holds the arm (/hardware/estop called); "
        "release it first); nothing moved",
        None,
    ),
]


@pytest.mark.parametrize(("rejection", "world", "negated"), CASES, ids=[type(r).__name__ for r, _, _ in CASES])
def test_texts_in_the_world_and_the_negated_frame(rejection, world, negated):
    world = world or rejection.describe() + "; nothing moved"
    assert render_rejection(rejection) == render_rejection(rejection, WORLD) == world
    assert render_rejection(rejection, NEGATED) == (negated or world)


def test_every_kind_is_covered_and_survives_json():
    assert {type(r) for r, _, _ in CASES} == set(rj.REJECTION_TYPES.values())
    for rejection, _, _ in CASES:
        text = rj.rejection_to_json(rejection)
        assert json.loads(text)["kind"] in rj.REJECTION_TYPES
        back = rj.rejection_from_json(text)
        assert back == rejection and render_rejection(back) == render_rejection(rejection)


def test_json_errors_name_the_kind():
    with pytest.raises(ValueError, match="unknown rejection kind 'teleport'; kinds: targets_not_a_mapping"):
        rj.rejection_from_dict({"kind": "teleport"})
    with pytest.raises(ValueError, match="rejection 'below_table'"):
        rj.rejection_from_dict({"kind": "below_table", "arm": "left"})


def test_only_wrong_types_and_non_string_arms_are_type_errors():
    type_errors = {type(r).__name__ for r, _, _ in CASES if r.type_error}
    assert type_errors == {"WrongType", "UnknownArm"}
    assert not rj.UnknownArm("'x'", ARMS).type_error


def test_the_negated_frame_is_its_own_inverse():
    assert NEGATED.value("left_z", NEGATED.value("left_z", 0.9)) == 0.9
    assert NEGATED.value("left_yaw_deg", 30.0) == 30.0 and NEGATED.value("right_gripper", 1.0) == 1.0
    assert NEGATED.bounds("left_z", (0.7, 1.565)) == (-1.565, -0.7)
    assert NEGATED.bounds("left_z", NEGATED.bounds("left_z", (0.7, 1.565))) == (0.7, 1.565)
    assert NEGATED.point((0.1, -0.2, 0.9)) == (-0.1, 0.2, -0.9) and WORLD.point((0.1, -0.2, 0.9)) == (0.1, -0.2, 0.9)


def test_names_in_facts_of_any_length_render_short_and_still_quoted():
    for rejection in (rj.UnknownDimension("q" * 10_000, ARMS, ("x",)), rj.DuplicateDimension("q" * 10_000)):
        text = render_rejection(rejection)
        assert len(text) < 200 and "'" + "q" * 60 + "...'" in text
