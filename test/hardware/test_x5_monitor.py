"""The X5 bus monitor against the bus emulator, with a plain sender in the SDK's place (commands to every motor at the
SDK's 2 ms cycle): who answers, a silent motor, error flags in words, a dead bus, a sender that stalls.

The monitor opens a real CAN socket, which the SocketCAN shim (test/conftest.py) turns into a socket on the
emulator's bus; the emulator runs in this process (no SDK here holds the GIL).
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from pathlib import Path

import pytest

from robodojo.hardware.x5_bus import shim
from robodojo.hardware.x5_bus.emulator import BusEmulator
from robodojo.hardware.x5_bus.frames import (
    EC_RANGES,
    X5_LAYOUT,
    CanFrame,
    DamiaoSpecial,
    MitCommand,
    encode_damiao_command,
    encode_damiao_special,
    encode_ec_command,
)
from robodojo.hardware.x5_bus.monitor import READ_PERIOD_S, BusMonitor, motor_names

SILENT_AFTER_S = 0.1
CYCLE_S = 0.002


class Sender:
    """The Damiao motors enabled, then damping commands to every motor each cycle, as the SDK sends them, until
    stopped."""

    def __init__(self, path: Path) -> None:
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        self.sock.connect(str(path))
        self.running = True
        self.position_rad = 0.0  # every motor's commanded position
        self.paused = threading.Event()  # the SDK's loop stalled: it sends nothing meanwhile
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _run(self) -> None:
        for motor in (5, 6, 7, 8):
            self.sock.send(CanFrame(motor, encode_damiao_special(DamiaoSpecial.ENABLE)).pack())
        while self.running:
            if self.paused.is_set():
                time.sleep(CYCLE_S)
                continue
            hold = MitCommand(kp=0.0, kd=1.0, position_rad=self.position_rad, velocity_rad_s=0.0, torque=0.0)
            frames = [CanFrame(i, encode_ec_command(hold)).pack() for i in (1, 2, 4)]
            frames += [CanFrame(i, encode_damiao_command(hold)).pack() for i in (5, 6, 7, 8)]
            for frame in frames:
                self.sock.send(frame)
            self.sock.setblocking(False)
            try:
                while True:
                    self.sock.recv(16)  # the replies, as the SDK reads them
            except BlockingIOError:
                pass
            self.sock.setblocking(True)
            time.sleep(CYCLE_S)

    def stop(self) -> None:
        self.running = False
        self.thread.join(timeout=2.0)
        self.sock.close()


@pytest.fixture
def rig():
    if not shim.preloaded():
        pytest.skip("the SocketCAN shim is not preloaded (test/conftest.py restarts pytest with it when gcc exists)")
    folder = Path(tempfile.mkdtemp(prefix="x5m-"))
    shim_dir_before = os.environ.get(shim.SOCKET_DIR_ENV)
    os.environ[shim.SOCKET_DIR_ENV] = str(folder)
    bus = BusEmulator("can0", folder, joints_rad=[0.0, 0.1, 0.1, 0.0, 0.0, 0.0]).start()
    sender = Sender(bus.path)
    monitor = BusMonitor("can0", motor_names(X5_LAYOUT), silent_after_s=SILENT_AFTER_S).start()
    yield bus, sender, monitor
    monitor.close()
    sender.stop()
    bus.close()
    if shim_dir_before is not None:
        os.environ[shim.SOCKET_DIR_ENV] = shim_dir_before


def _health_after(monitor: BusMonitor, seconds: float):
    time.sleep(seconds)
    return monitor.health()


def test_every_motor_answering_is_healthy_and_each_is_named(rig):
    _, _, monitor = rig
    health = monitor.wait_until_all_answer(2.0)
    assert health.ok and not health.lost, health.problems
    assert [m.name for m in health.motors] == ["joint1", "joint2", "joint3", "joint4", "joint5", "joint6", "gripper"]
    assert all(m.temperature_c == 30.0 for m in health.motors)


def test_a_silent_motor_is_named_while_the_others_answer(rig):
    bus, _, monitor = rig
    monitor.wait_until_all_answer(2.0)
    bus.silence(6)
    health = _health_after(monitor, 3 * SILENT_AFTER_S)
    assert not health.lost
    assert [p for p in health.problems if "silent" in p] == [p for p in health.problems if "motor 6 (joint5)" in p]
    assert any("motor 6 (joint5) silent" in p for p in health.problems), health.problems
    later = _health_after(monitor, 2 * SILENT_AFTER_S)
    assert later.problems == health.problems  # one fault while it lasts: the driver logs it once
    assert next(m for m in later.motors if m.motor_id == 6).silent_s > 4 * SILENT_AFTER_S  # how long, for diagnostics


def test_error_flags_are_reported_in_words(rig):
    bus, _, monitor = rig
    monitor.wait_until_all_answer(2.0)
    bus.set_fault(5, 0xA)
    bus.set_fault(1, 0x3)
    health = _health_after(monitor, 0.1)
    assert "motor 5 (joint4) reports over-current" in health.problems
    assert "motor 1 (joint1) reports error code 0x03" in health.problems


def test_a_bus_where_nobody_answers_is_lost_not_a_list_of_silent_motors(rig):
    bus, _, monitor = rig
    monitor.wait_until_all_answer(2.0)
    bus.mute()
    health = _health_after(monitor, 3 * SILENT_AFTER_S)
    assert health.lost and len(health.problems) == 7


def test_a_stalled_sender_leaves_the_motors_unasked_not_silent_and_the_gap_is_reported(rig):
    """The SDK's loop stalling (its process starved) is not a bus fault: no motor was asked, so none is silent, and
    the arm is not taken for lost; the gap shows in the health for diagnostics."""
    bus, sender, monitor = rig
    monitor.wait_until_all_answer(2.0)
    sender.paused.set()
    stalled = _health_after(monitor, 5 * SILENT_AFTER_S)
    assert not stalled.lost and stalled.ok, stalled.problems
    assert stalled.commands_quiet_s is not None and stalled.commands_quiet_s > 4 * SILENT_AFTER_S
    assert stalled.longest_command_gap_s >= stalled.commands_quiet_s
    sender.paused.clear()
    again = monitor.wait_until_all_answer(2.0, faults_allowed=True)  # every motor heard again
    assert again.ok and again.commands_quiet_s < 2 * SILENT_AFTER_S
    assert again.longest_command_gap_s > 4 * SILENT_AFTER_S  # kept after the stall, for the operator
    # A motor that stops answering while it is asked again is silent as before.
    bus.silence(6)
    later = _health_after(monitor, 3 * SILENT_AFTER_S)
    assert any("motor 6 (joint5) silent" in p for p in later.problems), later.problems


def test_a_silent_motor_s_last_answered_command_is_known(rig):
    """What a motor that fell silent was last told and answered (a stop holds it there, robodojo.hardware.arx5),
    read from the commands and the answers on the bus: not the commands sent after it fell silent."""
    bus, sender, monitor = rig
    monitor.wait_until_all_answer(2.0)
    sender.position_rad = 0.1
    time.sleep(5 * READ_PERIOD_S)
    bus.silence(6)  # a Damiao motor ...
    bus.silence(2)  # ... and an EC one
    sender.position_rad = 0.2
    time.sleep(5 * READ_PERIOD_S)
    answered = monitor.answered_commands_rad()
    step = EC_RANGES.position_rad.resolution
    for motor in (1, 4, 5, 7, 8):
        assert abs(answered[motor] - 0.2) <= step, (motor, answered)
    for motor in (2, 6):
        assert abs(answered[motor] - 0.1) <= step, (motor, answered)
