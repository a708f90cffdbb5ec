"""How fast an arm moves, judged from its joint positions and their stamps over a window of robot time (every driver
publishes positions and stamps; velocity fields are optional). Whoever confirms that an arm holds still reads it.

One pair of joint states is no proof of rest: a driver that reads a robot faster than the robot's state updates (a
simulator running slower than the wall clock, franky-sim under load) publishes the same positions twice while the arm
still moves, and a stop confirmed on them left the arm braking at 0.46 rad/s under the next plan. So the speed is the
fastest mean speed between any joint state of the window and the newest one, and unknown until the joint states span
the whole window. Across a silence (stamps further apart than the gap) the robot may have stood still and moved on:
the window starts over.
"""

from __future__ import annotations

import math
from collections import deque

import numpy as np
from numpy.typing import NDArray

#: Robot time over which an arm's speed is judged: ten joint states at the drivers' 100 Hz.
SPEED_WINDOW_S = 0.1
#: Two joint states further apart than this [s, their stamps] start the window over: joint states come at 100-125 Hz.
SPEED_GAP_S = 0.1


class JointSpeedWindow:
    """The fastest joint's speed of one arm over the last :data:`SPEED_WINDOW_S` of robot time."""

    def __init__(self, window_s: float = SPEED_WINDOW_S, gap_s: float = SPEED_GAP_S) -> None:
        self.window_s, self.gap_s = window_s, gap_s
        self._samples: deque[tuple[float, NDArray[np.float64]]] = deque()

    def add(self, stamp_s: float, q: NDArray[np.float64]) -> None:
        """One joint state of the arm. A stamp at or before the last one starts the window over (a restarted robot's
        clock), as does one more than the gap after it."""
        if self._samples and not 0.0 < stamp_s - self._samples[-1][0] <= self.gap_s:
            self._samples.clear()
        self._samples.append((stamp_s, np.array(q, dtype=float)))
        # keep one sample at least a window old: the newest must be judged over the whole window
        while len(self._samples) > 1 and stamp_s - self._samples[1][0] >= self.window_s:
            self._samples.popleft()

    @property
    def speed_rad_s(self) -> float:
        """The fastest mean joint speed between any sample of the window and the newest [rad/s]; inf until the samples
        span the window."""
        if not self._samples:
            return math.inf
        t_new, q_new = self._samples[-1]
        if t_new - self._samples[0][0] < self.window_s - 1e-9:
            return math.inf
        return max(float(np.max(np.abs(q_new - q))) / (t_new - t) for t, q in list(self._samples)[:-1])
