"""Scripted grasp-and-lift: a test utility, not an agent.

It reads privileged object poses and drives the arm with joint targets computed by damped-least-squares IK on the
MuJoCo model, to show that grasping, lifting and the success checkers work. Agents act through the motion server.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import mujoco
import numpy as np

from robodojo.geometry import Matrix, rotation_angle_between
from robodojo.sim.world import EmbeddedWorld

IK_ITERATIONS = 200
IK_DAMPING = 1e-3
IK_TOLERANCE_M = 1e-4
IK_TOLERANCE_RAD = 1e-3
IK_MAX_STEP_RAD = 0.2
# Joint speed of scripted moves, as a fraction of each joint's velocity limit: slow enough to never trip the
# world's per-step limit and gentle on grasped objects.
SPEED_FRACTION = 0.25


@dataclass(frozen=True)
class IkResult:
    q: np.ndarray
    converged: bool
    pos_error_m: float
    rot_error_rad: float


def top_down_rotation(yaw_rad: float) -> Matrix:
    """TCP rotation with the approach axis (z) pointing down and the fingers opening along (cos yaw, sin yaw, 0)."""
    y = np.array([math.cos(yaw_rad), math.sin(yaw_rad), 0.0])
    z = np.array([0.0, 0.0, -1.0])
    return np.column_stack([np.cross(y, z), y, z])


def solve_ik(world: EmbeddedWorld, arm: str, target_pos: np.ndarray, target_R: Matrix, q_seed: np.ndarray) -> IkResult:
    """Joint angles putting ``arm``'s TCP at the target, by damped least squares on a scratch copy of the state."""
    m = world.model
    d = mujoco.MjData(m)
    d.qpos[:] = world.data.qpos
    qadr = np.array(world.arm_qpos_adr[arm])
    dofs = np.array([m.jnt_dofadr[m.joint(j).id] for j in world.robot.arm(arm).joints])
    lower = np.array([m.jnt_range[m.joint(j).id][0] for j in world.robot.arm(arm).joints])
    upper = np.array([m.jnt_range[m.joint(j).id][1] for j in world.robot.arm(arm).joints])
    site = world.tcp_site_ids[arm]
    q = np.clip(np.asarray(q_seed, dtype=float), lower, upper)
    jacp, jacr = np.zeros((3, m.nv)), np.zeros((3, m.nv))
    err = np.zeros(6)
    for _ in range(IK_ITERATIONS):
        d.qpos[qadr] = q
        mujoco.mj_kinematics(m, d)
        mujoco.mj_comPos(m, d)
        R = d.site_xmat[site].reshape(3, 3)
        err[:3] = target_pos - d.site_xpos[site]
        dR = target_R @ R.T
        err[3:] = 0.5 * np.array([dR[2, 1] - dR[1, 2], dR[0, 2] - dR[2, 0], dR[1, 0] - dR[0, 1]])
        if np.linalg.norm(err[:3]) < IK_TOLERANCE_M and rotation_angle_between(R, target_R) < IK_TOLERANCE_RAD:
            break
        mujoco.mj_jacSite(m, d, jacp, jacr, site)
        J = np.vstack([jacp[:, dofs], jacr[:, dofs]])
        dq = J.T @ np.linalg.solve(J @ J.T + IK_DAMPING * np.eye(6), err)
        dq *= min(1.0, IK_MAX_STEP_RAD / max(np.max(np.abs(dq)), 1e-12))
        q = np.clip(q + dq, lower, upper)
    d.qpos[qadr] = q
    mujoco.mj_kinematics(m, d)
    R = d.site_xmat[site].reshape(3, 3)
    pos_err = float(np.linalg.norm(target_pos - d.site_xpos[site]))
    rot_err = rotation_angle_between(R, target_R)
    return IkResult(q=q, converged=pos_err < 1e-3 and rot_err < 1e-2, pos_error_m=pos_err, rot_error_rad=rot_err)


def move_joints(
    world: EmbeddedWorld, arm: str, q_goal: np.ndarray, gripper: float | None = None, settle_steps: int = 5
) -> None:
    """Interpolate the arm's joint targets to ``q_goal`` at a safe speed, then hold for ``settle_steps``."""
    joints = world.robot.arm(arm).joints
    vmax = np.array([world.joint_limits[j][2] for j in joints]) * SPEED_FRACTION * world.settings.control_dt_s
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


def grasp_and_lift(world: EmbeddedWorld, object_name: str, lift_m: float = 0.12, arm: str | None = None) -> bool:
    """Grasp ``object_name`` from above with the nearer arm and lift it; returns the task's success afterwards."""
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
    R = top_down_rotation(yaw)
    grasp_z = pos[2] + min(0.0, obj.height_m / 2 - 0.02)  # pads centred on the object, never below the table
    grasp_z = max(grasp_z, world.robot.table.top_z_m + 0.012)
    q = world.data.ctrl[world.arm_ctrl_ids[arm]].copy()
    waypoints = [(pos[0], pos[1], grasp_z + 0.1), (pos[0], pos[1], grasp_z)]
    for i, p in enumerate(waypoints):
        ik = solve_ik(world, arm, np.array(p), R, q)
        if not ik.converged:
            return False
        q = ik.q
        move_joints(world, arm, q, gripper=1.0 if i == 0 else None)
    set_gripper(world, arm, 0.0)
    ik = solve_ik(world, arm, np.array([pos[0], pos[1], grasp_z + lift_m]), R, q)
    move_joints(world, arm, ik.q, settle_steps=10)
    return truth.success()
