"""The X5 motor protocol (robodojo.hardware.x5_bus.frames): every frame type against known bytes.

The command bytes are frames arx5-interface 0.1.5 wrote to the bus emulator (its damping command right after
construction, the Damiao enable and clear-error frames); the feedback bytes are worked out by hand from the layouts
in shared/HARDWARE.md. test_x5_sdk.py shows the real SDK reading the emulator's feedback back as sent.
"""

from __future__ import annotations

import pytest

from robodojo.hardware.x5_bus import frames as f


def _close(value: float, expected: float, field: f.FieldRange) -> bool:
    return abs(value - expected) <= field.resolution / 2 + 1e-12


def test_the_sdk_s_ec_damping_command_decodes_to_kd_2_at_the_measured_position():
    cmd = f.decode_ec_command(bytes.fromhex("0000cc80837ff7ff"))
    r = f.EC_RANGES
    assert cmd.kp == 0.0
    assert _close(cmd.kd, 2.0, r.kd)  # the X5's default kd on joints 1-3: the kd range is [0, 5], not [0, 50]
    assert _close(cmd.position_rad, 0.05, r.position_rad)
    assert _close(cmd.velocity_rad_s, 0.0, r.velocity_rad_s)
    assert _close(cmd.torque, 0.0, r.torque)
    assert f.encode_ec_command(cmd) == bytes.fromhex("0000cc80837ff7ff")


@pytest.mark.parametrize(
    ("raw", "kd", "torque"),
    [
        ("80837ff00023d7ff", 0.7, 0.0),  # joint 6 damping
        ("80837ff0003337ff", 1.0, 0.0),  # joint 5 damping
        ("80837ff00033395d", 1.0, 3.077),  # joint 4 damping with the SDK's gravity feedforward
    ],
)
def test_the_sdk_s_damiao_commands_decode_and_encode_back(raw: str, kd: float, torque: float):
    cmd = f.decode_damiao_command(bytes.fromhex(raw))
    r = f.DAMIAO_RANGES
    assert cmd.kp == 0.0
    assert _close(cmd.kd, kd, r.kd)
    assert _close(cmd.position_rad, 0.05, r.position_rad)
    assert abs(cmd.torque - torque) < 0.005
    assert f.encode_damiao_command(cmd) == bytes.fromhex(raw)


def test_an_ec_command_carries_kp_in_thirteen_bits_after_a_zero_mode():
    cmd = f.MitCommand(kp=80.0, kd=2.0, position_rad=-1.0, velocity_rad_s=0.5, torque=-3.0)
    raw = f.encode_ec_command(cmd)
    assert raw[0] >> 5 == 0  # mode 0
    assert ((raw[0] & 0x1F) << 7 | raw[1] >> 1) == f.EC_RANGES.kp.encode(80.0)
    back = f.decode_ec_command(raw)
    for name, field in [("kp", f.EC_RANGES.kp), ("kd", f.EC_RANGES.kd), ("position_rad", f.EC_RANGES.position_rad)]:
        assert _close(getattr(back, name), getattr(cmd, name), field)
    with pytest.raises(ValueError, match="mode"):
        f.decode_ec_command(bytes([0x20]) + raw[1:])


def test_damiao_special_commands():
    assert f.decode_damiao_special(bytes.fromhex("fffffffffffffffc")) is f.DamiaoSpecial.ENABLE
    assert f.decode_damiao_special(bytes.fromhex("fffffffffffffffb")) is f.DamiaoSpecial.CLEAR_ERROR
    assert f.decode_damiao_special(bytes.fromhex("fffffffffffffffd")) is f.DamiaoSpecial.DISABLE
    assert f.decode_damiao_special(bytes.fromhex("fffffffffffffffe")) is f.DamiaoSpecial.SET_ZERO
    assert f.decode_damiao_special(bytes.fromhex("8106800000000800")) is None
    assert f.encode_damiao_special(f.DamiaoSpecial.ENABLE) == bytes.fromhex("fffffffffffffffc")
    assert f.decode_command(f.CanFrame(5, bytes.fromhex("fffffffffffffffc"))) is f.DamiaoSpecial.ENABLE
    with pytest.raises(ValueError, match="special"):
        f.decode_damiao_command(bytes.fromhex("fffffffffffffffc"))


def test_the_gripper_command_is_a_damiao_frame_on_id_8():
    cmd = f.decode_command(f.CanFrame(8, bytes.fromhex("8106800000000800")))
    assert isinstance(cmd, f.MitCommand)
    assert _close(cmd.position_rad, 0.1, f.DAMIAO_RANGES.position_rad)
    assert cmd.kp == 0.0 and cmd.kd == 0.0


def test_ec_feedback_bytes():
    # ack 1, error 3; position 0.0 -> 32768; velocity 0 -> 2048; current 0 -> 2048; 30 degC -> 110.
    fb = f.MotorFeedback(motor_id=2, state=3, position_rad=0.0, velocity_rad_s=0.0, torque=0.0, temperature_c=30.0)
    frame = f.encode_feedback(fb)
    assert frame.can_id == 2  # an EC motor answers on its own id
    assert frame.data == bytes.fromhex("2380008008006e00")
    back = f.decode_ec_feedback(2, frame.data)
    assert back.state == 3 and back.temperature_c == 30.0
    assert _close(back.position_rad, 0.0, f.EC_RANGES.position_rad)
    with pytest.raises(ValueError, match="response frame 1"):
        f.decode_ec_feedback(2, bytes.fromhex("4380008008006e00"))


def test_damiao_feedback_bytes():
    # state 1 (enabled), motor 5; position 12.5 -> 65535; velocity -45 -> 0; torque 18 -> 4095; 30 degC twice.
    fb = f.MotorFeedback(motor_id=5, state=1, position_rad=12.5, velocity_rad_s=-45.0, torque=18.0, temperature_c=30.0)
    frame = f.encode_feedback(fb)
    assert frame.can_id == f.DAMIAO_REPLY_ID  # every Damiao motor answers on id 0
    assert frame.data == bytes.fromhex("15ffff000fff1e1e")
    back = f.decode_damiao_feedback(frame.data)
    assert (back.motor_id, back.state, back.position_rad, back.velocity_rad_s, back.torque) == (5, 1, 12.5, -45.0, 18.0)
    # A fault code in the high nibble (0xA: over-current).
    assert f.decode_damiao_feedback(bytes.fromhex("a5ffff000fff1e1e")).state == 0xA


def test_fields_clip_to_their_range():
    r = f.DAMIAO_RANGES.position_rad
    assert r.encode(20.0) == 0xFFFF and r.encode(-20.0) == 0
    assert r.decode(r.encode(1.234)) == pytest.approx(1.234, abs=r.resolution)


def test_struct_can_frame():
    frame = f.CanFrame(0x7, bytes.fromhex("0102"))
    raw = frame.pack()
    assert raw == bytes.fromhex("07000000020000000102000000000000")
    assert f.CanFrame.unpack(raw) == frame
    flagged = (0x80000000 | 0x7).to_bytes(4, "little") + raw[4:]  # the extended-frame flag is not part of the id
    assert f.CanFrame.unpack(flagged).can_id == 0x7
    with pytest.raises(ValueError, match="16 bytes"):
        f.CanFrame.unpack(raw[:8])
    with pytest.raises(ValueError, match="dlc"):
        f.CanFrame.unpack(raw[:4] + bytes([9]) + raw[5:])


def test_ids_outside_the_x5_profile_are_refused():
    with pytest.raises(ValueError, match="not a motor of the X5"):
        f.decode_command(f.CanFrame(3, bytes(8)))
