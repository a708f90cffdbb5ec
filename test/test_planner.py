"""Native planner: properties of every produced trajectory, and rejections with reasons."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robodojo.geometry import quat_from_matrix
from robodojo.motion.plan import Plan
from robodojo.motion.planner import NativePlanner
from robodojo.motion.targets import ArmTarget, MoveTarget
from robodojo.robots.config import load_robot_config
from robodojo.robots.urdf import load_urdf

DT = 0.04
ROBOTS = {name: load_robot_config(name) for name in ("dual_arx_x5", "fr3")}
PLANNERS = {name: NativePlanner(robot, DT) for name, robot in ROBOTS.items()}


def _random_config(robot, arm, rng, spread=0.6):
    a = robot.arm(arm)
    kin = PLANNERS[robot.name].kinematics
    q = np.array(a.home_joints_rad) + rng.uniform(-spread, spread, len(a.joints))
    return np.clip(q, kin.lower[arm], kin.upper[arm])


def _reachable_pose(robot, arm, rng):
    """A TCP pose produced by forward kinematics (reachable by construction), above the table, fingers down-ish."""
    kin = PLANNERS[robot.name].kinematics
    while True:
        pos, R = kin.tcp_pose(arm, _random_config(robot, arm, rng))
        if pos[2] > robot.table.top_z_m + 0.03 and R[2, 2] < -0.5:
            return pos, R


def _check_trajectory(robot, plan: Plan, start: dict, gripper_now: dict):
    urdf = load_urdf(robot.scene_urdf)
    planner = PLANNERS[robot.name]
    lengths = {t.num_points for t in plan.trajectories.values()}
    assert len(lengths) == 1, "arms are padded to a common length"
    assert plan.dt_s == DT and plan.duration_s == pytest.approx(plan.waypoints * DT)
    for arm, traj in plan.trajectories.items():
        q = traj.positions_rad
        a = robot.arm(arm)
        lower = np.array([urdf.joint(j).lower for j in a.joints])
        upper = np.array([urdf.joint(j).upper for j in a.joints])
        vmax = np.array([urdf.joint(j).velocity for j in a.joints])
        amax = np.array(robot.motion.joint_accel_rad_s2)
        np.testing.assert_array_equal(q[0], start[arm])  # first point is the current state
        assert traj.gripper[0] == gripper_now[arm]
        assert np.all(q >= lower - 1e-9) and np.all(q <= upper + 1e-9)
        if len(q) > 1:
            assert np.all(np.abs(np.diff(q, axis=0)) / DT <= vmax * (1 + 1e-6))
        if len(q) > 2:
            assert np.all(np.abs(np.diff(q, 2, axis=0)) / DT**2 <= amax * (1 + 1e-6))
        for qk in q:
            assert planner.kinematics.tcp_pose(arm, qk)[0][2] >= robot.table.top_z_m - 1e-4
        assert np.all((traj.gripper >= 0) & (traj.gripper <= 1))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**31), st.sampled_from(["dual_arx_x5", "fr3"]), st.booleans())
def test_every_plan_respects_limits_and_starts_at_the_current_state(seed, robot_name, both_arms):
    robot = ROBOTS[robot_name]
    rng = np.random.default_rng(seed)
    arms = robot.arm_names if both_arms else robot.arm_names[:1]
    start = {a: _random_config(robot, a, rng) for a in robot.arm_names}
    for a in robot.arm_names:  # start above the table too
        if PLANNERS[robot_name].kinematics.tcp_pose(a, start[a])[0][2] < robot.table.top_z_m + 0.03:
            start[a] = np.array(robot.arm(a).home_joints_rad)
    gripper_now = {a: float(rng.uniform(0, 1)) for a in robot.arm_names}
    targets = {}
    for a in arms:
        pos, R = _reachable_pose(robot, a, rng)
        targets[a] = ArmTarget(a, tuple(pos), tuple(quat_from_matrix(R)), float(rng.choice([0.0, 1.0])))
    plan = PLANNERS[robot_name].plan(MoveTarget(arms=targets), start, gripper_now)
    if not plan.ok:  # a reachable pose may still lie across a singularity from the start: rejected, with a reason
        assert plan.reason and not plan.trajectories
        return
    assert set(plan.trajectories) == set(arms)
    _check_trajectory(robot, plan, start, gripper_now)
    for a, t in targets.items():
        assert plan.trajectories[a].gripper[-1] == pytest.approx(t.gripper)


def test_reachable_targets_are_planned_almost_always():
    robot = ROBOTS["dual_arx_x5"]
    rng = np.random.default_rng(1)
    ok = 0
    for _ in range(100):
        arm = str(rng.choice(robot.arm_names))
        start = {a: np.array(robot.arm(a).home_joints_rad) for a in robot.arm_names}
        pos, R = _reachable_pose(robot, arm, rng)
        target = MoveTarget(arms={arm: ArmTarget(arm, tuple(pos), tuple(quat_from_matrix(R)), None)})
        ok += PLANNERS[robot.name].plan(target, start, dict.fromkeys(robot.arm_names, 1.0)).ok
    assert ok >= 95


def test_gripper_opens_before_and_closes_after_the_arm_moves():
    robot = ROBOTS["dual_arx_x5"]
    planner = PLANNERS[robot.name]
    home = {a: np.array(robot.arm(a).home_joints_rad) for a in robot.arm_names}
    pos, R = planner.kinematics.tcp_pose("left", home["left"])
    for g_now, g_goal in ((0.0, 1.0), (1.0, 0.0)):
        target = MoveTarget(
            arms={"left": ArmTarget("left", tuple(pos + [0, 0.05, -0.05]), tuple(quat_from_matrix(R)), g_goal)}
        )
        plan = planner.plan(target, home, {"left": g_now, "right": 1.0})
        traj = plan.trajectories["left"]
        moving = np.any(np.abs(np.diff(traj.positions_rad, axis=0)) > 1e-9, axis=1)
        grip_moving = np.abs(np.diff(traj.gripper)) > 1e-9
        first_arm, last_arm = np.argmax(moving), len(moving) - 1 - np.argmax(moving[::-1])
        if g_goal > g_now:
            assert np.all(np.flatnonzero(grip_moving) < first_arm)
        else:
            assert np.all(np.flatnonzero(grip_moving) > last_arm)
        stroke_steps = robot.motion.gripper_stroke_s / DT
        assert grip_moving.sum() == pytest.approx(stroke_steps, abs=1)


def test_straight_line_spacing_and_path():
    robot = ROBOTS["dual_arx_x5"]
    planner = PLANNERS[robot.name]
    home = {a: np.array(robot.arm(a).home_joints_rad) for a in robot.arm_names}
    p0, R = planner.kinematics.tcp_pose("right", home["right"])
    p1 = p0 + np.array([-0.1, -0.05, -0.1])
    plan = planner.plan(
        MoveTarget(arms={"right": ArmTarget("right", tuple(p1), tuple(quat_from_matrix(R)), None)}),
        home,
        {"left": 1.0, "right": 1.0},
    )
    assert plan.ok
    direction = (p1 - p0) / np.linalg.norm(p1 - p0)
    for q in plan.trajectories["right"].positions_rad:
        p = planner.kinematics.tcp_pose("right", q)[0]
        off_line = np.linalg.norm((p - p0) - np.dot(p - p0, direction) * direction)
        assert off_line < 0.002  # the grasp point stays within 2 mm of the straight line
    np.testing.assert_allclose(
        planner.kinematics.tcp_pose("right", plan.trajectories["right"].positions_rad[-1])[0], p1, atol=5e-4
    )


@pytest.mark.parametrize(
    ("offset", "reason"),
    [
        ((0.0, 0.6, -0.1), "is out of reach"),
        ((0.0, 0.0, -0.3), "below the table surface"),
    ],
)
def test_rejections_carry_a_reason(offset, reason):
    robot = ROBOTS["dual_arx_x5"]
    planner = PLANNERS[robot.name]
    home = {a: np.array(robot.arm(a).home_joints_rad) for a in robot.arm_names}
    p0, R = planner.kinematics.tcp_pose("left", home["left"])
    target = MoveTarget(arms={"left": ArmTarget("left", tuple(p0 + offset), tuple(quat_from_matrix(R)), None)})
    plan = planner.plan(target, home, {"left": 1.0, "right": 1.0})
    assert not plan.ok and reason in plan.reason and plan.waypoints == 0


def test_joint_goal_outside_the_limits_is_rejected():
    robot = ROBOTS["dual_arx_x5"]
    home = {a: np.array(robot.arm(a).home_joints_rad) for a in robot.arm_names}
    plan = PLANNERS[robot.name].plan_joints({"left": [0, 5, 0, 0, 0, 0]}, home, {"left": 1.0, "right": 1.0})
    assert not plan.ok and "outside the joint limits" in plan.reason


@pytest.mark.parametrize("robot_name", ["dual_arx_x5", "fr3"])
def test_a_start_a_hair_past_a_joint_limit_is_planned_from_the_limit_and_one_far_past_is_refused(robot_name):
    """MuJoCo's joint limits are soft: an arm driven against one rests a fraction of a milliradian beyond it. A plan
    from there (home included) starts at the limit; a start far past one is a fault, refused with the reason."""
    robot, planner = ROBOTS[robot_name], PLANNERS[robot_name]
    arm = robot.arm_names[0]
    home = np.array(robot.arm(arm).home_joints_rad)
    gripper = dict.fromkeys(robot.arm_names, 0.5)
    joints = {a: np.array(robot.arm(a).home_joints_rad) for a in robot.arm_names}
    last = len(home) - 1
    for past_rad, planned in ((1e-4, True), (0.05, False)):
        joints[arm] = home.copy()
        joints[arm][last] = planner.kinematics.upper[arm][last] + past_rad
        plan = planner.plan_joints({arm: home}, joints, gripper)
        assert plan.ok is planned, plan.reason
        if planned:
            q = plan.trajectories[arm].positions_rad
            assert q[0][last] == planner.kinematics.upper[arm][last]
            np.testing.assert_allclose(q[-1], home)
        else:
            assert "outside the joint limits" in plan.reason or "leaves the joint limits" in plan.reason


def test_planners_are_chosen_by_name_and_an_unknown_name_lists_the_choices():
    from robodojo.errors import ConfigError
    from robodojo.motion.planners import make_planner

    robot = load_robot_config("fr3")
    assert isinstance(make_planner("native", robot, robot.control_dt_s), NativePlanner)
    with pytest.raises(ConfigError, match="must be native or moveit, got 'rrt'"):
        make_planner("rrt", robot, robot.control_dt_s)


@pytest.mark.parametrize("robot_name", ["dual_arx_x5", "fr3"])
def test_a_slowed_plan_follows_the_same_path_slower(robot_name):
    """speed_scale stretches time only: the same end point, the duration about 1 / scale, and every joint speed and
    acceleration under scale and scale**2 times the caps the full-speed plan may use (robodojo calibrate moves so)."""
    robot, planner = ROBOTS[robot_name], PLANNERS[robot_name]
    arm = robot.arm_names[0]
    rng = np.random.default_rng(7)
    start = {a.name: np.array(a.home_joints_rad) for a in robot.arms}
    gripper = dict.fromkeys(robot.arm_names, 0.5)
    pos, R = _reachable_pose(robot, arm, rng)
    target = MoveTarget({arm: ArmTarget(arm, tuple(pos), tuple(quat_from_matrix(R)), None)})
    full = planner.plan(target, start, gripper)
    assert full.ok, full.failure
    vmax = planner.finisher.planned_velocity[arm]
    amax = planner.finisher.accel[arm]
    for scale in (0.5, 0.25):
        slow = planner.plan(MoveTarget(target.arms, speed_scale=scale), start, gripper)
        assert slow.ok
        q_full, q_slow = full.trajectories[arm].positions_rad, slow.trajectories[arm].positions_rad
        np.testing.assert_allclose(q_slow[-1], q_full[-1], atol=1e-9)
        assert slow.waypoints == pytest.approx(full.waypoints / scale, abs=2 / scale)
        assert np.all(np.abs(np.diff(q_slow, axis=0)) / DT <= vmax * scale * (1 + 1e-6))
        assert np.all(np.abs(np.diff(q_slow, 2, axis=0)) / DT**2 <= amax * scale**2 * (1 + 1e-6))
        tcp = np.array([planner.kinematics.tcp_pose(arm, q)[0] for q in q_slow])
        assert np.max(np.linalg.norm(np.diff(tcp, axis=0), axis=1)) / DT <= robot.motion.tcp_speed_m_s * scale * 1.05
    home = planner.plan_joints({arm: robot.arm(arm).home_joints_rad}, {**start, arm: q_full[-1]}, gripper)
    home_slow = planner.plan_joints({arm: robot.arm(arm).home_joints_rad}, {**start, arm: q_full[-1]}, gripper, 0.5)
    assert home_slow.waypoints == pytest.approx(home.waypoints * 2, abs=4)
