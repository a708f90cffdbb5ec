"""Arx5Arm and ArmDriver on the real SDK against the bus emulator: connect, trajectories, gripper, faults, shutdown.

The SDK runs in its host process (robodojo.hardware.arx5_host), the bus monitor in this one; both reach the emulator
through the SocketCAN shim. What the motors were told is read from the emulator's command log, never from the
driver's own books.
"""

from __future__ import annotations

import dataclasses
import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import EMULATED_SILENT_AFTER_S, X5Bus, fifo_threads, may_use_fifo

from robodojo.control.trajectory_controller import ControllerNames, TrajectoryState, ends_the_robot
from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.errors import ContactLostError, HardwareError
from robodojo.hardware.arm_driver import ArmDriver
from robodojo.hardware.arx5 import Arx5Arm
from robodojo.hardware.settings import load_arx5_settings
from robodojo.hardware.x5_bus.frames import MitCommand

# Fast teardown (no homing), and a motor called silent after the emulator's stalls under load (conftest).
SETTINGS = dataclasses.replace(
    load_arx5_settings().arm("left"), home_before_damping=False, silent_after_s=EMULATED_SILENT_AFTER_S
)
NAMES = SETTINGS.joint_names
DT = SETTINGS.robot.control_dt_s
FINGER = SETTINGS.robot.arm("left").gripper_joint
JOINT_MOTORS = (1, 2, 4, 5, 6, 7)
END_TOLERANCE_RAD = 0.01  # the bound for a followed trajectory
TIMEOUT_S = 15.0


@pytest.fixture
def arm(x5_bus: X5Bus):
    a = Arx5Arm(SETTINGS)
    a.connect()
    yield a
    a.close()


@pytest.fixture
def driver(arm: Arx5Arm):
    d = ArmDriver(arm, ControllerNames("left_arm_controller", "left_gripper_controller"))
    yield d
    d.close()


def smooth(start, amplitude_rad, duration_s: float) -> TrajectoryCommand:
    times = np.arange(1, round(duration_s / DT) + 1) * DT
    s = (1 - np.cos(np.pi * times / duration_s)) / 2
    points = np.asarray(start) + np.outer(s, amplitude_rad)
    return TrajectoryCommand(NAMES, tuple(times), tuple(map(tuple, points)))


def gripper_command(finger_m: float) -> TrajectoryCommand:
    return TrajectoryCommand((FINGER,), tuple(k * DT for k in range(1, 13)), tuple((finger_m,) for _ in range(12)))


def run_until_end(d: ArmDriver, controller: str, timeout_s: float = TIMEOUT_S) -> list:
    """Tick at the control rate (each tick feeds the arm's watchdog) until ``controller`` reports an end; every
    report."""
    reports: list = []
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        reports += d.tick()
        if any(r.controller == controller and r.state != TrajectoryState.PLAYING for r in reports):
            return reports
        time.sleep(DT)
    raise AssertionError(f"{controller} did not end within {timeout_s} s: {reports[-3:]}")


def joint_commands(frames) -> list[tuple[int, MitCommand]]:
    return [(f.motor_id, f.command) for f in frames if f.motor_id in JOINT_MOTORS and isinstance(f.command, MitCommand)]


def sdk_host_pids() -> list[int]:
    """This process's SDK host processes (robodojo.hardware.arx5_host)."""
    children = Path(f"/proc/{os.getpid()}/task/{os.getpid()}/children").read_text().split()
    return [int(p) for p in children if b"arx5_host" in Path(f"/proc/{p}/cmdline").read_bytes()]


def test_only_the_sdk_s_can_threads_and_the_emulator_s_bus_thread_run_at_real_time_priority(arm, x5_bus: X5Bus):
    """Starved of the CPU, the SDK's 500 Hz loop sends nothing and the emulator answers nothing: those threads run in
    SCHED_FIFO, at the config's and the emulator's priorities, and nothing else in either process does."""
    if not may_use_fifo():
        pytest.skip("this process may not use SCHED_FIFO (no root, no rtprio limit): the priorities are not applied")
    from robodojo.hardware.x5_bus.server import EMULATOR_PRIORITY

    (host,) = sdk_host_pids()
    sdk = fifo_threads(host)
    # The SDK's receiver and its send/receive loop (arx5-interface 0.1.5 starts those two in its constructor).
    assert sorted(sdk.values()) == [SETTINGS.bus_thread_priority] * 2, sdk
    assert host not in sdk  # the host's main thread, which answers the driver, runs as before
    emulator = fifo_threads(x5_bus.process.pid)
    assert list(emulator.values()) == [EMULATOR_PRIORITY], emulator
    assert x5_bus.process.pid not in emulator


