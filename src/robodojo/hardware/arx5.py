"""One ARX X5 arm over CAN, through arx5-interface: joint state, checked trajectories, stop, hold, gripper.

Every trajectory goes through the :class:`~robodojo.hardware.trajectory_guard.TrajectoryGuard` first; only a
:class:`~robodojo.hardware.trajectory_guard.CheckedTrajectory` reaches the SDK, which then sends MIT commands to the
motors at 500 Hz on its own thread (shared/HARDWARE.md). What this adapter adds to the SDK, and why:

- **Connect holds, it does not move.** The SDK starts with zero gains (a limp arm). :meth:`Arx5Arm.connect` sets the
  command to the measured joints and gripper and only then the configured gains, so the arm holds where it stands.
  ``reset_to_home()`` (which moves it to the folded rest pose) runs only in the shutdown sequence.
- **Trajectories** either stream (``trajectory_mode: stream``: the trajectory's position at every SDK cycle, linear
  between the checked points, through ``set_joint_cmd``) or go whole to ``set_joint_traj`` with timestamps on the
  SDK's clock (``sdk_trajectory``). benchmarks/hardware.py measures both against the bus emulator.
- **The gripper** is the seventh field of every SDK command: its width [m] (0 closed .. 0.088 open) rides along
  with the arm's command; the agents' 0..1 opening maps onto it. The SDK moves it at most 0.3 m/s and stops pushing
  when it meets an object, so closing on something is a move that stalls.
- **Faults the SDK does not report.** The SDK keeps a silent motor's last reading, ignores the motors' error flags
  and raises nothing when the bus dies (measured). A :class:`~robodojo.hardware.x5_bus.monitor.BusMonitor` listens to
  the bus beside it: a dead bus is lost contact (:class:`~robodojo.errors.ContactLostError`, status ``lost``;
  :meth:`Arx5Arm.connect` again); a silent motor or an error flag stops the arm (status ``error``, until
  :meth:`Arx5Arm.recover_from_errors` once the bus is healthy). A playing joint further than
  ``following_error_rad`` from its command (a collision, a motor that lost torque) stops it too.
- **Shutdown** (:meth:`Arx5Arm.close`): the documented sequence, home first, then damping; never damping alone at a
  raised pose, where the arm would sag onto the table.
"""

from __future__ import annotations

import gc
import threading
import time
from dataclasses import dataclass
from typing import Any

import numpy as np
from numpy.typing import NDArray

from robodojo.errors import ConfigError, ContactLostError, HardwareError, InvalidCommandError
from robodojo.hardware.adapter import ArmStatus, GripperReading, JointReading
from robodojo.hardware.settings import Arx5ArmSettings
from robodojo.hardware.trajectory_guard import CheckedTrajectory, TrajectoryGuard
from robodojo.hardware.watchdog import CommandWatchdog
from robodojo.hardware.x5_bus.monitor import BusHealth, BusMonitor, motor_names

LIMIT_TOLERANCE_RAD = 2e-3  # the URDF's limits are the profile's, rounded (2.618 vs 2.62)
GRIPPER_WIDTH_TOLERANCE_M = 1e-3
GRIPPER_POLL_S = 0.01
GRIPPER_STILL_M = 5e-4  # a gripper that moved less than this over stalled_s has stopped
CONNECT_SETTLE_S = 1.0  # how long connect() lets the bus monitor hear from every motor


def _arx5() -> Any:
    """arx5_interface, imported on first use so that the package imports without the hardware extra."""
    try:
        import arx5_interface
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise HardwareError(f"arx5-interface is not installed ({exc}); pip install 'agent-bringup[hardware]'") from None
    return arx5_interface


