"""A motor-bus emulator for one ARX X5 arm: the real SDK talks to it through the SocketCAN shim (shim.py).

The emulator listens on the Unix socket ``<socket_dir>/<interface>`` (SOCK_SEQPACKET: one datagram is one Linux
``struct can_frame``), which is where the shim connects a CAN socket the SDK binds to ``<interface>``. Every frame
to a motor of the X5 profile is logged, handed to that motor (motors.py) and answered with its feedback, as the real
motors answer each command. Frames to other ids are logged and not answered (nothing else is on an X5's bus).

Several sockets may join, as several nodes share a CAN bus: each frame reaches the motors and every other socket, and
each reply reaches them all (so a read-only bus monitor beside the SDK sees what the SDK sees). An SDK that closes
its socket (a driver restart) leaves the motors where they are, and the next one finds them there, as real motors
keep their power and position.

Faults for tests (thread-safe, effective from the next frame): :meth:`BusEmulator.silence` (one motor stops
answering), :meth:`BusEmulator.set_fault` (its feedback carries an error code), :meth:`BusEmulator.mute` (the whole
bus stops answering: a dead USB-CAN adapter or the arm's power off), :meth:`BusEmulator.block_gripper` (an object
of some width between the fingers) and :meth:`BusEmulator.load` (a motor reports more torque than it outputs). And
the motors' firmware: :meth:`BusEmulator.set_can_timeout` (the Damiao motors' CAN timeout, motors.py).
"""

from __future__ import annotations

import contextlib
import selectors
import socket
import struct
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from robodojo.hardware.realtime import threads_started_at
from robodojo.hardware.x5_bus.frames import (
    CAN_FRAME_SIZE,
    X5_LAYOUT,
    ArmLayout,
    CanFrame,
    DamiaoSpecial,
    MitCommand,
    decode_command,
    family_of,
)
from robodojo.hardware.x5_bus.motors import EmulatedMotor

# One command-log record: the emulator's monotonic time [s], then the frame as struct can_frame.
LOG_RECORD = struct.Struct("<d16s")
# The serving thread sleeps this long after each pass over its sockets, so one wake answers the few frames queued
# meanwhile: a wake per frame made the emulator the busiest process of a 2-core test graph. A motor's answer comes up
# to this much later than on a real bus (where it takes about 0.1 ms); the SDK reads answers on its own thread.
BATCH_S = 0.0005
LOG_FLUSH_S = 0.02  # a log file is at most this far behind the bus (a flush per frame would double the syscalls)


@dataclass(frozen=True)
class LoggedCommand:
    """One command frame from the log, decoded."""

    time_s: float  #: the emulator's monotonic clock
    motor_id: int
    command: MitCommand | DamiaoSpecial | None  #: None: a frame to an id the X5 does not use, or undecodable
    raw: bytes  #: the data bytes as sent


def decode_log(data: bytes) -> list[LoggedCommand]:
    """Records of a command log file decoded."""
    out = []
    for time_s, raw in LOG_RECORD.iter_unpack(data[: len(data) - len(data) % LOG_RECORD.size]):
        frame = CanFrame.unpack(raw)
        try:
            command: MitCommand | DamiaoSpecial | None = decode_command(frame)
        except ValueError:
            command = None
        out.append(LoggedCommand(time_s, frame.can_id, command, frame.data))
    return out


