"""One ARX X5 arm over CAN, through arx5-interface: joint state, checked trajectories, stop, hold, gripper.

Every trajectory goes through the :class:`~robodojo.hardware.trajectory_guard.TrajectoryGuard` first; only a
:class:`~robodojo.hardware.trajectory_guard.CheckedTrajectory` reaches the SDK, which then sends MIT commands to the
motors at 500 Hz on its own thread (shared/HARDWARE.md). The SDK runs in a process of its own per arm
(:mod:`robodojo.hardware.arx5_host` says why). What this adapter adds to the SDK, and why:

- **Connect holds, it does not move.** The SDK starts with zero gains (a limp arm), constructed once any motor
  answered, and reads 0 for a motor it has not heard yet. :meth:`Arx5Arm.connect` waits until every motor answered
  and the SDK's reading agrees with their answers on the bus, then sets the command to that reading and only then the
  configured gains, so the arm holds where it stands; a motor that does not answer leaves it limp (lost contact).
  ``reset_to_home()`` (which moves it to the folded rest pose) runs only in the shutdown sequence.
- **Trajectories** stream (``trajectory_mode: stream``, the default: the trajectory's position and velocity at every
  SDK cycle, linear between the checked points, through ``set_joint_cmd``) or go whole to ``set_joint_traj`` with
  timestamps on the SDK's clock (``sdk_trajectory``: the SDK interpolates). benchmarks/x5.py measures both against the
  bus emulator; config/hardware/dual_arx_x5.yaml says why streaming is the default.
- **The gripper** is the seventh field of every SDK command: its width [m] (0 closed .. 0.088 open) rides along
  with the arm's command; the agents' 0..1 opening maps onto it. The SDK moves it at most 0.3 m/s and stops pushing
  when it meets an object, so closing on something is a move that stalls.
- **Faults the SDK does not report.** The SDK keeps a silent motor's last reading, ignores the motors' error flags
  and raises nothing when the bus dies (measured). A :class:`~robodojo.hardware.x5_bus.monitor.BusMonitor` listens to
  the bus beside it: a dead bus is lost contact (:class:`~robodojo.errors.ContactLostError`, status ``lost``;
  :meth:`Arx5Arm.connect` again); a silent motor or an error flag stops the arm (status ``error``, until
  :meth:`Arx5Arm.recover_from_errors` once the bus is healthy). A playing joint further than
  ``following_error_rad`` from its command (a collision, a motor that lost torque) stops it too, and so does the
  SDK's own emergency state (its log says so; recovering restarts the SDK).
- **Shutdown** (:meth:`Arx5Arm.close`): the documented sequence, home first, then damping; never damping alone at a
  raised pose, where the arm would sag onto the table.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable
from typing import cast

import numpy as np
from numpy.typing import NDArray

from robodojo.errors import ConfigError, ContactLostError, HardwareError, InvalidCommandError
from robodojo.hardware.adapter import RELEASE_ACTION, ArmStatus, GripperReading, JointReading, WatchdogStop
from robodojo.hardware.arx5_host import SdkHost, SdkProfile, position_at
from robodojo.hardware.settings import Arx5ArmSettings
from robodojo.hardware.trajectory_guard import CheckedTrajectory, TrajectoryGuard
from robodojo.hardware.watchdog import CommandWatchdog
from robodojo.hardware.x5_bus.frames import X5_LAYOUT, ArmLayout
from robodojo.hardware.x5_bus.monitor import BusHealth, BusMonitor, motor_names

LIMIT_TOLERANCE_RAD = 2e-3  # the URDF's limits are the profile's, rounded (2.618 vs 2.62)
GRIPPER_WIDTH_TOLERANCE_M = 1e-3
GRIPPER_POLL_S = 0.01
GRIPPER_STILL_M = 5e-4  # a gripper that moved less than this over stalled_s has stopped
CONNECT_SETTLE_S = 3.0  # how long connect() waits for every motor to answer, and for the SDK to read them
# The limp arm's reading by the SDK and its motors' last answers on the bus agree this well before it is held.
CONNECT_AGREEMENT_RAD = 0.02
CONNECT_AGREEMENT_M = 0.002
CONNECT_POLL_S = 0.05
SDK_LOG_KEPT = 20  # the SDK's last warnings and errors, for diagnostics
# A motor that has not answered for this long is not held at its reading (the SDK keeps a silent motor's last one):
# 25 SDK cycles, 2.5 of the bus monitor's reads; a joint at 1 rad/s moves 0.05 rad meanwhile.
STALE_READING_S = 0.05
# An arm at rest starts a trajectory from the joints read this recently (the guard's reading): one SDK round trip less
# between a trajectory's arrival and its first command. At rest the joints stay within an encoder step meanwhile.
START_READING_FRESH_S = 0.05


class _Playing:
    """A trajectory handed to the SDK's host, as this process follows it."""

    def __init__(self, trajectory: CheckedTrajectory, start_rad: NDArray[np.float64], start_s: float) -> None:
        self.trajectory = trajectory
        self.start_rad = start_rad
        self.start_s = start_s  # monotonic
        self.end_s = start_s + trajectory.duration_s

    def at(self, now_s: float) -> NDArray[np.float64]:
        t = self.trajectory
        return position_at(t.times_from_start_s, t.positions_rad, self.start_rad, now_s - self.start_s)


