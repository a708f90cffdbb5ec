"""Rotation helpers, checked numerically with hypothesis."""

from __future__ import annotations

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

from robodojo.geometry import (
    matrix_from_quat,
    quat_from_matrix,
    rotation_about_axis,
    rotation_angle_between,
    rotation_from_rpy,
)

angles = st.floats(-np.pi, np.pi, allow_nan=False)
unit = st.floats(-1, 1, allow_nan=False)


@given(angles, angles, angles)
def test_rpy_is_fixed_axis_xyz(r, p, y):
    expected = rotation_about_axis([0, 0, 1], y) @ rotation_about_axis([0, 1, 0], p) @ rotation_about_axis([1, 0, 0], r)
    np.testing.assert_allclose(rotation_from_rpy([r, p, y]), expected, atol=1e-12)


@given(st.tuples(unit, unit, unit, unit).filter(lambda q: np.linalg.norm(q) > 0.1))
def test_quaternion_round_trip(q):
    q = np.array(q) / np.linalg.norm(q)
    R = matrix_from_quat(q)
    np.testing.assert_allclose(R @ R.T, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) > 0
    q2 = quat_from_matrix(R)
    assert q2[0] >= 0  # canonical hemisphere; q and -q are the same rotation
    assert min(np.abs(q2 - q).max(), np.abs(q2 + q).max()) < 1e-9


@given(st.tuples(unit, unit, unit).filter(lambda a: np.linalg.norm(a) > 0.1), st.floats(0, np.pi - 1e-6))
def test_angle_between_recovers_the_rotation_angle(axis, angle):
    R = rotation_about_axis(axis, angle)
    assert abs(rotation_angle_between(np.eye(3), R) - angle) < 1e-6


def test_look_at_puts_the_target_on_the_optical_axis_with_image_down_towards_world_down():
    from robodojo.geometry import look_at

    T = look_at([0.1, -0.5, 1.3], [0.0, 0.0, 0.8])
    R = T[:3, :3]
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-12)
    assert np.linalg.det(R) > 0
    z = np.array([-0.1, 0.5, -0.5]) / np.linalg.norm([-0.1, 0.5, -0.5])
    np.testing.assert_allclose(R[:, 2], z, atol=1e-12)
    assert R[2, 1] < 0 and abs(R[2, 0]) < 1e-12  # image y (down) points down in the world; x stays horizontal
