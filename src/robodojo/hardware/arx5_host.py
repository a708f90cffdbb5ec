"""arx5-interface in a process of its own, one per arm: the SDK's failures stay there, and the driver keeps running.

Measured with arx5-interface 0.1.5 against the bus emulator, and why the SDK does not run in the driver's process:

- It holds Python's GIL through its blocking calls: ``reset_to_home()`` for about 2.5 s, the destructor (which
  damps the arm) for 2 s. In the driver's process that freezes every other thread: joint states, the e-stop service,
  the other arm.
- A construction that fails (the arm's power off: "None of the motors are initialized") leaves its logger
  registered, and every later construction on that interface in the same process raises "logger with name 'X5_can0'
  already exists": an arm switched on after the driver started could never be connected. The process then aborts
  at exit ("free(): invalid pointer").
- Its emergency state (over-current, implausible readings) damps the arm in an endless loop that only a restart of
  the process ends ("Please restart the program").

So :class:`SdkHost` starts ``python -m robodojo.hardware.arx5_host`` per arm and talks to it over a socket pair
(multiprocessing's pickled messages; a request takes about 0.1 ms). The host streams trajectories itself, so the
500 Hz command stream never waits for the driver's GIL. A host that dies or stops answering is lost contact; a new
one is started by the next ``start()``. Its standard output (the SDK's log lines) is read by the driver, echoed, and
the SDK's warnings and errors are handed to a callback.

Because the host plays on its own, a driver that freezes (SIGSTOP, starved of the CPU) could not stop a trajectory,
and neither could its watchdog thread, frozen alike: the host holds where the arm is when no request came from the
driver for ``deadman_s`` (the driver asks for the joint state at every tick and at its state rate), and logs it.
A driver that died (SIGKILL, a crash) closes its end of the socket: the host then stops the arm, damps it and exits
(:meth:`_Host.driver_gone`), so the last frames on the bus are damping at zero velocity, whatever played before.
"""

from __future__ import annotations

import contextlib
import math
import os
import re
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from multiprocessing.connection import Connection
from typing import Any

import numpy as np
from numpy.typing import NDArray

from robodojo.errors import ContactLostError, HardwareError
from robodojo.hardware.realtime import threads_started_at

REPLY_TIMEOUT_S = 10.0  # longer than any SDK call (reset_to_home: max(error, 0.5) s + 0.5 s at 1 rad/s)
START_TIMEOUT_S = 30.0  # interpreter, numpy and the SDK's import, then the construction (0.2 s)
EXIT_TIMEOUT_S = 8.0  # the host exits in about 0.3 s (its SDK's destructor, 2 s of damping, does not run: measured)
#: An SDK log line: "[19:37:49 X5_can0 error] message" (spdlog, the SDK's pattern).
SDK_LOG_LINE = re.compile(r"^\[\d\d:\d\d:\d\d (?P<logger>\S+) (?P<level>\w+)\] (?P<message>.*)$")
EMERGENCY = "Emergency state entered"
# The SDK's send/receive thread asks every motor every 2 ms; starved of the CPU it sends nothing, and the motors (and
# the bus monitor) fall silent (measured on a saturated 2-core machine: 140-670 ms gaps). That thread runs at the
# config's bus_thread_priority (SCHED_FIFO); the rest of the process (the requests, the stream thread) asks for a
# higher priority (lower niceness) where the OS allows it (root, or an RLIMIT_NICE).
HOST_NICE = -5
# A driver that died (killed, crashed) leaves the host to end alone (_Host.driver_gone): a moving arm held this long
# first (3-4 times the motors' kd/kp lag of 25-35 ms), then damping frames this long (150 SDK cycles) before it exits.
DRIVER_GONE_BRAKE_S = 0.1
DRIVER_GONE_DAMP_S = 0.3


@dataclass(frozen=True)
class SdkState:
    """One ``get_joint_state()`` of the SDK."""

    positions_rad: tuple[float, ...]
    velocities_rad_s: tuple[float, ...]
    torques_nm: tuple[float, ...]
    gripper_m: float
    gripper_torque_nm: float
    timestamp_s: float  #: the SDK's clock


