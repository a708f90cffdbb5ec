"""Inverse kinematics of one arm's grasp point (TCP) on the robot's MuJoCo model, by damped least squares.

Benchmarked against mink (benchmarks/motion.py): for the warm-started, densely spaced waypoints of a Cartesian path
a few Gauss-Newton steps on MuJoCo's analytic Jacobians converge in well under a millisecond, where a QP per step
costs several. Joint limits are enforced by clipping each step; a solution is accepted only within tolerance.
"""

from __future__ import annotations

from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import NDArray

from robodojo.geometry import Matrix
from robodojo.robots.config import RobotConfig
from robodojo.robots.mujoco_model import kinematic_model

DAMPING = 1e-4  # Levenberg-Marquardt damping [m^2]; keeps steps bounded near singularities
MAX_STEP_RAD = 0.3  # largest joint change per iteration, so cold starts do not jump across branches
POS_TOLERANCE_M = 2e-4
ROT_TOLERANCE_RAD = 2e-3


@dataclass(frozen=True)
class IkSolution:
    """Joint angles for a TCP pose; ``converged`` only if both errors are within tolerance."""

    q: NDArray[np.float64]
    converged: bool
    pos_error_m: float
    rot_error_rad: float
    iterations: int


def rotation_error(R_target: Matrix, R: Matrix) -> NDArray[np.float64]:
    """World-frame rotation vector taking R to R_target (exact axis-angle, not the small-angle approximation)."""
    dR = R_target @ R.T
    angle = np.arccos(np.clip((np.trace(dR) - 1.0) / 2.0, -1.0, 1.0))
    axis = np.array([dR[2, 1] - dR[1, 2], dR[0, 2] - dR[2, 0], dR[1, 0] - dR[0, 1]])
    norm = np.linalg.norm(axis)
    if norm < 1e-9:
        if angle < 1e-6:
            return np.zeros(3)
        # A half turn: the axis is the eigenvector of dR with eigenvalue 1.
        w, v = np.linalg.eigh((dR + dR.T) / 2)
        return v[:, np.argmax(w)] * angle
    return axis / norm * angle


class ArmKinematics:
    """Forward and inverse kinematics of every arm of a robot, on a private MjData (not thread-safe)."""

    def __init__(self, robot: RobotConfig) -> None:
        self.robot = robot
        self.model = kinematic_model(robot.scene_urdf)
        self.data = mujoco.MjData(self.model)
        m = self.model
        self._qadr = {a.name: np.array([m.joint(j).qposadr[0] for j in a.joints]) for a in robot.arms}
        self._dofs = {a.name: np.array([m.joint(j).dofadr[0] for j in a.joints]) for a in robot.arms}
        self._tcp = {a.name: m.body(a.tcp_link).id for a in robot.arms}
        self.lower = {a.name: np.array([m.joint(j).range[0] for j in a.joints]) for a in robot.arms}
        self.upper = {a.name: np.array([m.joint(j).range[1] for j in a.joints]) for a in robot.arms}
        self._jacp = np.zeros((3, m.nv))
        self._jacr = np.zeros((3, m.nv))

    def _set(self, arm: str, q: NDArray[np.float64]) -> None:
        self.data.qpos[self._qadr[arm]] = q
        mujoco.mj_kinematics(self.model, self.data)

    def tcp_pose(self, arm: str, q: NDArray[np.float64]) -> tuple[NDArray[np.float64], Matrix]:
        """TCP position [m] and rotation in the world frame at joint angles ``q``."""
        self._set(arm, np.asarray(q, dtype=float))
        body = self._tcp[arm]
        return self.data.xpos[body].copy(), self.data.xmat[body].reshape(3, 3).copy()

    def _tcp_jacobian(self, arm: str) -> NDArray[np.float64]:
        """The TCP's 6 x n world-frame Jacobian (linear [m/rad]; angular [rad/rad]) at the joint angles last set."""
        mujoco.mj_comPos(self.model, self.data)
        mujoco.mj_jacBody(self.model, self.data, self._jacp, self._jacr, self._tcp[arm])
        dofs = self._dofs[arm]
        return np.vstack([self._jacp[:, dofs], self._jacr[:, dofs]])

    def jacobian(self, arm: str, q: NDArray[np.float64]) -> NDArray[np.float64]:
        """d(TCP position; world rotation vector) / dq at ``q`` (6 x n): the matrix solve() steps with."""
        self._set(arm, np.asarray(q, dtype=float))
        return self._tcp_jacobian(arm)

    def solve(
        self,
        arm: str,
        target_pos: NDArray[np.float64],
        target_R: Matrix,
        q_seed: NDArray[np.float64],
        *,
        max_iterations: int = 50,
    ) -> IkSolution:
        """Joint angles putting ``arm``'s TCP at (target_pos, target_R), starting from ``q_seed``."""
        d = self.data
        body = self._tcp[arm]
        lower, upper = self.lower[arm], self.upper[arm]
        q = np.clip(np.asarray(q_seed, dtype=float), lower, upper)
        err = np.zeros(6)
        for iteration in range(max_iterations + 1):
            self._set(arm, q)
            err[:3] = target_pos - d.xpos[body]
            err[3:] = rotation_error(target_R, d.xmat[body].reshape(3, 3))
            pos_err, rot_err = float(np.linalg.norm(err[:3])), float(np.linalg.norm(err[3:]))
            if (pos_err < POS_TOLERANCE_M and rot_err < ROT_TOLERANCE_RAD) or iteration == max_iterations:
                break
            J = self._tcp_jacobian(arm)
            dq = J.T @ np.linalg.solve(J @ J.T + DAMPING * np.eye(6), err)
            biggest = np.max(np.abs(dq))
            if biggest > MAX_STEP_RAD:
                dq *= MAX_STEP_RAD / biggest
            q = np.clip(q + dq, lower, upper)
        return IkSolution(
            q=q,
            converged=pos_err < POS_TOLERANCE_M and rot_err < ROT_TOLERANCE_RAD,
            pos_error_m=pos_err,
            rot_error_rad=rot_err,
            iterations=iteration,
        )
