"""The ARX X5's motor protocol on CAN, frame by frame: what the SDK sends and what the motors answer.

Facts from shared/HARDWARE.md (the "X5" profile of arx5-interface 0.1.5), checked against the frames that SDK wrote to
the bus emulator (test/hardware/test_x5_frames.py keeps those bytes):

- Joints 1-3 are ARX EC-A4310 motors on CAN ids 1, 2, 4. A command is an 8-byte MIT frame to the motor's id: 3-bit
  mode 0, kp 12 bit [0, 500], kd 9 bit [0, 5], position 16 bit [-12.5, 12.5] rad, velocity 12 bit [-18, 18] rad/s,
  torque 12 bit [-30, 30]. The motor answers on its own id: byte 0 = ack << 5 | error, then position 16 bit,
  velocity 12 bit, current 12 bit (the command's ranges, current [-30, 30]), byte 6 the temperature (2 * degC + 50).
  HARDWARE.md gives kd [0, 50]; the SDK encodes its default kd 2.0 as 204 of 511, which is [0, 5].
- Joints 4-6 and the gripper are Damiao DM-J4310 motors on ids 5, 6, 7 and 8. A command is a Damiao MIT frame:
  position 16 bit [-12.5, 12.5], velocity 12 bit [-45, 45], kp 12 bit [0, 500], kd 12 bit [0, 5], torque 12 bit
  [-18, 18]; seven bytes FF then FC enable the motor, FD disable it, FB clear its error, FE set its zero. Every Damiao
  motor answers on CAN id 0: byte 0 = state << 4 | motor id (state 1 enabled, 0 disabled, 8-E a fault), position,
  velocity, torque as in the command, then the MOS and rotor temperatures in degC.

Fixed-point fields map [low, high] linearly onto 0 .. 2**bits - 1 (rounded to nearest), as the motors' firmware does.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from enum import Enum

#: Linux ``struct can_frame``: can_id (u32, native order), dlc (u8), 3 padding bytes, 8 data bytes.
CAN_FRAME = struct.Struct("<IB3x8s")
CAN_FRAME_SIZE = CAN_FRAME.size
CAN_ID_MASK = 0x1FFFFFFF  # the flag bits (extended, remote, error) above it are not part of the id
DAMIAO_REPLY_ID = 0  # every Damiao motor answers on this id

EC_IDS = (1, 2, 4)
DAMIAO_IDS = (5, 6, 7, 8)


@dataclass(frozen=True)
class ArmLayout:
    """Which motor drives what on one arm's bus (the SDK's "X5" profile, shared/HARDWARE.md)."""

    joint_motor_ids: tuple[int, ...] = (1, 2, 4, 5, 6, 7)
    gripper_motor_id: int = 8
    joint_speed_rad_s: tuple[float, ...] = (5.0, 5.0, 5.5, 5.5, 5.0, 5.0)  # the profile's joint_vel_max
    gripper_speed_rad_s: float = 20.0  # motor side; the SDK caps the fingers at 0.3 m/s (17 rad/s here)
    # The gripper motor's torque limit [its feedback unit]: 1.2 Nm after the SDK's 0.424 scale, under the SDK's 1.5 Nm
    # over-current limit, as a gripper's current limit keeps a grasp from tripping it.
    gripper_torque_limit: float = 2.8
    gripper_open_readout_rad: float = 5.03  # the gripper motor's angle when the fingers are fully open ...
    gripper_width_m: float = 0.088  # ... this far apart

    def gripper_rad(self, width_m: float) -> float:
        return width_m / self.gripper_width_m * self.gripper_open_readout_rad

    def gripper_m(self, motor_rad: float) -> float:
        return motor_rad / self.gripper_open_readout_rad * self.gripper_width_m


X5_LAYOUT = ArmLayout()


@dataclass(frozen=True)
class FieldRange:
    low: float
    high: float
    bits: int

    def encode(self, value: float) -> int:
        clipped = min(max(value, self.low), self.high)
        return round((clipped - self.low) / (self.high - self.low) * ((1 << self.bits) - 1))

    def decode(self, raw: int) -> float:
        return raw / ((1 << self.bits) - 1) * (self.high - self.low) + self.low

    @property
    def resolution(self) -> float:
        """One step of the field, in its unit."""
        return (self.high - self.low) / ((1 << self.bits) - 1)


@dataclass(frozen=True)
class MitRanges:
    """The fixed-point ranges of one motor family's MIT command and feedback."""

    kp: FieldRange
    kd: FieldRange
    position_rad: FieldRange
    velocity_rad_s: FieldRange
    torque: FieldRange  #: the command's feedforward; its feedback (EC: current, Damiao: torque) has the same range


