"""Planners turn a validated target into a 25 Hz joint trajectory, or reject it with a reason.

:class:`Planner` is the interface callers use (the motion server, benchmarks); :class:`NativePlanner` is the default
everywhere. The MoveIt-backed planner (robodojo.motion.moveit_planner, moveit_py where ROS is installed) implements
the same two methods and ends in the same :class:`PlanFinisher`, so both are held to one set of final checks.

The native planner: straight-line Cartesian interpolation of each moving grasp point with orientation slerp (spacing
from config/motion.yaml), damped-least-squares IK warm-started along the path on the robot's MuJoCo model, one
trapezoidal time profile for all moving joints (robodojo.motion.timing), gripper opening before and closing after
the arm motion, and a final validation of every sample (joint limits, finite-difference velocity and acceleration,
grasp point above the table). Any failure rejects the whole plan; nothing is partially executed.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Protocol

import numpy as np
from numpy.typing import NDArray

from robodojo.geometry import Matrix, matrix_from_quat, quat_from_matrix, rotation_angle_between, wxyz_tuple, xyz_tuple
from robodojo.motion.plan import ArmTrajectory, Plan
from robodojo.motion.rejection import (
    BelowTable,
    JointGoalOutsideLimits,
    NoArmMoves,
    NoIkAlongLine,
    OutOfReach,
    PathBelowTable,
    Rejection,
    TrajectoryLimit,
    WristFlip,
)
from robodojo.motion.settings import MotionSettings, load_motion_settings
from robodojo.motion.targets import ArmTarget, MoveTarget
from robodojo.motion.timing import PathRateLimits, parametrize
from robodojo.robots.config import RobotConfig
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.urdf import load_urdf

LIMIT_SLACK = 1e-6  # relative tolerance of the final limit checks (floating-point noise only)
# How far past a joint limit a measured start may sit and still be planned from (from the limit itself): MuJoCo's
# joint limits are soft, and an arm driven against one settles a fraction of a milliradian beyond it. Without this,
# every plan from there, home included, broke the position check on its first point and the arm was stuck.
START_PAST_LIMIT_RAD = 0.002
FINAL_IK_ITERATIONS = 200
PATH_IK_ITERATIONS = 30


class Planner(Protocol):
    """What the motion server needs from a planner."""

    def plan(self, target: MoveTarget, joints: Mapping[str, Sequence[float]], gripper: Mapping[str, float]) -> Plan:
        """Plan a Cartesian move from the current joint angles and gripper commands of every arm, at the target's
        speed scale."""
        ...

    def plan_joints(
        self,
        goal: Mapping[str, Sequence[float]],
        joints: Mapping[str, Sequence[float]],
        gripper: Mapping[str, float],
        speed_scale: float = 1.0,
    ) -> Plan:
        """Plan a joint-space move (home) from the current joint angles, at ``speed_scale`` (in (0, 1]) times the
        configured speeds."""
        ...


def slerp(q0: NDArray[np.float64], q1: NDArray[np.float64], t: float) -> NDArray[np.float64]:
    """Spherical interpolation of unit quaternions (w, x, y, z) along the shorter arc."""
    dot = float(np.dot(q0, q1))
    if dot < 0.0:
        q1, dot = -q1, -dot
    if dot > 0.9995:
        q = q0 + t * (q1 - q0)
        return q / np.linalg.norm(q)
    theta = math.acos(dot)
    return (math.sin((1 - t) * theta) * q0 + math.sin(t * theta) * q1) / math.sin(theta)


class NativePlanner:
    """Straight-line Cartesian planner with DLS IK and a trapezoidal profile (see module docstring)."""

    def __init__(self, robot: RobotConfig, dt_s: float, settings: MotionSettings | None = None) -> None:
        self.robot = robot
        self.dt_s = dt_s
        self.settings = settings or load_motion_settings()
        self.kinematics = ArmKinematics(robot)
        self.finisher = PlanFinisher(robot, dt_s, self.settings, self.kinematics)

    # -- Cartesian moves ---------------------------------------------------------------------------------------
    def plan(self, target: MoveTarget, joints: Mapping[str, Sequence[float]], gripper: Mapping[str, float]) -> Plan:
        start = self.finisher.start_within_limits(joints)
        moving = [a for a in self.robot.arm_names if a in target.arms]
        if not moving:
            return Plan.failure(NoArmMoves(), target)
        starts, goals, lengths, angles = {}, {}, {}, {}
        for arm in moving:
            t = target.arms[arm]
            p0, R0 = self.kinematics.tcp_pose(arm, np.asarray(start[arm], dtype=float))
            p1, R1 = np.array(t.pos_m), matrix_from_quat(t.quat_wxyz)
            low = self.finisher.target_below_table(arm, p1)
            if low:
                return Plan.failure(low, target)
            unreachable = self._reachable(arm, p1, R1, np.asarray(start[arm], dtype=float))
            if unreachable:
                return Plan.failure(unreachable, target)
            starts[arm], goals[arm] = (p0, quat_from_matrix(R0)), (p1, quat_from_matrix(R1))
            lengths[arm] = float(np.linalg.norm(p1 - p0))
            angles[arm] = rotation_angle_between(R0, R1)

        s = self.settings
        n = max(
            1,
            *(math.ceil(lengths[a] / s.max_spacing_m - 1e-9) for a in moving),
            *(math.ceil(math.degrees(angles[a]) / s.max_spacing_deg - 1e-9) for a in moving),
        )
        knots: dict[str, list[NDArray[np.float64]]] = {a: [np.asarray(start[a], dtype=float)] for a in moving}
        for i in range(1, n + 1):
            u = i / n
            for arm in moving:
                (p0, q0), (p1, q1) = starts[arm], goals[arm]
                pos, R = p0 + u * (p1 - p0), matrix_from_quat(slerp(q0, q1, u))
                iterations = FINAL_IK_ITERATIONS if i == n else PATH_IK_ITERATIONS
                sol = self.kinematics.solve(arm, pos, R, knots[arm][-1], max_iterations=iterations)
                # Intermediate points may deviate from the line by the path tolerance (the line grazes the
                # joint-limited workspace's edge); the last one must land on the target.
                pos_tol_m = 1e-3 * s.path_tolerance_mm if i < n else math.inf
                rot_tol = math.radians(s.path_tolerance_deg) if i < n else math.inf
                if not (sol.converged or (sol.pos_error_m <= pos_tol_m and sol.rot_error_rad <= rot_tol)):
                    lower, upper = self._joints_at_limits(arm, sol.q)
                    miss = NoIkAlongLine(
                        arm, i, n, xyz_tuple(pos), sol.pos_error_m * 1e3, math.degrees(sol.rot_error_rad), lower, upper
                    )
                    return Plan.failure(miss, target)
                jump = float(np.max(np.abs(sol.q - knots[arm][-1])))
                if jump > s.max_joint_step_rad:
                    return Plan.failure(WristFlip(arm, i, n, xyz_tuple(pos), jump), target)
                knots[arm].append(sol.q)

        rate, accel = math.inf, math.inf
        limits = self.robot.motion
        for arm in moving:
            if lengths[arm] > 0:
                rate = min(rate, limits.tcp_speed_m_s / lengths[arm])
                accel = min(accel, limits.tcp_accel_m_s2 / lengths[arm])
            if angles[arm] > 0:
                rate = min(rate, math.radians(limits.tcp_angular_speed_deg_s) / angles[arm])
        samples = parametrize(
            np.linspace(0.0, 1.0, n + 1),
            np.hstack([np.array(knots[a]) for a in moving]),
            np.concatenate([self.finisher.planned_velocity[a] for a in moving]),
            np.concatenate([self.finisher.accel[a] for a in moving]),
            self.dt_s,
            PathRateLimits(max_rate=rate, max_accel=accel),
            target.speed_scale,
        )
        motion, col = {}, 0
        for arm in moving:
            width = len(start[arm])
            motion[arm] = samples[:, col : col + width]
            col += width
        return self.finisher.finish(target, motion, gripper, {a: target.arms[a].gripper for a in moving})

    def _joints_at_limits(self, arm: str, q: NDArray[np.float64]) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The joints an IK solution was stopped by: (at their lower limit, at their upper limit)."""
        joints = self.robot.arm(arm).joints
        lower = tuple(joints[j] for j in np.flatnonzero(q <= self.finisher.lower[arm] + 1e-6))
        upper = tuple(joints[j] for j in np.flatnonzero(q >= self.finisher.upper[arm] - 1e-6))
        return lower, upper

    def _reachable(
        self, arm: str, pos: NDArray[np.float64], R: Matrix, q_now: NDArray[np.float64]
    ) -> OutOfReach | None:
        """None if the target pose has an IK solution (from here or from home), else the rejection."""
        best = None
        for seed in (q_now, np.array(self.robot.arm(arm).home_joints_rad)):
            sol = self.kinematics.solve(arm, pos, R, seed, max_iterations=FINAL_IK_ITERATIONS)
            if sol.converged:
                return None
            if best is None or sol.pos_error_m < best.pos_error_m:
                best = sol
        assert best is not None
        lower, upper = self._joints_at_limits(arm, best.q)
        return OutOfReach(arm, xyz_tuple(pos), best.pos_error_m * 1e3, math.degrees(best.rot_error_rad), lower, upper)

    # -- joint moves -------------------------------------------------------------------------------------------
    def plan_joints(
        self,
        goal: Mapping[str, Sequence[float]],
        joints: Mapping[str, Sequence[float]],
        gripper: Mapping[str, float],
        speed_scale: float = 1.0,
    ) -> Plan:
        start = self.finisher.start_within_limits(joints)
        moving = [a for a in self.robot.arm_names if a in goal]
        for arm in moving:
            outside = self.finisher.joint_goal_outside_limits(arm, goal[arm])
            if outside:
                return Plan.failure(outside)
        samples = parametrize(
            np.array([0.0, 1.0]),
            np.vstack(
                [
                    np.concatenate([np.asarray(start[a], dtype=float) for a in moving]),
                    np.concatenate([np.asarray(goal[a], dtype=float) for a in moving]),
                ]
            ),
            np.concatenate([self.finisher.planned_velocity[a] for a in moving]),
            np.concatenate([self.finisher.accel[a] for a in moving]),
            self.dt_s,
            speed_scale=speed_scale,
        )
        motion, col = {}, 0
        for arm in moving:
            motion[arm] = samples[:, col : col + len(start[arm])]
            col += len(start[arm])
        goal_target = self.finisher.joint_goal_target(goal, moving)
        return self.finisher.finish(goal_target, motion, gripper, dict.fromkeys(moving))


