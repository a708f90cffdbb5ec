"""Time parametrization (robodojo.motion.timing): properties of every sampled profile, checked with hypothesis.

Samples are one control period apart, so a finite difference is the mean of the continuous velocity (or, for the
second difference, a weighted mean of the acceleration) over a period: if the continuous profile keeps a limit, so do
the samples, up to float rounding.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from robodojo.motion.timing import (
    NO_MOTION_RAD,
    PathRateLimits,
    parametrize,
    trapezoid_duration,
    trapezoid_position,
)

DTS_S = (0.002, 0.01, 0.04)
REL_TOL = 1e-9  # float rounding allowance on every limit check
SETTINGS = settings(max_examples=60, deadline=None)

finite = {"allow_nan": False, "allow_infinity": False}


@st.composite
def paths(draw, *, max_knots=7):
    """(knots_s, knots_q, max_velocity, max_accel, dt): uniform knots like the planner's, random joint values."""
    joints = draw(st.integers(1, 7))
    knots = draw(st.integers(2, max_knots))
    # Joint angles to a nanoradian (no encoder resolves finer): subnormal knots only make scipy's PCHIP warn.
    angles = st.floats(-2.5, 2.5, **finite).map(lambda x: round(x, 9))
    knots_q = draw(arrays(np.float64, (knots, joints), elements=angles))
    max_velocity = draw(arrays(np.float64, joints, elements=st.floats(0.2, 3.0, **finite)))
    max_accel = draw(arrays(np.float64, joints, elements=st.floats(0.5, 20.0, **finite)))
    dt = draw(st.sampled_from(DTS_S))
    return np.linspace(0.0, 1.0, knots), knots_q, max_velocity, max_accel, dt


def _assert_within_limits(samples, max_velocity, max_accel, dt):
    if len(samples) > 1:
        velocity = np.abs(np.diff(samples, axis=0)) / dt
        assert np.all(velocity <= max_velocity * (1 + REL_TOL)), (velocity / max_velocity).max()
    if len(samples) > 2:
        accel = np.abs(np.diff(samples, 2, axis=0)) / dt**2
        assert np.all(accel <= max_accel * (1 + REL_TOL)), (accel / max_accel).max()


@SETTINGS
@given(paths())
def test_profiles_keep_the_joint_velocity_and_acceleration_limits(path):
    knots_s, knots_q, max_velocity, max_accel, dt = path
    _assert_within_limits(parametrize(knots_s, knots_q, max_velocity, max_accel, dt), max_velocity, max_accel, dt)


@SETTINGS
@given(paths(), st.floats(0.05, 5.0), st.floats(0.05, 20.0))
def test_path_rate_limits_slow_the_profile_further(path, max_rate, max_path_accel):
    knots_s, knots_q, max_velocity, max_accel, dt = path
    free = parametrize(knots_s, knots_q, max_velocity, max_accel, dt)
    capped = parametrize(knots_s, knots_q, max_velocity, max_accel, dt, PathRateLimits(max_rate, max_path_accel))
    _assert_within_limits(capped, max_velocity, max_accel, dt)
    if len(free) > 1:  # a moving path: the caps can only lengthen it, and it cannot beat them
        assert len(capped) >= len(free)
        assert (len(capped) - 1) * dt >= trapezoid_duration(max_rate, max_path_accel) * (1 - REL_TOL)


@SETTINGS
@given(paths())
def test_profiles_start_and_end_exactly_on_the_first_and_last_knot(path):
    knots_s, knots_q, max_velocity, max_accel, dt = path
    samples = parametrize(knots_s, knots_q, max_velocity, max_accel, dt)
    np.testing.assert_array_equal(samples[0], knots_q[0])
    if len(samples) > 1:
        np.testing.assert_array_equal(samples[-1], knots_q[-1])
    else:  # no motion: the start sample is also the goal, to within the no-motion threshold
        assert np.all(np.abs(knots_q - knots_q[0]) < NO_MOTION_RAD)


