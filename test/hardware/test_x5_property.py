"""Property: random trajectories, valid and invalid, through ArmDriver to the real X5 SDK and the bus emulator; no
command frame outside the joint limits ever reaches the motors, and a refused trajectory sends nothing.

What reached the motors is read from the emulator's log of command frames. The SDK clips commands to its profile's
limits itself, so the property is checked tighter: every frame an accepted trajectory caused lies within the box its
own points and start span, and a refused trajectory causes no frame that is not the held position.
"""

from __future__ import annotations

import dataclasses
import math
import time

import numpy as np
import pytest
from conftest import EMULATED_SILENT_AFTER_S, start_x5_bus
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robodojo.control.trajectory_controller import ControllerNames
from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.errors import InvalidCommandError
from robodojo.hardware.arm_driver import ArmDriver
from robodojo.hardware.arx5 import Arx5Arm
from robodojo.hardware.settings import load_arx5_settings
from robodojo.hardware.x5_bus.frames import EC_RANGES, MitCommand

SETTINGS = dataclasses.replace(
    load_arx5_settings().arm("left"), home_before_damping=False, silent_after_s=EMULATED_SILENT_AFTER_S
)
NAMES = SETTINGS.joint_names
JOINT_MOTORS = (1, 2, 4, 5, 6, 7)
PLAY_S = 0.3  # each accepted trajectory plays this long before the next example stops it
QUANTUM_RAD = EC_RANGES.position_rad.resolution  # the frames' position field step (the same on both families)
HOLD_TOLERANCE_RAD = 0.01  # a stop holds the measured joints, which lag the command by the motors' ~30 ms


@pytest.fixture(scope="module")
def rig():
    home = SETTINGS.robot.arm("left").home_joints_rad
    bus = start_x5_bus({"can0": home})
    arm = Arx5Arm(SETTINGS)
    arm.connect()
    driver = ArmDriver(arm, ControllerNames("left_arm_controller", "left_gripper_controller"))
    yield driver, bus
    driver.close()
    arm.close()
    bus.kill()


def _limits() -> tuple[np.ndarray, np.ndarray]:
    guard = Arx5Arm(SETTINGS).guard  # no connection: only the limits
    return (np.array([guard.limits[n].lower for n in NAMES]), np.array([guard.limits[n].upper for n in NAMES]))


LOWER, UPPER = _limits()


def _frames_by_joint(bus, since: int) -> list[tuple[int, float]]:
    """(joint index, commanded position) of every stiff joint command frame since the ``since``-th frame."""
    out = []
    for f in bus.client.commands("can0", since):
        if f.motor_id in JOINT_MOTORS and isinstance(f.command, MitCommand) and f.command.kp > 0:
            out.append((JOINT_MOTORS.index(f.motor_id), f.command.position_rad))
    return out


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(
    n_points=st.integers(1, 10),
    step_s=st.sampled_from([0.04, 0.08, 0.25]),
    scale=st.sampled_from([0.001, 0.01, 0.05, 0.3]),
    beyond_limit=st.one_of(st.none(), st.integers(0, 5)),
    nan_at=st.one_of(st.none(), st.tuples(st.integers(0, 9), st.integers(0, 5))),
    seed=st.integers(0, 2**31 - 1),
)
def test_nothing_outside_the_limits_reaches_the_motors(rig, n_points, step_s, scale, beyond_limit, nan_at, seed):
    driver, bus = rig
    driver.stop("between examples")
    time.sleep(0.05)
    q0 = np.array(driver.read_joints().positions_rad)
    rng = np.random.default_rng(seed)
    steps = rng.normal(0.0, scale, size=(n_points, 6))
    steps[0] *= 0.02 / scale if rng.random() < 0.8 else 1.0  # mostly a small first step: more than the jump rule
    points = q0 + np.cumsum(steps, axis=0)
    if beyond_limit is not None:  # the last point past a joint's upper limit
        points[-1, beyond_limit] = UPPER[beyond_limit] + 0.05
    if nan_at is not None and nan_at[0] < n_points:
        points[nan_at] = math.nan
    times = np.arange(1, n_points + 1) * step_s
    sent_before, frames_before = driver.arm.sent_commands, bus.client.command_count("can0")
    try:
        driver.submit_arm(TrajectoryCommand(NAMES, tuple(times), tuple(map(tuple, points))))
        accepted = True
    except InvalidCommandError:
        accepted = False
    deadline = time.monotonic() + PLAY_S
    while time.monotonic() < deadline:
        driver.tick()
        time.sleep(0.04)
    time.sleep(0.05)  # the emulator's log is flushed every 20 ms
    frames = _frames_by_joint(bus, frames_before)
    assert frames, "the SDK sent nothing at all (it holds the arm with every cycle)"
    for joint, q in frames:
        assert LOWER[joint] - QUANTUM_RAD <= q <= UPPER[joint] + QUANTUM_RAD, f"joint {joint + 1} commanded {q}"
    if not accepted:
        assert driver.arm.sent_commands == sent_before, "a refused trajectory reached the SDK"
        for joint, q in frames:
            assert abs(q - q0[joint]) < HOLD_TOLERANCE_RAD, f"joint {joint + 1} moved to {q} for a refused trajectory"
        return
    assert (beyond_limit is None and nan_at is None) or (nan_at is not None and nan_at[0] >= n_points)
    span_low = np.minimum(q0, points.min(axis=0)) - HOLD_TOLERANCE_RAD
    span_high = np.maximum(q0, points.max(axis=0)) + HOLD_TOLERANCE_RAD
    for joint, q in frames:
        assert span_low[joint] <= q <= span_high[joint], f"joint {joint + 1} commanded {q} off its trajectory"


def test_the_random_trajectories_reach_both_outcomes(rig):
    """The property is not vacuous: some random trajectories are sent, some refused."""
    driver, _ = rig
    outcomes = set()
    for seed in range(12):
        driver.stop("between samples")
        time.sleep(0.05)
        rng = np.random.default_rng(seed)
        q0 = np.array(driver.read_joints().positions_rad)
        points = q0 + np.cumsum(rng.normal(0.0, (0.001, 0.3)[seed % 2], size=(6, 6)), axis=0)
        try:
            driver.submit_arm(TrajectoryCommand(NAMES, tuple(np.arange(1, 7) * 0.08), tuple(map(tuple, points))))
            outcomes.add("sent")
        except InvalidCommandError:
            outcomes.add("refused")
    driver.stop("done")
    assert outcomes == {"sent", "refused"}