class BusEmulator:
    """The motors of one X5 arm behind ``<socket_dir>/<interface>`` (see the module docstring)."""

    def __init__(
        self,
        interface: str,
        socket_dir: str | Path,
        *,
        joints_rad: Sequence[float],
        gripper_width_m: float = 0.0,
        layout: ArmLayout = X5_LAYOUT,
        log_path: str | Path | None = None,
    ) -> None:
        if len(joints_rad) != len(layout.joint_motor_ids):
            raise ValueError(f"{len(layout.joint_motor_ids)} joint positions expected, got {len(joints_rad)}")
        self.interface = interface
        self.path = Path(socket_dir) / interface
        self.layout = layout
        self.joint_motors = [
            EmulatedMotor(i, family_of(i), float(q), speed)
            for i, q, speed in zip(layout.joint_motor_ids, joints_rad, layout.joint_speed_rad_s, strict=True)
        ]
        self.gripper_motor = EmulatedMotor(
            layout.gripper_motor_id,
            family_of(layout.gripper_motor_id),
            layout.gripper_rad(gripper_width_m),
            layout.gripper_speed_rad_s,
            torque_limit=layout.gripper_torque_limit,
        )
        self.motors = {m.motor_id: m for m in [*self.joint_motors, self.gripper_motor]}
        self._lock = threading.Lock()  # the motors, between the serving thread and callers
        self._muted = False
        self._log_file: BinaryIO | None = open(log_path, "wb", buffering=1 << 16) if log_path else None  # noqa: SIM115
        self._flushed_s = 0.0
        self.frames_received = 0
        self.frames_answered = 0
        self.connections = 0
        self.frames_dropped = 0  # frames a socket did not read in time
        self._server: socket.socket | None = None
        self._peers: list[socket.socket] = []  # the sockets on the bus (the SDK's, a bus monitor's)
        self._loop: BusLoop | None = None  # start()'s own serving thread

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(self) -> BusEmulator:
        """Listen and serve on a thread of this process (:func:`serve_buses` serves several on one thread)."""
        self.listen()
        self._loop = serve_buses([self])
        return self

    def listen(self) -> None:
        """Open the bus socket; :class:`BusLoop` accepts and serves on it."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        server = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        server.bind(str(self.path))
        server.listen(8)
        self._server = server

    def close(self) -> None:
        """Stop serving: the SDK's next reads find the bus gone."""
        if self._loop is not None:
            self._loop.close()
            self._loop = None
        for sock in [*self._peers, self._server]:
            if sock is not None:
                with contextlib.suppress(OSError):
                    sock.shutdown(socket.SHUT_RDWR)
                with contextlib.suppress(OSError):
                    sock.close()
        self._peers.clear()
        with contextlib.suppress(FileNotFoundError):
            self.path.unlink()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> BusEmulator:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- state ----------------------------------------------------------------------------------------------------
    def joint_positions_rad(self) -> list[float]:
        with self._lock:
            now = time.monotonic()
            for motor in self.joint_motors:
                motor.advance(now)
            return [m.state.position_rad for m in self.joint_motors]

    def gripper_width_m(self) -> float:
        with self._lock:
            self.gripper_motor.advance(time.monotonic())
            return self.layout.gripper_m(self.gripper_motor.state.position_rad)

    def gripper_command_m(self) -> float | None:
        """The width the SDK last commanded the gripper to [m], or None before any command."""
        with self._lock:
            cmd = self.gripper_motor.command
            return None if cmd is None else self.layout.gripper_m(cmd.position_rad)

    # -- faults ---------------------------------------------------------------------------------------------------
    def silence(self, motor_id: int, silent: bool = True) -> None:
        """``motor_id`` stops answering (or answers again)."""
        with self._lock:
            self._motor(motor_id).silent = silent

    def set_fault(self, motor_id: int, code: int) -> None:
        """``motor_id``'s feedback carries error ``code`` (0 clears it); a motor in fault stops applying torque."""
        with self._lock:
            self._motor(motor_id).fault_code = code

    def mute(self, muted: bool = True) -> None:
        """The whole bus stops answering (the socket stays open, as a CAN bus without motors does)."""
        with self._lock:
            self._muted = muted

    def block_gripper(self, width_m: float | None) -> None:
        """An object ``width_m`` wide between the fingers: they close no further, and fingers already closer stand at
        its width (None: nothing there)."""
        with self._lock:
            motor = self.gripper_motor
            motor.advance(time.monotonic())
            motor.blocked_below_rad = None if width_m is None else self.layout.gripper_rad(width_m)
            if motor.blocked_below_rad is not None and motor.state.position_rad < motor.blocked_below_rad:
                motor.state.position_rad = motor.blocked_below_rad

    def set_can_timeout(self, timeout_s: float | None) -> None:
        """Every Damiao motor's firmware CAN timeout (register 9; None: off, the default): after that long without a
        frame it disables itself and reports "communication lost" (motors.py)."""
        with self._lock:
            for motor in self.motors.values():
                motor.can_timeout_s = timeout_s

    def motor_states(self) -> dict[int, dict[str, object]]:
        """Each motor's firmware state: enabled (Damiao), its fault code, and its last command's gains and velocity
        (None: it has none, disabled)."""
        with self._lock:
            now = time.monotonic()
            out: dict[int, dict[str, object]] = {}
            for motor_id, motor in self.motors.items():
                motor.advance(now)
                cmd = motor.command
                out[motor_id] = {
                    "enabled": motor.enabled,
                    "fault": motor.fault_code,
                    "command": None if cmd is None else {"kp": cmd.kp, "kd": cmd.kd, "velocity": cmd.velocity_rad_s},
                }
            return out

    def load(self, motor_id: int, torque: float) -> None:
        """``motor_id`` reports ``torque`` more than it outputs (a load it holds: the SDK's over-current check)."""
        with self._lock:
            self._motor(motor_id).extra_torque = torque

    def _motor(self, motor_id: int) -> EmulatedMotor:
        if motor_id not in self.motors:
            raise ValueError(f"no motor {motor_id} on this bus; motors: {sorted(self.motors)}")
        return self.motors[motor_id]

    # -- serving (on a BusLoop's thread) ------------------------------------------------------------------------
    def accept(self) -> socket.socket | None:
        """A new socket on the bus (None once closed)."""
        assert self._server is not None
        try:
            conn, _ = self._server.accept()
        except OSError:
            return None
        self._peers.append(conn)
        self.connections += 1
        return conn

    def receive(self, sock: socket.socket) -> bool | None:
        """Handle one frame from ``sock``: it reaches the motors and every other socket, and the reply reaches every
        socket (a CAN bus delivers every frame to every node; a socket does not get its own frames back). True when
        a frame was handled, None when none is queued, False when that socket is gone (it is dropped)."""
        try:
            raw = sock.recv(CAN_FRAME_SIZE, socket.MSG_DONTWAIT)
        except BlockingIOError:
            return None
        except OSError:
            raw = b""
        if len(raw) != CAN_FRAME_SIZE:  # closed (b""), or not a CAN frame: not an SDK behind the shim
            self._drop(sock)
            return False
        now = time.monotonic()
        frame = CanFrame.unpack(raw)
        with self._lock:
            self.frames_received += 1
            record = LOG_RECORD.pack(now, raw)
            if self._log_file is not None:
                self._log_file.write(record)
                if now - self._flushed_s > LOG_FLUSH_S:
                    self._log_file.flush()
                    self._flushed_s = now
            motor = self.motors.get(frame.can_id)
            reply = None
            if motor is not None and not self._muted:
                with contextlib.suppress(ValueError):  # undecodable: a real motor ignores it too
                    reply = motor.receive(frame.data, now)
        for peer in self._peers:
            if peer is not sock:
                self._send(peer, raw)
        if reply is not None:
            packed = reply.pack()
            for peer in self._peers:
                self._send(peer, packed)
            self.frames_answered += 1
        return True

    def _send(self, peer: socket.socket, raw: bytes) -> None:
        try:
            peer.send(raw, socket.MSG_DONTWAIT)  # a reader that does not keep up loses frames, as on a real bus
        except BlockingIOError:
            self.frames_dropped += 1
        except OSError:
            pass  # gone: its own recv notices

    def _drop(self, sock: socket.socket) -> None:
        with contextlib.suppress(ValueError):
            self._peers.remove(sock)
        with contextlib.suppress(OSError):
            sock.close()


