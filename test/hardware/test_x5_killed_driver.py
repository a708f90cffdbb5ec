"""A killed X5 driver ends in the documented state (issue 32), read from the bus emulator's command log.

The driver (an Arx5Arm playing a trajectory, in a process of its own) is killed with SIGKILL mid-motion. Its SDK
host notices (its socket to the driver closes) and ends alone: it holds the measured joints with zero velocity,
then sends the SDK's damping (kp 0, zero velocity) and exits (robodojo.hardware.arx5_host ``_Host.driver_gone``).
What the motors do once the bus is quiet is their firmware's: with the Damiao CAN timeout set, the wrist and gripper
motors disable themselves ("communication lost"); without it, and on the EC motors, the last damping command stays.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import EMULATED_SILENT_AFTER_S, X5Bus

from robodojo.hardware.x5_bus.frames import DAMIAO_RANGES, EC_RANGES, MitCommand

JOINT_MOTORS = (1, 2, 4, 5, 6, 7)
EC_MOTORS = (1, 2, 4)
DAMIAO_MOTORS = (5, 6, 7, 8)
GRIPPER_MOTOR = 8
START_TIMEOUT_S = 60.0  # the driver's interpreter, the SDK host's, the connection (seconds on a loaded machine)
HOST_EXIT_TIMEOUT_S = 10.0
DAMIAO_TIMEOUT_S = 0.05

DRIVER = textwrap.dedent(
    f"""
    import dataclasses, time
    import numpy as np
    from robodojo.control.trajectory_player import TrajectoryCommand
    from robodojo.hardware.arx5 import Arx5Arm
    from robodojo.hardware.settings import load_arx5_settings

    settings = dataclasses.replace(
        load_arx5_settings().arm("left"), home_before_damping=False, silent_after_s={EMULATED_SILENT_AFTER_S}
    )
    arm = Arx5Arm(settings)
    arm.connect()
    q0 = np.array(arm.joint_state().positions_rad)
    dt = settings.robot.control_dt_s
    times = np.arange(1, round(3.0 / dt) + 1) * dt
    s = (1 - np.cos(np.pi * times / 3.0)) / 2
    points = q0 + np.outer(s, [0.4, -0.3, -0.3, 0.4, 0.4, 0.4])
    command = TrajectoryCommand(settings.joint_names, tuple(times), tuple(map(tuple, points)))
    arm.play(arm.guard.check(command, q0))
    print("PLAYING", flush=True)
    while True:  # a live driver: feeds the watchdog and asks for the state
        arm.feed()
        arm.joint_state()
        time.sleep(0.02)
    """
)


def _children(pid: int) -> list[int]:
    return [int(p) for p in Path(f"/proc/{pid}/task/{pid}/children").read_text().split()]


def _running(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


@pytest.mark.parametrize("damiao_timeout_s", [None, DAMIAO_TIMEOUT_S], ids=["no_firmware_timeout", "damiao_timeout"])
def test_a_killed_driver_leaves_the_arm_damped_at_rest_and_its_sdk_host_exits(x5_bus: X5Bus, damiao_timeout_s):
    x5_bus.client.request("can_timeout", interface="can0", timeout_s=damiao_timeout_s)
    driver = subprocess.Popen(
        [sys.executable, "-c", DRIVER], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, start_new_session=True
    )
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        output = b""
        assert driver.stdout is not None
        while b"PLAYING" not in output and time.monotonic() < deadline and driver.poll() is None:
            output += driver.stdout.readline()
        assert b"PLAYING" in output, output[-3000:].decode(errors="replace")
        time.sleep(1.0)  # mid-motion
        (host,) = [p for p in _children(driver.pid) if b"arx5_host" in Path(f"/proc/{p}/cmdline").read_bytes()]
        killed_s = time.monotonic()
        os.kill(driver.pid, signal.SIGKILL)
        driver.wait(timeout=10)
        while _running(host) and time.monotonic() < killed_s + HOST_EXIT_TIMEOUT_S:
            time.sleep(0.05)
        assert not _running(host), "the SDK host outlived its driver"
    finally:
        if driver.poll() is None:
            os.killpg(driver.pid, signal.SIGKILL)
            driver.wait(timeout=10)
    time.sleep(0.2)  # the emulator's log is flushed every 20 ms
    frames = [f for f in x5_bus.client.commands("can0") if f.time_s > killed_s and isinstance(f.command, MitCommand)]
    assert frames, "nothing reached the motors after the kill"
    for motor in (*JOINT_MOTORS, GRIPPER_MOTOR):
        mine = [f.command for f in frames if f.motor_id == motor]
        step = (EC_RANGES if motor in EC_MOTORS else DAMIAO_RANGES).velocity_rad_s.resolution
        last = mine[-1]
        assert last.kp == 0.0 and abs(last.velocity_rad_s) <= step, (motor, last)  # damping, zero velocity: the end
        damping_from = next(i for i, c in enumerate(mine) if c.kp == 0.0)
        assert all(c.kp == 0.0 for c in mine[damping_from:]), motor  # nothing stiff after the damping began
        if motor != GRIPPER_MOTOR:
            assert last.kd > 0.0, (motor, last)
            stiff = [c for c in mine[:damping_from] if c.kp > 0.0]
            assert stiff and abs(stiff[-1].velocity_rad_s) <= step, (motor, stiff[-1:])  # stopped before damping
    # The bus is quiet and the arm stands still.
    count = x5_bus.client.command_count("can0")
    before = x5_bus.joints("can0")
    time.sleep(0.5)
    assert x5_bus.client.command_count("can0") == count
    assert np.abs(x5_bus.joints("can0") - before).max() < 1e-4
    motors = {int(m): v for m, v in x5_bus.client.request("motors", interface="can0")["motors"].items()}
    for motor in DAMIAO_MOTORS:
        if damiao_timeout_s is None:  # it keeps executing the last (damping) command
            assert motors[motor]["enabled"] and motors[motor]["command"]["kp"] == 0.0, motors[motor]
        else:  # its firmware disabled it: communication lost
            assert not motors[motor]["enabled"] and motors[motor]["fault"] == 0xD, motors[motor]
    for motor in EC_MOTORS:  # no timeout known: the last command, damping
        command = motors[motor]["command"]
        assert command["kp"] == 0.0 and command["kd"] > 0.0, motors[motor]
