"""Speed and accuracy of the native motion planner: planning latency, success rate, arrival error in the world.

What is measured, in one process with ``time.perf_counter`` (``--robot``, seeded by ``--seed``):

1. Reachable targets, by construction. Per arm, joint configurations are drawn uniformly from home +/- NOISE_RAD
   (per joint, intersected with the joint limits less LIMIT_MARGIN_RAD) and passed through the forward kinematics
   of ``ArmKinematics.tcp_pose``. A configuration is kept when its grasp point (TCP) is at least 3 cm above the
   table, inside the arm's move_eef bounds, and its approach axis (TCP z) is within 60 deg of straight down. Every
   kept pose has an IK solution (the configuration it came from). A move pairs one such configuration (the start
   state; the other arm starts at another) with the pose of another (the target, gripper None).
2. Planning latency of ``NativePlanner.plan`` called directly (no server, no world) for single-arm moves binned by
   straight-line TCP distance (5-10, 10-20, 20-30, 30-40 cm), a dedicated 30 cm set (28-32 cm) for the headline,
   and simultaneous two-arm moves (each arm 5-40 cm, and each arm 28-32 cm): median and p95 per plan, plans per
   second (1 / mean), success rate and a histogram of failure reasons (first words of each reason). Targets:
   median <= 10 ms for 30 cm single-arm moves; success >= 98% on these reachable targets. After the timing, up to
   MAX_DIAGNOSES straight-line IK failures are diagnosed (see :class:`FailureDiagnosis`: is the failing point outside
   the joint-limited workspace, and which joints sit at a limit there), and single-arm failure rates are split by
   whether the start state is within NEAR_LIMIT_RAD of a joint limit.
3. Baseline, on the first ``--baseline-plans`` moves of the same 30 cm set (same start states and targets): a naive
   mink + toppra chain. A mink Configuration on the same MuJoCo model (``kinematic_model(robot.scene_urdf)``, all
   16 dofs), a FrameTask on the arm's TCP body plus a small PostureTask (holding the other dofs still) and
   mink's ConfigurationLimit; the straight line is interpolated with the native planner's spacing rule (2 cm and
   5 deg, so both solve IK at the same number of points) with slerp, and at each point ``mink.solve_ik`` (daqp,
   dt 1 s) is iterated warm-started until the native planner's IK tolerance (0.2 mm, 2 mrad) or at most
   MINK_MAX_ITERATIONS times. The arm's joint waypoints are then time-parametrized by toppra (SplineInterpolator
   over the waypoints, JointVelocityConstraint = URDF velocity x velocity_scale, JointAccelerationConstraint =
   motion.joint_accel_rad_s2, TOPPRA with ParametrizeConstAccel) and sampled at the control period. The whole chain
   is timed per plan; printed: median, p95, its IK accuracy and trajectory duration, and the ratio baseline median /
   native median on the same moves. A second row runs the same chain with a fixed MINK_MAX_ITERATIONS iterations
   per point (no early exit), as the most naive form of it.
4. Arrival in the embedded world: ``EmbeddedWorld`` reset to ``--task`` (seed 0, 1, ... whenever fewer than
   RESET_BELOW_STEPS env steps are left), ``MotionServer(world).move_to(arm, xyz, quat)`` for ``--moves`` moves,
   alternating arms. Each target is drawn as in 1 but at least 8 cm above the table (the task's objects are at most
   5 cm tall, so the straight line from a start above 8 cm stays clear of them) and 5-30 cm from the arm's current
   TCP. Recorded from the server's report: accepted, position and rotation error of the measured TCP against the
   target right after the last trajectory point. Printed: acceptance rate, median / p95 errors, the fraction within
   5 mm and 2 deg (target >= 95% of all moves, rejected ones counting as misses) and within the "reached"
   tolerance of config/motion.yaml, and how many moves displaced an object by more than 5 mm.

Run: ``make bench`` (every benchmark) or
``.venv/bin/python benchmarks/motion.py [--seed 0] [--quick] [--json out.json]``. On a 2-core CPU the default
(1000 plans per bin, 300 baseline plans, 300 world moves) takes about a minute, ``--quick`` about 17 s.
"""

from __future__ import annotations

import argparse
import math
import platform
import re
import sys
import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import mink
import mujoco
import numpy as np
import toppra
import toppra.algorithm
import toppra.constraint
from _common import cpu_model, mark, nproc, table, version, write_figures
from numpy.typing import NDArray

from robodojo.geometry import matrix_from_quat, quat_from_matrix, rotation_angle_between
from robodojo.motion.planner import FINAL_IK_ITERATIONS, PATH_IK_ITERATIONS, NativePlanner, slerp
from robodojo.motion.server import MotionServer
from robodojo.motion.settings import MotionSettings, load_motion_settings
from robodojo.motion.targets import ArmTarget, MoveTarget
from robodojo.robots.config import RobotConfig, load_robot_config
from robodojo.robots.ik import POS_TOLERANCE_M, ROT_TOLERANCE_RAD, ArmKinematics
from robodojo.robots.mujoco_model import kinematic_model
from robodojo.robots.urdf import load_urdf
from robodojo.sim.world import EmbeddedWorld