@dataclass(frozen=True)
class SdkProfile:
    """What the host reports of the SDK's robot profile at start."""

    joint_dof: int
    joint_pos_min: tuple[float, ...]
    joint_pos_max: tuple[float, ...]
    gripper_width_m: float
    motor_ids: tuple[int, ...]
    gripper_motor_id: int


def position_at(
    times_s: NDArray[np.float64], points: NDArray[np.float64], start_rad: NDArray[np.float64], tau_s: float
) -> NDArray[np.float64]:
    """A trajectory's position ``tau_s`` after its start: linear from ``start_rad`` (at 0) through ``points`` (at
    ``times_s``), the last point after the end; the polyline the trajectory guard checked."""
    if tau_s >= times_s[-1]:
        return np.array(points[-1], dtype=float)
    k = int(np.searchsorted(times_s, tau_s, side="right"))
    t0, q0 = (0.0, start_rad) if k == 0 else (float(times_s[k - 1]), points[k - 1])
    t1, q1 = float(times_s[k]), points[k]
    alpha = 0.0 if t1 <= t0 else max(0.0, tau_s - t0) / (t1 - t0)
    return np.asarray(q0 + alpha * (q1 - q0), dtype=float)


class SdkHost:
    """The client side: one host process for one arm (see the module docstring)."""

    def __init__(self, interface: str, *, on_log: Callable[[str, str], None], env: dict[str, str] | None = None):
        self.interface = interface
        self._on_log = on_log  # (level, message) for the SDK's warnings and errors
        self._env = env
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._process: subprocess.Popen[bytes] | None = None
        self.emergency = ""  #: the SDK's emergency message, once it entered that state ("" otherwise)

    # -- lifecycle ------------------------------------------------------------------------------------------------
    def start(
        self, profile: str, stream_rate_hz: float, deadman_s: float, bus_thread_priority: int = 0
    ) -> tuple[SdkProfile, SdkState]:
        """A new host (any old one ended first) with the SDK started on the interface, its CAN threads at SCHED_FIFO
        ``bus_thread_priority`` where the OS allows it; the profile and the first state. The arm is limp (the SDK's
        zero gains) and commanded nothing until :meth:`hold_stiffly`. A playing trajectory is stopped in the host when
        no request came for ``deadman_s``. ContactLostError when the motors do not answer."""
        self.stop_process()
        parent, child = socket.socketpair()
        env = {**os.environ, **(self._env or {})}
        process = subprocess.Popen(
            [sys.executable, "-m", "robodojo.hardware.arx5_host", str(child.fileno())],
            pass_fds=[child.fileno()], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
            env=env, start_new_session=True,  # a Ctrl-C at the terminal goes to the driver, which shuts it down
        )  # fmt: skip
        child.close()
        self._process, self._conn, self.emergency = process, Connection(parent.detach()), ""
        assert process.stdout is not None
        threading.Thread(
            target=self._read_log, args=(process.stdout,), name=f"sdk-log-{self.interface}", daemon=True
        ).start()
        reply = self.call(
            "start", profile, self.interface, stream_rate_hz, deadman_s, bus_thread_priority, timeout_s=START_TIMEOUT_S
        )
        return SdkProfile(**reply["profile"]), SdkState(**reply["state"])

    def hold_stiffly(
        self,
        gains: tuple[Sequence[float], Sequence[float], float, float],
        bus_rad: Sequence[float],
        bus_gripper_m: float,
        tolerance: tuple[float, float],
    ) -> str:
        """Hold where the SDK reads the arm under ``gains`` (kp, kd, gripper kp, gripper kd), only if that reading
        agrees with what the motors report on the bus (``bus_rad``, ``bus_gripper_m``: the driver's monitor) within
        ``tolerance`` (rad, m). "" once held; else the disagreement in words, and the arm stays limp."""
        kp, kd, gripper_kp, gripper_kd = gains
        answer: str = self.call(
            "hold_stiffly", list(kp), list(kd), gripper_kp, gripper_kd, list(bus_rad), bus_gripper_m, *tolerance
        )
        return answer

    def stop_process(self) -> None:
        """End the host (killed if it hangs). Its last command stays on the bus: damp first (:meth:`Arx5Arm.close`
        does). The SDK's destructor, which would damp, does not run on the way out (measured: no damping frame)."""
        conn, process = self._conn, self._process
        self._conn = self._process = None
        if conn is not None:
            with contextlib.suppress(OSError, EOFError, ValueError):
                conn.send(("exit",))
            conn.close()
        if process is not None:
            try:
                process.wait(timeout=EXIT_TIMEOUT_S)
            except subprocess.TimeoutExpired:
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, 9)
                process.wait(timeout=5.0)

    @property
    def alive(self) -> bool:
        return self._process is not None and self._process.poll() is None

    # -- requests -------------------------------------------------------------------------------------------------
    def call(self, op: str, *args: Any, timeout_s: float = REPLY_TIMEOUT_S) -> Any:
        """One request to the host; its answer. ContactLostError when the host is gone or does not answer in time,
        HardwareError when the SDK raised."""
        with self._lock:
            conn, process = self._conn, self._process
            if conn is None or process is None:
                raise ContactLostError(f"no SDK process for {self.interface}: start() it")
            try:
                conn.send((op, *args))
                answered = conn.poll(timeout_s)
                if answered:
                    kind, value = conn.recv()
            except (OSError, EOFError) as exc:
                code = process.poll()
                raise ContactLostError(
                    f"the SDK process for {self.interface} ended (exit code {code}): {exc or 'connection closed'}"
                ) from None
            if not answered:  # a late answer would be taken for the next request's: this host is done
                with contextlib.suppress(ProcessLookupError):
                    os.killpg(process.pid, 9)
                raise ContactLostError(f"the SDK process for {self.interface} did not answer {op} in {timeout_s:g} s")
        if kind == "error":
            error_type, message = value
            if error_type == "RuntimeError" and op == "start":
                raise ContactLostError(f"the X5 on {self.interface} does not answer: {message}")
            raise HardwareError(f"the SDK on {self.interface} raised {error_type}: {message}")
        return value

    def state(self) -> SdkState:
        return SdkState(**self.call("state"))

    def _read_log(self, stream: Any) -> None:
        for raw in stream:
            line = raw.decode(errors="replace").rstrip()
            sys.stdout.write(f"[arx5 {self.interface}] {line}\n")
            sys.stdout.flush()
            match = SDK_LOG_LINE.match(line)
            if match is None or match["level"] not in ("warning", "error", "critical"):
                continue
            if EMERGENCY in match["message"]:
                self.emergency = match["message"]
            try:
                self._on_log(match["level"], match["message"])
            except Exception as exc:  # this thread must outlive it: an undrained pipe blocks the SDK
                sys.stdout.write(f"[arx5 {self.interface}] the SDK log callback raised {type(exc).__name__}: {exc}\n")