def test_connect_holds_the_arm_where_it_stands_under_the_configured_gains(x5_bus: X5Bus):
    start = x5_bus.joints("can0")
    a = Arx5Arm(SETTINGS)
    a.connect()
    try:
        since = x5_bus.client.command_count("can0")
        time.sleep(0.5)
        assert np.abs(x5_bus.joints("can0") - start).max() < 2e-3  # nothing moved
        stiff = [(m, c) for m, c in joint_commands(x5_bus.client.commands("can0", since)) if c.kp > 0]
        assert stiff, "no command with the configured gains reached the motors"
        for motor, cmd in stiff:
            joint = JOINT_MOTORS.index(motor)
            assert abs(cmd.position_rad - start[joint]) < 2e-3  # held where it stood
            assert abs(cmd.kp - SETTINGS.gains.kp[joint]) < 0.2
        assert a.status.status == "idle"
    finally:
        a.close()


@pytest.mark.parametrize("late_s", [1.0, None], ids=["late", "never"])
def test_motors_that_answer_late_or_never_are_not_held_at_the_0_the_sdk_reads_for_them(x5_bus: X5Bus, late_s):
    """The SDK starts once any motor answered and reads 0 for the others: held there, joints 2 and 3 swung toward 0
    when their motors came (a loaded machine's SDK restart did so). Connect waits for every motor and for the SDK to
    read what they say; motors that never answer leave the arm limp and connect refuses."""
    late = (2, 4)  # the EC motors of joints 2 and 3
    start = x5_bus.joints("can0")
    for motor in late:
        x5_bus.client.request("silence", interface="can0", motor=motor)
    if late_s is not None:
        timer = threading.Timer(
            late_s, lambda: [x5_bus.client.request("silence", interface="can0", motor=m, on=False) for m in late]
        )
        timer.start()
    a = Arx5Arm(SETTINGS)
    try:
        if late_s is None:
            with pytest.raises(ContactLostError, match=r"motor 2 \(joint2\) never answered; motor 4 \(joint3\) never"):
                a.connect()
            for motor in late:
                x5_bus.client.request("silence", interface="can0", motor=motor, on=False)
        else:
            a.connect()
            assert a.status.status == "idle"
        time.sleep(1.0)  # the late motors answer, and take whatever they are told
        assert np.abs(x5_bus.joints("can0") - start).max() < 2e-3, x5_bus.joints("can0")  # nothing moved
        stiff = [(m, c) for m, c in joint_commands(x5_bus.client.commands("can0")) if c.kp > 0]
        assert bool(stiff) == (late_s is not None)  # held once every motor answered, never before
        assert all(abs(c.position_rad - start[JOINT_MOTORS.index(m)]) < 2e-3 for m, c in stiff)
    finally:
        a.close()


def test_a_trajectory_ends_within_tolerance_and_the_gripper_goes_to_its_width(driver: ArmDriver, x5_bus: X5Bus):
    q0 = np.array(driver.read_joints().positions_rad)
    cmd = smooth(q0, [0.3, -0.25, -0.2, 0.3, 0.4, -0.4], 2.0)
    driver.submit_arm(cmd)
    reports = run_until_end(driver, "left_arm_controller")
    end = next(r for r in reports if r.controller == "left_arm_controller" and r.state != TrajectoryState.PLAYING)
    assert end.state == TrajectoryState.FINISHED, end
    assert np.abs(x5_bus.joints("can0") - np.array(cmd.positions[-1])).max() < END_TOLERANCE_RAD

    driver.submit_gripper(gripper_command(0.03))  # 3 cm per finger: 6 cm between them
    run_until_end(driver, "left_gripper_controller")
    deadline = time.monotonic() + 5.0
    while driver.gripper_moving and time.monotonic() < deadline:
        time.sleep(0.02)
    assert abs(x5_bus.gripper_m("can0") - 0.06) < SETTINGS.gripper.tolerance_m + 1e-3
    assert abs(driver.gripper_width_m() - 0.06) < SETTINGS.gripper.tolerance_m + 1e-3


