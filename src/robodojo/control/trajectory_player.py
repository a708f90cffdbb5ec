"""A joint trajectory player: what ros2_control's joint_trajectory_controller does, sampled at control ticks.

A trajectory is checked whole before it is accepted (names, finite values, joint limits, increasing times, joint
velocity between points and from the current command), so a bad one is refused before a single point plays. A new
trajectory replaces the running one; an empty one stops it (the arm holds). A trajectory stamped in the past, or
with stamp 0, starts at the next tick.

Refusing is cheap: the checks run cheapest first (joint names, counts, shapes, finiteness, times, limits, the
ticks), each vectorised, and the sizes are capped before any array is built (config/control.yaml: a longest
duration, hence a most points, and a furthest start), so a flood of malformed trajectories costs little per message.
Messages quote what was sent briefly (:mod:`robodojo.text`): a 10,000-character name or a value of 1e300 is cut.

Timing: the sample for the tick that starts at ``t`` is the trajectory at ``t + dt``, the time the position servo
has to get there; so with points every ``dt`` from a start aligned to the ticks, point k plays at tick k exactly.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from robodojo.control.settings import TrajectoryLimits, load_trajectory_limits
from robodojo.errors import InvalidCommandError
from robodojo.text import quote, short_number

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

    def __init__(
        self,
        joint_names: Sequence[str],
        limits: Mapping[str, JointLimit],
        velocity_margin: float,
        *,
        trajectory_limits: TrajectoryLimits | None = None,
    ) -> None:
        """``velocity_margin`` scales the joints' velocity limits for the per-tick check; ``trajectory_limits`` bound
        the size of what is accepted (default: config/control.yaml)."""
        self.joint_names = tuple(joint_names)
        self.limits = [limits[j] for j in self.joint_names]
        self.velocity_margin = velocity_margin
        self.trajectory_limits = trajectory_limits or load_trajectory_limits()
        self._lower = np.array([limit.lower for limit in self.limits])
        self._upper = np.array([limit.upper for limit in self.limits])
        self._velocity = np.array([limit.velocity for limit in self.limits])
        self._index = {name: i for i, name in enumerate(self.joint_names)}
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

    def check_sizes(self, joint_names: Sequence[str], points: int, dt_s: float) -> None:
        """The cheapest checks, on what a message header says (no array built yet): the joint names match this
        controller's and ``points`` is within the cap at control period ``dt_s`` [s]; InvalidCommandError otherwise.

        A node may call it before converting a message's points; :meth:`submit` makes the same checks first.
        """
        self._column_order(joint_names)
        self._check_count(points, dt_s)

    def _check_count(self, points: int, dt_s: float) -> None:
        most = self.trajectory_limits.max_points(dt_s)
        if points > most:
            raise InvalidCommandError(
                f"trajectory has {points} points; at most {most} are accepted "
                f"({self.trajectory_limits.max_duration_s:g} s at {1.0 / dt_s:g} Hz)"
            )

    def submit(self, cmd: TrajectoryCommand, now_s: float, commanded: Sequence[float], dt_s: float) -> int:
        """Accept ``cmd`` (replacing the running one) or raise InvalidCommandError; the number of points.

        ``now_s`` is the start of the next tick and ``commanded`` the joints' current command, from which the first
        point must be reachable within the velocity limits.
        """
        if not cmd.positions:
            self.stop()
            return 0
        n_points, n_joints = len(cmd.positions), len(self.joint_names)
        order = self._column_order(cmd.joint_names)
        self._check_count(n_points, dt_s)
        if len(cmd.times_from_start_s) != n_points or any(len(p) != n_joints for p in cmd.positions):
            raise InvalidCommandError(f"trajectory needs {n_joints} positions in each of its {n_points} points")
        try:
            times = np.asarray(cmd.times_from_start_s, dtype=float)
            points = np.asarray(cmd.positions, dtype=float)[:, order]
        except (TypeError, ValueError):
            raise InvalidCommandError("trajectory positions and times must be numbers") from None
        self._check_values(times, points)
        start = cmd.start_s if cmd.start_s >= now_s - _TIME_EPS_S else now_s
        if start - now_s > self.trajectory_limits.max_start_delay_s:
            raise InvalidCommandError(
                f"trajectory starts {short_number(start - now_s, 3)} s from now; at most "
                f"{self.trajectory_limits.max_start_delay_s:g} s ahead is accepted (a stamp on another clock?)"
            )
        start_q = np.asarray(commanded, dtype=float).copy()
        self._check_ticks(times, points, start_q, start - now_s, dt_s)
        self._times, self._points, self._start_s, self._from = times, points, start, start_q
        self.points, self.played = n_points, 0
        return n_points

    def _check_values(self, times: NDArray[np.float64], points: NDArray[np.float64]) -> None:
        """Finite numbers, times positive, increasing and within the longest duration, points within the limits."""
        finite = np.isfinite(points)
        if not finite.all():
            k, j = (int(i) for i in np.unravel_index(np.argmin(finite), finite.shape))
            raise InvalidCommandError(
                f"trajectory positions and times must be finite numbers; point {k} has "
                f"{short_number(points[k, j])} for {self.joint_names[j]!r}"
            )
        if not np.isfinite(times).all():
            k = int(np.argmin(np.isfinite(times)))
            raise InvalidCommandError(
                f"trajectory positions and times must be finite numbers; point {k} has time {short_number(times[k])}"
            )
        steps = np.diff(times)
        if times[0] <= 0.0 or np.any(steps <= 0.0):
            k = 0 if times[0] <= 0.0 else int(np.argmax(steps <= 0.0)) + 1
            raise InvalidCommandError(
                "trajectory times_from_start must be positive and strictly increasing; "
                f"point {k} is at {short_number(times[k], 3)} s"
            )
        if times[-1] > self.trajectory_limits.max_duration_s + _TIME_EPS_S:
            raise InvalidCommandError(
                f"trajectory lasts {short_number(times[-1], 3)} s; at most "
                f"{self.trajectory_limits.max_duration_s:g} s is accepted"
            )
        outside = (points < self._lower - 1e-9) | (points > self._upper + 1e-9)
        if outside.any():
            j = int(np.argmax(outside.any(axis=0)))  # the first joint out of its limits ...
            col = points[:, j]
            k = int(np.argmax((col < self._lower[j]) | (col > self._upper[j])))  # ... at its first such point
            limit = self.limits[j]
            raise InvalidCommandError(
                f"trajectory point {k} for {self.joint_names[j]!r} is {short_number(col[k])}, "
                f"outside [{limit.lower}, {limit.upper}]"
            )

    def _check_ticks(
        self,
        times: NDArray[np.float64],
        points: NDArray[np.float64],
        start_q: NDArray[np.float64],
        delay_s: float,
        dt_s: float,
    ) -> None:
        """Play the trajectory on paper, tick by tick from ``delay_s`` before its start, and refuse it if any tick
        would move a joint faster than its limit allows: what the robot would be sent, not only the points.

        Tick k (k = 1, 2, ...) samples the trajectory at ``tau = k dt - delay``; ticks with ``tau`` not past the
        start are skipped, and the first tick at or past the last point is the last one checked. All ticks are
        sampled at once: the work is one array per tick, however far ahead the start is.
        """
        taus, q = tick_samples(times, points, start_q, delay_s, dt_s)
        previous = np.vstack((start_q[np.newaxis, :], q[:-1]))
        step = np.abs(q - previous)
        allowed = self.velocity_margin * self._velocity * dt_s
        too_fast = step > allowed + 1e-12
        if too_fast.any():
            tick, j = (int(i) for i in np.unravel_index(np.argmax(too_fast), too_fast.shape))  # tick first, then joint
            raise InvalidCommandError(
                f"trajectory moves {self.joint_names[j]!r} {short_number(step[tick, j])} in one {dt_s * 1e3:.0f} ms "
                f"control step at {taus[tick]:.3f} s; its velocity limit allows {short_number(allowed[j])}"
            )

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
        """Where each of this controller's joints is in ``names``; InvalidCommandError naming the mismatch."""
        why = ""
        if len(names) != len(self.joint_names):
            why = f"{len(names)} names for {len(self.joint_names)} joints"
        else:
            unknown = next((n for n in names if n not in self._index), None)
            if unknown is not None:
                why = f"unknown {quote(unknown)}"
            elif len(set(names)) != len(names):
                why = f"{quote(next(n for i, n in enumerate(names) if n in names[:i]))} twice"
        if why:
            raise InvalidCommandError(
                f"trajectory joints {quote(names)} do not match this controller's {list(self.joint_names)} ({why})"
            )
        index = {n: i for i, n in enumerate(names)}
        return [index[n] for n in self.joint_names]


