"""An arm's speed over a window of joint states (robodojo.robots.joint_speed): what a stop's confirmation reads."""

from __future__ import annotations

import math

import numpy as np
import pytest

from robodojo.robots.joint_speed import SPEED_GAP_S, SPEED_WINDOW_S, JointSpeedWindow

DT = 0.01  # the drivers' 100 Hz


def fed(window: JointSpeedWindow, t0: float, q0: float, speed: float, n: int) -> tuple[float, float]:
    """``n`` joint states of a 7-joint arm whose first joint moves at ``speed``; the last (t, q)."""
    t, q = t0, q0
    for k in range(n):
        t, q = t0 + k * DT, q0 + speed * k * DT
        window.add(t, np.array([q, 0, 0, 0, 0, 0, 0.0]))
    return t, q


def test_unknown_until_the_joint_states_span_the_window_then_the_mean_speed():
    window = JointSpeedWindow()
    assert window.speed_rad_s == math.inf
    fed(window, 5.0, 0.2, 0.5, round(SPEED_WINDOW_S / DT))  # one sample short of the window
    assert window.speed_rad_s == math.inf
    window = JointSpeedWindow()
    fed(window, 5.0, 0.2, 0.5, round(SPEED_WINDOW_S / DT) + 1)
    assert window.speed_rad_s == pytest.approx(0.5)
    fed(window, 6.0 - 0.5, 0.2, -0.3, 100)  # a long run: only the last window counts, backwards too
    assert window.speed_rad_s == pytest.approx(0.3)


def test_readings_that_repeat_while_the_arm_moves_are_no_rest():
    """A robot whose state updates slower than its driver reads it: every other reading repeats the last."""
    window = JointSpeedWindow()
    for k in range(30):
        t = 2.0 + k * DT
        q = 0.1 + 0.4 * (k // 2) * 2 * DT  # updates every 20 ms, read every 10 ms: 0.4 rad/s
        window.add(t, np.full(7, q))
        if k > 12 and k % 2 == 1:  # the newest pair is equal: a speed of 0 by the last two alone
            assert window.speed_rad_s > 0.3


def test_an_arm_at_rest_for_a_window_reads_zero_and_a_silence_or_a_restart_starts_over():
    window = JointSpeedWindow()
    t, q = fed(window, 1.0, 0.3, 0.0, 20)
    assert window.speed_rad_s == 0.0
    window.add(t + 7 * SPEED_GAP_S, np.full(7, q))  # after a stall: not 0 over 0.7 s, unknown
    assert window.speed_rad_s == math.inf
    t, q = fed(window, 9.0, 0.3, 0.0, 20)
    assert window.speed_rad_s == 0.0
    window.add(0.5, np.full(7, q))  # a restarted robot's clock
    assert window.speed_rad_s == math.inf
