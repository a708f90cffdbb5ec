"""Time parametrization: a trapezoidal profile along a path parameter, sampled at the control period.

The joint path q(s), s in [0, 1], is a shape-preserving cubic (PCHIP) through the IK waypoints, so it never overshoots
the waypoints' range (and so never leaves the joint limits they satisfy). One scalar trapezoid s(t) drives every
joint of every moving arm, so both arms start and arrive together. Its peak rate and acceleration are the largest
that keep, along the whole path,

    |q_j'(s)| sdot                       <= v_j           (joint velocity)
    |q_j'(s)| sddot + |q_j''(s)| sdot^2  <= a_j           (joint acceleration, half the budget to each term)

plus the Cartesian caps the caller passes. The duration is rounded up to whole control periods by slowing the
profile down (which only lowers velocities and accelerations), so the last sample lands exactly on the goal.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray
from scipy.interpolate import PchipInterpolator

# Knots all within this of the first [rad] are no motion: the profile is the one start sample.
NO_MOTION_RAD = 1e-12


@dataclass(frozen=True)
class PathRateLimits:
    """Bounds on the path parameter's rate [1/s] and acceleration [1/s^2] from outside the joints (e.g. TCP speed)."""

    max_rate: float = math.inf
    max_accel: float = math.inf


def trapezoid_duration(max_rate: float, max_accel: float) -> float:
    """Time to travel s from 0 to 1 at rest at both ends."""
    if max_rate * max_rate >= max_accel:  # never reaches the peak rate: triangular profile
        return 2.0 * math.sqrt(1.0 / max_accel)
    return 1.0 / max_rate + max_rate / max_accel


def trapezoid_position(t: NDArray[np.float64], duration: float, max_accel: float) -> NDArray[np.float64]:
    """s(t) of the symmetric trapezoid with the given duration and acceleration (rate implied)."""
    # Solve for the cruise rate v of a trapezoid of total time T and acceleration a covering distance 1:
    # 1 = v T - v^2 / a  ->  v = (a T - sqrt(a^2 T^2 - 4 a)) / 2.
    a, T = max_accel, duration
    v = (a * T - math.sqrt(max(a * a * T * T - 4.0 * a, 0.0))) / 2.0
    t_acc = v / a
    s = np.where(
        t < t_acc,
        0.5 * a * t * t,
        np.where(t <= T - t_acc, 0.5 * a * t_acc * t_acc + v * (t - t_acc), 1.0 - 0.5 * a * (T - t) ** 2),
    )
    return np.clip(s, 0.0, 1.0)


def _derivative_bounds(path: PchipInterpolator) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """Per joint, the largest |q'(s)| and |q''(s)| along the whole path, exact from the cubic pieces.

    Sampling the derivatives on a grid misses the peaks between grid points (by 0.5 % of a velocity limit, found by
    the property tests); each piece's q' is a parabola and its q'' a line, so their extremes are known in closed form.
    """
    # Piece i: q(s) = c3 h^3 + c2 h^2 + c1 h + c0 with h = s - s_i in [0, width_i].
    c3, c2, c1 = path.c[0], path.c[1], path.c[2]
    width = np.diff(path.x)[:, None]
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        vertex = np.where(c3 != 0.0, -c2 / (3.0 * c3), 0.0)  # where q'' = 0; clipped to the piece
    d1 = [np.abs(3.0 * c3 * h * h + 2.0 * c2 * h + c1) for h in (0.0, width, np.clip(vertex, 0.0, width))]
    d2 = [np.abs(6.0 * c3 * h + 2.0 * c2) for h in (0.0, width)]
    return np.max(np.maximum.reduce(d1), axis=0), np.max(np.maximum.reduce(d2), axis=0)


def parametrize(
    knots_s: NDArray[np.float64],
    knots_q: NDArray[np.float64],
    max_velocity: NDArray[np.float64],
    max_accel: NDArray[np.float64],
    dt: float,
    extra: PathRateLimits = PathRateLimits(),
    speed_scale: float = 1.0,
) -> NDArray[np.float64]:
    """Joint samples every ``dt`` from the first knot (at rest) to the last (at rest), including both.

    ``speed_scale`` in (0, 1] slows the whole profile: rates times it, accelerations times its square, so the path
    and the profile's shape stay and the duration grows by 1 / speed_scale (before rounding to ``dt``)."""
    knots_q = np.asarray(knots_q, dtype=float)
    if np.all(np.abs(knots_q - knots_q[0]) < NO_MOTION_RAD):
        return knots_q[:1].copy()
    path = PchipInterpolator(knots_s, knots_q, axis=0)
    d1, d2 = _derivative_bounds(path)
    with np.errstate(divide="ignore", over="ignore"):  # a joint that (all but) stays put sets no bound: inf
        rate = min(
            extra.max_rate,
            float(np.min(max_velocity / d1)),
            float(np.min(np.sqrt(0.5 * max_accel / d2))),
        )
        accel = min(extra.max_accel, float(np.min(0.5 * max_accel / d1)))
    rate, accel = rate * speed_scale, accel * speed_scale**2
    duration = trapezoid_duration(rate, accel)
    steps = max(1, math.ceil(duration / dt - 1e-9))
    slowed = steps * dt
    # Stretching time by k = slowed / duration keeps the shape: the same profile with accel / k^2.
    k = slowed / duration
    t = np.arange(steps + 1, dtype=np.float64) * dt
    s = trapezoid_position(t, slowed, accel / (k * k))
    samples = path(s)
    # Evaluating the last cubic piece at its far end rounds (by 1e-16): the goal is the knot itself.
    samples[0], samples[-1] = knots_q[0], knots_q[-1]
    return samples
