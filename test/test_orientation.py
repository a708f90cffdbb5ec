"""The degrees-from-straight-down convention: exact both ways."""

from __future__ import annotations

import numpy as np
from hypothesis import assume, example, given
from hypothesis import strategies as st

from robodojo.geometry import matrix_from_quat
from robodojo.motion.orientation import (
    DownAngles,
    down_angles_from_quat,
    down_angles_from_rotation,
    down_rotation,
    quat_from_down_angles,
    rotation_from_down_angles,
)

X5_AXIS = (-1.0, 0.0, 0.0)
FR3_AXIS = (1.0, 0.0, 0.0)
axes = st.sampled_from([X5_AXIS, FR3_AXIS])
pitch = st.floats(-180, 180, allow_nan=False)
roll = st.floats(-89.9, 89.9, allow_nan=False)
yaw = st.floats(-180, 180, allow_nan=False)


def test_zero_is_straight_down_with_the_fingers_on_the_configured_axis():
    R = rotation_from_down_angles(DownAngles(0, 0, 0), X5_AXIS)
    np.testing.assert_allclose(R[:, 2], [0, 0, -1], atol=1e-15)
    np.testing.assert_allclose(R[:, 1], X5_AXIS, atol=1e-15)
    np.testing.assert_allclose(R, down_rotation(X5_AXIS))


def test_signs_of_each_angle():
    approach = lambda a: rotation_from_down_angles(a, X5_AXIS)[:, 2]  # noqa: E731
    assert approach(DownAngles(30, 0, 0))[1] > 0.4  # positive pitch tilts the fingers towards +y
    assert abs(approach(DownAngles(0, 30, 0))[0]) > 0.4  # roll tilts them sideways (along x)
    np.testing.assert_allclose(approach(DownAngles(0, 0, 70)), [0, 0, -1], atol=1e-12)  # yaw keeps them down
    fingers = rotation_from_down_angles(DownAngles(0, 0, 90), X5_AXIS)[:, 1]
    np.testing.assert_allclose(fingers, [0, -1, 0], atol=1e-12)  # yaw +90 turns -x into -y


@given(pitch, roll, yaw, axes)
def test_angles_to_quaternion_and_back(p, r, y, axis):
    angles = down_angles_from_quat(quat_from_down_angles(DownAngles(p, r, y), axis), axis)
    got = rotation_from_down_angles(angles, axis)
    want = rotation_from_down_angles(DownAngles(p, r, y), axis)
    np.testing.assert_allclose(got, want, atol=1e-9)
    # Away from the +/-180 wrap the numbers themselves come back.
    assume(abs(abs(p) - 180) > 1e-6 and abs(abs(y) - 180) > 1e-6)
    np.testing.assert_allclose([angles.pitch_deg, angles.roll_deg, angles.yaw_deg], [p, r, y], atol=1e-7)


@given(st.tuples(*[st.floats(-1, 1, allow_nan=False)] * 4).filter(lambda q: np.linalg.norm(q) > 0.1), axes)
@example(q=(0.0, -5.960464477539063e-08, 1.0, 1.0), axis=(1.0, 0.0, 0.0))  # at gimbal lock: 1.2e-7 off
def test_any_quaternion_round_trips_through_the_angles(q, axis):
    q = np.array(q) / np.linalg.norm(q)
    angles = down_angles_from_quat(q, axis)
    assert -180 <= angles.pitch_deg <= 180 and -90 <= angles.roll_deg <= 90 and -180 <= angles.yaw_deg <= 180
    # Next to gimbal lock (roll +/-90) the angles come from asin/atan2 of nearly degenerate entries, whose error grows
    # like sqrt(machine epsilon): 1e-6 bounds it, far below any tolerance that matters (0.1 mm, 0.01 deg).
    np.testing.assert_allclose(rotation_from_down_angles(angles, axis), matrix_from_quat(q), atol=1e-6)


def test_gimbal_lock_still_round_trips():
    for r in (90.0, -90.0):
        R = rotation_from_down_angles(DownAngles(25, r, 40), X5_AXIS)
        np.testing.assert_allclose(
            rotation_from_down_angles(down_angles_from_rotation(R, X5_AXIS), X5_AXIS), R, atol=1e-9
        )