EC_RANGES = MitRanges(
    kp=FieldRange(0.0, 500.0, 12),
    kd=FieldRange(0.0, 5.0, 9),
    position_rad=FieldRange(-12.5, 12.5, 16),
    velocity_rad_s=FieldRange(-18.0, 18.0, 12),
    torque=FieldRange(-30.0, 30.0, 12),
)
DAMIAO_RANGES = MitRanges(
    kp=FieldRange(0.0, 500.0, 12),
    kd=FieldRange(0.0, 5.0, 12),
    position_rad=FieldRange(-12.5, 12.5, 16),
    velocity_rad_s=FieldRange(-45.0, 45.0, 12),
    torque=FieldRange(-18.0, 18.0, 12),
)


class MotorFamily(Enum):
    EC = "ec"  #: ARX EC-A4310
    DAMIAO = "damiao"  #: Damiao DM-J4310

    @property
    def ranges(self) -> MitRanges:
        return EC_RANGES if self is MotorFamily.EC else DAMIAO_RANGES


class DamiaoSpecial(Enum):
    """The Damiao motors' special commands: FF x7 then this byte."""

    ENABLE = 0xFC
    DISABLE = 0xFD
    SET_ZERO = 0xFE
    CLEAR_ERROR = 0xFB


DAMIAO_ENABLED = 1  #: feedback state of an enabled motor
DAMIAO_DISABLED = 0


@dataclass(frozen=True)
class CanFrame:
    can_id: int
    data: bytes  #: 0-8 bytes

    def pack(self) -> bytes:
        """As ``struct can_frame`` (16 bytes), the way a SocketCAN raw socket reads and writes it."""
        return CAN_FRAME.pack(self.can_id, len(self.data), self.data)

    @classmethod
    def unpack(cls, raw: bytes) -> CanFrame:
        if len(raw) != CAN_FRAME_SIZE:
            raise ValueError(f"a struct can_frame is {CAN_FRAME_SIZE} bytes, got {len(raw)}")
        can_id, dlc, data = CAN_FRAME.unpack(raw)
        if dlc > 8:
            raise ValueError(f"CAN frame dlc {dlc} > 8")
        return cls(can_id & CAN_ID_MASK, data[:dlc])


@dataclass(frozen=True)
class MitCommand:
    """An MIT-mode command: torque = kp (position - q) + kd (velocity - dq) + feedforward."""

    kp: float
    kd: float
    position_rad: float
    velocity_rad_s: float
    torque: float  #: feedforward, in the family's torque field units


@dataclass(frozen=True)
class MotorFeedback:
    """What a motor answers to each command."""

    motor_id: int
    state: int  #: EC: the 5-bit error code (0 = none); Damiao: 1 enabled, 0 disabled, 8-14 a fault
    position_rad: float
    velocity_rad_s: float
    torque: float  #: EC: current; Damiao: torque (the SDK scales both)
    temperature_c: float


def _motion_fields(r: MitRanges, position_rad: float, velocity_rad_s: float, torque: float) -> tuple[int, int, int]:
    return r.position_rad.encode(position_rad), r.velocity_rad_s.encode(velocity_rad_s), r.torque.encode(torque)


def _pack_12_12(a: int, b: int) -> tuple[int, int, int]:
    """Two 12-bit fields in three bytes, big-endian."""
    return a >> 4, ((a & 0xF) << 4) | (b >> 8), b & 0xFF


def _pack_16_12_12(a: int, b: int, c: int) -> tuple[int, ...]:
    """A 16-bit field then two 12-bit fields in five bytes, big-endian."""
    return (a >> 8, a & 0xFF, *_pack_12_12(b, c))


# -- EC-A4310 ---------------------------------------------------------------------------------------------------------
def encode_ec_command(cmd: MitCommand) -> bytes:
    r = EC_RANGES
    kp, kd = r.kp.encode(cmd.kp), r.kd.encode(cmd.kd)
    pos, vel, tau = _motion_fields(r, cmd.position_rad, cmd.velocity_rad_s, cmd.torque)
    value = (kp << 49) | (kd << 40) | (pos << 24) | (vel << 12) | tau  # mode 0 in the top 3 bits
    return value.to_bytes(8, "big")


def decode_ec_command(data: bytes) -> MitCommand:
    if len(data) != 8:
        raise ValueError(f"an EC command has 8 bytes, got {len(data)}")
    value = int.from_bytes(data, "big")
    mode = value >> 61
    if mode != 0:
        raise ValueError(f"EC command mode {mode} is not the MIT mode 0")
    r = EC_RANGES
    return MitCommand(
        kp=r.kp.decode((value >> 49) & 0xFFF),
        kd=r.kd.decode((value >> 40) & 0x1FF),
        position_rad=r.position_rad.decode((value >> 24) & 0xFFFF),
        velocity_rad_s=r.velocity_rad_s.decode((value >> 12) & 0xFFF),
        torque=r.torque.decode(value & 0xFFF),
    )


def encode_ec_feedback(fb: MotorFeedback) -> bytes:
    r = EC_RANGES
    pos, vel, cur = _motion_fields(r, fb.position_rad, fb.velocity_rad_s, fb.torque)
    temperature = min(255, max(0, round(fb.temperature_c * 2 + 50)))
    ack = 1  # response frame 1: position, velocity, current
    return bytes([(ack << 5) | (fb.state & 0x1F), *_pack_16_12_12(pos, vel, cur), temperature, 0])


