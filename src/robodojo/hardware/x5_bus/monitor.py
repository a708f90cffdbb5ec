"""A read-only monitor of one X5 arm's motor bus: which motors answer, where they are, and what errors they report.

arx5-interface 0.1.5 keeps each motor's last answer and hands nothing else up: a motor that stops answering keeps its
last position in ``get_joint_state()``, a motor's error flag is never reported, and a bus that goes dead (a USB-CAN
adapter unplugged, the arm's power off, the emulator killed) raises nothing (measured against the bus emulator). So
the driver listens to the bus itself, on a CAN socket of its own beside the SDK's (SocketCAN gives every socket on an
interface every frame), and decodes the motors' feedback frames: the time each motor last answered, its position,
its error or state code, its temperature; and the position of the last command each answered (what a motor that fell
silent was last told). It never sends.
"""

from __future__ import annotations

import contextlib
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

from robodojo.errors import HardwareError
from robodojo.hardware.x5_bus.frames import (
    CAN_FRAME_SIZE,
    DAMIAO_DISABLED,
    DAMIAO_ENABLED,
    DAMIAO_REPLY_ID,
    EC_IDS,
    EC_RANGES,
    ArmLayout,
    decode_damiao_feedback,
    decode_ec_feedback,
)

# Damiao state codes in a feedback frame's high nibble (Damiao's DM-J4310 manual).
DAMIAO_FAULTS = {
    0x8: "over-voltage",
    0x9: "under-voltage",
    0xA: "over-current",
    0xB: "MOS over-temperature",
    0xC: "rotor over-temperature",
    0xD: "communication lost",
    0xE: "overload",
}
_ID_BYTES = struct.Struct("<I")
_CAN_EFF_MASK = 0x1FFFFFFF
DAMIAO_SPECIAL_PREFIX = b"\xff" * 7  # enable, disable, clear error, set zero: not a position command
READ_PERIOD_S = 0.02  # the reader drains its socket this often
RECEIVE_BUFFER_BYTES = 32768  # what the socket may queue between two drains (a few SDK cycles of frames)
SILENT_CYCLES = 3  # a motor is silent only once the others have answered this many times without it
ASKED_UNANSWERED = 3  # ... and the SDK has sent it this many commands it did not answer


@dataclass(frozen=True)
class MotorHealth:
    motor_id: int
    name: str  #: what it drives ("joint3", "gripper")
    silent_s: float | None  #: since its last answer; None: never answered
    fault: str  #: "" when it reports none, else the reported error in words
    temperature_c: float | None


@dataclass(frozen=True)
class BusHealth:
    """One look at the bus: ``problems`` lists what is wrong in sentences, empty when all is well."""

    interface: str
    connected: bool  #: the monitor's socket is on the bus
    lost: bool  #: nothing answers at all (a dead bus, adapter or power), as opposed to some motors failing
    motors: tuple[MotorHealth, ...]
    problems: tuple[str, ...]
    heard: bool  #: every motor answered within the monitor's silent_after_s, whatever it reported
    #: since the SDK's last command to any motor (None: none seen yet); long gaps mean its loop stalled
    commands_quiet_s: float | None
    longest_command_gap_s: float  #: the longest time without a command since the monitor started

    @property
    def ok(self) -> bool:
        return not self.problems


