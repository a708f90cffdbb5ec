"""The trajectory guard: a whole joint trajectory checked, tick by tick, before anything of it reaches a robot's SDK.

The simulators behind libfranka's protocol do not check limits (shared/HARDWARE.md: a motion declared finished at
0.47 rad/s was accepted), and a real arm only refuses when it is already moving, so the driver checks first. The
checks, in order (the first failure is the reason):

1. a jump: the first point must be within ``max_start_jump_rad`` of the measured joints (a stale trajectory, or one
   planned from another state);
2. what :class:`~robodojo.control.trajectory_player.TrajectoryPlayer` checks for the simulator, reused as it is:
   joint names, sizes, finite numbers, increasing times, position limits at every point and velocity limits at every
   control tick, starting from the measured joints;
3. acceleration limits at every control tick, from the measured joint velocity before the first tick to a hold after
   the last one (the arm stops at the end: that deceleration counts too);
4. the workspace: the TCP (forward kinematics on the robot's own model, as the motion server computes it) above the
   table plus a margin and inside a configured box, at every control tick and every point.

The ticks are those the simulator's controller would play: linear interpolation at the robot's control period. The
SDK may smooth between them (franky plans with its own jerk limits), which keeps within the checked polyline's
velocity and acceleration limits but not exactly on it; the workspace is checked on the polyline and a margin.
Only the TCP is checked against the workspace, not every link: elbow and wrist clearance is the planner's job.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

import numpy as np
from numpy.typing import NDArray

from robodojo.control.trajectory_player import JointLimit, TrajectoryCommand, TrajectoryPlayer, tick_samples
from robodojo.errors import InvalidCommandError
from robodojo.hardware.settings import AXES, ArmHardwareSettings
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.urdf import load_urdf
from robodojo.text import short_number

_LIMIT_EPS = 1e-9  # a value this close to its limit is at the limit, not beyond it (float round-off)
# The planner reaches a target within its IK tolerance (0.2 mm, config/motion.yaml): a grasp planned onto the table
# margin itself lands up to this far under it, and is not refused for that.
_IK_TOLERANCE_M = 2e-4


@dataclass(frozen=True)
class Refusal:
    """Why a trajectory was refused; nothing of it was sent. ``check`` is one of :data:`CHECKS`.

    ``joint``, ``point_index``, ``value`` and ``limit`` are set where the check has them (the TCP checks name an axis
    in ``joint``'s place as ``tcp_x``/``tcp_y``/``tcp_z``); ``message`` says it all in one line.
    """

    check: str
    message: str
    joint: str | None = None
    point_index: int | None = None
    value: float | None = None
    limit: float | None = None


#: The checks a :class:`Refusal` can name: "state" is a bad measured state, "trajectory" the player's checks.
CHECKS = ("empty", "state", "jump", "trajectory", "acceleration", "table", "workspace")


class TrajectoryRefusedError(InvalidCommandError):
    """A trajectory the guard refused before anything reached the robot; ``refusal`` carries the facts."""

    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal
        super().__init__(refusal.message)


@dataclass(frozen=True, eq=False)
class CheckedTrajectory:
    """A trajectory the guard accepted: the only kind an arm adapter plays. Joints in the robot's order; the arrays
    are read-only, so what was checked is what plays.

    ``velocities_rad_s`` are per point (central differences of the checked polyline, zero at the last point): the
    pass-through velocities a waypoint motion needs. ``tcp_min_z_m`` is the lowest TCP height over the ticks.
    """

    joint_names: tuple[str, ...]
    times_from_start_s: NDArray[np.float64]
    positions_rad: NDArray[np.float64]
    velocities_rad_s: NDArray[np.float64]
    tick_dt_s: float
    tcp_min_z_m: float

    @property
    def duration_s(self) -> float:
        return float(self.times_from_start_s[-1])

    @property
    def final_rad(self) -> NDArray[np.float64]:
        return self.positions_rad[-1].copy()


class TrajectoryGuard:
    """Checks trajectories for one arm against its limits and workspace (:mod:`robodojo.hardware.settings`).

    Not thread-safe (its forward kinematics has one MjData): one guard per thread that checks.
    """

    def __init__(self, settings: ArmHardwareSettings, *, kinematics: ArmKinematics | None = None) -> None:
        self.settings = settings
        robot = settings.robot
        self.arm = settings.arm
        self.joint_names = settings.joint_names
        self.dt_s = robot.control_dt_s
        urdf = load_urdf(robot.scene_urdf)
        self.limits = {
            j: JointLimit(urdf.joint(j).lower, urdf.joint(j).upper, urdf.joint(j).velocity) for j in self.joint_names
        }
        self._player = TrajectoryPlayer(self.joint_names, self.limits, settings.guard.velocity_margin)
        self._accel = np.asarray(settings.guard.joint_accel_rad_s2, dtype=float)
        self._kinematics = kinematics or ArmKinematics(robot)
        self._box_low = np.asarray(settings.guard.box.low_m, dtype=float)
        self._box_high = np.asarray(settings.guard.box.high_m, dtype=float)
        self.table_z_m = robot.table.top_z_m + settings.guard.table_margin_m

    def check(
        self, cmd: TrajectoryCommand, current_q: Sequence[float], current_dq: Sequence[float] | None = None
    ) -> CheckedTrajectory:
        """Accept ``cmd`` from the measured joints ``current_q`` [rad] (moving at ``current_dq`` [rad/s], default at
        rest), or raise :class:`TrajectoryRefusedError` naming the check, joint, point, value and limit.

        The trajectory starts at the next tick whatever its stamp (``start_s`` is not used here).
        """
        n = len(self.joint_names)
        q0 = self._state(current_q, "position")
        dq0 = np.zeros(n) if current_dq is None else self._state(current_dq, "velocity")
        if not cmd.positions:
            raise TrajectoryRefusedError(Refusal("empty", "an empty trajectory is a stop, not a motion to check"))
        self._check_jump(cmd, q0)
        try:
            self._player.submit(replace(cmd, start_s=0.0), 0.0, q0.tolist(), self.dt_s)
        except InvalidCommandError as exc:
            raise TrajectoryRefusedError(Refusal("trajectory", str(exc))) from None
        finally:
            self._player.stop()  # the player only checks here; nothing plays
        order = [cmd.joint_names.index(j) for j in self.joint_names]
        times = np.asarray(cmd.times_from_start_s, dtype=float)
        points = np.asarray(cmd.positions, dtype=float)[:, order]
        taus, ticks = tick_samples(times, points, q0, 0.0, self.dt_s)
        self._check_acceleration(times, taus, ticks, q0, dq0)
        min_z = self._check_workspace(times, points, taus, ticks)
        velocities = _point_velocities(times, points, q0)
        for array in (times, points, velocities):
            array.setflags(write=False)  # what was checked is what plays
        return CheckedTrajectory(
            joint_names=self.joint_names,
            times_from_start_s=times,
            positions_rad=points,
            velocities_rad_s=velocities,
            tick_dt_s=self.dt_s,
            tcp_min_z_m=min_z,
        )

    def _state(self, values: Sequence[float], what: str) -> NDArray[np.float64]:
        array = np.asarray(values, dtype=float)
        if array.shape != (len(self.joint_names),) or not np.isfinite(array).all():
            raise TrajectoryRefusedError(
                Refusal("state", f"the measured joint {what} must be {len(self.joint_names)} finite numbers")
            )
        return array

    def _check_jump(self, cmd: TrajectoryCommand, q0: NDArray[np.float64]) -> None:
        """The first point's distance from the measured joints, where it can be read (else the player refuses)."""
        first = cmd.positions[0]
        if len(first) != len(cmd.joint_names) or set(cmd.joint_names) != set(self.joint_names):
            return
        limit = self.settings.guard.max_start_jump_rad
        for name, value in zip(cmd.joint_names, first, strict=True):
            if not isinstance(value, int | float) or not math.isfinite(value):
                return
            j = self.joint_names.index(name)
            gap = abs(float(value) - q0[j])
            if gap > limit + _LIMIT_EPS:
                raise TrajectoryRefusedError(
                    Refusal(
                        "jump",
                        f"trajectory point 0 for {name!r} is {short_number(value)}, {short_number(gap)} rad from the "
                        f"measured {short_number(q0[j])}; "
                        f"at most {limit:g} rad is accepted (plan from the current state)",
                        joint=name,
                        point_index=0,
                        value=float(value),
                        limit=limit,
                    )
                )

    def _check_acceleration(
        self,
        times: NDArray[np.float64],
        taus: NDArray[np.float64],
        ticks: NDArray[np.float64],
        q0: NDArray[np.float64],
        dq0: NDArray[np.float64],
    ) -> None:
        """Each tick's change of velocity over one period, from ``dq0`` before the first tick to a hold after the
        last."""
        dt = self.dt_s
        steps = np.diff(np.vstack((q0[np.newaxis, :], ticks, ticks[-1:])), axis=0) / dt  # velocity into each tick
        velocities = np.vstack((dq0[np.newaxis, :], steps))
        accel = np.diff(velocities, axis=0) / dt  # row k: at the start of tick k; the last row is the stop
        too_much = np.abs(accel) > self._accel + _LIMIT_EPS
        if too_much.any():
            row, j = (int(i) for i in np.unravel_index(np.argmax(too_much), too_much.shape))
            tau = float(taus[min(row, len(taus) - 1)])
            point = _point_at(times, tau)
            where = "stopping after the last point" if row == len(taus) else f"at {tau:.3f} s"
            name = self.joint_names[j]
            raise TrajectoryRefusedError(
                Refusal(
                    "acceleration",
                    f"trajectory accelerates {name!r} at {short_number(abs(accel[row, j]), 2)} rad/s^2 {where} "
                    f"(towards point {point}); its limit is {self._accel[j]:g} rad/s^2 (slow the trajectory down)",
                    joint=name,
                    point_index=point,
                    value=float(accel[row, j]),
                    limit=float(self._accel[j]),
                )
            )

    def _check_workspace(
        self,
        times: NDArray[np.float64],
        points: NDArray[np.float64],
        taus: NDArray[np.float64],
        ticks: NDArray[np.float64],
    ) -> float:
        """The TCP at every tick and every point: above the table plus margin, inside the box. The lowest TCP z [m]."""
        rows = np.vstack((points, ticks))
        where_point = [*range(len(points)), *(_point_at(times, float(t)) for t in taus)]
        where_s = [*times.tolist(), *taus.tolist()]
        tcp = np.array([self._kinematics.tcp_pose(self.arm, q)[0] for q in rows])
        below = tcp[:, 2] < self.table_z_m - _IK_TOLERANCE_M
        if below.any():
            i = int(np.argmax(below))
            raise TrajectoryRefusedError(
                Refusal(
                    "table",
                    f"trajectory puts the TCP at z {tcp[i, 2]:.4f} m at {where_s[i]:.3f} s (towards point "
                    f"{where_point[i]}); it must stay above {self.table_z_m:.4f} m (table top plus margin)",
                    joint="tcp_z",
                    point_index=where_point[i],
                    value=float(tcp[i, 2]),
                    limit=self.table_z_m,
                )
            )
        outside = (tcp < self._box_low - _LIMIT_EPS) | (tcp > self._box_high + _LIMIT_EPS)
        if outside.any():
            i, axis = (int(v) for v in np.unravel_index(np.argmax(outside), outside.shape))
            value = float(tcp[i, axis])
            limit = float(self._box_low[axis] if value < self._box_low[axis] else self._box_high[axis])
            raise TrajectoryRefusedError(
                Refusal(
                    "workspace",
                    f"trajectory puts the TCP at {AXES[axis]} {value:.4f} m at {where_s[i]:.3f} s (towards point "
                    f"{where_point[i]}); the workspace box allows [{self._box_low[axis]:g}, "
                    f"{self._box_high[axis]:g}] m",
                    joint=f"tcp_{AXES[axis]}",
                    point_index=where_point[i],
                    value=value,
                    limit=limit,
                )
            )
        return float(tcp[:, 2].min())


def _point_at(times: NDArray[np.float64], tau_s: float) -> int:
    """The index of the point a tick at ``tau_s`` [s] moves towards (the last one after the end)."""
    return min(int(np.searchsorted(times, tau_s - 1e-6)), len(times) - 1)


def _point_velocities(
    times: NDArray[np.float64], points: NDArray[np.float64], q0: NDArray[np.float64]
) -> NDArray[np.float64]:
    """Velocity at each point [rad/s]: the mean of the segments before and after it; zero at the last (a hold)."""
    with_start = np.vstack((q0[np.newaxis, :], points))
    segment = np.diff(with_start, axis=0) / np.diff(np.concatenate(([0.0], times)))[:, np.newaxis]
    velocities = np.zeros_like(points)
    velocities[:-1] = (segment[:-1] + segment[1:]) / 2.0
    return velocities