class BusLoop:
    """One thread that serves several buses: accepts their sockets and answers their frames.

    One thread for all of them, not one each: a thread per bus spent the emulator's time handing Python's GIL back
    and forth (both arms holding, measured: 64% of a core with a thread per bus, 28% with one arm; one thread that
    drains every socket each BATCH_S: 44%).
    """

    def __init__(self, buses: Sequence[BusEmulator]) -> None:
        self.buses = list(buses)
        self._closed = threading.Event()
        self._wake_r, self._wake_w = socket.socketpair()  # close() wakes the serving thread's select()
        self._thread = threading.Thread(target=self._serve, name="x5-bus", daemon=True)

    def start(self, priority: int = 0) -> BusLoop:
        """Serve on a thread of SCHED_FIFO ``priority`` where the OS allows it (0: the normal scheduler)."""
        with threads_started_at(priority):
            self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        with contextlib.suppress(OSError):
            self._wake_w.send(b"x")
        if self._thread.is_alive() and self._thread is not threading.current_thread():
            self._thread.join(timeout=5.0)
        self._wake_r.close()
        self._wake_w.close()

    def _serve(self) -> None:
        with selectors.DefaultSelector() as selector:
            selector.register(self._wake_r, selectors.EVENT_READ)
            for bus in self.buses:
                assert bus._server is not None, f"{bus.interface}: listen() first"
                selector.register(bus._server, selectors.EVENT_READ, (bus, True))
            while not self._closed.is_set():
                for key, _ in selector.select():
                    if key.data is None:
                        return  # close()
                    bus, is_server = key.data
                    if is_server:
                        conn = bus.accept()
                        if conn is None:
                            return  # the bus closed
                        selector.register(conn, selectors.EVENT_READ, (bus, False))
                    else:
                        while (handled := bus.receive(key.fileobj)) is True:
                            pass  # every frame queued on this socket
                        if handled is False:
                            selector.unregister(key.fileobj)
                time.sleep(BATCH_S)


def serve_buses(buses: Sequence[BusEmulator], priority: int = 0) -> BusLoop:
    """Serve ``buses`` (each already listening) on one thread of this process, at SCHED_FIFO ``priority`` where
    allowed."""
    return BusLoop(buses).start(priority)