def test_closing_on_an_object_holds_it(arm: Arx5Arm, x5_bus: X5Bus):
    assert arm.move_gripper(0.08)
    x5_bus.client.request("block_gripper", interface="can0", width_m=0.035)
    assert arm.close_on(0.0)  # stopped on the object: a grasp, not a failure
    reading = arm.gripper_state()
    assert abs(reading.width_m - 0.035) < 2e-3
    assert reading.grasped
    assert not arm.move_gripper(0.0)  # a plain move that cannot get there says so


@pytest.mark.parametrize(
    ("fault", "expected_status", "words"),
    [
        ({"op": "silence", "motor": 5}, "error", "motor 5 (joint4) silent"),
        ({"op": "fault", "motor": 2, "code": 3}, "error", "motor 2 (joint2) reports error code 0x03"),
        ({"op": "fault", "motor": 6, "code": 0xA}, "error", "motor 6 (joint5) reports over-current"),
        ({"op": "mute", "on": True}, "lost", "lost contact"),
    ],
)
def test_a_fault_mid_motion_stops_the_arm_and_ends_the_trajectory(driver, x5_bus: X5Bus, fault, expected_status, words):
    q0 = np.array(driver.read_joints().positions_rad)
    driver.submit_arm(smooth(q0, [0.4, -0.3, -0.3, 0.4, 0.4, 0.4], 3.0))
    for _ in range(25):  # 1 s into the motion
        driver.tick()
        time.sleep(DT)
    x5_bus.client.request(interface="can0", **fault)
    reports = run_until_end(driver, "left_arm_controller", timeout_s=5.0)
    end = next(r for r in reports if r.controller == "left_arm_controller" and r.state != TrajectoryState.PLAYING)
    assert end.state == TrajectoryState.STOPPED
    assert words in end.reason, end.reason
    assert ends_the_robot(end.state, end.reason)  # its commander ends the motion as lost (needs the release)
    assert driver.arm.status.status == expected_status
    if expected_status == "lost":
        with pytest.raises(ContactLostError):
            driver.read_joints()
        return
    # Still at rest after the stop: the driver does not move it again (the emulator's joints stay put).
    stopped = x5_bus.joints("can0")
    time.sleep(0.5)
    assert np.abs(x5_bus.joints("can0") - stopped).max() < 0.01
    with pytest.raises(HardwareError):  # refused until the operator recovers it
        driver.arm.play(driver.arm.guard.check(smooth(stopped, [0.1] * 6, 1.0), stopped))


def test_the_emulator_killed_mid_motion_is_lost_contact_and_nothing_hangs(driver, x5_bus: X5Bus):
    q0 = np.array(driver.read_joints().positions_rad)
    driver.submit_arm(smooth(q0, [0.4, -0.3, -0.3, 0.4, 0.4, 0.4], 3.0))
    for _ in range(12):  # 0.5 s into the motion, ticking (each tick feeds the watchdog)
        driver.tick()
        time.sleep(DT)
    x5_bus.kill()
    started = time.monotonic()
    reports = run_until_end(driver, "left_arm_controller", timeout_s=5.0)
    end = next(r for r in reports if r.controller == "left_arm_controller" and r.state != TrajectoryState.PLAYING)
    assert end.state == TrajectoryState.STOPPED and "lost contact" in end.reason, end
    assert ends_the_robot(end.state, end.reason)
    assert time.monotonic() - started < 2.0
    assert driver.arm.status.status == "lost"
    with pytest.raises(ContactLostError):
        driver.read_joints()