# -- the host process -------------------------------------------------------------------------------------------------
class _Host:
    """The SDK's side: one controller, the requests, and the streaming thread."""

    def __init__(self) -> None:
        import arx5_interface

        self.sdk = arx5_interface
        self.ctrl: Any = None
        self.dof = 0
        self.lock = threading.Lock()
        self.gripper_m = 0.0
        self.mode = "stream"
        self.trajectory: _Trajectory | None = None  # the one playing (until its last stamp)
        self.period_s = 0.002
        self.deadman_s = math.inf  # set by start
        self.asked_s = time.monotonic()  # the driver's last request: a frozen driver asks nothing
        self.wake = threading.Event()
        threading.Thread(target=self.stream, name="stream", daemon=True).start()

    def handle(self, op: str, *args: Any) -> Any:
        self.asked_s = time.monotonic()
        return getattr(self, f"op_{op}")(*args)

    def op_start(
        self, profile: str, interface: str, rate_hz: float, deadman_s: float, bus_thread_priority: int
    ) -> dict[str, Any]:
        sdk = self.sdk
        robot = sdk.RobotConfigFactory.get_instance().get_config(profile)
        controller = sdk.ControllerConfigFactory.get_instance().get_config("joint_controller", robot.joint_dof)
        # The SDK starts its CAN receiver and its 500 Hz send/receive thread in the constructor: those two only.
        with threads_started_at(bus_thread_priority):
            self.ctrl = sdk.Arx5JointController(robot, controller, interface)  # limp: the SDK starts with zero gains
        self.dof, self.period_s, self.deadman_s = robot.joint_dof, 1.0 / rate_hz, deadman_s
        profile_facts = {
            "joint_dof": int(robot.joint_dof),
            "joint_pos_min": tuple(float(v) for v in robot.joint_pos_min),
            "joint_pos_max": tuple(float(v) for v in robot.joint_pos_max),
            "gripper_width_m": float(robot.gripper_width),
            "motor_ids": tuple(int(v) for v in robot.motor_id),
            "gripper_motor_id": int(robot.gripper_motor_id),
        }
        return {"profile": profile_facts, "state": self.op_state()}

    def op_hold_stiffly(
        self, kp: list, kd: list, gkp: float, gkd: float, bus_rad: list, bus_gripper_m: float, tol_rad: float,
        tol_m: float,
    ) -> str:  # fmt: skip
        """The SDK constructs once any motor answered, and reads 0 for a motor it has not heard yet: holding that
        reading would drive the joint to 0 (measured: joints 2 and 3, answering late on a loaded machine, swung
        1.5 rad). So it holds only a reading that agrees with the motors' own answers on the bus."""
        with self.lock:
            state = self.ctrl.get_joint_state()  # bound to a name first: a chained .pos() reads freed memory
            q, gripper_m = np.array(state.pos(), dtype=float), float(state.gripper_pos)
            off = [
                f"joint{i + 1} {q[i]:.4f} rad (its motor: {bus:.4f})"
                for i, bus in enumerate(bus_rad)
                if abs(q[i] - bus) > tol_rad
            ]
            if abs(gripper_m - bus_gripper_m) > tol_m:
                off.append(f"the gripper {gripper_m:.4f} m (its motor: {bus_gripper_m:.4f})")
            if off:
                return f"the SDK reads {', '.join(off)}"
            self.gripper_m = gripper_m
            self.command(q)  # hold where it stands ...
            self.ctrl.set_gain(self.sdk.Gain(np.array(kp, dtype=float), np.array(kd, dtype=float), gkp, gkd))
        return ""  # ... stiffly

    def op_state(self) -> dict[str, Any]:
        state = self.ctrl.get_joint_state()
        return {
            "positions_rad": tuple(float(v) for v in state.pos()),
            "velocities_rad_s": tuple(float(v) for v in state.vel()),
            "torques_nm": tuple(float(v) for v in state.torque()),
            "gripper_m": float(state.gripper_pos),
            "gripper_torque_nm": float(state.gripper_torque),
            "timestamp_s": float(state.timestamp),
        }

    def op_hold(self, stale: dict[int, float | None]) -> tuple[bool, tuple[float, ...]]:
        """Stop what plays: (whether a new hold was commanded, the position held).

        Only a playing trajectory is replaced by a hold at the measured joints; the joints in ``stale`` (motors that
        did not answer lately: their reading is old) at the position given for them instead (the command the motor
        answered last), or at their current command for None. With nothing playing the
        command already holds the arm at rest (the last point of what played, or an earlier hold): it is kept, not
        re-taken from the measured joints. A re-hold at the measured joints moves a resting joint: the SDK truncates
        a zero velocity to -0.011 rad/s on a Damiao motor (12 bits over [-45, 45]: zero lies between two codes), and
        under kp 30 / kd 1 that bias holds each wrist joint 0.37 mrad below its target, one position step, which the
        next re-hold makes its target (measured: one step per stop on joints 4-6)."""
        with self.lock:
            playing, self.trajectory = self.trajectory is not None, None
            cmd = self.ctrl.get_joint_cmd()  # bound to a name first, as the state
            held = np.array(cmd.pos(), dtype=float)
            if playing:
                state = self.ctrl.get_joint_state()
                measured = np.array(state.pos(), dtype=float)
                for i in range(self.dof):
                    if i not in stale:
                        held[i] = measured[i]
                    elif stale[i] is not None:
                        held[i] = stale[i]
                self.command(held)
        return playing, tuple(float(v) for v in held)

    def op_play(self, mode: str, start_s: float, start_rad: list, times_s: list, points: list) -> None:
        """A trajectory from ``start_s`` (monotonic: this machine's clock, the same in every process) on."""
        trajectory = _Trajectory(np.array(times_s), np.array(points), np.array(start_rad), start_s)
        with self.lock:
            self.mode, self.trajectory = mode, trajectory
            if mode == "stream":
                self.command(trajectory.at(time.monotonic()))
            else:
                self.send_trajectory(trajectory)
        self.wake.set()

    def op_gripper(self, width_m: float) -> None:
        with self.lock:
            self.gripper_m = float(width_m)
            trajectory = self.trajectory
            if trajectory is not None and time.monotonic() < trajectory.end_s:
                if self.mode == "sdk_trajectory":
                    self.send_trajectory(trajectory)  # the rest of it, with the new width
                return  # streaming: the next cycle carries it
            cmd = self.ctrl.get_joint_cmd()
            self.command(np.array(cmd.pos(), dtype=float))

    def driver_gone(self) -> None:
        """The driver died (its end of the socket closed: SIGKILL, a crash): end in the documented state, then exit.

        A playing arm is first held at its measured joints with zero velocity for DRIVER_GONE_BRAKE_S, so it stops
        under its gains (an arm at rest keeps its hold); then the SDK's damping mode (kp 0, its damping kd, zero
        velocity, its gravity feedforward) goes out for DRIVER_GONE_DAMP_S, and the process exits. Those damping
        frames are the last on the bus: what each motor then does is its firmware's (a Damiao with a CAN timeout
        disables itself; one without, and the EC motors as far as anything says, keep damping with the last gravity
        torque). Without this, the last frames were full-gain holds of a moving trajectory (velocity feedforward and
        all) and the SDK's destructor, which damps, never ran: the streaming thread keeps the controller alive until
        the process ends."""
        if self.ctrl is None:
            return
        playing, _ = self.op_hold({})  # zero velocity: a moving arm stops (an arm at rest keeps its hold)
        log_warning(f"the driver is gone: {'holding, then ' if playing else ''}damping, then exiting")
        if playing:
            time.sleep(DRIVER_GONE_BRAKE_S)
        with self.lock:
            self.ctrl.set_to_damping()
        time.sleep(DRIVER_GONE_DAMP_S)

    def op_reset_to_home(self) -> None:
        with self.lock:
            self.trajectory = None
        self.ctrl.reset_to_home()

    def op_set_to_damping(self) -> None:
        with self.lock:
            self.trajectory = None
        self.ctrl.set_to_damping()

    def command(self, q: NDArray[np.float64], dq: NDArray[np.float64] | None = None) -> None:
        """Hold ``q`` [rad], moving at ``dq`` [rad/s] (the motors' velocity feedforward: without it they trail a
        moving command by their kd/kp lag, 25-35 ms)."""
        cmd = self.sdk.JointState(self.dof)
        cmd.pos()[:] = q
        if dq is not None:
            cmd.vel()[:] = dq
        cmd.gripper_pos = self.gripper_m
        self.ctrl.set_joint_cmd(cmd)

    def send_trajectory(self, trajectory: _Trajectory) -> None:
        """What is left of ``trajectory`` from now, as one set_joint_traj stamped on the SDK's clock."""
        now = time.monotonic()
        offset = float(self.ctrl.get_timestamp()) - now  # monotonic -> the SDK's clock
        stamped = [(now, trajectory.at(now))]
        stamped += [
            (trajectory.start_s + float(t), q)
            for t, q in zip(trajectory.times_s, trajectory.points, strict=True)
            if trajectory.start_s + float(t) > now
        ]
        states = []
        for at_s, q in stamped:
            state = self.sdk.JointState(self.dof)
            state.pos()[:] = q
            state.gripper_pos = self.gripper_m
            state.timestamp = at_s + offset
            states.append(state)
        self.ctrl.set_joint_traj(states)

    def stream(self) -> None:
        """Follows the playing trajectory to its end. stream mode: its position at every SDK cycle. Both modes, at
        the end: the last point once more as a plain command, because the SDK holds a trajectory's last point with
        the velocity it had there (measured: 0.25 rad/s after a ramp, the joints pushed 0.009 rad off it)."""
        next_s = time.monotonic()
        while True:
            with self.lock:
                trajectory = self.trajectory
                if trajectory is not None:
                    now = time.monotonic()
                    silent_s = now - self.asked_s
                    if silent_s > self.deadman_s:  # the driver froze (SIGSTOP, starved): hold where the arm is
                        state = self.ctrl.get_joint_state()
                        self.command(np.array(state.pos(), dtype=float))
                        self.trajectory = None
                        log_warning(f"no request from the driver for {silent_s:.2f} s: stopped the trajectory, holding")
                    elif now > trajectory.end_s:
                        self.command(trajectory.at(now))  # the last point, at rest
                        self.trajectory = None
                    elif self.mode == "stream":
                        self.command(trajectory.at(now), trajectory.velocity_at(now))
            if trajectory is None:
                self.wake.wait(0.1)
                self.wake.clear()
                next_s = time.monotonic()
                continue
            next_s += self.period_s
            delay = next_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -5 * self.period_s:
                next_s = time.monotonic()


