"""Scripted grasp-and-lift: a test utility, not an agent.

It reads privileged object poses and drives the arm with joint targets computed by damped-least-squares IK on the
MuJoCo model, to show that grasping, lifting and the success checkers work. Agents act through the motion server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from robodojo.geometry import Matrix
from robodojo.robots.config import load_robot_config
from robodojo.robots.ik import ArmKinematics, IkSolution
from robodojo.sim.world import EmbeddedWorld

# Joint speed of scripted moves, as a fraction of each joint's velocity limit: slow enough to never trip the
# world's per-step limit and gentle on grasped objects.
SPEED_FRACTION = 0.25
PREGRASP_HEIGHT_M = 0.1


def top_down_rotation(yaw_rad: float) -> Matrix:
    """TCP rotation with the approach axis (z) pointing down and the fingers opening along (cos yaw, sin yaw, 0)."""
    y = np.array([math.cos(yaw_rad), math.sin(yaw_rad), 0.0])
    z = np.array([0.0, 0.0, -1.0])
    return np.column_stack([np.cross(y, z), y, z])


def solve_ik(
    world: EmbeddedWorld, arm: str, target_pos: np.ndarray, target_R: Matrix, q_seed: np.ndarray
) -> IkSolution:
    """IK on the robot's kinematic model, with several restarts from home if the warm start fails."""
    kin = _kinematics_for(world.robot.name)
    solution = kin.solve(arm, target_pos, target_R, q_seed, max_iterations=200)
    if not solution.converged:
        solution = kin.solve(
            arm, target_pos, target_R, np.array(world.robot.arm(arm).home_joints_rad), max_iterations=200
        )
    return solution


@cache
def _kinematics_for(robot_name: str) -> ArmKinematics:
    return ArmKinematics(load_robot_config(robot_name))


def move_joints(
    world: EmbeddedWorld, arm: str, q_goal: np.ndarray, gripper: float | None = None, settle_steps: int = 5
) -> None:
    """Interpolate the arm's joint targets to ``q_goal`` at a safe speed, then hold for ``settle_steps``."""
    joints = world.robot.arm(arm).joints
    vmax = np.array([world.joint_limits[j][2] for j in joints]) * SPEED_FRACTION * world.control_dt_s
    q_start = world.data.ctrl[world.arm_ctrl_ids[arm]].copy()
    n = max(1, int(np.ceil(np.max(np.abs(q_goal - q_start) / vmax))))
    grip = {arm: gripper} if gripper is not None else None
    for i in range(1, n + 1):
        world.step({arm: q_start + (q_goal - q_start) * i / n}, grip)
        grip = None
    for _ in range(settle_steps):
        world.step()


def set_gripper(world: EmbeddedWorld, arm: str, opening: float, steps: int = 12) -> None:
    world.step(gripper_targets={arm: opening})
    for _ in range(steps - 1):
        world.step()


@dataclass(frozen=True)
class TopDownGrasp:
    """Where to grasp an object from above: the arm, the grasp point and approach height, the TCP rotation."""

    arm: str
    grasp_pos_m: np.ndarray
    pregrasp_pos_m: np.ndarray
    rotation: Matrix


def plan_top_down_grasp(world: EmbeddedWorld, object_name: str, arm: str | None = None) -> TopDownGrasp:
    """A top-down grasp of ``object_name`` from its privileged pose, with the arm on its side of the table."""
    truth = world.privileged()
    pos = truth.object_pos(object_name)
    obj = truth.layout.object(object_name)
    if arm is None:
        arm = min(world.robot.arm_names, key=lambda a: abs(world.robot.arm(a).base_xyz_m[0] - pos[0]))
    # Fingers close across the object's faces: take the face pair whose yaw is nearest the wrist's current one.
    quat = truth.object_quat(object_name)
    obj_yaw = 2 * math.atan2(quat[3], quat[0])
    R_now = np.asarray(world.data.site_xmat[world.tcp_site_ids[arm]]).reshape(3, 3)
    wrist_yaw = math.atan2(R_now[1, 1], R_now[0, 1])
    yaw = min(
        (obj_yaw + k * math.pi / 2 for k in range(4)), key=lambda a: abs(math.remainder(a - wrist_yaw, 2 * math.pi))
    )
    grasp_z = pos[2] + min(0.0, obj.height_m / 2 - 0.02)  # pads centred on the object, never below the table
    grasp_z = max(grasp_z, world.robot.table.top_z_m + 0.012)
    grasp = np.array([pos[0], pos[1], grasp_z])
    return TopDownGrasp(
        arm=arm,
        grasp_pos_m=grasp,
        pregrasp_pos_m=grasp + np.array([0, 0, PREGRASP_HEIGHT_M]),
        rotation=top_down_rotation(yaw),
    )


def grasp_and_lift(world: EmbeddedWorld, object_name: str, lift_m: float = 0.12, arm: str | None = None) -> bool:
    """Grasp ``object_name`` from above with joint targets only and lift it; returns the task's success afterwards."""
    g = plan_top_down_grasp(world, object_name, arm)
    q = world.data.ctrl[world.arm_ctrl_ids[g.arm]].copy()
    for i, p in enumerate((g.pregrasp_pos_m, g.grasp_pos_m)):
        ik = solve_ik(world, g.arm, p, g.rotation, q)
        if not ik.converged:
            return False
        q = ik.q
        move_joints(world, g.arm, q, gripper=1.0 if i == 0 else None)
    set_gripper(world, g.arm, 0.0)
    ik = solve_ik(world, g.arm, g.grasp_pos_m + np.array([0, 0, lift_m]), g.rotation, q)
    move_joints(world, g.arm, ik.q, settle_steps=10)
    return world.privileged().success()
