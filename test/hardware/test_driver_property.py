"""Property: random trajectories, valid and invalid, through ArmDriver to franky-sim; nothing outside the limits ever
reaches the SDK.

What reached the SDK is read back from the very motion objects franky's ``Robot.move`` received (a recording wrapper
around the real franky Robot: each call still goes to franky-sim), and judged by the independent oracle of
test_trajectory_guard.py (URDF limits, acceleration, jump, forward kinematics for table and box).
"""

from __future__ import annotations

import math
import time

import numpy as np
import pytest
from conftest import FrankySim
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_trajectory_guard import LOWER, NAMES, UPPER, _broken, _steps

from robodojo.control.trajectory_controller import ControllerNames
from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.errors import InvalidCommandError
from robodojo.hardware.arm_driver import ArmDriver
from robodojo.hardware.franka import SEGMENT_ACCEL_FRACTION, FrankaArm
from robodojo.hardware.settings import load_fr3_settings

SETTINGS = load_fr3_settings()
_MS = 1e-3


class RecordingRobot:
    """The real franky Robot, with every motion handed to ``move`` kept for inspection."""

    def __init__(self, robot) -> None:
        self._robot = robot
        self.motions: list = []

    def move(self, motion, asynchronous: bool = False):
        self.motions.append(motion)
        return self._robot.move(motion, asynchronous=asynchronous)

    def __getattr__(self, name: str):
        return getattr(self._robot, name)


class RecordingGuard:
    """The adapter's real TrajectoryGuard, with the measured state it judged the last trajectory from kept: the arm
    may still be braking from the previous example, and the oracle must judge from the same state."""

    def __init__(self, guard) -> None:
        self._guard = guard
        self.judged_from: tuple[np.ndarray, np.ndarray | None] | None = None

    def check(self, cmd, current_q, current_dq=None):
        self.judged_from = (np.array(current_q), None if current_dq is None else np.array(current_dq))
        return self._guard.check(cmd, current_q, current_dq)

    def __getattr__(self, name: str):
        return getattr(self._guard, name)


@pytest.fixture(scope="module")
def rig(franky_sim: FrankySim):
    arm = FrankaArm(SETTINGS)
    arm.connect(franky_sim.host)
    recorder = RecordingRobot(arm._robot)
    arm._robot = recorder  # the adapter's one handle on franky
    arm.guard = RecordingGuard(arm.guard)
    driver = ArmDriver(arm, ControllerNames("arm_arm_controller", "arm_gripper_controller"))
    yield driver, recorder
    driver.close()
    arm.close()


def _sent(motion) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(times [s], positions, velocities) of a franky JointWaypointMotion as franky holds it."""
    waypoints = motion.waypoints
    ms = np.array([float(str(w.minimum_time).strip("Duration()")) for w in waypoints])
    positions = np.array([w.target.position for w in waypoints])
    velocities = np.array([w.target.velocity for w in waypoints])
    return np.cumsum(ms) * _MS, positions, velocities


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    n_points=st.integers(1, 10),
    step_s=st.sampled_from([0.04, 0.08, 0.25]),
    scale=st.sampled_from([0.001, 0.01, 0.05, 0.3]),
    nan_at=st.one_of(st.none(), st.tuples(st.integers(0, 9), st.integers(0, 6))),
    seed=st.integers(0, 2**31 - 1),
)
def test_nothing_outside_the_limits_reaches_the_sdk(rig, n_points, step_s, scale, nan_at, seed):
    driver, recorder = rig
    driver.stop("between examples")  # a previous example's motion ends here; the arm holds
    q0 = np.array(driver.read_joints().positions_rad)  # each accepted motion is stopped at once: it stays near home
    rng = np.random.default_rng(seed)
    points = q0 + np.cumsum(_steps(rng, scale, n_points), axis=0)
    if nan_at is not None and nan_at[0] < n_points:
        points[nan_at] = math.nan
    times = np.arange(1, n_points + 1) * step_s
    before = len(recorder.motions)
    try:
        driver.submit_arm(TrajectoryCommand(NAMES, tuple(times), tuple(map(tuple, points))))
    except InvalidCommandError:
        assert len(recorder.motions) == before, "a refused trajectory reached the SDK"
        return
    assert len(recorder.motions) == before + 1
    sent_times, sent_q, sent_dq = _sent(recorder.motions[-1])
    driver.stop("checked")
    scale_time = driver.arm.last_time_scale  # slowed down whole to fit franky's limits x dynamics factor, or 1
    assert scale_time >= 1.0
    assert np.allclose(sent_q, points) and np.allclose(sent_times, times * scale_time, atol=1e-3)
    assert ((sent_q >= LOWER) & (sent_q <= UPPER)).all()
    cap = driver.arm._waypoint_speed_rad_s
    assert (np.abs(sent_dq) <= cap + 1e-9).all(), "a waypoint velocity beyond franky's limit x dynamics factor"
    # Each segment's average acceleration within franky's (scaled) limit, the ms rounding of its duration aside.
    accel = np.abs(np.diff(sent_dq, axis=0, prepend=np.zeros((1, 7)))) / np.diff(sent_times, prepend=0.0)[:, None]
    franky_accel = driver.arm._segment_accel_rad_s2 / SEGMENT_ACCEL_FRACTION
    assert (accel <= franky_accel * 1.05).all(), "a segment beyond franky's acceleration limit x dynamics factor"
    judged_q, judged_dq = driver.arm.guard.judged_from
    assert np.abs(judged_q - q0).max() < 0.01  # the arm it judged from is the one the trajectory was planned from
    broken = _broken(sent_times, sent_q, judged_q, judged_dq)
    assert not broken, f"the SDK received a trajectory that breaks the {broken} rule"


def test_the_random_trajectories_reach_both_outcomes(rig):
    """The property is not vacuous: some random trajectories are sent, some refused."""
    driver, _ = rig
    outcomes = set()
    for seed in range(12):
        driver.stop("between samples")
        rng = np.random.default_rng(seed)
        q0 = np.array(driver.read_joints().positions_rad)
        points = q0 + np.cumsum(_steps(rng, (0.001, 0.3)[seed % 2], 6), axis=0)
        try:
            driver.submit_arm(TrajectoryCommand(NAMES, tuple(np.arange(1, 7) * 0.08), tuple(map(tuple, points))))
            outcomes.add("sent")
        except InvalidCommandError:
            outcomes.add("refused")
        time.sleep(0.05)
    driver.stop("done")
    assert outcomes == {"sent", "refused"}