# -- target sampling ---------------------------------------------------------------------------------------------
NOISE_RAD = (0.8, 0.7, 0.7, 0.8, 0.8, 1.0)  # half-width of the uniform joint noise about home, per joint
LIMIT_MARGIN_RAD = 0.02
PLAN_CLEARANCE_M = 0.03  # TCP above the table, planning targets
WORLD_CLEARANCE_M = 0.08  # TCP above the table, arrival targets (clear of the task's objects)
MAX_TILT_DEG = 60.0  # approach axis within this of straight down
POOL_SAMPLES = 20000  # joint configurations drawn per arm (about 70% are kept)

SINGLE_BINS = (("5-10 cm", 0.05, 0.10), ("10-20 cm", 0.10, 0.20), ("20-30 cm", 0.20, 0.30), ("30-40 cm", 0.30, 0.40))
HEADLINE_BIN = ("30 cm (28-32)", 0.28, 0.32)
TWO_ARM_BINS = (("two-arm 5-40 cm", 0.05, 0.40), ("two-arm 30 cm (28-32)", 0.28, 0.32))
WORLD_DISTANCE_M = (0.05, 0.30)
WARMUP_PLANS = 10
SMOKE_SIZES = (4, 4, 2)  # --smoke: plans per bin, baseline plans, moves in the world

# -- targets of the issue ----------------------------------------------------------------------------------------
LATENCY_TARGET_MS = 10.0
SUCCESS_TARGET = 0.98
ARRIVAL_TARGET = 0.95
ARRIVAL_POS_MM = 5.0
ARRIVAL_ROT_DEG = 2.0

# -- baseline and world ------------------------------------------------------------------------------------------
MINK_MAX_ITERATIONS = 5
MINK_POSTURE_COST = 1e-3
MINK_DAMPING = 1e-3
RESET_BELOW_STEPS = 100  # reset the world when fewer env steps are left (a long move takes about 50)
OBJECT_MOVED_MM = 5.0
REASON_WORDS = 8
DIAGNOSIS_SEEDS = 6
DIAGNOSIS_IK_ITERATIONS = 100
MAX_DIAGNOSES = 5000  # enough to diagnose every failure of a default run
LIMIT_EPS_RAD = 1e-6
NEAR_LIMIT_RAD = 0.1  # a start this close to a joint limit counts as near it


# -- machine -------------------------------------------------------------------------------------------------


# -- reachable poses -----------------------------------------------------------------------------------------
@dataclass(frozen=True)
class PosePool:
    """Joint configurations of one arm and their TCP poses, all meeting the target rules."""

    arm: str
    q: NDArray[np.float64]  # (N, n_joints)
    pos: NDArray[np.float64]  # (N, 3)
    quat: NDArray[np.float64]  # (N, 4) w, x, y, z

    def __len__(self) -> int:
        return len(self.q)

    def subset(self, min_z: float) -> PosePool:
        keep = self.pos[:, 2] >= min_z
        return PosePool(self.arm, self.q[keep], self.pos[keep], self.quat[keep])


def sample_pool(
    robot: RobotConfig, kin: ArmKinematics, arm: str, rng: np.random.Generator, samples: int, min_z: float
) -> PosePool:
    home = np.array(robot.arm(arm).home_joints_rad)
    lo = np.maximum(kin.lower[arm] + LIMIT_MARGIN_RAD, home - np.array(NOISE_RAD))
    hi = np.minimum(kin.upper[arm] - LIMIT_MARGIN_RAD, home + np.array(NOISE_RAD))
    bounds = robot.motion.bounds_m[arm]
    box_lo = np.array([bounds[a][0] for a in "xyz"])
    box_hi = np.array([bounds[a][1] for a in "xyz"])
    cos_tilt = math.cos(math.radians(MAX_TILT_DEG))
    qs, ps, quats = [], [], []
    for q in rng.uniform(lo, hi, size=(samples, len(home))):
        p, R = kin.tcp_pose(arm, q)
        if p[2] < min_z or -R[2, 2] < cos_tilt or np.any(p < box_lo) or np.any(p > box_hi):
            continue
        qs.append(q)
        ps.append(p)
        quats.append(quat_from_matrix(R))
    return PosePool(arm, np.array(qs), np.array(ps), np.array(quats))


def pick_target(rng: np.random.Generator, pool: PosePool, origin: NDArray[np.float64], lo: float, hi: float) -> int:
    """Index of a random pool pose whose TCP is ``lo <= d < hi`` from ``origin``, or -1."""
    d = np.linalg.norm(pool.pos - origin, axis=1)
    candidates = np.flatnonzero((d >= lo) & (d < hi))
    return int(rng.choice(candidates)) if candidates.size else -1


@dataclass(frozen=True)
class Move:
    target: MoveTarget
    joints: dict[str, tuple[float, ...]]
    distance_m: dict[str, float]
    rotation_deg: dict[str, float]
    ik_points: int  # the native planner's number of IK points along the line


def ik_points(settings: MotionSettings, distances: Sequence[float], rotations_deg: Sequence[float]) -> int:
    return max(
        1,
        *(math.ceil(d / settings.max_spacing_m - 1e-9) for d in distances),
        *(math.ceil(r / settings.max_spacing_deg - 1e-9) for r in rotations_deg),
    )


