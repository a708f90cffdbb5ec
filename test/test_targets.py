"""move_eef target parsing: every input either parses or gets one of the documented messages."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robodojo.motion.rejection import (
    DuplicateDimension,
    NamesValuesMismatch,
    NoDimension,
    NotANumber,
    OutOfBounds,
    UnknownArm,
    UnknownDimension,
    WrongLength,
    WrongType,
)
from robodojo.motion.targets import (
    TargetError,
    arm_pose_target,
    check_arm_pose,
    dimension_bounds,
    dimension_names,
    observed_dimensions,
    parse_move_eef,
    parse_move_eef_pairs,
)
from robodojo.observation import ArmState
from robodojo.robots.config import load_robot_config

ROBOT = load_robot_config("dual_arx_x5")
STATE = {
    arm: ArmState(arm, (), (), (-0.3 if arm == "left" else 0.3, -0.2, 0.95), (0.0, 0.0, 1.0, 0.0), 0.8)
    for arm in ("left", "right")
}
DOCUMENTED = [
    r"targets must be an object mapping dimension names to numbers; nothing moved",
    r"targets must name at least one dimension; nothing moved",
    r"unknown dimension (['\"]).*\1; dimensions are \{left,right\}_\{x,y,z,pitch_deg,roll_deg,yaw_deg,gripper\}; "
    r"nothing moved",
    r"'(left|right)_[a-z_]+' must be a finite number; nothing moved",
    r"target for '(left|right)_[a-z_]+' is outside \[-?[0-9.]+, -?[0-9.]+\]; nothing moved",
]
NAMES = dimension_names(ROBOT)


def test_fourteen_dimensions_with_the_documented_bounds():
    assert len(NAMES) == 14
    b = dimension_bounds(ROBOT)
    assert b["left_x"] == (-1.1, 0.5) and b["right_x"] == (-0.5, 1.1) and b["left_y"] == (-1.25, 0.35)
    assert b["right_z"] == (0.7, 1.565) and b["left_roll_deg"] == (-90, 90) and b["right_gripper"] == (0, 1)


@pytest.mark.parametrize(
    ("targets", "message"),
    [
        ({"left_z": 0.5}, "target for 'left_z' is outside [0.7, 1.565]"),
        ({"left_q": 1.0}, "unknown dimension 'left_q'; dimensions are"),
        ({"right_x": math.nan}, "'right_x' must be a finite number"),
        ({"right_x": "0.3"}, "'right_x' must be a finite number"),
        ({"right_x": True}, "'right_x' must be a finite number"),
        ({}, "targets must name at least one dimension"),
        ([0.1, 0.2], "targets must be an object mapping dimension names to numbers"),
        ({"left_roll_deg": 95}, "target for 'left_roll_deg' is outside [-90, 90]"),
        ({"right_gripper": -0.1}, "target for 'right_gripper' is outside [0, 1]"),
    ],
)
def test_examples_of_each_message(targets, message):
    with pytest.raises(TargetError) as err:
        parse_move_eef(targets, ROBOT, STATE)
    assert str(err.value).startswith(message) and str(err.value).endswith("; nothing moved")


def test_rejections_carry_their_facts():
    with pytest.raises(TargetError) as err:
        parse_move_eef({"left_y": 0.2, "left_z": 0.5}, ROBOT, STATE)
    assert err.value.rejection == OutOfBounds("left_z", 0.5, (0.7, 1.565))
    with pytest.raises(TargetError) as err:
        parse_move_eef({"right_x": "0.3"}, ROBOT, STATE)
    assert err.value.rejection == NotANumber("right_x")


def test_unnamed_dimensions_keep_their_observed_values():
    t = parse_move_eef({"left_z": 1.0}, ROBOT, STATE)
    assert set(t.arms) == {"left"}  # the right arm is not moved at all
    left = t.arms["left"]
    assert left.pos_m == (-0.3, -0.2, 1.0)
    assert left.quat_wxyz == STATE["left"].tcp_quat_wxyz  # exactly the observed orientation
    assert left.gripper is None  # keeps the current command


def test_named_angles_replace_the_observed_ones():
    t = parse_move_eef({"right_yaw_deg": 30, "left_gripper": 0}, ROBOT, STATE)
    obs = observed_dimensions(ROBOT, STATE["right"])
    from robodojo.motion.orientation import down_angles_from_quat

    angles = down_angles_from_quat(t.arms["right"].quat_wxyz, ROBOT.motion.zero_orientation_finger_axis)
    assert angles.yaw_deg == pytest.approx(30)
    assert angles.pitch_deg == pytest.approx(obs["right_pitch_deg"], abs=1e-9)
    assert t.arms["left"].gripper == 0.0 and t.arms["left"].pos_m == STATE["left"].tcp_pos_m


json_values = st.recursive(
    st.none() | st.booleans() | st.floats() | st.integers() | st.text(max_size=8),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=6,
)
near_names = st.sampled_from(NAMES) | st.text(max_size=12) | st.sampled_from(["left_q", "x", "LEFT_X", "right_"])
candidate_targets = (
    st.dictionaries(near_names, json_values | st.floats(-3, 3) | st.floats(-200, 200), max_size=6) | json_values
)


@settings(max_examples=3000, deadline=None)
@given(candidate_targets)
def test_any_json_like_input_parses_or_gets_a_documented_message(targets):
    try:
        result = parse_move_eef(targets, ROBOT, STATE)
    except TargetError as exc:
        assert any(re.fullmatch(p, str(exc), re.DOTALL) for p in DOCUMENTED), str(exc)
        return
    assert isinstance(targets, dict) and targets
    bounds = dimension_bounds(ROBOT)
    for name, value in targets.items():
        low, high = bounds[name]
        assert low <= value <= high
    for arm_target in result.arms.values():
        assert np.isclose(np.linalg.norm(arm_target.quat_wxyz), 1.0)


def test_per_arm_form():
    t = arm_pose_target(ROBOT, STATE, "right", [0.2, -0.2, 0.9], quat_wxyz=[2, 0, 0, 0], gripper=1)
    assert t.arms["right"].quat_wxyz == (1.0, 0.0, 0.0, 0.0) and t.arms["right"].gripper == 1.0
    kept = arm_pose_target(ROBOT, STATE, "left", np.array([-0.2, -0.2, 0.9]))
    assert kept.arms["left"].quat_wxyz == STATE["left"].tcp_quat_wxyz and kept.arms["left"].gripper is None
    for kwargs, message in [
        ({"xyz": [0.1, 0.2]}, "xyz must be 3 numbers [m], got 2: [0.1, 0.2]; nothing moved"),
        ({"xyz": "abc"}, "xyz must be 3 numbers [m], got 'abc'; nothing moved"),
        ({"xyz": [0.1, 0.2, math.inf]}, "xyz must be finite, got [0.1, 0.2, inf]; nothing moved"),
        ({"xyz": [0.1, -0.2, 2.0]}, "xyz z=2 is outside the right arm's workspace [0.7, 1.565] m; nothing moved"),
        ({"xyz": [0.1, -0.2, 0.9], "quat_wxyz": [0, 0, 0, 0]}, "quat must have a non-zero norm, got [0, 0, 0, 0]"),
        ({"xyz": [0.1, -0.2, 0.9], "quat_wxyz": (1, 0, 0)}, "quat must be 4 numbers (w, x, y, z), got 3: (1, 0, 0)"),
        ({"xyz": [0.1, -0.2, 0.9], "gripper": 2}, "gripper must be in [0, 1] (0 closed, 1 open), got 2"),
        ({"xyz": [0.1, -0.2, 0.9], "gripper": True}, "gripper must be a number, got True"),
    ]:
        with pytest.raises(TargetError, match=re.escape(message)):
            arm_pose_target(ROBOT, STATE, "right", **kwargs)
    with pytest.raises(TargetError, match=re.escape("unknown arm 'middle'; arms: 'left', 'right'; nothing moved")):
        arm_pose_target(ROBOT, STATE, "middle", [0, 0, 1])


def test_per_arm_form_facts_tell_type_errors_from_value_errors():
    def rejection(*args):
        with pytest.raises(TargetError) as err:
            check_arm_pose(ROBOT, *args)
        return err.value.rejection

    assert rejection(3, (0, 0, 1)) == UnknownArm("3", ("left", "right"), not_a_string=True)
    assert rejection(3, (0, 0, 1)).type_error and not rejection("middle", (0, 0, 1)).type_error
    assert rejection("left", "up") == WrongType("xyz", "3 numbers [m]", "'up'") and rejection("left", "up").type_error
    assert rejection("left", (0, 1)) == WrongLength("xyz", "3 numbers [m]", 2, "(0, 1)")
    assert rejection("left", (0.0, -0.2, 0.5)) == OutOfBounds("left_z", 0.5, (0.7, 1.565), "xyz")
    long = rejection("left", list(range(100)))
    assert isinstance(long, WrongLength) and len(long.given) == 60 and long.given.endswith("...")
    pose = check_arm_pose(ROBOT, "left", np.array([-0.2, -0.2, 0.9]), (2, 0, 0, 0), np.float32(0.5))
    assert pose.quat_wxyz == (2.0, 0.0, 0.0, 0.0) and pose.gripper == 0.5  # normalised when the target is built


def test_an_unknown_name_of_any_length_is_quoted_short():
    """A ROS client or a model can send a name of any size; the message quotes a bounded, still quoted, head of it."""
    with pytest.raises(TargetError) as info:
        parse_move_eef({"q" * 100_000: 1.0}, ROBOT, STATE)
    text = str(info.value)
    assert len(text) < 250 and text.startswith("unknown dimension 'qqqq") and "...'; dimensions are" in text


def _pairs_rejection(names, values):
    with pytest.raises(TargetError) as info:
        parse_move_eef_pairs(names, values, ROBOT, STATE)
    return info.value.rejection


def test_pairs_parse_as_the_mapping_does():
    names, values = ["left_z", "right_x", "right_gripper"], [0.85, 0.25, 0.3]
    assert parse_move_eef_pairs(names, values, ROBOT, STATE) == parse_move_eef(
        dict(zip(names, values, strict=True)), ROBOT, STATE
    )


def test_a_name_given_twice_is_refused_naming_it_whatever_comes_after():
    assert _pairs_rejection(["left_z", "left_x", "left_z"], [0.85, -0.3, 0.9]) == DuplicateDimension("left_z")
    assert _pairs_rejection(["left_z", "left_z"], [0.85, 0.85]) == DuplicateDimension("left_z")  # same value too
    with pytest.raises(TargetError, match=re.escape("dimension 'right_gripper' is named more than once")):
        parse_move_eef_pairs(["right_gripper", "right_gripper", "left_q"], [0.1, 0.9, 1.0], ROBOT, STATE)


def test_pairs_of_different_lengths_or_none_are_refused():
    assert _pairs_rejection(["left_z", "left_x"], [0.85]) == NamesValuesMismatch(2, 1)
    assert _pairs_rejection([], [0.85]) == NamesValuesMismatch(0, 1)
    assert _pairs_rejection([], []) == NoDimension()


def test_pairs_refuse_at_the_first_bad_name_so_a_huge_list_costs_nothing():
    names = ["left_z", "q" * 10_000] + ["left_z"] * 1_000_000
    rejection = _pairs_rejection(names, [0.85] * len(names))
    assert rejection == UnknownDimension("q" * 60 + "...", ("left", "right"), tuple(rejection.suffixes))
    assert len(TargetError(rejection).args[0]) < 250  # the facts are cut as well as the text


def test_an_unknown_arm_of_any_length_is_quoted_short():
    with pytest.raises(TargetError) as info:
        check_arm_pose(ROBOT, "a" * 100_000, (0, 0, 1))
    assert len(str(info.value)) < 200 and len(info.value.rejection.given) <= 60