@dataclass(frozen=True)
class _Playing:
    trajectory: CheckedTrajectory
    start_rad: NDArray[np.float64]  # the measured joints when it started: its position at time 0
    start_s: float  # monotonic
    sdk_start_s: float  # the SDK's clock at the same moment

    @property
    def end_s(self) -> float:
        return self.start_s + self.trajectory.duration_s

    def at(self, now_s: float) -> NDArray[np.float64]:
        """The trajectory's position at ``now_s``: linear between its points, as the guard checked it."""
        tau = now_s - self.start_s
        times = self.trajectory.times_from_start_s
        points = self.trajectory.positions_rad
        if tau >= times[-1]:
            return np.asarray(points[-1], dtype=float)
        k = int(np.searchsorted(times, tau, side="right"))
        t0, q0 = (0.0, self.start_rad) if k == 0 else (float(times[k - 1]), points[k - 1])
        t1, q1 = float(times[k]), points[k]
        alpha = 0.0 if t1 <= t0 else (tau - t0) / (t1 - t0)
        return np.asarray(q0 + alpha * (q1 - q0), dtype=float)


class Arx5Arm:
    """One X5 arm and its gripper on one CAN interface (see the module docstring). Thread-safe: SDK calls are
    serialised by one lock; a gripper move waits on its own lock, so a stop never waits behind it."""

    def __init__(self, settings: Arx5ArmSettings, *, guard: TrajectoryGuard | None = None) -> None:
        self.settings = settings
        self.guard = guard or TrajectoryGuard(settings)
        self.joint_names = settings.joint_names
        self.max_width_m = 2.0 * settings.robot.arm(settings.arm).gripper_max_m  # two fingers
        self.interface = settings.interface
        self._lock = threading.RLock()
        self._gripper_lock = threading.Lock()
        self._sdk: Any = None
        self._ctrl: Any = None
        self._monitor: BusMonitor | None = None
        self._status = ArmStatus("disconnected", "connect() first")
        self._playing: _Playing | None = None
        self._command_rad: NDArray[np.float64] | None = None  # the last joint command sent
        self._gripper_target_m = 0.0
        self.sent_commands = 0  #: commands handed to the SDK since construction (the tests' "nothing sent")
        self.last_health: BusHealth | None = None  #: the bus as last looked at
        self.watchdog = CommandWatchdog(settings.watchdog_timeout_s, self._on_watchdog)
        self._closed = threading.Event()
        self._stream_wake = threading.Event()
        self._streamer = threading.Thread(target=self._stream, name=f"x5-stream-{self.interface}", daemon=True)
        self._streamer.start()

    # -- connection ---------------------------------------------------------------------------------------------
    def connect(self) -> None:
        """Start the SDK on the arm's interface and hold where the arm stands (ContactLostError when the motors do
        not answer, ConfigError when the SDK's profile does not match the robot config)."""
        sdk = _arx5()
        s = self.settings
        with self._lock:
            self._drop_controller()
            robot_config = sdk.RobotConfigFactory.get_instance().get_config(s.sdk_profile)
            self._check_profile(robot_config)
            controller_config = sdk.ControllerConfigFactory.get_instance().get_config(
                "joint_controller", robot_config.joint_dof
            )
            names = motor_names(list(robot_config.motor_id), int(robot_config.gripper_motor_id))
            monitor = BusMonitor(self.interface, names, silent_after_s=s.silent_after_s)
            try:
                monitor.start()
            except HardwareError as exc:
                self._status = ArmStatus("lost", str(exc))
                raise ContactLostError(f"the X5 on {self.interface}: {exc}") from None
            try:
                ctrl = sdk.Arx5JointController(robot_config, controller_config, self.interface)
            except RuntimeError as exc:
                monitor.close()
                self._status = ArmStatus("lost", f"cannot start the SDK on {self.interface}: {exc}")
                raise ContactLostError(f"the X5 on {self.interface} does not answer: {exc}") from None
            self._sdk, self._ctrl, self._monitor = sdk, ctrl, monitor
            # The SDK held the GIL while it started the motors: let the monitor catch up on their answers.
            monitor.wait_until_all_answer(CONNECT_SETTLE_S)
            state = ctrl.get_joint_state()  # bound to a name first: a chained .pos() reads freed memory
            hold = np.array(state.pos(), dtype=float)
            self._gripper_target_m = float(np.clip(state.gripper_pos, 0.0, self.max_width_m))
            self._send(hold)
            try:
                gains = s.gains
                ctrl.set_gain(sdk.Gain(np.array(gains.kp), np.array(gains.kd), gains.gripper_kp, gains.gripper_kd))
            except RuntimeError as exc:
                self._status = ArmStatus("error", f"the SDK refused the gains: {exc}")
                raise HardwareError(f"the X5 on {self.interface} refused its gains: {exc}") from None
            self._status = ArmStatus("idle", "")

    def _check_profile(self, robot_config: Any) -> None:
        """The SDK clips commands to its profile's limits without a word: they must not be tighter than the URDF's,
        or the arm would not go where the guard and the planner think."""
        where = f"SDK profile {self.settings.sdk_profile!r}"
        if robot_config.joint_dof != len(self.joint_names):
            n = len(self.joint_names)
            raise ConfigError(f"{where} has {robot_config.joint_dof} joints; the robot config's arm has {n}")
        for i, name in enumerate(self.joint_names):
            low, high = self.guard.limits[name].lower, self.guard.limits[name].upper
            sdk_low, sdk_high = float(robot_config.joint_pos_min[i]), float(robot_config.joint_pos_max[i])
            if low < sdk_low - LIMIT_TOLERANCE_RAD or high > sdk_high + LIMIT_TOLERANCE_RAD:
                raise ConfigError(
                    f"{where} limits {name} to [{sdk_low}, {sdk_high}] rad, tighter than the URDF's [{low}, {high}]: "
                    "the SDK would clip what the guard accepts; fix the URDF or the profile"
                )
        if abs(float(robot_config.gripper_width) - self.max_width_m) > GRIPPER_WIDTH_TOLERANCE_M:
            raise ConfigError(
                f"{where} opens the gripper {robot_config.gripper_width} m; the robot config's fingers open "
                f"{self.max_width_m} m (gripper_max_m per finger)"
            )

    def close(self) -> None:
        """The shutdown sequence: stop, home (when configured), damp, then drop the SDK and the monitor."""
        self.watchdog.close()
        self._closed.set()
        self._stream_wake.set()
        self._streamer.join(timeout=2.0)
        with self._lock:
            ctrl = self._ctrl
            if ctrl is not None and self._status.status not in ("lost", "disconnected"):
                self._playing = None
                if self.settings.home_before_damping:
                    ctrl.reset_to_home()
                ctrl.set_to_damping()
            self._drop_controller()
            self._status = ArmStatus("disconnected", "closed")

    def _drop_controller(self) -> None:
        self._playing = None
        if self._monitor is not None:
            self._monitor.close()
            self._monitor = None
        if self._ctrl is not None:
            self._ctrl = None
            gc.collect()  # the SDK's destructor (it damps and joins its thread) runs now, not at some later collection

    @property
    def status(self) -> ArmStatus:
        """The arm's status, with what the bus monitor sees folded in (a motor fault shows here at once)."""
        with self._lock:
            if self._ctrl is not None and self._status.status not in ("lost", "disconnected"):
                self._look_at_bus(raising=False)
            return self._status

    # -- state --------------------------------------------------------------------------------------------------
    def joint_state(self) -> JointReading:
        """The measured joints; ContactLostError when the bus is dead, HardwareError when a motor is silent (its
        reading would be stale)."""
        with self._lock:
            ctrl = self._require()
            health = self._look_at_bus(raising=False)
            if health is not None and health.lost:
                raise ContactLostError(f"lost contact with the X5 on {self.interface}: {'; '.join(health.problems)}")
            silent = [p for p in (health.problems if health else ()) if "silent" in p or "never answered" in p]
            if silent:
                raise HardwareError(f"the X5 on {self.interface}: {'; '.join(silent)}: its joint state is unknown")
            state = ctrl.get_joint_state()  # bound to a name first (see connect)
            return JointReading(
                positions_rad=tuple(float(v) for v in state.pos()),
                velocities_rad_s=tuple(float(v) for v in state.vel()),
                efforts_nm=tuple(float(v) for v in state.torque()),
                robot_time_s=float(state.timestamp),
                read_s=time.monotonic(),
            )

    # -- motion -------------------------------------------------------------------------------------------------
    def play(self, trajectory: CheckedTrajectory) -> None:
        """Start a checked trajectory now (replacing what plays) and arm the watchdog: :meth:`feed` must then come
        at least every ``watchdog.timeout_s`` until it ends."""
        if not isinstance(trajectory, CheckedTrajectory) or trajectory.joint_names != self.joint_names:
            raise InvalidCommandError("play() takes a CheckedTrajectory of this arm's joints (TrajectoryGuard.check)")
        with self._lock:
            ctrl = self._require()
            if self._status.status == "error":
                raise HardwareError(f"the arm is in error ({self._status.detail}): call recover_from_errors() first")
            self._look_at_bus(raising=True)
            state = ctrl.get_joint_state()
            start = np.array(state.pos(), dtype=float)
            playing = _Playing(trajectory, start, time.monotonic(), float(ctrl.get_timestamp()))
            self._playing = playing
            if self.settings.trajectory_mode == "sdk_trajectory":
                self._send_sdk_trajectory(playing, time.monotonic())
            else:
                self._send(playing.at(time.monotonic()))
            self._status = ArmStatus("playing", "")
            self.watchdog.arm()
        self._stream_wake.set()

    def feed(self) -> None:
        """The commander is alive (a lease renewal): keeps a playing trajectory going."""
        self.watchdog.feed()

    def is_playing(self) -> bool:
        """Whether the trajectory still plays: until its last stamp and then until the joints settle on its last
        point (or ``settle_timeout_s`` passed). Raises ContactLostError or HardwareError for what stopped it."""
        with self._lock:
            playing = self._playing
            if self._status.status != "playing" or playing is None:
                return False
            self._look_at_bus(raising=True)
            now = time.monotonic()
            state = self._require().get_joint_state()  # bound to a name first (see connect)
            measured = np.array(state.pos(), dtype=float)
            commanded = playing.at(now)
            error = np.abs(measured - commanded)
            worst = int(np.argmax(error))
            if error[worst] > self.settings.following_error_rad:
                why = (
                    f"{self.joint_names[worst]} is {error[worst]:.3f} rad from its command (limit "
                    f"{self.settings.following_error_rad:g} rad): a joint that does not follow (a motor without "
                    "torque, a collision, a hand on the arm)"
                )
                self.stop(why=why)
                self._status = ArmStatus("error", why)
                raise HardwareError(f"the X5 on {self.interface} stopped: {why}")
            if now < playing.end_s:
                return True
            final = np.asarray(playing.trajectory.positions_rad[-1], dtype=float)
            settled = float(np.max(np.abs(measured - final))) <= self.settings.settle_tolerance_rad
            if settled or now >= playing.end_s + self.settings.settle_timeout_s:
                self._playing = None
                self.watchdog.disarm()
                self._status = ArmStatus("idle", "")
                return False
            return True

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` [s] for the trajectory to end (feeding the watchdog meanwhile); True if it did."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if not self.is_playing():
                return True
            self.feed()
            time.sleep(min(0.01, max(0.0, deadline - time.monotonic())))
        return not self.is_playing()

    def stop(self, *, why: str = "stopped on request") -> None:
        """Stop now: the command becomes the measured joints, so the arm holds where it is (within the motors' lag,
        about 30 ms of motion)."""
        with self._lock:
            self.watchdog.disarm()
            self._playing = None
            if self._ctrl is None or self._status.status in ("lost", "disconnected"):
                return
            state = self._ctrl.get_joint_state()
            self._send(np.array(state.pos(), dtype=float))
            if self._status.status != "error":
                self._status = ArmStatus("stopped", why)

    def hold(self) -> None:
        self.stop(why="holding")

    def recover_from_errors(self) -> None:
        """Accept trajectories again once the bus is healthy (HardwareError naming what is still wrong)."""
        with self._lock:
            self._require()
            assert self._monitor is not None
            health = self._monitor.health()
            self.last_health = health
            if not health.ok:
                raise HardwareError(f"the X5 on {self.interface} still has faults: {'; '.join(health.problems)}")
            self._status = ArmStatus("idle", "")

    # -- gripper ------------------------------------------------------------------------------------------------
    @property
    def gripper_busy(self) -> bool:
        return self._gripper_lock.locked()

    def gripper_state(self) -> GripperReading:
        with self._lock:
            state = self._require().get_joint_state()
            width = float(np.clip(state.gripper_pos, 0.0, self.max_width_m))
            torque = abs(float(state.gripper_torque))
        grasped = width > self.settings.gripper.tolerance_m and torque >= self.settings.gripper.grasp_torque_nm
        return GripperReading(width, width / self.max_width_m, grasped)

    def gripper_state_now(self) -> GripperReading | None:
        """The gripper's state (never waits: the SDK's reading is always current)."""
        return self.gripper_state()

    def set_opening(self, opening: float) -> bool:
        """The agents' gripper command: 0 closed .. 1 fully open (``max_width_m``)."""
        if not 0.0 <= opening <= 1.0:
            raise InvalidCommandError(f"gripper opening {opening!r} is outside [0, 1]")
        return self.move_gripper(opening * self.max_width_m)

    def move_gripper(self, width_m: float) -> bool:
        """Move the fingers ``width_m`` [m] apart; blocks until there (True), or stopped on an object or timed out
        (False)."""
        return self._gripper_to(width_m) == "reached"

    def close_on(self, width_m: float = 0.0) -> bool:
        """Close towards ``width_m`` [m]; the SDK stops pushing on whatever is between the fingers. True when the
        fingers got there or hold something."""
        return self._gripper_to(width_m) in ("reached", "stalled")

    def _gripper_to(self, width_m: float) -> str:
        if not 0.0 <= width_m <= self.max_width_m:
            raise InvalidCommandError(f"gripper width {width_m!r} m is outside [0, {self.max_width_m:g}] m")
        g = self.settings.gripper
        with self._gripper_lock:
            with self._lock:
                self._require()
                self._gripper_target_m = width_m
                self._send_gripper()
            start = time.monotonic()
            still_since, last_width = start, self.gripper_state().width_m
            while True:
                time.sleep(GRIPPER_POLL_S)
                width = self.gripper_state().width_m
                now = time.monotonic()
                if abs(width - width_m) <= g.tolerance_m:
                    return "reached"
                if abs(width - last_width) > GRIPPER_STILL_M:
                    still_since, last_width = now, width
                elif now - still_since >= g.stalled_s and now - start >= g.stalled_s:
                    return "stalled"
                if now - start >= g.timeout_s:
                    return "timeout"

    # -- SDK commands -------------------------------------------------------------------------------------------
    def _require(self) -> Any:
        if self._ctrl is None or self._status.status in ("lost", "disconnected"):
            raise ContactLostError(f"no contact with the X5 on {self.interface} ({self._status.detail}): connect()")
        return self._ctrl

    def _send(self, q: NDArray[np.float64]) -> None:
        """One joint command (and the gripper's width) to the SDK; the SDK sends it at its next cycle."""
        cmd = self._sdk.JointState(len(self.joint_names))
        cmd.pos()[:] = q
        cmd.gripper_pos = self._gripper_target_m
        self._ctrl.set_joint_cmd(cmd)
        self._command_rad = q
        self.sent_commands += 1

    def _send_gripper(self) -> None:
        """The gripper's new width with the arm's current command (a playing SDK trajectory is resent from now)."""
        playing = self._playing
        if playing is not None and self.settings.trajectory_mode == "sdk_trajectory":
            self._send_sdk_trajectory(playing, time.monotonic())
        elif playing is None:
            state = self._ctrl.get_joint_state()
            self._send(self._command_rad if self._command_rad is not None else np.array(state.pos(), dtype=float))
        # streaming: the streamer sends the new width with the next point

    def _send_sdk_trajectory(self, playing: _Playing, now_s: float) -> None:
        """What is left of ``playing`` from ``now_s`` as one set_joint_traj, stamped on the SDK's clock."""
        t = playing.trajectory
        offset = playing.sdk_start_s - playing.start_s  # monotonic -> SDK clock
        points = [(now_s, playing.at(now_s))]
        points += [
            (playing.start_s + float(tau), np.asarray(q, dtype=float))
            for tau, q in zip(t.times_from_start_s, t.positions_rad, strict=True)
            if playing.start_s + float(tau) > now_s
        ]
        states = []
        for at_s, q in points:
            state = self._sdk.JointState(len(self.joint_names))
            state.pos()[:] = q
            state.gripper_pos = self._gripper_target_m
            state.timestamp = at_s + offset
            states.append(state)
        self._ctrl.set_joint_traj(states)
        self._command_rad = points[-1][1]
        self.sent_commands += 1

    def _stream(self) -> None:
        """stream mode: the playing trajectory's position at every SDK cycle."""
        period = 1.0 / self.settings.stream_rate_hz
        next_s = time.monotonic()
        while not self._closed.is_set():
            with self._lock:
                playing = self._playing
                if playing is not None and self.settings.trajectory_mode == "stream" and self._ctrl is not None:
                    self._send(playing.at(time.monotonic()))
            if playing is None:
                self._stream_wake.wait(0.1)
                self._stream_wake.clear()
                next_s = time.monotonic()
                continue
            next_s += period
            delay = next_s - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -5 * period:  # far behind (a loaded machine): keep the period, drop the backlog
                next_s = time.monotonic()

    # -- faults -------------------------------------------------------------------------------------------------
    def _look_at_bus(self, *, raising: bool) -> BusHealth | None:
        """Fold the bus monitor's view into the status: a dead bus is lost contact, a silent or faulted motor an
        error that stops a playing arm. With ``raising``, either raises."""
        monitor = self._monitor
        if monitor is None:
            return None
        health = monitor.health()
        self.last_health = health
        if health.lost:
            self.watchdog.disarm()
            self._playing = None
            self._status = ArmStatus("lost", f"lost contact: {'; '.join(health.problems)}")
            if raising:
                raise ContactLostError(f"lost contact with the X5 on {self.interface}: {'; '.join(health.problems)}")
        elif health.problems:
            why = "; ".join(health.problems)
            if self._status.status == "playing":
                self.stop(why=why)
            self._status = ArmStatus("error", why)
            if raising:
                raise HardwareError(f"the X5 on {self.interface}: {why}; call recover_from_errors() once it is fixed")
        return health

    def _on_watchdog(self) -> None:
        """Runs on the watchdog's thread when feed() stopped coming: stop and hold, if the trajectory still plays."""
        with self._lock:
            if self.watchdog.armed:
                return  # a new trajectory re-armed it meanwhile
            try:
                if not self.is_playing():
                    return
                self.stop(why=f"no feed() for {self.watchdog.timeout_s:g} s: stopped and holding")
            except HardwareError:
                return  # lost contact or a fault: the status says which
            self._status = ArmStatus("watchdog", self._status.detail)