def make_moves(
    rng: np.random.Generator,
    pools: dict[str, PosePool],
    settings: MotionSettings,
    moving: int,
    lo: float,
    hi: float,
    count: int,
) -> list[Move]:
    """``count`` moves of ``moving`` arms (1: a random arm; 2: both), each TCP travelling ``lo <= d < hi``."""
    arms = list(pools)
    moves = []
    while len(moves) < count:
        movers = [arms[int(rng.integers(len(arms)))]] if moving == 1 else arms
        joints, targets, dist, rot = {}, {}, {}, {}
        for arm in arms:
            pool = pools[arm]
            i = int(rng.integers(len(pool)))
            joints[arm] = tuple(float(v) for v in pool.q[i])
            if arm not in movers:
                continue
            j = pick_target(rng, pool, pool.pos[i], lo, hi)
            if j < 0:
                break
            targets[arm] = ArmTarget(
                arm=arm,
                pos_m=tuple(float(v) for v in pool.pos[j]),  # type: ignore[arg-type]
                quat_wxyz=tuple(float(v) for v in pool.quat[j]),  # type: ignore[arg-type]
                gripper=None,
            )
            dist[arm] = float(np.linalg.norm(pool.pos[j] - pool.pos[i]))
            rot[arm] = math.degrees(
                rotation_angle_between(matrix_from_quat(pool.quat[i]), matrix_from_quat(pool.quat[j]))
            )
        if len(targets) != len(movers):
            continue
        moves.append(
            Move(
                target=MoveTarget(arms=targets),
                joints=joints,
                distance_m=dist,
                rotation_deg=rot,
                ik_points=ik_points(settings, list(dist.values()), list(rot.values())),
            )
        )
    return moves


# -- native planner ------------------------------------------------------------------------------------------
def reason_key(reason: str) -> str:
    """A failure reason without its parenthesised details and numbers, trimmed to its first words."""
    text = re.sub(r"\([^)]*\)", "", reason)
    text = re.sub(r"-?\d+(\.\d+)?", "#", text)
    return " ".join(text.split()[:REASON_WORDS])


def stats_ms(samples_s: Sequence[float]) -> dict[str, float]:
    a = np.asarray(samples_s) * 1e3
    return {
        "median_ms": float(np.median(a)),
        "p95_ms": float(np.percentile(a, 95)),
        "mean_ms": float(np.mean(a)),
        "n": len(a),
    }


class FailureDiagnosis:
    """Why the straight line of a failed plan had no IK solution: re-solve the point it stopped at.

    The path's IK is replayed as the planner runs it (warm-started, PATH_IK_ITERATIONS per point) up to the point
    named in the reason; the joints sitting at a limit there are recorded. The point's pose is then solved from home
    and from the DIAGNOSIS_SEEDS sampled configurations whose TCP is nearest to it (DIAGNOSIS_IK_ITERATIONS each): if
    none converges, the point lies outside the joint-limited workspace even though both ends are inside it.
    """

    POINT = re.compile(r"for (\w+) at point (\d+) of (\d+)")

    def __init__(self, robot: RobotConfig, kin: ArmKinematics, pools: dict[str, PosePool]) -> None:
        self.robot, self.kin, self.pools = robot, kin, pools

    def __call__(self, move: Move, reason: str) -> dict[str, object] | None:
        match = self.POINT.search(reason)
        if match is None:
            return None
        arm, point, n = match.group(1), int(match.group(2)), int(match.group(3))
        kin, target = self.kin, move.target.arms[arm]
        p0, R0 = kin.tcp_pose(arm, np.array(move.joints[arm]))
        quat0, quat1 = quat_from_matrix(R0), np.array(target.quat_wxyz)
        q = np.array(move.joints[arm])
        pos, R = p0, R0
        for i in range(1, point + 1):
            u = i / n
            pos, R = p0 + u * (np.array(target.pos_m) - p0), matrix_from_quat(slerp(quat0, quat1, u))
            iterations = FINAL_IK_ITERATIONS if i == n else PATH_IK_ITERATIONS
            q = kin.solve(arm, pos, R, q, max_iterations=iterations).q
        names = self.robot.arm(arm).joints
        at_limit = [f"{names[j]} {'lower' if q[j] - kin.lower[arm][j] < LIMIT_EPS_RAD else 'upper'}"
                    for j in range(len(q))
                    if min(q[j] - kin.lower[arm][j], kin.upper[arm][j] - q[j]) < LIMIT_EPS_RAD]  # fmt: skip
        pool = self.pools[arm]
        nearest = np.argsort(np.linalg.norm(pool.pos - pos, axis=1))[:DIAGNOSIS_SEEDS]
        seeds = [np.array(self.robot.arm(arm).home_joints_rad), *pool.q[nearest]]
        reachable = any(kin.solve(arm, pos, R, s, max_iterations=DIAGNOSIS_IK_ITERATIONS).converged for s in seeds)
        return {
            "point_reachable": reachable,
            "joints_at_limit": at_limit,
            "start_near_limit": near_limit(kin, arm, np.array(move.joints[arm])),
        }


def near_limit(kin: ArmKinematics, arm: str, q: NDArray[np.float64]) -> bool:
    return bool(np.any(np.minimum(q - kin.lower[arm], kin.upper[arm] - q) < NEAR_LIMIT_RAD))


