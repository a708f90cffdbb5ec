"""Arm kinematics (robodojo.robots.ik): the IK's Jacobian against finite differences of FK, FK -> IK -> FK round
trips within the IK's own tolerances, and joint limits, for every arm of every shipped robot."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from robodojo.geometry import matrix_from_quat
from robodojo.robots.config import available_robots, load_robot_config
from robodojo.robots.ik import POS_TOLERANCE_M, ROT_TOLERANCE_RAD, ArmKinematics, rotation_error
from robodojo.robots.urdf import load_urdf

ROBOTS = {name: load_robot_config(name) for name in available_robots()}
KINEMATICS = {name: ArmKinematics(robot) for name, robot in ROBOTS.items()}
ARMS = [(name, arm) for name, robot in ROBOTS.items() for arm in robot.arm_names]
FD_STEP_RAD = 1e-6
# Seeds this close to the answer (the planner's densely spaced, warm-started waypoints) must always converge.
WARM_SEED_SPREAD_RAD = 0.1


def _random_configs(name, arm, rng, count, margin_rad=0.0):
    kin = KINEMATICS[name]
    return rng.uniform(kin.lower[arm] + margin_rad, kin.upper[arm] - margin_rad, (count, len(kin.lower[arm])))


def _pose_error(kin, arm, q, target_pos, target_R):
    pos, R = kin.tcp_pose(arm, q)
    return float(np.linalg.norm(target_pos - pos)), float(np.linalg.norm(rotation_error(target_R, R)))


@pytest.mark.parametrize(("name", "arm"), ARMS)
def test_ik_limits_are_the_urdf_joint_limits(name, arm):
    urdf = load_urdf(ROBOTS[name].scene_urdf)
    joints = ROBOTS[name].arm(arm).joints
    np.testing.assert_array_equal(KINEMATICS[name].lower[arm], [urdf.joint(j).lower for j in joints])
    np.testing.assert_array_equal(KINEMATICS[name].upper[arm], [urdf.joint(j).upper for j in joints])


def _small_rotation_vector(dR):
    """The rotation vector of a rotation by a few microradians, from its skew-symmetric part (sin(a) ~ a to 1e-12).

    Not rotation_error: its arccos of the trace keeps only about 1e-8 rad near zero, too coarse for a derivative.
    """
    skew = (dR - dR.T) / 2
    return np.array([skew[2, 1], skew[0, 2], skew[1, 0]])


@pytest.mark.parametrize(("name", "arm"), ARMS)
def test_jacobian_matches_finite_differences_of_forward_kinematics(name, arm):
    """Columns: TCP velocity [m/rad] and world-frame angular velocity [rad/rad] per joint, by central differences."""
    kin = KINEMATICS[name]
    rng = np.random.default_rng(7)
    for q in _random_configs(name, arm, rng, 6, margin_rad=2 * FD_STEP_RAD):
        J = kin.jacobian(arm, q)
        assert J.shape == (6, len(q))
        numeric = np.zeros_like(J)
        for j in range(len(q)):
            step = np.zeros_like(q)
            step[j] = FD_STEP_RAD
            (p_plus, R_plus), (p_minus, R_minus) = kin.tcp_pose(arm, q + step), kin.tcp_pose(arm, q - step)
            numeric[:3, j] = (p_plus - p_minus) / (2 * FD_STEP_RAD)
            numeric[3:, j] = _small_rotation_vector(R_plus @ R_minus.T) / (2 * FD_STEP_RAD)
        np.testing.assert_allclose(J, numeric, atol=1e-7)


@pytest.mark.parametrize(("name", "arm"), ARMS)
def test_fk_ik_fk_round_trips_from_warm_seeds_land_within_tolerance(name, arm):
    kin = KINEMATICS[name]
    rng = np.random.default_rng(11)
    for q_true in _random_configs(name, arm, rng, 25):
        target_pos, target_R = kin.tcp_pose(arm, q_true)
        seed = q_true + rng.uniform(-WARM_SEED_SPREAD_RAD, WARM_SEED_SPREAD_RAD, len(q_true))
        sol = kin.solve(arm, target_pos, target_R, seed)
        assert sol.converged, f"{name} {arm}: no solution near {q_true} ({sol.pos_error_m=}, {sol.rot_error_rad=})"
        pos_err, rot_err = _pose_error(kin, arm, sol.q, target_pos, target_R)
        assert pos_err < POS_TOLERANCE_M and rot_err < ROT_TOLERANCE_RAD
        assert (sol.pos_error_m, sol.rot_error_rad) == pytest.approx((pos_err, rot_err), abs=1e-12)


@pytest.mark.parametrize(("name", "arm"), ARMS)
def test_cold_seeds_mostly_converge_and_report_their_errors_honestly(name, arm):
    """Seeds 0.3 rad off converge nine times in ten; converged or not, the reported errors are the FK's."""
    kin = KINEMATICS[name]
    rng = np.random.default_rng(13)
    converged = 0
    for q_true in _random_configs(name, arm, rng, 30):
        target_pos, target_R = kin.tcp_pose(arm, q_true)
        sol = kin.solve(arm, target_pos, target_R, q_true + rng.uniform(-0.3, 0.3, len(q_true)))
        pos_err, rot_err = _pose_error(kin, arm, sol.q, target_pos, target_R)
        assert (sol.pos_error_m, sol.rot_error_rad) == pytest.approx((pos_err, rot_err), abs=1e-12)
        assert sol.converged == (pos_err < POS_TOLERANCE_M and rot_err < ROT_TOLERANCE_RAD)
        converged += sol.converged
    assert converged >= 27