def tick_samples(
    times: NDArray[np.float64],
    points: NDArray[np.float64],
    start_q: NDArray[np.float64],
    delay_s: float,
    dt_s: float,
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """What the controller would send, tick by tick: (taus [s] from the trajectory's start, one row of positions per
    tick), for a trajectory starting ``delay_s`` [s] after the next tick at control period ``dt_s`` [s].

    Tick k (k = 1, 2, ...) samples the trajectory at ``tau = k dt - delay``; ticks with ``tau`` not past the start are
    skipped, and the first tick at or past the last point is the last one. The same arithmetic as :meth:`sample`.
    """
    last = times[-1]
    # A few ticks of slack at both ends; the exact ones are chosen below with the same arithmetic as one tick.
    first_k = max(1, math.floor((delay_s + _TIME_EPS_S) / dt_s) - 1)
    last_k = math.ceil((last + delay_s) / dt_s) + 2
    ks = np.arange(first_k, last_k + 1)
    taus = ks * dt_s - delay_s
    taus = taus[taus > _TIME_EPS_S]
    end = int(np.argmax(taus >= last - _TIME_EPS_S))  # the last tick
    taus = taus[: end + 1]
    return taus, _interpolate_many(times, points, start_q, taus)


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


def _interpolate_many(
    times: NDArray[np.float64], points: NDArray[np.float64], start_q: NDArray[np.float64], taus: NDArray[np.float64]
) -> NDArray[np.float64]:
    """:func:`_interpolate` at each of ``taus`` (one row each), with the same arithmetic, so the same numbers."""
    ks = np.searchsorted(times, taus - _TIME_EPS_S)
    after_end = taus >= times[-1] - _TIME_EPS_S
    ks = np.minimum(ks, len(times) - 1)  # past the end: the last point (and after_end picks it below)
    on_point = np.abs(times[ks] - taus) <= _TIME_EPS_S
    with_start = np.vstack((start_q[np.newaxis, :], points))  # row k is the point before point k
    t_before = np.concatenate(([0.0], times))[ks]
    p_before = with_start[ks]
    fraction = (taus - t_before) / (times[ks] - t_before)
    between = p_before + fraction[:, np.newaxis] * (points[ks] - p_before)
    exact = after_end | on_point
    rows = np.where(after_end, len(times) - 1, ks)
    return np.where(exact[:, np.newaxis], points[rows], between)