def bench_native(planner: NativePlanner, moves: Sequence[Move], gripper: dict[str, float]) -> dict:
    times, ok, reasons, examples, durations, failed = [], [], Counter(), {}, [], []
    for move in moves:
        t0 = time.perf_counter()
        plan = planner.plan(move.target, move.joints, gripper)
        times.append(time.perf_counter() - t0)
        ok.append(plan.ok)
        if plan.ok:
            durations.append(plan.duration_s)
        else:
            key = reason_key(plan.reason)
            reasons[key] += 1
            examples.setdefault(key, plan.reason)
            failed.append((move, plan.reason))
    n = len(moves)
    return {
        **stats_ms(times),
        "plans": n,
        "plans_per_s": n / sum(times),
        "success_rate": sum(ok) / n,
        "failures": dict(reasons),
        "failure_examples": examples,
        "failed": failed,
        "ik_points_median": float(np.median([m.ik_points for m in moves])),
        "distance_cm_median": float(np.median([d for m in moves for d in m.distance_m.values()]) * 100),
        "rotation_deg_median": float(np.median([r for m in moves for r in m.rotation_deg.values()])),
        "trajectory_s_median": float(np.median(durations)) if durations else math.nan,
        "times_s": times,
        "ok": ok,
    }


# -- baseline: mink + toppra ---------------------------------------------------------------------------------
class MinkToppraChain:
    """The naive chain of the module docstring, for single-arm moves."""

    def __init__(self, robot: RobotConfig, settings: MotionSettings, dt_s: float) -> None:
        self.robot, self.settings, self.dt_s = robot, settings, dt_s
        self.model = kinematic_model(robot.scene_urdf)
        self.configuration = mink.Configuration(self.model)
        self.frame_tasks = {
            a.name: mink.FrameTask(a.tcp_link, "body", position_cost=1.0, orientation_cost=1.0, lm_damping=MINK_DAMPING)
            for a in robot.arms
        }
        self.posture = mink.PostureTask(self.model, cost=MINK_POSTURE_COST)
        self.limits = [mink.ConfigurationLimit(self.model)]
        self.qadr = {a.name: np.array([self.model.joint(j).qposadr[0] for j in a.joints]) for a in robot.arms}
        urdf = load_urdf(robot.scene_urdf)
        self.vlim = {
            a.name: np.array([urdf.joint(j).velocity for j in a.joints]) * robot.motion.velocity_scale
            for a in robot.arms
        }
        self.alim = {a.name: np.array(robot.motion.joint_accel_rad_s2, dtype=float) for a in robot.arms}

    def plan(self, move: Move, early_exit: bool = True) -> dict:
        (arm, target), *_ = move.target.arms.items()
        cfg, task = self.configuration, self.frame_tasks[arm]
        q = self.model.qpos0.copy()
        for name, joints in move.joints.items():
            q[self.qadr[name]] = joints
        cfg.update(q)
        self.posture.set_target(q)
        start = cfg.get_transform_frame_to_world(self.robot.arm(arm).tcp_link, "body")
        p0, quat0 = start.translation(), start.rotation().wxyz
        p1, quat1 = np.array(target.pos_m), np.array(target.quat_wxyz)
        angle = math.degrees(rotation_angle_between(matrix_from_quat(quat0), matrix_from_quat(quat1)))
        n = ik_points(self.settings, [float(np.linalg.norm(p1 - p0))], [angle])
        waypoints = [cfg.q[self.qadr[arm]].copy()]
        iterations = 0
        error = np.zeros(6)
        worst = 0.0  # largest position error at any point of the line [m]
        for i in range(1, n + 1):
            u = i / n
            pose = mink.SE3.from_rotation_and_translation(mink.SO3(slerp(quat0, quat1, u)), p0 + u * (p1 - p0))
            task.set_target(pose)
            for _ in range(MINK_MAX_ITERATIONS):
                velocity = mink.solve_ik(cfg, [task, self.posture], 1.0, "daqp", limits=self.limits)
                cfg.integrate_inplace(velocity, 1.0)
                iterations += 1
                error = task.compute_error(cfg)
                converged = (
                    np.linalg.norm(error[:3]) < POS_TOLERANCE_M and np.linalg.norm(error[3:]) < ROT_TOLERANCE_RAD
                )
                if early_exit and converged:
                    break
            worst = max(worst, float(np.linalg.norm(error[:3])))
            waypoints.append(cfg.q[self.qadr[arm]].copy())
        path = toppra.SplineInterpolator(np.linspace(0.0, 1.0, n + 1), np.array(waypoints))
        vlim, alim = self.vlim[arm], self.alim[arm]
        constraints = [
            toppra.constraint.JointVelocityConstraint(np.column_stack([-vlim, vlim])),
            toppra.constraint.JointAccelerationConstraint(np.column_stack([-alim, alim])),
        ]
        instance = toppra.algorithm.TOPPRA(constraints, path, parametrizer="ParametrizeConstAccel")
        trajectory = instance.compute_trajectory(0.0, 0.0)
        if trajectory is None:
            return {"ok": False, "reason": "toppra found no parametrization", "iterations": iterations, "points": n}
        steps = max(1, math.ceil(trajectory.duration / self.dt_s - 1e-9))
        t = np.minimum(np.arange(steps + 1) * self.dt_s, trajectory.duration)
        samples = trajectory(t)
        pos_err, rot_err = float(np.linalg.norm(error[:3])), float(np.linalg.norm(error[3:]))
        return {
            "ok": pos_err < POS_TOLERANCE_M and rot_err < ROT_TOLERANCE_RAD,
            "reason": "" if pos_err < POS_TOLERANCE_M and rot_err < ROT_TOLERANCE_RAD else "final IK not converged",
            "samples": len(samples),
            "duration_s": steps * self.dt_s,
            "iterations": iterations,
            "points": n,
            "pos_error_mm": pos_err * 1e3,
            "rot_error_deg": math.degrees(rot_err),
            "worst_point_mm": worst * 1e3,
        }


