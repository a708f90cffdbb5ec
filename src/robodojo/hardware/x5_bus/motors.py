"""Emulated X5 motors: kinematic joints that follow MIT commands with the commanded gains.

Each motor is a joint without inertia whose damper balances its spring: under ``kp (q_cmd - q) + kd (dq_cmd - dq)``
it moves at ``dq = dq_cmd + kp / kd (q_cmd - q)``, a first-order lag of ``kd / kp`` seconds (25 ms for the X5's
default joint-1 gains 80 / 2), capped at the motor's speed. No gravity acts on it (the SDK's gravity feedforward is
cancelled by the gravity it would have to hold), so it reports the torque it would output: the feedforward plus
whatever the spring and damper cannot deliver (a blocked gripper, a capped speed). With kp 0 it keeps its position
(the SDK's damping mode: a real arm would sag under gravity there); with kd 0 and kp > 0 it moves to the target at
its top speed.

When the bus goes quiet (the SDK's process ended) each motor does what its firmware does, as far as it is known
(issue 32; shared/HARDWARE.md): a Damiao DM-J4310 has a CAN timeout (its register 9, TIMEOUT, in 50 us counts; 0
turns it off): with one set, a motor that hears no command for that long disables itself and reports state 0xD
("communication lost") until it is enabled again; without, it keeps executing its last command. arx5-interface 0.1.5
never writes that register, so a delivered arm's value is whatever ARX stored: :attr:`EmulatedMotor.can_timeout_s`,
None (off) unless a test sets it. Nothing public documents a timeout for ARX's EC-A4310 and the SDK's library has no
command for one: an EC motor keeps executing its last command, the worst case. So the last frames the driver's side
sends decide what the arm does after it (robodojo.hardware.arx5_host: damping).

Faults a test can inject: ``silent`` (the motor neither hears nor answers: a loose cable, no power), ``fault_code`` (its
feedback carries an error: EC error bits, Damiao state 8-14), ``blocked_below_rad`` (something stops it going
lower: an object between the gripper's fingers) and ``extra_torque`` (a load it reports holding: over-current).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from robodojo.hardware.x5_bus.frames import (
    DAMIAO_DISABLED,
    DAMIAO_ENABLED,
    CanFrame,
    DamiaoSpecial,
    MitCommand,
    MotorFamily,
    MotorFeedback,
    decode_damiao_command,
    decode_damiao_special,
    decode_ec_command,
    encode_feedback,
)

TEMPERATURE_C = 30.0  # reported constantly; the emulation has no thermal model
MAX_STEP_S = 0.05  # a longer gap between commands (a paused SDK) integrates as this much: no leap on waking
DAMIAO_LOST_COMMUNICATION = 0xD  #: the state a Damiao motor reports after its CAN timeout


@dataclass
class MotorState:
    position_rad: float
    velocity_rad_s: float = 0.0
    torque: float = 0.0  # in the family's feedback unit


class EmulatedMotor:
    """One motor on the bus: decodes its commands, integrates its joint and encodes its feedback."""

    def __init__(
        self,
        motor_id: int,
        family: MotorFamily,
        position_rad: float,
        max_speed_rad_s: float,
        *,
        torque_limit: float = math.inf,
    ) -> None:
        self.motor_id = motor_id
        self.torque_limit = torque_limit  # its output saturates here (a current limit), in its feedback unit
        self.family = family
        self.max_speed_rad_s = max_speed_rad_s
        self.state = MotorState(position_rad)
        self.command: MitCommand | None = None  # the last MIT command, held until the next one
        self.enabled = family is MotorFamily.EC  # EC motors take MIT frames at once; Damiao ones after ENABLE
        self.silent = False
        self.fault_code = 0  # 0: none
        self.blocked_below_rad: float | None = None
        self.extra_torque = 0.0  # added to the reported torque: a load the joint holds (over-current tests)
        self._last_s: float | None = None
        self.can_timeout_s: float | None = None  # Damiao only: its firmware's CAN timeout (None: off)
        self._heard_s: float | None = None  # when it last heard a frame
        self.commands = 0  # MIT frames received
        self.specials: list[DamiaoSpecial] = []

    def receive(self, data: bytes, now_s: float) -> CanFrame | None:
        """Handle one frame addressed to this motor; its reply frame, or None when it stays silent.
        ValueError for a frame the motor cannot decode (it does not answer it either)."""
        self.advance(now_s)
        if self.silent:
            return None  # it hears nothing either: a loose cable, no power
        self._heard_s = now_s
        if self.family is MotorFamily.EC:
            self.command = decode_ec_command(data)
            self.commands += 1
        else:
            special = decode_damiao_special(data)
            if special is None:
                command = decode_damiao_command(data)
                self.commands += 1
                if self.enabled:
                    self.command = command
            else:
                self._special(special)
        return encode_feedback(self.feedback())

    def _special(self, special: DamiaoSpecial) -> None:
        self.specials.append(special)
        if special is DamiaoSpecial.ENABLE:
            self.enabled = True
            if self.fault_code == DAMIAO_LOST_COMMUNICATION:  # assumed: enabling again ends the lost communication
                self.fault_code = 0
        elif special is DamiaoSpecial.DISABLE:
            self.enabled, self.command = False, None
        elif special is DamiaoSpecial.CLEAR_ERROR:
            self.fault_code = 0
        elif special is DamiaoSpecial.SET_ZERO:
            self.state.position_rad = 0.0

    def feedback(self) -> MotorFeedback:
        if self.family is MotorFamily.EC:
            state = self.fault_code
        else:
            state = self.fault_code or (DAMIAO_ENABLED if self.enabled else DAMIAO_DISABLED)
        s = self.state
        torque = s.torque + self.extra_torque
        return MotorFeedback(self.motor_id, state, s.position_rad, s.velocity_rad_s, torque, TEMPERATURE_C)

    def advance(self, now_s: float) -> None:
        """Integrate the joint under the held command up to ``now_s`` (monotonic seconds), and up to its CAN timeout
        at most (then the firmware disables it)."""
        last, self._last_s = self._last_s, now_s
        if last is None:
            return
        timed_out_s = self._timed_out_at(now_s)
        end_s = now_s if timed_out_s is None else max(last, timed_out_s)
        self._integrate(min(max(0.0, end_s - last), MAX_STEP_S))
        if timed_out_s is not None:
            self.enabled, self.command, self.fault_code = False, None, DAMIAO_LOST_COMMUNICATION
            self.state.velocity_rad_s, self.state.torque = 0.0, 0.0

    def _integrate(self, dt: float) -> None:
        cmd, s = self.command, self.state
        if cmd is None or self.fault_code or self.silent or dt == 0.0:  # no command, a fault, no power: it stays
            s.velocity_rad_s, s.torque = 0.0, 0.0
            return
        if cmd.kp > 0.0 and cmd.kd > 0.0:  # the lag solved exactly over dt: stable for any gains
            closed = 1.0 - math.exp(-dt * cmd.kp / cmd.kd)
            speed = cmd.velocity_rad_s + closed * (cmd.position_rad - s.position_rad) / dt
        elif cmd.kp > 0.0:  # no damper: straight to the target
            speed = (cmd.position_rad - s.position_rad) / dt
        else:  # damping only (or limp): without gravity nothing drives it; the damper's quantized zero speed (the
            speed = 0.0  # field cannot encode 0 exactly: 0.011 rad/s on a Damiao) stays within static friction
        speed = min(max(speed, -self.max_speed_rad_s), self.max_speed_rad_s)
        position = s.position_rad + speed * dt
        if self.blocked_below_rad is not None:  # it may move up, never below the obstacle (or where it stands)
            position = max(position, min(s.position_rad, self.blocked_below_rad))
            speed = (position - s.position_rad) / dt
        # What the motor outputs: feedforward plus what spring and damper cannot deliver (zero while it follows).
        torque = cmd.torque + cmd.kp * (cmd.position_rad - s.position_rad) + cmd.kd * (cmd.velocity_rad_s - speed)
        s.torque = min(max(torque, -self.torque_limit), self.torque_limit)
        s.position_rad, s.velocity_rad_s = position, speed

    def _timed_out_at(self, now_s: float) -> float | None:
        """When this motor's CAN timeout ran out before ``now_s`` (a Damiao, enabled, with a timeout set), else None."""
        if (
            self.family is not MotorFamily.DAMIAO or self.can_timeout_s is None or not self.enabled
            or self._heard_s is None or self.silent
        ):  # fmt: skip
            return None
        expiry_s = self._heard_s + self.can_timeout_s
        return expiry_s if now_s > expiry_s else None
