"""A joint trajectory player: what ros2_control's joint_trajectory_controller does, sampled at control ticks.

A trajectory is checked whole before it is accepted (names, finite values, joint limits, increasing times, joint
velocity between points and from the current command), so a bad one is refused before a single point plays. A new
trajectory replaces the running one; an empty one stops it (the arm holds). A trajectory stamped in the past, or
with stamp 0, starts at the next tick.

Timing: the sample for the tick that starts at ``t`` is the trajectory at ``t + dt``, the time the position servo
has to get there; so with points every ``dt`` from a start aligned to the ticks, point k plays at tick k exactly.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from robodojo.errors import InvalidCommandError

_TIME_EPS_S = 1e-6


@dataclass(frozen=True)
class JointLimit:
    lower: float
    upper: float
    velocity: float  # rad/s (m/s for prismatic joints)


@dataclass(frozen=True)
class TrajectoryCommand:
    """A joint trajectory as received: ``positions[k]`` at ``start_s + times_from_start_s[k]``."""

    joint_names: tuple[str, ...]
    times_from_start_s: tuple[float, ...]
    positions: tuple[tuple[float, ...], ...]
    start_s: float = 0.0  # 0: as soon as possible


class TrajectoryPlayer:
    """Plays trajectories for one group of joints (an arm or a gripper), one sample per control tick."""

    def __init__(self, joint_names: Sequence[str], limits: Mapping[str, JointLimit], velocity_margin: float) -> None:
        self.joint_names = tuple(joint_names)
        self.limits = [limits[j] for j in self.joint_names]
        self.velocity_margin = velocity_margin
        self._times: NDArray[np.float64] | None = None
        self._points: NDArray[np.float64] | None = None
        self._start_s = 0.0
        self._from: NDArray[np.float64] | None = None
        self.points = 0  # points of the latest accepted trajectory
        self.played = 0  # of those, how many have played (kept after it ends, until the next one)

    @property
    def active(self) -> bool:
        return self._times is not None

    def stop(self) -> None:
        """Drop the running trajectory; the caller holds the arm."""
        self._times = self._points = self._from = None

    def submit(self, cmd: TrajectoryCommand, now_s: float, commanded: Sequence[float], dt_s: float) -> int:
        """Accept ``cmd`` (replacing the running one) or raise InvalidCommandError; the number of points.

        ``now_s`` is the start of the next tick and ``commanded`` the joints' current command, from which the first
        point must be reachable within the velocity limits.
        """
        if not cmd.positions:
            self.stop()
            return 0
        order = self._column_order(cmd.joint_names)
        times = np.asarray(cmd.times_from_start_s, dtype=float)
        try:
            points = np.asarray(cmd.positions, dtype=float)
        except ValueError:
            raise InvalidCommandError("trajectory points must all have one position per joint") from None
        if points.ndim != 2 or points.shape != (len(times), len(self.joint_names)):
            raise InvalidCommandError(
                f"trajectory needs {len(self.joint_names)} positions in each of its {len(times)} points"
            )
        points = points[:, order]
        if not np.all(np.isfinite(points)) or not np.all(np.isfinite(times)):
            raise InvalidCommandError("trajectory positions and times must be finite numbers")
        if times[0] <= 0.0 or np.any(np.diff(times) <= 0.0):
            raise InvalidCommandError("trajectory times_from_start must be positive and strictly increasing")
        for j, (name, limit) in enumerate(zip(self.joint_names, self.limits, strict=True)):
            col = points[:, j]
            if col.min() < limit.lower - 1e-9 or col.max() > limit.upper + 1e-9:
                bad = col[np.argmax((col < limit.lower) | (col > limit.upper))]
                raise InvalidCommandError(
                    f"trajectory point for {name!r} is {bad:.4f}, outside [{limit.lower}, {limit.upper}]"
                )
        start = cmd.start_s if cmd.start_s >= now_s - _TIME_EPS_S else now_s
        start_q = np.asarray(commanded, dtype=float).copy()
        self._check_ticks(times, points, start_q, start - now_s, dt_s)
        self._times, self._points, self._start_s, self._from = times, points, start, start_q
        self.points, self.played = len(times), 0
        return len(times)

    def _check_ticks(
        self,
        times: NDArray[np.float64],
        points: NDArray[np.float64],
        start_q: NDArray[np.float64],
        delay_s: float,
        dt_s: float,
    ) -> None:
        """Play the trajectory on paper, tick by tick from ``delay_s`` before its start, and refuse it if any tick
        would move a joint faster than its limit allows: what the robot would be sent, not only the points."""
        previous = start_q
        k = 0
        while True:
            tau = (k + 1) * dt_s - delay_s
            k += 1
            if tau <= _TIME_EPS_S:
                continue
            q = _interpolate(times, points, start_q, tau)
            for j, (name, limit) in enumerate(zip(self.joint_names, self.limits, strict=True)):
                step = abs(q[j] - previous[j])
                if step > self.velocity_margin * limit.velocity * dt_s + 1e-12:
                    raise InvalidCommandError(
                        f"trajectory moves {name!r} {step:.4f} in one {dt_s * 1e3:.0f} ms control step at "
                        f"{tau:.3f} s; its velocity limit allows {self.velocity_margin * limit.velocity * dt_s:.4f}"
                    )
            previous = q
            if tau >= times[-1] - _TIME_EPS_S:
                return

    def sample(self, tick_s: float, dt_s: float) -> NDArray[np.float64] | None:
        """The position target for the tick starting at ``tick_s``; None before the start and when idle."""
        if self._times is None or self._points is None or self._from is None:
            return None
        tau = tick_s + dt_s - self._start_s  # time from start at the end of this tick
        if tau <= _TIME_EPS_S:
            return None  # not started yet
        self.played = int(np.searchsorted(self._times, tau + _TIME_EPS_S, side="right"))
        if tau >= self._times[-1] - _TIME_EPS_S:
            last = self._points[-1].copy()
            self.stop()
            return last
        return _interpolate(self._times, self._points, self._from, tau)

    def _column_order(self, names: Sequence[str]) -> list[int]:
        if sorted(names) != sorted(self.joint_names) or len(set(names)) != len(names):
            raise InvalidCommandError(
                f"trajectory joints {list(names)} do not match this controller's {list(self.joint_names)}"
            )
        index = {n: i for i, n in enumerate(names)}
        return [index[n] for n in self.joint_names]


def _interpolate(
    times: NDArray[np.float64], points: NDArray[np.float64], start_q: NDArray[np.float64], tau: float
) -> NDArray[np.float64]:
    """The trajectory at ``tau`` after its start: exact at points, linear between them (and from ``start_q``)."""
    if tau >= times[-1] - _TIME_EPS_S:
        return points[-1].copy()
    k = int(np.searchsorted(times, tau - _TIME_EPS_S))
    if abs(times[k] - tau) <= _TIME_EPS_S:
        return points[k].copy()
    t0, p0 = (0.0, start_q) if k == 0 else (times[k - 1], points[k - 1])
    return p0 + (tau - t0) / (times[k] - t0) * (points[k] - p0)