def bench_baseline(chain: MinkToppraChain, moves: Sequence[Move], early_exit: bool) -> dict:
    for move in moves[:3]:  # warm-up (imports, caches)
        chain.plan(move, early_exit)
    times, results = [], []
    for move in moves:
        t0 = time.perf_counter()
        result = chain.plan(move, early_exit)
        times.append(time.perf_counter() - t0)
        results.append(result)
    n = len(moves)
    reasons = Counter(r["reason"] for r in results if not r["ok"])
    finished = [r for r in results if "pos_error_mm" in r]
    return {
        **stats_ms(times),
        "plans": n,
        "plans_per_s": n / sum(times),
        "success_rate": sum(r["ok"] for r in results) / n,
        "failures": dict(reasons),
        "iterations_per_point": sum(r["iterations"] for r in results) / sum(r["points"] for r in results),
        "final_pos_error_mm_median": float(np.median([r["pos_error_mm"] for r in finished])),
        "final_rot_error_deg_median": float(np.median([r["rot_error_deg"] for r in finished])),
        "worst_point_mm_p95": float(np.percentile([r["worst_point_mm"] for r in finished], 95)),
        "worst_point_over_1mm": sum(r["worst_point_mm"] > 1.0 for r in finished),
        "trajectory_s_median": float(np.median([r["duration_s"] for r in finished])),
        "times_s": times,
    }


def spread(values: NDArray[np.float64]) -> dict[str, float]:
    return {"median": float(np.median(values)), "p95": float(np.percentile(values, 95)), "max": float(values.max())}


# -- arrival in the embedded world ---------------------------------------------------------------------------
def object_positions(world: EmbeddedWorld) -> dict[str, NDArray[np.float64]]:
    assert world.model is not None and world.data is not None and world.layout is not None
    return {o.name: world.data.xpos[world.model.body(o.name).id].copy() for o in world.layout.objects}


def bench_arrival(robot_name: str, task: str, pools: dict[str, PosePool], moves: int, rng: np.random.Generator) -> dict:
    world = EmbeddedWorld(robot_name)
    episode = 0
    world.reset(task, seed=episode)
    server = MotionServer(world)
    arms = list(pools)
    records = []
    reasons: Counter[str] = Counter()
    examples: dict[str, str] = {}
    t_start = time.perf_counter()
    for k in range(moves):
        if world.steps_left < RESET_BELOW_STEPS:
            episode += 1
            world.reset(task, seed=episode)
            server.reset()
        arm = arms[k % len(arms)]
        now = np.array(world.observe(cameras=()).arm(arm).tcp_pos_m)
        j = pick_target(rng, pools[arm], now, *WORLD_DISTANCE_M)
        if j < 0:
            raise RuntimeError(f"no {arm} target {WORLD_DISTANCE_M} m from {now}")
        before = object_positions(world)
        report = server.move_to(arm, pools[arm].pos[j], pools[arm].quat[j])
        after = object_positions(world)
        moved = max(float(np.linalg.norm(after[o] - before[o])) for o in before) * 1e3 if before else 0.0
        r = report.arms[arm]
        if not report.accepted:
            key = reason_key(report.tool_text)
            reasons[key] += 1
            examples.setdefault(key, report.tool_text)
        records.append(
            {
                "arm": arm,
                "episode": episode,
                "distance_cm": float(np.linalg.norm(pools[arm].pos[j] - now)) * 100,
                "accepted": report.accepted,
                "stop_reason": report.stop_reason.value,
                "steps": report.steps_used,
                "pos_error_mm": r.pos_error_mm,
                "rot_error_deg": r.rot_error_deg,
                "object_moved_mm": moved,
            }
        )
    wall = time.perf_counter() - t_start
    world.close()
    accepted = [r for r in records if r["accepted"]]
    pos = np.array([r["pos_error_mm"] for r in accepted])
    rot = np.array([r["rot_error_deg"] for r in accepted])
    settings = load_motion_settings()

    def within(pos_mm: float, rot_deg: float) -> float:
        return sum(r["accepted"] and r["pos_error_mm"] <= pos_mm and r["rot_error_deg"] <= rot_deg for r in records) / (
            len(records)
        )

    return {
        "moves": len(records),
        "episodes": episode + 1,
        "wall_s": wall,
        "env_steps": sum(r["steps"] for r in records),
        "acceptance_rate": len(accepted) / len(records),
        "completed": sum(r["stop_reason"] == "completed" for r in records),
        "pos_error_mm": spread(pos),
        "rot_error_deg": spread(rot),
        "within_target": within(ARRIVAL_POS_MM, ARRIVAL_ROT_DEG),
        "within_reached": within(settings.reached_pos_tolerance_mm, settings.reached_rot_tolerance_deg),
        "object_disturbed_moves": sum(r["object_moved_mm"] > OBJECT_MOVED_MM for r in records),
        "distance_cm_median": float(np.median([r["distance_cm"] for r in records])),
        "failures": dict(reasons),
        "failure_examples": examples,
        "records": records,
    }