def decode_ec_feedback(can_id: int, data: bytes) -> MotorFeedback:
    if len(data) != 8 or data[0] >> 5 != 1:
        raise ValueError(f"not an EC response frame 1: {data.hex()}")
    r = EC_RANGES
    return MotorFeedback(
        motor_id=can_id,
        state=data[0] & 0x1F,
        position_rad=r.position_rad.decode(data[1] << 8 | data[2]),
        velocity_rad_s=r.velocity_rad_s.decode(data[3] << 4 | data[4] >> 4),
        torque=r.torque.decode((data[4] & 0xF) << 8 | data[5]),
        temperature_c=(data[6] - 50) / 2.0,
    )


# -- Damiao DM-J4310 --------------------------------------------------------------------------------------------------
def encode_damiao_command(cmd: MitCommand) -> bytes:
    r = DAMIAO_RANGES
    pos, vel, tau = _motion_fields(r, cmd.position_rad, cmd.velocity_rad_s, cmd.torque)
    kp, kd = r.kp.encode(cmd.kp), r.kd.encode(cmd.kd)
    return bytes([pos >> 8, pos & 0xFF, *_pack_12_12(vel, kp), *_pack_12_12(kd, tau)])


def decode_damiao_special(data: bytes) -> DamiaoSpecial | None:
    """The special command in ``data``, or None for an MIT frame."""
    if len(data) == 8 and data[:7] == b"\xff" * 7:
        try:
            return DamiaoSpecial(data[7])
        except ValueError:
            return None
    return None


def encode_damiao_special(special: DamiaoSpecial) -> bytes:
    return b"\xff" * 7 + bytes([special.value])


def decode_damiao_command(data: bytes) -> MitCommand:
    if len(data) != 8:
        raise ValueError(f"a Damiao command has 8 bytes, got {len(data)}")
    if decode_damiao_special(data) is not None:
        raise ValueError(f"{data.hex()} is a special command, not an MIT frame")
    r = DAMIAO_RANGES
    return MitCommand(
        position_rad=r.position_rad.decode(data[0] << 8 | data[1]),
        velocity_rad_s=r.velocity_rad_s.decode(data[2] << 4 | data[3] >> 4),
        kp=r.kp.decode((data[3] & 0xF) << 8 | data[4]),
        kd=r.kd.decode(data[5] << 4 | data[6] >> 4),
        torque=r.torque.decode((data[6] & 0xF) << 8 | data[7]),
    )


def encode_damiao_feedback(fb: MotorFeedback) -> bytes:
    r = DAMIAO_RANGES
    pos, vel, tau = _motion_fields(r, fb.position_rad, fb.velocity_rad_s, fb.torque)
    temperature = min(255, max(0, round(fb.temperature_c)))
    state = ((fb.state & 0xF) << 4) | (fb.motor_id & 0xF)
    return bytes([state, *_pack_16_12_12(pos, vel, tau), temperature, temperature])


def decode_damiao_feedback(data: bytes) -> MotorFeedback:
    if len(data) != 8:
        raise ValueError(f"a Damiao feedback frame has 8 bytes, got {len(data)}")
    r = DAMIAO_RANGES
    return MotorFeedback(
        motor_id=data[0] & 0xF,
        state=data[0] >> 4,
        position_rad=r.position_rad.decode(data[1] << 8 | data[2]),
        velocity_rad_s=r.velocity_rad_s.decode(data[3] << 4 | data[4] >> 4),
        torque=r.torque.decode((data[4] & 0xF) << 8 | data[5]),
        temperature_c=float(data[6]),
    )


def family_of(motor_id: int) -> MotorFamily:
    """The X5 profile's motor family on ``motor_id`` (ValueError for an id it does not use)."""
    if motor_id in EC_IDS:
        return MotorFamily.EC
    if motor_id in DAMIAO_IDS:
        return MotorFamily.DAMIAO
    raise ValueError(f"CAN id {motor_id} is not a motor of the X5 profile ({', '.join(map(str, EC_IDS + DAMIAO_IDS))})")


def decode_command(frame: CanFrame) -> MitCommand | DamiaoSpecial:
    """A command frame to one of the X5's motors, decoded (ValueError for anything else)."""
    if family_of(frame.can_id) is MotorFamily.EC:
        return decode_ec_command(frame.data)
    special = decode_damiao_special(frame.data)
    return special if special is not None else decode_damiao_command(frame.data)


def encode_feedback(fb: MotorFeedback) -> CanFrame:
    """A motor's answer as it appears on the bus (EC on its own id, Damiao on id 0)."""
    if family_of(fb.motor_id) is MotorFamily.EC:
        return CanFrame(fb.motor_id, encode_ec_feedback(fb))
    return CanFrame(DAMIAO_REPLY_ID, encode_damiao_feedback(fb))
