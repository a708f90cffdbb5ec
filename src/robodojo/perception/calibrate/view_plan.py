"""Calibration motions: the TCP poses from which a wrist camera sees a board fixed on the table, around the first
view (as MoveIt Calibration and easy_handeye2 generate theirs), kept only where the arm can go and may go.

Every pose is checked before a motion is sent: the arm's inverse kinematics reaches it from the start, it lies in
the robot's motion bounds, within ``max_travel_m`` and ``max_turn_deg`` of where the TCP started, and the camera
stays between the configured distances from the board.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from robodojo.geometry import rotation_about_axis, rotation_angle_between, transform
from robodojo.perception.calibrate.settings import MotionSettings
from robodojo.robots.config import RobotConfig
from robodojo.robots.ik import ArmKinematics

IK_ITERATIONS = 100


@dataclass(frozen=True)
class PlannedView:
    T_world_tcp: NDArray[np.float64]
    T_world_cam: NDArray[np.float64]
    q_rad: NDArray[np.float64]  # the inverse kinematics' joint angles (what the planner will likely reach)


@dataclass(frozen=True)
class ViewPlan:
    views: tuple[PlannedView, ...]
    skipped: tuple[str, ...]  # per view not kept: why


def _look_at(position: NDArray, target: NDArray, x_hint: NDArray) -> NDArray[np.float64]:
    """Rotation of an optical frame at ``position`` looking at ``target``, its x axis as close as can be to x_hint."""
    z = target - position
    z = z / np.linalg.norm(z)
    x = x_hint - (x_hint @ z) * z
    x = x / np.linalg.norm(x)
    return np.column_stack([x, np.cross(z, x), z])


def plan_wrist_views(
    robot: RobotConfig,
    kinematics: ArmKinematics,
    arm: str,
    q_start: NDArray[np.float64],
    T_tcp_cam: NDArray[np.float64],
    board_center_m: NDArray[np.float64],
    settings: MotionSettings,
) -> ViewPlan:
    """TCP poses seeing ``board_center_m`` from around the camera's current view (``q_start``: the arm's joints now,
    ``T_tcp_cam``: the hand-eye transform believed so far, the design's or an earlier calibration's)."""
    pos, R = kinematics.tcp_pose(arm, q_start)
    T_start = transform(R, pos)
    T_cam0 = T_start @ T_tcp_cam
    back = T_cam0[:3, 3] - board_center_m
    distance0 = float(np.linalg.norm(back))
    back /= distance0
    distance0 = min(max(distance0, settings.min_distance_m), settings.max_distance_m)
    # The board centre may sit off the optical axis in the first view: each view puts it where the first had it.
    in_cam = T_cam0[:3, :3].T @ (board_center_m - T_cam0[:3, 3])
    aim = _rotation_between(in_cam / np.linalg.norm(in_cam), np.array([0.0, 0.0, 1.0]))
    horizontal = np.cross([0.0, 0.0, 1.0], back)
    if np.linalg.norm(horizontal) < 1e-6:  # looking straight down: any horizontal axis
        horizontal = T_cam0[:3, 0].copy()
    horizontal /= np.linalg.norm(horizontal)
    views, skipped = [], []
    q_seed = np.asarray(q_start, dtype=float)
    for i, view in enumerate(settings.views):
        direction = rotation_about_axis((0, 0, 1), math.radians(view.yaw_deg)) @ (
            rotation_about_axis(horizontal, math.radians(view.elevation_deg)) @ back
        )
        distance = min(max(view.distance_scale * distance0, settings.min_distance_m), settings.max_distance_m)
        position = board_center_m + distance * direction
        R_cam = _look_at(position, board_center_m, T_cam0[:3, 0]) @ rotation_about_axis(
            (0, 0, 1), math.radians(view.roll_deg)
        )
        T_cam = transform(R_cam @ aim, position)
        T_tcp = T_cam @ np.linalg.inv(T_tcp_cam)
        travel = float(np.linalg.norm(T_tcp[:3, 3] - T_start[:3, 3]))
        turn = math.degrees(rotation_angle_between(T_tcp[:3, :3], T_start[:3, :3]))
        if travel > settings.max_travel_m:
            skipped.append(f"view {i}: {travel:.2f} m from the start (max_travel_m {settings.max_travel_m})")
            continue
        if turn > settings.max_turn_deg:
            skipped.append(f"view {i}: turned {turn:.0f} deg from the start (max_turn_deg {settings.max_turn_deg:g})")
            continue
        q = _reach(robot, kinematics, arm, T_tcp, q_seed)
        if isinstance(q, str):
            skipped.append(f"view {i}: {q}")
            continue
        views.append(PlannedView(T_tcp, T_cam, q))
    return ViewPlan(tuple(views), tuple(skipped))


def look_at_view(
    robot: RobotConfig,
    kinematics: ArmKinematics,
    arm: str,
    q_start: NDArray[np.float64],
    T_tcp_cam: NDArray[np.float64],
    point_m: NDArray[np.float64],
    distance_m: float,
    elevations_deg: tuple[float, ...],
) -> PlannedView | str:
    """The TCP pose from which the wrist camera looks down at ``point_m`` from ``distance_m``, coming from the side
    it is on now at the first of ``elevations_deg`` (above the horizontal) the arm reaches; or why there is none."""
    pos, R = kinematics.tcp_pose(arm, q_start)
    T_cam0 = transform(R, pos) @ T_tcp_cam
    side = T_cam0[:3, 3] - point_m
    side[2] = 0.0
    if np.linalg.norm(side) < 1e-6:
        side = -T_cam0[:3, 1].copy()
        side[2] = 0.0
    side /= np.linalg.norm(side)
    reasons = []
    for elevation_deg in elevations_deg:
        elevation = math.radians(elevation_deg)
        direction = math.cos(elevation) * side + np.array([0.0, 0.0, math.sin(elevation)])
        position = point_m + distance_m * direction
        T_cam = transform(_look_at(position, point_m, T_cam0[:3, 0]), position)
        T_tcp = T_cam @ np.linalg.inv(T_tcp_cam)
        q = _reach(robot, kinematics, arm, T_tcp, q_start)
        if not isinstance(q, str):
            return PlannedView(T_tcp, T_cam, q)
        reasons.append(f"{elevation_deg:g} deg: {q}")
    return f"no pose looking at {np.round(point_m, 3).tolist()} ({'; '.join(reasons)})"


def _reach(
    robot: RobotConfig, kinematics: ArmKinematics, arm: str, T_tcp: NDArray[np.float64], q_seed: NDArray[np.float64]
) -> NDArray[np.float64] | str:
    """The joint angles putting the TCP at ``T_tcp``, or why the pose is not allowed (motion bounds) or reachable."""
    bounds = robot.motion.bounds_m.get(arm, {})
    outside = [a for k, a in enumerate("xyz") if a in bounds and not bounds[a][0] <= T_tcp[k, 3] <= bounds[a][1]]
    if outside:
        return f"outside the robot's motion bounds in {', '.join(outside)}"
    solution = kinematics.solve(arm, T_tcp[:3, 3], T_tcp[:3, :3], q_seed, max_iterations=IK_ITERATIONS)
    return solution.q if solution.converged else "out of the arm's reach"


def _rotation_between(a: NDArray, b: NDArray) -> NDArray[np.float64]:
    """The smallest rotation taking unit vector a to unit vector b."""
    axis = np.cross(a, b)
    s = float(np.linalg.norm(axis))
    if s < 1e-12:
        return np.eye(3)
    return rotation_about_axis(axis, math.atan2(s, float(a @ b)))