@pytest.mark.parametrize(("name", "arm"), ARMS)
def test_ik_stays_within_the_joint_limits(name, arm):
    """Targets only reachable beyond a limit, seeds outside the limits and targets out of reach: q stays inside."""
    kin = KINEMATICS[name]
    lower, upper = kin.lower[arm], kin.upper[arm]
    rng = np.random.default_rng(17)
    for q in _random_configs(name, arm, rng, 10):
        joint, beyond = rng.integers(len(q)), q.copy()
        beyond[joint] = upper[joint] + 0.4 if rng.random() < 0.5 else lower[joint] - 0.4
        target_pos, target_R = kin.tcp_pose(arm, beyond)
        far_pos = target_pos + np.array([0.0, 0.0, 3.0])  # out of any arm's reach
        for pos, seed in ((target_pos, beyond), (far_pos, q)):
            sol = kin.solve(arm, pos, target_R, seed)
            assert np.all(sol.q >= lower) and np.all(sol.q <= upper), (beyond, sol.q)
            if sol.converged:  # another solution inside the limits is fine, if it really is one
                pos_err, rot_err = _pose_error(kin, arm, sol.q, pos, target_R)
                assert pos_err < POS_TOLERANCE_M and rot_err < ROT_TOLERANCE_RAD
        assert not kin.solve(arm, far_pos, target_R, q).converged
    # A seed outside the limits is clipped before anything else, even with no iteration to run.
    seed = upper + 1.0
    np.testing.assert_array_equal(kin.solve(arm, *kin.tcp_pose(arm, seed), seed, max_iterations=0).q, upper)


unit_quats = st.lists(st.floats(-1, 1, allow_nan=False), min_size=4, max_size=4).filter(
    lambda v: np.linalg.norm(v) > 0.1
)


@settings(max_examples=100, deadline=None)
@given(unit_quats, unit_quats, st.floats(0.0, math.pi))
def test_rotation_error_is_the_exact_rotation_vector(quat, axis_source, angle):
    """Rotating R by the returned vector gives R_target, for every angle up to a half turn (where -axis also works)."""
    R = matrix_from_quat(np.array(quat) / np.linalg.norm(quat))
    axis = np.array(axis_source[:3]) if np.linalg.norm(axis_source[:3]) > 0.1 else np.array([0.0, 0.0, 1.0])
    axis /= np.linalg.norm(axis)
    R_target = _axis_angle(axis, angle) @ R
    vector = rotation_error(R_target, R)
    assert np.linalg.norm(vector) == pytest.approx(angle, abs=1e-6)
    np.testing.assert_allclose(_axis_angle(vector, np.linalg.norm(vector)) @ R, R_target, atol=1e-6)


def _axis_angle(vector, angle):
    """Rodrigues: the rotation by ``angle`` about ``vector``'s direction (identity for a zero vector)."""
    norm = np.linalg.norm(vector)
    if norm < 1e-12:
        return np.eye(3)
    x, y, z = np.asarray(vector) / norm
    K = np.array([[0, -z, y], [z, 0, -x], [-y, x, 0]])
    return np.eye(3) + math.sin(angle) * K + (1 - math.cos(angle)) * K @ K
