"""Stops that move nothing, on the real X5 SDK against the bus emulator (issue 32).

Every stop used to re-hold the arm at its measured joints, and each re-hold moved the Damiao wrist joints one position
step (the SDK truncates a zero velocity to -0.011 rad/s; robodojo.hardware.arx5_host's ``op_hold`` says why). Here a
hundred stops, e-stops and refused trajectories reach both arms, idle and at rest after a goal, and the emulator's
motor positions must not move by more than one encoder step in total; a motor that fell silent is held at its
command it answered last, never at its stale reading. What the motors were told is read from the emulator's command log.
"""

from __future__ import annotations

import dataclasses
import time

import numpy as np
import pytest
from conftest import EMULATED_FOLLOWING_ERROR_RAD, EMULATED_SILENT_AFTER_S, X5Bus

from robodojo.control.trajectory_controller import ControllerNames, TrajectoryState
from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.errors import InvalidCommandError
from robodojo.hardware.arm_driver import ArmDriver
from robodojo.hardware.arx5 import Arx5Arm
from robodojo.hardware.settings import load_arx5_settings
from robodojo.hardware.x5_bus.frames import DAMIAO_RANGES, MitCommand

SETTINGS = dataclasses.replace(
    load_arx5_settings().arm("left"),
    home_before_damping=False,
    silent_after_s=EMULATED_SILENT_AFTER_S,
    following_error_rad=EMULATED_FOLLOWING_ERROR_RAD,  # the silent joint is called silent before it lags that far
)
NAMES = SETTINGS.joint_names
DT = SETTINGS.robot.control_dt_s
JOINT_MOTORS = (1, 2, 4, 5, 6, 7)
SILENT_MOTOR = 7  # joint 6's (a wrist roll: a fast turn keeps the TCP in the guard's workspace)
STEP_RAD = DAMIAO_RANGES.position_rad.resolution  # one encoder step of the position field (both families)
REPEATS = 100
SETTLE_S = 0.5  # the emulated joints settle on their hold (kd/kp lags of 25-35 ms) well within this
TIMEOUT_S = 15.0


@pytest.fixture
def drivers(x5_bus: X5Bus):
    arms = {
        "can0": Arx5Arm(SETTINGS),
        "can1": Arx5Arm(dataclasses.replace(SETTINGS, arm="right", interface="can1")),
    }
    out = {}
    for name, arm in arms.items():
        arm.connect()
        side = arm.settings.arm
        out[name] = ArmDriver(arm, ControllerNames(f"{side}_arm_controller", f"{side}_gripper_controller"))
    yield out
    for driver in out.values():
        driver.close()
        driver.arm.close()


def smooth(start, amplitude_rad, duration_s: float, names=NAMES) -> TrajectoryCommand:
    times = np.arange(1, round(duration_s / DT) + 1) * DT
    s = (1 - np.cos(np.pi * times / duration_s)) / 2
    points = np.asarray(start) + np.outer(s, amplitude_rad)
    return TrajectoryCommand(names, tuple(times), tuple(map(tuple, points)))


def run_until_end(d: ArmDriver, timeout_s: float = TIMEOUT_S) -> list:
    reports: list = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reports += d.tick()
        if any(r.controller == d.joints.name and r.state != TrajectoryState.PLAYING for r in reports):
            return reports
        time.sleep(DT)
    raise AssertionError(f"{d.joints.name} did not end within {timeout_s} s: {reports[-3:]}")


def commanded(bus: X5Bus, interface: str, since: int) -> dict[int, set[bytes]]:
    """Each joint motor's distinct position fields (raw bytes) in the MIT frames since the ``since``-th frame."""
    out: dict[int, set[bytes]] = {m: set() for m in JOINT_MOTORS}
    for f in bus.client.commands(interface, since):
        if f.motor_id in JOINT_MOTORS and isinstance(f.command, MitCommand):
            out[f.motor_id].add(f.raw[3:5] if f.motor_id in (1, 2, 4) else f.raw[0:2])
    return out


def refused(driver: ArmDriver) -> None:
    """A trajectory the guard refuses (its last point past joint 1's upper limit)."""
    names = driver.arm.joint_names
    q = np.array(driver.read_joints().positions_rad)
    far = q.copy()
    far[0] = driver.arm.guard.limits[names[0]].upper + 0.05
    with pytest.raises(InvalidCommandError):
        driver.submit_arm(TrajectoryCommand(names, (0.5, 1.0), (tuple(q), tuple(far))))