@SETTINGS
@given(paths(max_knots=2))
def test_straight_joint_moves_are_monotonic_and_near_the_bang_bang_minimum(path):
    """A two-knot path is a straight line in joint space: every joint moves one way only, and the duration lies
    between the fastest each joint could make alone (bang-bang at full velocity and acceleration) and 2.5 times it.

    Why 2.5: the profile gives half the acceleration budget to the path's curvature term (none on a line), which
    costs at most a factor 1 + sqrt(2) over the minimum, plus the rounding up to whole control periods.
    """
    knots_s, knots_q, max_velocity, max_accel, dt = path
    samples = parametrize(knots_s, knots_q, max_velocity, max_accel, dt)
    step = np.diff(samples, axis=0) * np.sign(knots_q[1] - knots_q[0])
    assert np.all(step >= -1e-12)
    distance = np.abs(knots_q[1] - knots_q[0])
    moving = distance >= NO_MOTION_RAD
    if not moving.any():
        assert len(samples) == 1
        return
    d, v, a = distance[moving], max_velocity[moving], max_accel[moving]
    bang_bang_s = float(np.max(np.where(d >= v * v / a, d / v + v / a, 2.0 * np.sqrt(d / a))))
    duration_s = (len(samples) - 1) * dt
    assert duration_s >= bang_bang_s * (1 - REL_TOL)
    assert duration_s <= 2.5 * bang_bang_s + dt


@pytest.mark.parametrize("dt", DTS_S)
def test_a_zero_length_path_is_its_one_start_sample(dt):
    q = np.array([0.3, -1.2, 2.0])
    samples = parametrize(np.linspace(0, 1, 4), np.tile(q, (4, 1)), np.ones(3), np.ones(3), dt)
    assert samples.shape == (1, 3)
    np.testing.assert_array_equal(samples[0], q)


def test_a_move_below_the_no_motion_threshold_is_no_motion():
    start = np.array([0.1, 0.2])
    knots_q = np.vstack([start, start + [0.5 * NO_MOTION_RAD, 0.0]])
    samples = parametrize(np.array([0.0, 1.0]), knots_q, np.ones(2), np.ones(2), 0.04)
    np.testing.assert_array_equal(samples, start[None])


def test_a_tiny_move_still_arrives_exactly():
    start, goal = np.array([0.1, 0.2]), np.array([0.1 + 1e-10, 0.2])
    samples = parametrize(np.array([0.0, 1.0]), np.vstack([start, goal]), np.ones(2), np.ones(2), 0.04)
    assert len(samples) == 2
    np.testing.assert_array_equal(samples[0], start)
    np.testing.assert_array_equal(samples[-1], goal)


def test_a_round_trip_path_moves_and_comes_back():
    """First and last knot equal, middle ones not: a real motion, not a zero-length one."""
    knots_q = np.array([[0.0], [0.5], [0.0]])
    samples = parametrize(np.linspace(0, 1, 3), knots_q, np.ones(1), np.ones(1), 0.01)
    assert len(samples) > 10 and samples.max() == pytest.approx(0.5, abs=1e-3)
    np.testing.assert_array_equal(samples[-1], knots_q[-1])


@SETTINGS
@given(st.floats(0.05, 50.0), st.floats(0.05, 50.0))
def test_the_trapezoid_is_monotonic_in_time_and_keeps_its_rate_and_acceleration(max_rate, max_accel):
    duration = trapezoid_duration(max_rate, max_accel)
    t = np.linspace(0.0, duration, 2001)
    s = trapezoid_position(t, duration, max_accel)
    assert s[0] == 0.0 and s[-1] == pytest.approx(1.0, abs=1e-12)
    assert np.all(np.diff(t) > 0) and np.all(np.diff(s) >= 0)
    dt = t[1] - t[0]
    assert np.all(np.diff(s) / dt <= max_rate * (1 + 1e-6))
    assert np.all(np.abs(np.diff(s, 2)) / dt**2 <= max_accel * (1 + 1e-6))
    # The minimum time at these limits: no shorter profile exists, so the duration is exactly it.
    peak = min(max_rate, math.sqrt(max_accel))
    assert duration == pytest.approx(1.0 / peak + peak / max_accel)