class Arx5Arm(WatchdogStop):
    """One X5 arm and its gripper on one CAN interface (see the module docstring). Thread-safe: requests to the SDK
    are serialised by one lock; a gripper move waits on its own lock, so a stop never waits behind it.

    ``host_env``: extra environment of the SDK's process (the SocketCAN shim's, to drive the bus emulator);
    ``on_sdk_log(level, message)``: the SDK's warnings and errors as they come.
    """

    def __init__(
        self,
        settings: Arx5ArmSettings,
        *,
        guard: TrajectoryGuard | None = None,
        host_env: dict[str, str] | None = None,
        on_sdk_log: Callable[[str, str], None] | None = None,
    ) -> None:
        self.settings = settings
        self.guard = guard or TrajectoryGuard(settings)
        self.joint_names = settings.joint_names
        self.max_width_m = 2.0 * settings.robot.arm(settings.arm).gripper_max_m  # two fingers
        self.interface = settings.interface
        self._lock = threading.RLock()
        self._gripper_lock = threading.Lock()
        self._on_sdk_log = on_sdk_log
        self.sdk_log: collections.deque[tuple[str, str]] = collections.deque(maxlen=SDK_LOG_KEPT)
        self._host = SdkHost(self.interface, on_log=self._sdk_logged, env=host_env)
        self._connected = False
        self._monitor: BusMonitor | None = None
        self._status = ArmStatus("disconnected", "connect() first")
        self._playing: _Playing | None = None
        self.sent_commands = 0  #: trajectories and holds handed to the SDK (the tests' "nothing sent")
        self._last_read: tuple[float, tuple[float, ...]] = (-float("inf"), ())  # (monotonic, joints) of joint_state()
        self.last_health: BusHealth | None = None  #: the bus as last looked at
        self.watchdog = CommandWatchdog(settings.watchdog_timeout_s, self._on_watchdog)

    # -- connection ---------------------------------------------------------------------------------------------
    def connect(self) -> None:
        """Start the SDK on the arm's interface and hold where the arm stands (ContactLostError when the motors do
        not answer, ConfigError when the SDK's profile does not match the robot config)."""
        s = self.settings
        with self._lock:
            self._disconnect()
            names = motor_names(self._motor_layout())
            monitor = BusMonitor(self.interface, names, silent_after_s=s.silent_after_s)
            try:
                monitor.start()
            except HardwareError as exc:
                self._status = ArmStatus("lost", str(exc))
                raise ContactLostError(f"the X5 on {self.interface}: {exc}") from None
            self._monitor = monitor
            try:
                profile, _ = self._host.start(s.sdk_profile, s.stream_rate_hz, s.host_deadman_s, s.bus_thread_priority)
                self._check_profile(profile)
                self._hold_where_the_motors_are(monitor)
            except ContactLostError as exc:
                self._disconnect()
                self._status = ArmStatus("lost", str(exc))
                raise
            except ConfigError:
                self._disconnect()
                raise
            self._connected = True
            self._status = ArmStatus("idle", "")

    def _hold_where_the_motors_are(self, monitor: BusMonitor) -> None:
        """The limp SDK holds where the arm stands, stiffly, once every motor answered and the SDK reads what they
        report (ContactLostError otherwise, the arm left limp: holding a joint the SDK has not heard from would drive
        it to 0)."""
        s = self.settings
        health = monitor.wait_until_all_answer(CONNECT_SETTLE_S, faults_allowed=True)
        if not health.heard:
            raise ContactLostError(f"the X5 on {self.interface}: {'; '.join(health.problems)}; not holding the arm")
        layout = self._motor_layout()
        gains = (s.gains.kp, s.gains.kd, s.gains.gripper_kp, s.gains.gripper_kd)
        deadline = time.monotonic() + CONNECT_SETTLE_S
        while True:
            bus = monitor.positions_rad()
            joints = [bus[m] for m in layout.joint_motor_ids]
            gripper_m = layout.gripper_m(bus[layout.gripper_motor_id])
            why = self._host.hold_stiffly(gains, joints, gripper_m, (CONNECT_AGREEMENT_RAD, CONNECT_AGREEMENT_M))
            if not why:
                return
            if time.monotonic() > deadline:
                raise ContactLostError(f"the X5 on {self.interface}: {why}; not holding the arm")
            time.sleep(CONNECT_POLL_S)

    def _motor_layout(self) -> ArmLayout:
        """The profile's motors, for the monitor before the SDK runs (shared/HARDWARE.md)."""
        if self.settings.sdk_profile != "X5":
            raise ConfigError(
                f"sdk_profile {self.settings.sdk_profile!r}: only the X5 profile's motor layout is known to this "
                "driver (shared/HARDWARE.md); other arm revisions carry other motors"
            )
        return X5_LAYOUT

    def _check_profile(self, profile: SdkProfile) -> None:
        """The SDK clips commands to its profile's limits without a word: they must not be tighter than the URDF's,
        or the arm would not go where the guard and the planner think."""
        where = f"SDK profile {self.settings.sdk_profile!r}"
        n = len(self.joint_names)
        if profile.joint_dof != n:
            raise ConfigError(f"{where} has {profile.joint_dof} joints; the robot config's arm has {n}")
        layout = self._motor_layout()
        if (profile.motor_ids, profile.gripper_motor_id) != (layout.joint_motor_ids, layout.gripper_motor_id):
            raise ConfigError(f"{where} puts its motors on ids {profile.motor_ids} + {profile.gripper_motor_id}")
        for i, name in enumerate(self.joint_names):
            low, high = self.guard.limits[name].lower, self.guard.limits[name].upper
            sdk_low, sdk_high = profile.joint_pos_min[i], profile.joint_pos_max[i]
            if low < sdk_low - LIMIT_TOLERANCE_RAD or high > sdk_high + LIMIT_TOLERANCE_RAD:
                raise ConfigError(
                    f"{where} limits {name} to [{sdk_low}, {sdk_high}] rad, tighter than the URDF's [{low}, {high}]: "
                    "the SDK would clip what the guard accepts; fix the URDF or the profile"
                )
        if abs(profile.gripper_width_m - self.max_width_m) > GRIPPER_WIDTH_TOLERANCE_M:
            raise ConfigError(
                f"{where} opens the gripper {profile.gripper_width_m} m; the robot config's fingers open "
                f"{self.max_width_m} m (gripper_max_m per finger)"
            )

    def close(self) -> None:
        """The shutdown sequence: stop, home (when configured), damp, then end the SDK and the monitor."""
        self.watchdog.close()
        with self._lock:
            if self._connected and self._status.status != "lost":
                try:
                    if self.settings.home_before_damping:
                        self._host.call("reset_to_home")
                    self._host.call("set_to_damping")
                except HardwareError:
                    pass  # lost on the way: the SDK's exit damps what it still reaches
            self._disconnect()
            self._status = ArmStatus("disconnected", "closed")

    def _disconnect(self) -> None:
        self._connected = False
        self._playing = None
        self._host.stop_process()
        if self._monitor is not None:
            self._monitor.close()
            self._monitor = None

    @property
    def status(self) -> ArmStatus:
        """The arm's status, with what the bus monitor and the SDK's log say folded in (a fault shows at once)."""
        with self._lock:
            if self._connected and self._status.status not in ("lost", "disconnected"):
                self._look_at_faults(raising=False)
            return self._status

    # -- state --------------------------------------------------------------------------------------------------
    def joint_state(self) -> JointReading:
        """The measured joints; ContactLostError when the bus or the SDK is gone, HardwareError when a motor is
        silent (its reading would be stale)."""
        with self._lock:
            self._require()
            health = self._look_at_faults(raising=False)
            if self._status.status == "lost":
                raise ContactLostError(f"lost contact with the X5 on {self.interface}: {self._status.detail}")
            silent = [p for p in (health.problems if health else ()) if "silent" in p or "never answered" in p]
            if silent:
                raise HardwareError(f"the X5 on {self.interface}: {'; '.join(silent)}: its joint state is unknown")
            state = self._state()
            self._last_read = (time.monotonic(), state.positions_rad)
            return JointReading(
                positions_rad=state.positions_rad,
                velocities_rad_s=state.velocities_rad_s,
                efforts_nm=state.torques_nm,
                robot_time_s=state.timestamp_s,
                read_s=time.monotonic(),
            )

    # -- motion -------------------------------------------------------------------------------------------------
    def play(self, trajectory: CheckedTrajectory) -> None:
        """Start a checked trajectory now (replacing what plays) and arm the watchdog: :meth:`feed` must then come
        at least every ``watchdog.timeout_s`` until it ends."""
        if not isinstance(trajectory, CheckedTrajectory) or trajectory.joint_names != self.joint_names:
            raise InvalidCommandError("play() takes a CheckedTrajectory of this arm's joints (TrajectoryGuard.check)")
        with self._lock:
            self._require()
            if self._status.status == "error":
                raise HardwareError(f"the arm is in error ({self._status.detail}): {RELEASE_ACTION}")
            self._look_at_faults(raising=True)
            start = np.array(self._start_rad(), dtype=float)
            playing = _Playing(trajectory, start, time.monotonic())
            self._call(
                "play", self.settings.trajectory_mode, playing.start_s, start.tolist(),
                trajectory.times_from_start_s.tolist(), trajectory.positions_rad.tolist(),
            )  # fmt: skip
            self._playing = playing
            self.sent_commands += 1
            self._status = ArmStatus("playing", "")
            self.watchdog.arm()

    def _start_rad(self) -> tuple[float, ...]:
        """Where a new trajectory starts: an arm at rest stands where :meth:`joint_state` read it just before (the
        reading the guard checked it against, saving a round trip to the SDK); a moving one is read now."""
        read_s, positions = self._last_read
        if self._status.status != "playing" and time.monotonic() - read_s <= START_READING_FRESH_S:
            return positions
        return self._state().positions_rad

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
            self._look_at_faults(raising=True)
            now = time.monotonic()
            measured = np.array(self._state().positions_rad, dtype=float)
            error = np.abs(measured - playing.at(now))
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
        """Stop now. A playing arm holds where it is (the command becomes the measured joints, within the motors'
        lag, about 30 ms of motion; a joint whose motor has not answered lately is held at the last command it
        answered, never at its stale reading). An arm at rest keeps its hold: a repeated stop moves nothing
        (arx5_host's ``op_hold`` says why)."""
        with self._lock:
            self.watchdog.disarm()
            self._playing = None
            if not self._connected or self._status.status in ("lost", "disconnected"):
                return
            try:
                commanded, _ = cast(tuple[bool, tuple[float, ...]], self._call("hold", self._stale_joints()))
            except ContactLostError:
                return  # the status says lost
            if commanded:
                self.sent_commands += 1
            if self._status.status != "error":
                self._status = ArmStatus("stopped", why)

    def _stale_joints(self) -> dict[int, float | None]:
        """The joints whose motor has not answered for STALE_READING_S (or never): the SDK's reading of them is old.
        Each with what to hold it at: the command its motor answered last (the bus monitor saw both), which a motor
        that only lost its link still executes; None: keep the SDK's current command."""
        layout = self._motor_layout()
        if self._monitor is None:
            return dict.fromkeys(range(len(layout.joint_motor_ids)))
        quiet = {m.motor_id: m.silent_s for m in self._monitor.health().motors}
        answered = self._monitor.answered_commands_rad()
        stale: dict[int, float | None] = {}
        for i, motor_id in enumerate(layout.joint_motor_ids):
            silent_s = quiet.get(motor_id)
            if silent_s is None or silent_s > STALE_READING_S:
                stale[i] = answered.get(motor_id)
        return stale

    def recover_from_errors(self) -> None:
        """Accept trajectories again once the bus is healthy (HardwareError naming what is still wrong). After the
        SDK's emergency state, the SDK is restarted: that is its only way out."""
        with self._lock:
            self._require()
            if self._host.emergency or not self._host.alive:
                self.connect()
                return
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
            self._require()
            state = self._state()
        width = float(np.clip(state.gripper_m, 0.0, self.max_width_m))
        g = self.settings.gripper
        held = width > g.tolerance_m and abs(state.gripper_torque_nm) >= g.grasp_torque_nm
        return GripperReading(width, width / self.max_width_m, held)

    def gripper_state_now(self) -> GripperReading | None:
        """The gripper's state (never waits behind a move: the SDK's reading is always current)."""
        return self.gripper_state()

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
                self._call("gripper", width_m)
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
                elif now - still_since >= g.stalled_s:
                    return "stalled"
                if now - start >= g.timeout_s:
                    return "timeout"

    # -- the SDK ------------------------------------------------------------------------------------------------
    def _require(self) -> None:
        if not self._connected or self._status.status in ("lost", "disconnected"):
            raise ContactLostError(f"no contact with the X5 on {self.interface} ({self._status.detail}): connect()")

    def _call(self, op: str, *args: object) -> object:
        """A request to the SDK's host; its death is lost contact."""
        try:
            return self._host.call(op, *args)
        except ContactLostError as exc:
            self._lose(str(exc))
            raise

    def _state(self):
        try:
            return self._host.state()
        except ContactLostError as exc:
            self._lose(str(exc))
            raise

    def _lose(self, why: str) -> None:
        self.watchdog.disarm()
        self._playing = None
        self._status = ArmStatus("lost", why)

    def _sdk_logged(self, level: str, message: str) -> None:
        self.sdk_log.append((level, message))
        if self._on_sdk_log is not None:
            self._on_sdk_log(level, message)

    # -- faults -------------------------------------------------------------------------------------------------
    def _look_at_faults(self, *, raising: bool) -> BusHealth | None:
        """Fold the bus monitor's view and the SDK's state into the status: a dead bus or SDK process is lost
        contact; a silent or faulted motor, or the SDK's emergency state, an error that stops a playing arm. With
        ``raising``, either raises."""
        monitor = self._monitor
        if monitor is None:
            return None
        health = monitor.health()
        self.last_health = health
        if health.lost or not self._host.alive:
            why = "; ".join(health.problems) if health.lost else "the SDK process ended"
            self._lose(f"lost contact: {why}")
            if raising:
                raise ContactLostError(f"lost contact with the X5 on {self.interface}: {why}")
            return health
        problems = list(health.problems)
        if self._host.emergency:
            problems.append(f"the SDK is in its emergency state ({self._host.emergency}); release restarts it")
        if problems:
            why = "; ".join(problems)
            if self._status.status == "playing":
                self.stop(why=why)
            self._status = ArmStatus("error", why)
            if raising:
                raise HardwareError(f"the X5 on {self.interface}: {why}; {RELEASE_ACTION}")
        return health