@pytest.mark.parametrize("after_a_goal", [False, True], ids=["idle", "at_rest_after_a_goal"])
def test_a_hundred_stops_e_stops_and_refusals_move_no_joint(drivers: dict[str, ArmDriver], x5_bus: X5Bus, after_a_goal):
    if after_a_goal:
        for sign, driver in zip((1, -1), drivers.values(), strict=True):
            q0 = np.array(driver.read_joints().positions_rad)
            amplitude = sign * np.array([0.2, 0.15, -0.15, 0.2, 0.2, -0.2])
            driver.submit_arm(smooth(q0, amplitude, 1.0, driver.arm.joint_names))
        ends: dict[str, TrajectoryState] = {}
        deadline = time.monotonic() + TIMEOUT_S
        while len(ends) < len(drivers) and time.monotonic() < deadline:  # both ticked: each tick feeds its watchdog
            for driver in drivers.values():
                for r in driver.tick():
                    if r.controller == driver.joints.name and r.state != TrajectoryState.PLAYING:
                        ends[r.controller] = r.state
            time.sleep(DT)
        assert set(ends.values()) == {TrajectoryState.FINISHED} and len(ends) == len(drivers), ends
    time.sleep(SETTLE_S)
    before = {name: x5_bus.joints(name) for name in drivers}
    since = {name: x5_bus.client.command_count(name) for name in drivers}
    for k in range(REPEATS):
        for driver in drivers.values():
            kind = k % 4
            if kind == 0:
                driver.stop("a stop")
            elif kind == 1:
                driver.estop("an e-stop")
                refused(driver)  # refused while the e-stop holds
                driver.release()
            elif kind == 2:
                refused(driver)
            else:
                driver.submit_arm(TrajectoryCommand(driver.arm.joint_names, (), ()))  # an empty one stops
        driver.tick()
        time.sleep(0.01)
    time.sleep(SETTLE_S)
    for name in drivers:
        moved = np.abs(x5_bus.joints(name) - before[name])
        assert moved.max() <= STEP_RAD, f"{name} joints moved {moved * 1e3} mrad over {REPEATS} stops"
        # The stops told the motors nothing new: one position per motor the whole time.
        held = commanded(x5_bus, name, since[name])
        assert all(len(v) == 1 for v in held.values()), {m: len(v) for m, v in held.items()}


def test_a_silent_motor_is_held_at_the_command_it_answered_never_at_its_stale_reading(drivers, x5_bus: X5Bus):
    """Joint 6's motor falls silent mid-motion (0.7 rad/s). The monitor calls it silent 0.6 s later, while the
    trajectory's commands (which it no longer hears) went on 0.4 rad. The stop holds the other joints where they are
    and joint 6 at the last command it answered (the bus monitor saw both): what a motor that only lost its link
    executes still, within its tracking lag of where an unpowered one stopped; never at a command it did not hear (it
    would jump 0.4 rad when it answers again), nor at the SDK's reading of it. The motion server's repeated stops
    (every 0.26 s, measured) then move nothing."""
    driver = drivers["can0"]
    q0 = np.array(driver.read_joints().positions_rad)
    driver.submit_arm(smooth(q0, [0.1, 0.0, 0.0, 0.1, 0.1, 0.8], 3.0))
    for _ in range(25):  # 1 s into the motion
        driver.tick()
        time.sleep(DT)
    asked_s = time.monotonic()
    x5_bus.client.request("silence", interface="can0", motor=SILENT_MOTOR)
    silenced_s = time.monotonic()
    reports = run_until_end(driver, timeout_s=5.0)
    end = next(r for r in reports if r.controller == driver.joints.name and r.state != TrajectoryState.PLAYING)
    assert end.state == TrajectoryState.STOPPED and f"motor {SILENT_MOTOR} (joint6) silent" in end.reason, end
    time.sleep(SETTLE_S)
    since, since_s = x5_bus.client.command_count("can0"), time.monotonic()
    before = x5_bus.joints("can0")
    for _ in range(20):
        driver.stop("the motion server's stop")
        driver.tick()
        time.sleep(0.02)
    time.sleep(0.1)
    to_it = [
        f for f in x5_bus.client.commands("can0") if f.motor_id == SILENT_MOTOR and isinstance(f.command, MitCommand)
    ]
    held = {
        round(f.command.position_rad, 6) for f in x5_bus.client.commands("can0", since) if f.motor_id == SILENT_MOTOR
    }
    assert len(held) == 1, held  # one hold for the silent motor, kept through every stop
    (held6,) = held
    # The last command it answered: the last one before the silence was asked for, or one sent while it was asked.
    window = [f.command.position_rad for f in to_it if f.time_s < asked_s][-1:]
    window += [f.command.position_rad for f in to_it if asked_s <= f.time_s < silenced_s]
    assert min(window) - STEP_RAD <= held6 <= max(window) + STEP_RAD, (held6, window)
    unheard = [f.command.position_rad for f in to_it if silenced_s <= f.time_s < since_s]
    assert max(unheard) - held6 > 0.1, (held6, max(unheard))  # the trajectory went on: none of that is held
    assert all(len(v) == 1 for v in commanded(x5_bus, "can0", since).values())
    moved = np.abs(x5_bus.joints("can0") - before)
    assert moved.max() <= STEP_RAD, moved