def test_a_driver_that_asks_nothing_any_more_is_a_frozen_one_and_the_sdk_s_host_holds_the_arm(x5_bus: X5Bus):
    """A SIGSTOPped driver freezes its watchdog thread too: the SDK's host must not play the trajectory to its end.
    Here the driver's side simply goes quiet (its watchdog disarmed, no request) while a 4 s move plays."""
    logged: list[tuple[str, str]] = []
    a = Arx5Arm(SETTINGS, on_sdk_log=lambda level, message: logged.append((level, message)))
    a.connect()
    try:
        q0 = np.array(a.joint_state().positions_rad)
        amplitude = np.array([0.8, 0, 0, 0, 0, 0])
        a.play(a.guard.check(smooth(q0, amplitude, 4.0), q0))
        a.watchdog.disarm()  # frozen alike
        time.sleep(SETTINGS.host_deadman_s + 1.0)
        held = x5_bus.joints("can0")
        time.sleep(3.0)  # past the trajectory's end
        assert np.abs(x5_bus.joints("can0") - held).max() < 2e-3  # held, not played on
        assert held[0] - q0[0] < 0.5 * amplitude[0], f"it went {held[0] - q0[0]:.2f} rad of {amplitude[0]}"
        assert any("no request from the driver" in message for _, message in logged), logged
    finally:
        a.close()


def test_a_failed_start_can_be_retried_once_the_arm_answers(x5_bus: X5Bus):
    x5_bus.client.request("mute", interface="can1", on=True)  # the right arm's power is off
    a = Arx5Arm(dataclasses.replace(SETTINGS, arm="right", interface="can1"))
    try:
        with pytest.raises(ContactLostError, match=r"does not answer|never answered|lost"):
            a.connect()
        x5_bus.client.request("mute", interface="can1", on=False)  # switched on
        a.connect()  # the SDK in its own process: a failed start leaves nothing behind
        assert a.status.status == "idle"
        assert np.allclose(a.joint_state().positions_rad, x5_bus.joints("can1"), atol=2e-3)
    finally:
        a.close()


def test_recovery_needs_a_healthy_bus_and_then_the_arm_moves_again(driver, x5_bus: X5Bus):
    arm = driver.arm
    x5_bus.client.request("fault", interface="can0", motor=7, code=0xB)
    deadline = time.monotonic() + 2.0
    while arm.status.status != "error" and time.monotonic() < deadline:  # noticed at rest too
        time.sleep(0.02)
    assert "motor 7 (joint6) reports MOS over-temperature" in arm.status.detail
    with pytest.raises(HardwareError, match="still has faults"):
        arm.recover_from_errors()
    x5_bus.client.request("fault", interface="can0", motor=7, code=0)
    time.sleep(0.1)
    arm.recover_from_errors()
    q0 = np.array(driver.read_joints().positions_rad)
    driver.submit_arm(smooth(q0, [0.1] * 6, 1.0))
    end = next(r for r in run_until_end(driver, "left_arm_controller") if r.state != TrajectoryState.PLAYING)
    assert end.state == TrajectoryState.FINISHED


def test_the_sdk_s_emergency_state_is_reported_and_release_restarts_the_sdk(x5_bus: X5Bus):
    logged: list[tuple[str, str]] = []
    a = Arx5Arm(SETTINGS, on_sdk_log=lambda level, message: logged.append((level, message)))
    a.connect()
    try:
        x5_bus.client.request("load", interface="can0", motor=2, torque=28.0)  # joint 2 reports ~55 Nm (max 40)
        deadline = time.monotonic() + 3.0
        while a.status.status != "error" and time.monotonic() < deadline:
            time.sleep(0.02)
        assert "emergency state" in a.status.detail, a.status
        assert any("Over current" in message for _, message in logged), logged[:3]
        x5_bus.client.request("load", interface="can0", motor=2, torque=0.0)
        a.recover_from_errors()  # a new SDK process: the old one damps until it is gone
        assert a.status.status == "idle"
        assert not a._host.emergency
    finally:
        a.close()


def test_shutdown_homes_then_damps(x5_bus: X5Bus):
    a = Arx5Arm(dataclasses.replace(SETTINGS, home_before_damping=True))
    a.connect()
    since = x5_bus.client.command_count("can0")
    a.close()
    assert np.abs(x5_bus.joints("can0")).max() < 0.05  # the SDK's home: the folded rest pose
    frames = joint_commands(x5_bus.client.commands("can0", since))
    stiff = [i for i, (_, c) in enumerate(frames) if c.kp > 0]
    damped = [i for i, (_, c) in enumerate(frames) if c.kp == 0 and c.kd > 0]
    assert stiff and damped and max(stiff) < min(damped[-6:])  # homed under gains, then damping to the end