class PlanFinisher:
    """What every planner shares: the checks before planning, the gripper phases, and the final validation.

    ``finish`` turns each moving arm's joint samples (one per control period, sample 0 the current state) into a
    :class:`Plan`: the gripper opens before and closes after the arm motion, arms are padded to one length, and
    every sample is checked against the joint limits, the URDF velocity limits, the configured accelerations and
    the table (the last line of defence before anything moves).
    """

    def __init__(self, robot: RobotConfig, dt_s: float, settings: MotionSettings, kinematics: ArmKinematics) -> None:
        self.robot = robot
        self.dt_s = dt_s
        self.kinematics = kinematics
        urdf = load_urdf(robot.scene_urdf)
        limits = robot.motion
        self.velocity = {
            a.name: np.array([urdf.joint(j).velocity for j in a.joints]) for a in robot.arms
        }  # hard limits [rad/s], for validation
        self.planned_velocity = {a: v * limits.velocity_scale for a, v in self.velocity.items()}
        self.accel = {a.name: np.array(limits.joint_accel_rad_s2) for a in robot.arms}  # [rad/s^2]
        self.lower, self.upper = kinematics.lower, kinematics.upper
        self.min_tcp_z = robot.table.top_z_m + settings.table_clearance_m

    # -- checks before planning --------------------------------------------------------------------------------
    def start_within_limits(self, joints: Mapping[str, Sequence[float]]) -> dict[str, NDArray[np.float64]]:
        """The measured joints as a plan's start: a joint at most START_PAST_LIMIT_RAD past its limit starts from the
        limit (every planned point must lie within the limits); one further past is left as measured, and the final
        check refuses the plan."""
        out = {}
        for arm, values in joints.items():
            q = np.asarray(values, dtype=float)
            if arm in self.lower and q.shape == self.lower[arm].shape:
                low, high = self.lower[arm], self.upper[arm]
                if np.all(q >= low - START_PAST_LIMIT_RAD) and np.all(q <= high + START_PAST_LIMIT_RAD):
                    q = np.clip(q, low, high)
            out[arm] = q
        return out

    def target_below_table(self, arm: str, pos_m: NDArray[np.float64]) -> BelowTable | None:
        """The rejection if a grasp-point target lies below the table surface, else None."""
        if pos_m[2] < self.min_tcp_z:
            return BelowTable(arm, float(pos_m[2]), self.min_tcp_z)
        return None

    def joint_goal_outside_limits(self, arm: str, goal: Sequence[float]) -> JointGoalOutsideLimits | None:
        """The rejection if a joint goal has the wrong length or leaves the joint limits, else None."""
        q = np.asarray(goal, dtype=float)
        if q.shape != self.lower[arm].shape or np.any(q < self.lower[arm]) or np.any(q > self.upper[arm]):
            return JointGoalOutsideLimits(arm, tuple(float(v) for v in q.reshape(-1)))
        return None

    def joint_goal_target(self, goal: Mapping[str, Sequence[float]], moving: Sequence[str]) -> MoveTarget:
        """The grasp-point pose a joint goal puts each arm at, so reports measure arrival as for Cartesian moves."""
        poses = {a: self.kinematics.tcp_pose(a, np.asarray(goal[a], dtype=float)) for a in moving}
        return MoveTarget(
            arms={a: ArmTarget(a, xyz_tuple(p), wxyz_tuple(quat_from_matrix(R)), None) for a, (p, R) in poses.items()}
        )

    # -- gripper phases, padding, validation -------------------------------------------------------------------
    def finish(
        self,
        target: MoveTarget | None,
        motion: dict[str, NDArray[np.float64]],
        gripper_now: Mapping[str, float],
        gripper_goal: Mapping[str, float | None],
    ) -> Plan:
        stroke_steps = self.robot.motion.gripper_stroke_s / self.dt_s

        def ramp_steps(arm: str, opening: bool) -> int:
            goal = gripper_goal[arm]
            if goal is None:
                return 0
            delta = goal - gripper_now[arm]
            return math.ceil(abs(delta) * stroke_steps - 1e-9) if (delta > 0) == opening and delta != 0 else 0

        pre = max(ramp_steps(a, opening=True) for a in motion)  # open before moving
        post = max(ramp_steps(a, opening=False) for a in motion)  # close after arriving
        trajectories = {}
        for arm, q in motion.items():
            g0 = gripper_now[arm]
            g1 = g0 if gripper_goal[arm] is None else float(gripper_goal[arm])  # type: ignore[arg-type]
            length = 1 + pre + (len(q) - 1) + post
            positions = np.vstack([np.repeat(q[:1], 1 + pre, axis=0), q[1:], np.repeat(q[-1:], post, axis=0)])
            # Round-off can put a sample a few ulp past a limit the waypoints sit on; backends check limits exactly.
            positions[1:] = np.clip(positions[1:], self.lower[arm], self.upper[arm])
            grip = np.full(length, g0)
            if g1 > g0:
                k = ramp_steps(arm, opening=True)
                grip[1 : k + 1] = g0 + (g1 - g0) * np.arange(1, k + 1) / k
                grip[k + 1 :] = g1
            elif g1 < g0:
                k = ramp_steps(arm, opening=False)
                start = length - post
                grip[start : start + k] = g0 + (g1 - g0) * np.arange(1, k + 1) / k
                grip[start + k :] = g1
            trajectories[arm] = ArmTrajectory(
                arm=arm,
                joint_names=self.robot.arm(arm).joints,
                positions_rad=positions,
                gripper=np.clip(grip, 0.0, 1.0),
            )
        problem = self.violation(trajectories)
        if problem:
            return Plan.failure(problem, target)
        return Plan(ok=True, target=target, trajectories=trajectories, dt_s=self.dt_s)

    def violation(self, trajectories: Mapping[str, ArmTrajectory]) -> Rejection | None:
        """The first limit a trajectory breaks, or None (the last line of defence before anything moves)."""
        dt = self.dt_s
        for arm, traj in trajectories.items():
            q = traj.positions_rad
            if np.any(q < self.lower[arm] - 1e-9) or np.any(q > self.upper[arm] + 1e-9):
                return TrajectoryLimit(arm, "position")
            if len(q) > 1 and np.any(np.abs(np.diff(q, axis=0)) / dt > self.velocity[arm] * (1 + LIMIT_SLACK)):
                return TrajectoryLimit(arm, "velocity")
            if len(q) > 2 and np.any(np.abs(np.diff(q, 2, axis=0)) / dt**2 > self.accel[arm] * (1 + LIMIT_SLACK)):
                return TrajectoryLimit(arm, "acceleration")
            for k, qk in enumerate(q):
                z = self.kinematics.tcp_pose(arm, qk)[0][2]
                if z < self.min_tcp_z - 1e-4:
                    return PathBelowTable(arm, float(z), k * dt)
        return None