class BusMonitor:
    """Listens to ``interface`` on a thread; :meth:`health` says which motors answer and what they report.

    ``motors`` maps each motor id to what it drives. A motor counts as silent once the monitor has been reading for
    ``silent_after_s`` since its last answer while the SDK went on asking it (its command frames are on the bus too)
    and the other motors went on answering (the SDK asks every motor at 500 Hz, so a few missed cycles are already
    unusual); the bus is lost when no motor answers what it is asked for that long. Silence is measured on the
    monitor's own reading, not the wall clock, and against the others' answers: a monitor whose thread does not get
    to run, or whose socket queue overflowed, loses time and frames of every motor alike, and no motor is called
    silent for it. A motor nobody asked is not silent either: when the SDK's loop stalls (measured on a loaded 2-core
    CI machine: one arm's SDK sent nothing for 0.3-1.6 s at a time while the other arm's went on) the motors hold
    their last command; that shows as ``commands_quiet_s`` and ``longest_command_gap_s`` instead.
    """

    def __init__(
        self,
        interface: str,
        motors: dict[int, str],
        *,
        silent_after_s: float,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.interface = interface
        self.motor_names = dict(motors)
        self.silent_after_s = silent_after_s
        self._clock = clock
        self._seen_s: dict[int, float] = {}
        self._seen_frames: dict[int, int] = {}  # self.frames when each motor last answered
        self._state: dict[int, int] = {}
        self._temperature: dict[int, float] = {}
        self._position: dict[int, float] = {}
        self._commanded_raw: dict[int, int] = {}  # the position field of each motor's last MIT command on the bus
        self._answered_raw: dict[int, int] = {}  # ... of the last command the motor answered (what it executes)
        self._asked: dict[int, int] = {}  # commands to each motor since its last answer
        self._commanded_s: float | None = None  # when the reader last found a command frame
        self._quiet_drains = 0  # the reader's drains since then that found none
        self.longest_command_gap_s = 0.0  #: the longest time the reader found no command, once commands came again
        self._read_s: float | None = None  # when the reader last came back from the socket (a frame or a timeout)
        self._sock: socket.socket | None = None
        self._connected = False
        self._closed = threading.Event()
        self._thread: threading.Thread | None = None
        self.frames = 0  #: feedback frames decoded
        self.commands = 0  #: command frames seen

    def start(self) -> BusMonitor:
        """Open a CAN socket on the interface (HardwareError when the OS has no CAN or no such interface)."""
        try:
            sock = socket.socket(socket.AF_CAN, socket.SOCK_RAW, socket.CAN_RAW)
        except (OSError, AttributeError) as exc:
            raise HardwareError(f"cannot open a CAN socket to monitor {self.interface}: {exc}") from None
        try:
            ids = sorted({DAMIAO_REPLY_ID, *self.motor_names})  # the motors' commands and answers
            filters = b"".join(struct.pack("=II", i, socket.CAN_SFF_MASK) for i in ids)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_CAN_RAW, socket.CAN_RAW_FILTER, filters)
            with contextlib.suppress(OSError):
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RECEIVE_BUFFER_BYTES)
            sock.bind((self.interface,))
        except OSError as exc:
            sock.close()
            raise HardwareError(f"cannot listen on {self.interface}: {exc}") from None
        self._sock, self._connected = sock, True
        self._thread = threading.Thread(target=self._read, name=f"bus-monitor-{self.interface}", daemon=True)
        self._thread.start()
        return self

    def close(self) -> None:
        self._closed.set()
        if self._thread is not None:
            self._thread.join(timeout=2.0)
        if self._sock is not None:
            self._sock.close()
            self._sock = None

    def wait_until_all_answer(self, timeout_s: float, *, faults_allowed: bool = False) -> BusHealth:
        """Wait up to ``timeout_s`` for every motor to have answered without a fault (with ``faults_allowed``: to have
        answered, whatever it reported); the health then."""
        deadline = self._clock() + timeout_s
        while True:
            health = self.health()
            if (health.heard if faults_allowed else health.ok) or self._clock() >= deadline:
                return health
            time.sleep(0.01)

    def health(self) -> BusHealth:
        now = self._read_s if self._read_s is not None else self._clock()
        quiet = {}  # motor -> seconds since its last answer (None: never), on the monitor's own reading
        for motor_id in self.motor_names:
            seen = self._seen_s.get(motor_id)
            quiet[motor_id] = None if seen is None else max(0.0, now - seen)
        nobody = all(q is None or self._unanswered(m, q) for m, q in quiet.items())
        motors, problems = [], []
        for motor_id, name in self.motor_names.items():
            silent_s, fault = quiet[motor_id], self._fault(motor_id)
            if silent_s is None:
                problems.append(f"motor {motor_id} ({name}) never answered")
            elif self._unanswered(motor_id, silent_s) and (nobody or self._others_answered(motor_id)):
                # The words stay the same while it lasts (how long: MotorHealth.silent_s), so it reads as one fault.
                problems.append(f"motor {motor_id} ({name}) silent (no answer for over {self.silent_after_s:g} s)")
            elif fault:
                problems.append(f"motor {motor_id} ({name}) reports {fault}")
            motors.append(MotorHealth(motor_id, name, silent_s, fault, self._temperature.get(motor_id)))
        if not self._connected:
            problems.insert(0, f"the bus monitor lost {self.interface}")
        lost = not self._connected or nobody
        heard = self._connected and all(q is not None and q <= self.silent_after_s for q in quiet.values())
        commands_quiet_s = None if self._commanded_s is None else max(0.0, now - self._commanded_s)
        ongoing_gap_s = commands_quiet_s if commands_quiet_s is not None and self._quiet_drains else 0.0
        longest_gap_s = max(self.longest_command_gap_s, ongoing_gap_s)
        return BusHealth(
            self.interface, self._connected, lost, tuple(motors), tuple(problems), heard, commands_quiet_s,
            longest_gap_s,
        )  # fmt: skip

    def answered_commands_rad(self) -> dict[int, float]:
        """Each motor's commanded position [rad] in the last command it answered: what a motor that fell silent was
        last told (and executes still, if it only lost its link); motors that answered no command are missing."""
        return {m: EC_RANGES.position_rad.decode(raw) for m, raw in self._answered_raw.items()}

    def positions_rad(self) -> dict[int, float]:
        """Each motor's position in its last answer [rad] (motor side: the gripper's is its motor's angle); motors
        that never answered are missing."""
        return dict(self._position)

    def _unanswered(self, motor_id: int, silent_s: float) -> bool:
        """Whether ``motor_id`` has not answered for silent_after_s while the SDK asked it."""
        return silent_s > self.silent_after_s and self._asked.get(motor_id, 0) >= ASKED_UNANSWERED

    def _others_answered(self, motor_id: int) -> bool:
        """Whether the other motors answered for SILENT_CYCLES of the SDK's cycles since ``motor_id`` last did. A
        reader that falls behind loses frames of every motor alike (its socket's queue overflows: the kernel's, or
        the emulator's), so a motor whose frames went missing with everyone else's is not silent."""
        since = self.frames - self._seen_frames.get(motor_id, 0)
        return since >= SILENT_CYCLES * (len(self.motor_names) - 1)

    def _fault(self, motor_id: int) -> str:
        state = self._state.get(motor_id)
        if state is None:
            return ""
        if motor_id in EC_IDS:
            return f"error code {state:#04x}" if state else ""
        if state == DAMIAO_ENABLED:
            return ""
        if state == DAMIAO_DISABLED:
            return "disabled"
        return DAMIAO_FAULTS.get(state, f"state {state:#x}")

    def _read(self) -> None:
        """Every READ_PERIOD_S, what the socket queued since (at most its receive buffer: the kernel drops the rest,
        as does the emulator). A look every 20 ms is enough to call a motor silent after 100 ms, and it reads a few
        thousand frames a second instead of the bus's 7,000 (Python's GIL is shared with the driver's executor)."""
        sock = self._sock
        assert sock is not None
        while not self._closed.wait(READ_PERIOD_S):
            asked_before = self.commands
            while True:
                try:
                    raw = sock.recv(CAN_FRAME_SIZE, socket.MSG_DONTWAIT)
                except BlockingIOError:
                    break
                except OSError:
                    self._connected = False
                    return
                if len(raw) != CAN_FRAME_SIZE:
                    self._connected = False  # the bus closed (an emulator that went away)
                    return
                self._take(raw)
            self._read_s = now = self._clock()
            if self.commands != asked_before:
                # A gap is drains that found no command: a reader that was late itself finds the queued ones.
                if self._commanded_s is not None and self._quiet_drains:
                    self.longest_command_gap_s = max(self.longest_command_gap_s, now - self._commanded_s)
                self._commanded_s, self._quiet_drains = now, 0
            else:
                self._quiet_drains += 1
        self._connected = False

    def _take(self, raw: bytes) -> None:
        can_id = _ID_BYTES.unpack_from(raw)[0] & _CAN_EFF_MASK
        data = raw[8 : 8 + raw[4]]
        try:
            if can_id == DAMIAO_REPLY_ID:
                fb = decode_damiao_feedback(data)
            elif can_id in EC_IDS and len(data) == 8 and data[0] >> 5 == 1:  # an answer, not a command
                fb = decode_ec_feedback(can_id, data)
            else:
                if can_id in self.motor_names:  # a command: the other frames on a motor's id
                    self._asked[can_id] = self._asked.get(can_id, 0) + 1
                    self.commands += 1
                    raw_position = _command_position_raw(can_id, data)
                    if raw_position is not None:
                        self._commanded_raw[can_id] = raw_position
                return
        except ValueError:
            return
        if fb.motor_id in self.motor_names:
            self._asked[fb.motor_id] = 0
            if fb.motor_id in self._commanded_raw:  # a motor answers each command it hears
                self._answered_raw[fb.motor_id] = self._commanded_raw[fb.motor_id]
            self._seen_s[fb.motor_id] = self._clock()
            self._seen_frames[fb.motor_id] = self.frames
            self._state[fb.motor_id] = fb.state
            self._temperature[fb.motor_id] = fb.temperature_c
            self._position[fb.motor_id] = fb.position_rad
            self.frames += 1


def _command_position_raw(motor_id: int, data: bytes) -> int | None:
    """The 16-bit position field of an MIT command frame to ``motor_id`` (None for a Damiao special command); read
    without decoding the rest: the monitor sees some 3,500 commands a second per arm."""
    if len(data) != 8:
        return None
    if motor_id in EC_IDS:
        return data[3] << 8 | data[4]  # after mode, kp and kd (frames.encode_ec_command)
    if data[:7] == DAMIAO_SPECIAL_PREFIX:
        return None
    return data[0] << 8 | data[1]


def motor_names(layout: ArmLayout) -> dict[int, str]:
    """What each motor of an arm drives, for :class:`BusMonitor` (joints numbered from 1)."""
    joints = {m: f"joint{i + 1}" for i, m in enumerate(layout.joint_motor_ids)}
    return {**joints, layout.gripper_motor_id: "gripper"}