@dataclass(frozen=True)
class _Trajectory:
    times_s: NDArray[np.float64]
    points: NDArray[np.float64]
    start_rad: NDArray[np.float64]
    start_s: float  # monotonic

    @property
    def end_s(self) -> float:
        return self.start_s + float(self.times_s[-1])

    def at(self, now_s: float) -> NDArray[np.float64]:
        return position_at(self.times_s, self.points, self.start_rad, now_s - self.start_s)

    def velocity_at(self, now_s: float) -> NDArray[np.float64]:
        """The polyline's velocity at ``now_s`` [rad/s] (its segment's slope; 0 before the start and after the end)."""
        tau = now_s - self.start_s
        if tau < 0.0 or tau >= self.times_s[-1]:
            return np.zeros(len(self.start_rad))
        k = int(np.searchsorted(self.times_s, tau, side="right"))
        t0, q0 = (0.0, self.start_rad) if k == 0 else (float(self.times_s[k - 1]), self.points[k - 1])
        dt = float(self.times_s[k]) - t0
        return np.zeros(len(self.start_rad)) if dt <= 0.0 else np.asarray((self.points[k] - q0) / dt, dtype=float)


def log_warning(message: str) -> None:
    """A warning of the host's own, in the SDK's log format (:data:`SDK_LOG_LINE`): the driver reads it alike."""
    with contextlib.suppress(OSError):  # a dead driver no longer reads the pipe
        sys.stdout.write(f"[{time.strftime('%H:%M:%S')} arx5_host warning] {message}\n")
        sys.stdout.flush()


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    conn = Connection(int(args[0]))
    with contextlib.suppress(OSError):  # the SDK's 500 Hz motor loop runs here: ahead of ordinary work where allowed
        os.nice(HOST_NICE)
    host = _Host()
    while True:
        try:
            request = conn.recv()
        except (EOFError, OSError):  # the driver is gone without a word (killed, crashed)
            return _driver_gone(host)
        if request[0] == "exit":
            break
        try:
            answer = host.handle(*request)
        except Exception as exc:
            answer = ("error", (type(exc).__name__, str(exc)))
        else:
            answer = ("ok", answer)
        try:
            conn.send(answer)
        except (EOFError, OSError):  # gone while its request ran
            return _driver_gone(host)
    conn.close()
    return 0


def _driver_gone(host: _Host) -> int:
    """The documented end after the driver's death (:meth:`_Host.driver_gone`), and the exit now: the SDK's destructor
    does not run on its own (the streaming thread keeps the controller alive), and nobody reads this log any more."""
    try:
        host.driver_gone()
    finally:
        os._exit(0)


if __name__ == "__main__":
    sys.exit(main())