# -- report --------------------------------------------------------------------------------------------------


def print_failures(title: str, failures: dict[str, int], examples: dict[str, str]) -> None:
    if not failures:
        print(f"{title}: none")
        return
    print(f"{title}:")
    for key, count in sorted(failures.items(), key=lambda kv: -kv[1]):
        print(f"  {count:4d}  {key} ...")
        if key in examples:
            print(f"        e.g. {examples[key]}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robot", default="dual_arx_x5")
    parser.add_argument("--task", default="general_pickup", help="task of the arrival part (default general_pickup)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the target sampling (default 0)")
    parser.add_argument("--plans", type=int, help="native plans per bin (default 1000; 200 with --quick)")
    parser.add_argument("--baseline-plans", type=int, help="baseline plans (default 300; 50 with --quick)")
    parser.add_argument("--moves", type=int, help="moves in the world (default 300; 100 with --quick)")
    parser.add_argument("--quick", action="store_true", help="fewer samples: a run of about 20 s")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.plans, args.baseline_plans, args.moves = SMOKE_SIZES
    n_plans = args.plans or (200 if args.quick else 1000)
    n_baseline = min(args.baseline_plans or (50 if args.quick else 300), n_plans)
    n_moves = args.moves or (100 if args.quick else 300)

    t_all = time.perf_counter()
    robot = load_robot_config(args.robot)
    settings = load_motion_settings()
    dt = robot.control_dt_s  # the robot config is the one source of the 25 Hz step
    planner = NativePlanner(robot, dt_s=dt, settings=settings)
    kin = ArmKinematics(robot)
    rng = np.random.default_rng(args.seed)
    table_z = robot.table.top_z_m
    t0 = time.perf_counter()
    pools = {
        arm: sample_pool(robot, kin, arm, rng, POOL_SAMPLES, table_z + PLAN_CLEARANCE_M) for arm in robot.arm_names
    }
    pool_s = time.perf_counter() - t0
    m = robot.motion

    print(f"robodojo motion benchmark: robot {args.robot}, seed {args.seed}{' (quick)' if args.quick else ''}")
    print(f"  machine  : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}")
    print(f"  versions : mujoco {mujoco.__version__}, mink {version('mink')}, toppra {version('toppra')}")
    print(
        f"  planner  : NativePlanner, spacing {settings.max_spacing_m * 100:g} cm / {settings.max_spacing_deg:g} deg, "
        f"max joint step {settings.max_joint_step_rad:g} rad, velocity scale {m.velocity_scale:g}, "
        f"joint accel {list(m.joint_accel_rad_s2)} rad/s^2, TCP {m.tcp_speed_m_s:g} m/s, {m.tcp_accel_m_s2:g} m/s^2, "
        f"{m.tcp_angular_speed_deg_s:g} deg/s; dt {dt * 1e3:g} ms"
    )
    print(
        f"  targets  : home +/- {list(NOISE_RAD)} rad per joint, TCP >= {PLAN_CLEARANCE_M * 100:g} cm above the table "
        f"(z {table_z:g}), approach within {MAX_TILT_DEG:g} deg of down, inside move_eef bounds; kept "
        + ", ".join(f"{a} {len(p)}/{POOL_SAMPLES}" for a, p in pools.items())
        + f" ({pool_s:.1f} s)"
    )
    print(flush=True)

    # -- 1. native planning latency
    gripper = dict.fromkeys(robot.arm_names, 1.0)
    bins = [(name, 1, lo, hi) for name, lo, hi in (*SINGLE_BINS, HEADLINE_BIN)]
    bins += [(name, 2, lo, hi) for name, lo, hi in TWO_ARM_BINS]
    move_sets = {name: make_moves(rng, pools, settings, k, lo, hi, n_plans) for name, k, lo, hi in bins}
    headline_moves = move_sets[HEADLINE_BIN[0]]
    for move in headline_moves[:WARMUP_PLANS]:
        planner.plan(move.target, move.joints, gripper)
    native = {name: bench_native(planner, moves, gripper) for name, moves in move_sets.items()}
    diagnose = FailureDiagnosis(robot, kin, pools)  # after the timing: it is slow and would disturb it
    failed = [f for r in native.values() for f in r.pop("failed")]
    diagnoses = [d for d in (diagnose(m, reason) for m, reason in failed[:MAX_DIAGNOSES]) if d is not None]

    rows = []
    for name, r in native.items():
        rows.append(
            (
                name,
                str(r["plans"]),
                f"{r['success_rate'] * 100:.1f}",
                f"{r['median_ms']:.2f}",
                f"{r['p95_ms']:.2f}",
                f"{r['plans_per_s']:.0f}",
                f"{r['distance_cm_median']:.1f}",
                f"{r['rotation_deg_median']:.0f}",
                f"{r['ik_points_median']:.0f}",
                f"{r['trajectory_s_median']:.2f}",
            )
        )
    print("native planning latency (NativePlanner.plan, reachable targets)")
    table(
        ("moves", "plans", "ok %", "median ms", "p95 ms", "plans/s", "dist cm", "rot deg", "IK pts", "traj s"),
        rows,
        "<>>>>>>>>>",
    )
    print("(dist, rot, IK pts, traj s: medians of TCP travel, rotation, IK points along the line, trajectory duration)")
    head = native[HEADLINE_BIN[0]]
    all_plans = sum(r["plans"] for r in native.values())
    all_ok = sum(r["success_rate"] * r["plans"] for r in native.values())
    success = all_ok / all_plans
    latency_ok = head["median_ms"] <= LATENCY_TARGET_MS
    print(
        f"headline: 30 cm single-arm median {head['median_ms']:.2f} ms (target <= {LATENCY_TARGET_MS:g} ms): "
        f"{mark(latency_ok)}"
    )
    print(
        f"success on reachable targets: {success * 100:.2f}% of {all_plans} plans (target >= "
        f"{SUCCESS_TARGET * 100:g}%): {mark(success >= SUCCESS_TARGET)}"
    )
    failures: Counter[str] = Counter()
    examples: dict[str, str] = {}
    for r in native.values():
        failures.update(r["failures"])
        for key, text in r["failure_examples"].items():
            examples.setdefault(key, text)
    print_failures("planning failures by reason (all bins)", dict(failures), examples)
    if diagnoses:
        outside = sum(not d["point_reachable"] for d in diagnoses)
        limits = Counter(j for d in diagnoses for j in d["joints_at_limit"])
        print(
            f"diagnosis of {len(diagnoses)} straight-line IK failures (the first {MAX_DIAGNOSES} failures at most; "
            f"the point re-solved from home and the {DIAGNOSIS_SEEDS} nearest sampled configurations):"
        )
        print(f"  {outside:4d}  the point is outside the joint-limited workspace (no seed converges)")
        print(f"  {len(diagnoses) - outside:4d}  the point is reachable on another IK branch")
        if len(failed) <= MAX_DIAGNOSES:  # every failure was diagnosed
            feasible = all_plans - outside
            print(
                f"success on targets whose straight line stays inside the joint-limited workspace: "
                f"{all_ok / feasible * 100:.2f}% of {feasible} (target >= {SUCCESS_TARGET * 100:g}%): "
                f"{mark(all_ok / feasible >= SUCCESS_TARGET)}"
            )
        stalled = ", ".join(f"{j} {c}" for j, c in limits.most_common()) or "none"
        print(f"  joints at a limit where the path's IK stopped: {stalled}")
    near = [(near_limit(kin, arm, np.array(m.joints[arm])), ok)
            for name, k, _, _ in bins if k == 1
            for m, ok in zip(move_sets[name], native[name]["ok"], strict=True)
            for arm in m.target.arms]  # fmt: skip
    near_fail = [not ok for is_near, ok in near if is_near]
    far_fail = [not ok for is_near, ok in near if not is_near]
    near_limit_stats = {
        "near_limit_rad": NEAR_LIMIT_RAD,
        "near_moves": len(near_fail),
        "near_failure_rate": sum(near_fail) / max(len(near_fail), 1),
        "other_moves": len(far_fail),
        "other_failure_rate": sum(far_fail) / max(len(far_fail), 1),
    }
    print(
        f"single-arm failure rate by start state: within {NEAR_LIMIT_RAD:g} rad of a joint limit "
        f"{near_limit_stats['near_failure_rate'] * 100:.1f}% of {len(near_fail)}, otherwise "
        f"{near_limit_stats['other_failure_rate'] * 100:.1f}% of {len(far_fail)}"
    )
    print(flush=True)

    # -- 2. baseline
    chain = MinkToppraChain(robot, settings, dt)
    base_moves = headline_moves[:n_baseline]
    baseline = bench_baseline(chain, base_moves, early_exit=True)
    baseline_fixed = bench_baseline(chain, base_moves, early_exit=False)
    native_same = stats_ms(head["times_s"][:n_baseline])
    ratio = baseline["median_ms"] / native_same["median_ms"]
    ratio_fixed = baseline_fixed["median_ms"] / native_same["median_ms"]
    print(f"baseline: naive mink + toppra chain on the first {n_baseline} moves of the 30 cm set")
    rows = [
        (
            "native planner",
            f"{native_same['median_ms']:.2f}",
            f"{native_same['p95_ms']:.2f}",
            f"{1e3 / native_same['mean_ms']:.0f}",
            "",
            f"{head['success_rate'] * 100:.1f}",
            "",
            "",
            f"{head['trajectory_s_median']:.2f}",
            "1.0x",
        )
    ]
    for label, b, rt in (
        ("mink (<= 5 it/pt) + toppra", baseline, ratio),
        ("mink (5 it/pt) + toppra", baseline_fixed, ratio_fixed),
    ):
        rows.append(
            (
                label,
                f"{b['median_ms']:.2f}",
                f"{b['p95_ms']:.2f}",
                f"{b['plans_per_s']:.0f}",
                f"{b['iterations_per_point']:.2f}",
                f"{b['success_rate'] * 100:.1f}",
                f"{b['final_pos_error_mm_median']:.3f} / {b['final_rot_error_deg_median']:.3f}",
                f"{b['worst_point_mm_p95']:.2f} ({b['worst_point_over_1mm']} > 1 mm)",
                f"{b['trajectory_s_median']:.2f}",
                f"{rt:.1f}x",
            )
        )
    table(
        (
            "chain",
            "median ms",
            "p95 ms",
            "plans/s",
            "IK it/pt",
            "ok %",
            "final mm/deg",
            "worst pt mm",
            "traj s",
            "ratio",
        ),
        rows,
        "<>>>>>>>>>",
    )
    print(
        "(ok: final pose within the native IK tolerance; final: median final error; worst pt: p95 over plans of the "
        "largest position error at any point of the line, which the chain does not check; ratio: median / native)"
    )
    print(f"baseline median / native median: {ratio:.1f}x (fixed iterations: {ratio_fixed:.1f}x)")
    for label, b in (("early exit", baseline), ("fixed iterations", baseline_fixed)):
        if b["failures"]:
            print(f"baseline ({label}) failures: {b['failures']}")
    print(flush=True)

    # -- 3. arrival in the world
    world_pools = {a: p.subset(table_z + WORLD_CLEARANCE_M) for a, p in pools.items()}
    arrival = bench_arrival(args.robot, args.task, world_pools, n_moves, rng)
    a = arrival
    print(
        f"arrival in the embedded world: {a['moves']} moves (MotionServer.move_to, alternating arms, "
        f"{WORLD_DISTANCE_M[0] * 100:g}-{WORLD_DISTANCE_M[1] * 100:g} cm, median {a['distance_cm_median']:.1f} cm, "
        f"TCP >= {WORLD_CLEARANCE_M * 100:g} cm above the table) in {a['episodes']} {args.task} episodes, "
        f"{a['env_steps']} env steps, {a['wall_s']:.1f} s"
    )
    rows = [
        ("position error mm", f"{a['pos_error_mm']['median']:.2f}", f"{a['pos_error_mm']['p95']:.2f}",
         f"{a['pos_error_mm']['max']:.2f}"),
        ("rotation error deg", f"{a['rot_error_deg']['median']:.2f}", f"{a['rot_error_deg']['p95']:.2f}",
         f"{a['rot_error_deg']['max']:.2f}"),
    ]  # fmt: skip
    table(("accepted moves", "median", "p95", "max"), rows, "<>>>")
    arrival_ok = a["within_target"] >= ARRIVAL_TARGET
    print(f"accepted: {a['acceptance_rate'] * 100:.1f}%; completed (not truncated): {a['completed']}/{a['moves']}")
    print(
        f"within {ARRIVAL_POS_MM:g} mm and {ARRIVAL_ROT_DEG:g} deg: {a['within_target'] * 100:.1f}% "
        f"(target >= {ARRIVAL_TARGET * 100:g}%): {mark(arrival_ok)}"
    )
    print(
        f"within {settings.reached_pos_tolerance_mm:g} mm and {settings.reached_rot_tolerance_deg:g} deg "
        f"(reached): {a['within_reached'] * 100:.1f}%"
    )
    print(f"moves that displaced an object by > {OBJECT_MOVED_MM:g} mm: {a['object_disturbed_moves']}")
    print_failures("rejected moves by reason", a["failures"], a["failure_examples"])
    total = time.perf_counter() - t_all
    print(f"\nbenchmark wall time {total:.1f} s")

    if args.json is not None:
        for r in (*native.values(), baseline, baseline_fixed):
            r.pop("times_s")
            r.pop("ok", None)
        figures = {
            "machine": {"nproc": nproc(), "cpu_model": cpu_model(), "python": platform.python_version()},
            "versions": {"mujoco": mujoco.__version__, "mink": version("mink"), "toppra": version("toppra")},
            "robot": args.robot,
            "seed": args.seed,
            "quick": args.quick,
            "dt_s": dt,
            "planner_settings": {
                "max_spacing_m": settings.max_spacing_m,
                "max_spacing_deg": settings.max_spacing_deg,
                "max_joint_step_rad": settings.max_joint_step_rad,
                "velocity_scale": m.velocity_scale,
                "joint_accel_rad_s2": list(m.joint_accel_rad_s2),
            },
            "sampling": {
                "noise_rad": list(NOISE_RAD),
                "plan_clearance_m": PLAN_CLEARANCE_M,
                "world_clearance_m": WORLD_CLEARANCE_M,
                "max_tilt_deg": MAX_TILT_DEG,
                "pool_sizes": {arm: len(p) for arm, p in pools.items()},
            },
            "native": native,
            "success_rate_all_bins": success,
            "failure_diagnoses": diagnoses,
            "single_arm_failures_by_start": near_limit_stats,
            "baseline": {
                "plans": n_baseline,
                "native_same_moves": native_same,
                "early_exit": baseline,
                "fixed_iterations": baseline_fixed,
                "ratio_median": ratio,
                "ratio_median_fixed_iterations": ratio_fixed,
            },
            "arrival": {"task": args.task, **arrival},
            "targets": {
                "latency_30cm_median_ms_max": LATENCY_TARGET_MS,
                "latency_ok": latency_ok,
                "success_rate_min": SUCCESS_TARGET,
                "success_ok": success >= SUCCESS_TARGET,
                "arrival_within_min": ARRIVAL_TARGET,
                "arrival_pos_mm": ARRIVAL_POS_MM,
                "arrival_rot_deg": ARRIVAL_ROT_DEG,
                "arrival_ok": arrival_ok,
            },
            "benchmark_wall_s": total,
        }
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
