"""The Franka FR3 over libfranka, through franky-control: joint state, checked trajectories, stop, hold, gripper.

Every trajectory goes through the :class:`~robodojo.hardware.trajectory_guard.TrajectoryGuard` first; only a
:class:`~robodojo.hardware.trajectory_guard.CheckedTrajectory` reaches franky.

How a trajectory is played, and why: as one ``franky.JointWaypointMotion`` whose waypoints are the trajectory's
points with their pass-through velocities (central differences; zero at the last point) and, as each waypoint's
``minimum_time``, its segment's stamped duration. Measured against franky-sim (2 cores, dynamics factor 0.5, a 2 s,
50-point cosine move of 0.2-0.3 rad on all joints; durations on the robot's clock, RobotState.time):

- waypoints with velocities and minimum times: 2.02 s (planned 2.0), largest joint error against the plan at the
  same robot time 0.026 rad (the controller's lag), off the planned path at most 1.5e-3 rad, end within 3e-4 rad;
- the same without minimum times: 1.54 s, error against the plan in time 0.040 rad: franky plans each segment
  time-optimally, so the stamps are not kept;
- a sequence of ``JointMotion`` (one per point, each replacing the last, paced by Python's clock): 1.89 s (Python's
  wall clock ran ahead of the simulator's), error in time 0.024 rad, off the path 2.7e-3 rad, peak speed 0.41 rad/s
  against the waypoint motion's 0.31 (planned 0.24);
- waypoints without velocities: each point reached at rest, 4.2-4.6 s of wall time.

The waypoint motion keeps the stamps on the robot's 1 kHz clock inside libfranka, where a JointMotion sequence keeps
them on a Python thread that the GIL, the garbage collector or a slower-than-wall simulator shifts; it stays closer to
the path with less speed overshoot, and it is one SDK call, not one per point. benchmarks/hardware.py reproduces the
comparison.

Speed: the guard checks the robot's own limits (URDF velocity, FR3 acceleration); franky plays no faster than its
own limits times ``relative_dynamics_factor`` (velocity 2.175 rad/s on joints 1-4 in franky 2.0.0, so 1.09 rad/s at
0.5; acceleration 7.5 rad/s^2 on joint 2, so 3.75). A trajectory beyond them is slowed down whole before it is sent:
its times are stretched by one factor (:meth:`FrankaArm.time_scale`), so the path is kept and every waypoint's
velocity stays consistent with its neighbours. Without that, franky must reach each waypoint at a velocity it cannot
get to within the segment, and its per-segment planner overshoots and comes back: measured in fr3_world at factor
0.5, a 1.3 s home move (5 rad/s^2 planned on joint 2) swung back and forth for 5-87 s of wall time; at factor 0.2 a
3 s move took 53 s. Pass-through velocities are also clipped just inside the velocity limit
(:data:`WAYPOINT_SPEED_FRACTION`), because franky's planner rejects a faster waypoint and fails the whole motion.

Priority: libfranka's control thread must answer every 1 ms cycle. When it misses (preempted on a loaded machine),
franky extrapolates the commanded state and its planner then swings back toward the waypoints: measured against
franky-sim, a 1.4 s move took 2.8-3.1 s of robot time with the commanded joint 0.27 rad backwards at normal priority,
and 1.42 s with nothing backwards with the control thread at SCHED_FIFO 80. So the thread franky starts for a motion
gets ``control_thread_priority`` (where the OS allows it); nothing else in the process does.

Stops (an operator's stop, the e-stop, the watchdog, a lapsed lease, the driver's stall check; :meth:`FrankaArm.stop`)
brake within the FR3's documented FCI limits (config/hardware/fr3.yaml ``fci_limits``: 10 rad/s^2 and 5000 rad/s^3
on every joint; franky 2.0.0 reports the Panda's, up to 20 rad/s^2 and 10000 rad/s^3, so :meth:`FrankaArm.connect`
gives franky the smaller of the two per joint). A running motion is replaced by one ``franky.JointWaypointMotion``
to the braking point of :func:`braking_plan`, with the plan's duration as its ``minimum_time``: franky hands over
from the current command at its next 1 ms cycle, every joint decelerates over the same time (near the straight
continuation of the path), and the controller holds where it ends. An arm at rest (no franky motion running) gets
nothing at all: :meth:`FrankaArm.stop` returns without a call to the robot, so repeated stops, e-stops and refused
trajectories move nothing. What was measured against franky-sim with every physics step logged
(test/hardware/test_fr3_stops.py; joints 1 and 4 moving, joint 1 at 0.8-1.09 rad/s commanded, factor 0.5):

- ``robot.stop()`` (before): franky-sim holds the last command, so the commanded velocity drops from 1.09 rad/s to 0
  in one step (-1088 rad/s^2; a real FR3 aborts such a command with a reflex); measured on joint 1: 9.5 rad/s^2 and
  11346 rad/s^3 (the FR3 allows 5000);
- ``franky.JointStopMotion`` (a JointMotion to where the stop began): the arm overshoots and comes back, the
  commanded joint turning to -0.31 rad/s (franky-sim as shipped, see below);
- a ``JointMotion`` to a braking point without a minimum time: franky plans each motion time-optimally, so with any
  slack in the distance it first cruised on at 1.09 rad/s for 60 ms and then braked at its full limit;
- the braking plan with minimum time (chosen): commanded deceleration 5.0 rad/s^2 at most (10 x the dynamics factor),
  jerk at most 1436 rad/s^3, no joint turning back; measured at most 3.4 rad/s^2 and 85 rad/s^3; a stop from
  1.09 rad/s takes 0.27 s and 0.15 rad on the robot's clock.

The brake keeps the global ``relative_dynamics_factor`` (it cannot be raised per motion above 1): at 0.5 it brakes at
half the FR3's limits, gently, and twice as long as the robot could. franky's ``Reaction`` replaces a motion the same
way but only on conditions over the robot state (forces, positions, time), not on an operator's call.
Two franky-sim caveats, both in the test's docstring: franky-sim 1.0.4 reports RobotState.dq_d and ddq_d averaged
over ~20 ms (ddq_d even from the measured joints), and franky starts every replacing motion (a brake, a new
trajectory) from them: against franky-sim as shipped every replacement steps the command's velocity (-13.8 rad/s^2
for one step when a brake took over at 0.81 rad/s); and franky-sim tracks the previous command again when franky's
reply is late, where a real FR3 extrapolates. Open: franky's planner refuses about one brake in seven (Ruckig's
"error code -111", a synchronisation failure; 4 of 25 stops at speed on a quiet machine, every command in sequence,
three of them from the same planned brake that franky played at other times; Ruckig 0.19.4 from PyPI planned 20,000
such brakes with the at-rest joints' float32 noise without one failure, so it is franky's bundled planner or its
start state; under load it is more: 1 in 60 e-stops through the driver node, 5 in 60 stops in sequence beside
``make test``'s unit tests). franky then aborts the motion: the robot holds at once, as with ``robot.stop()``, and
:attr:`FrankaArm.status` says error ("the brake was refused") until :meth:`FrankaArm.recover_from_errors`, which
also collects franky's error (franky otherwise raised it from the next move: the first trajectory after the
release failed with it). On a real FR3 that is an abrupt stop, and a reflex. Under load a joint's brake also turned
back at up to 0.17 rad/s at its end (franky's control thread late around the hand-over).

Lost contact: libfranka notices about 1 s after the last packet (measured: a killed franky-sim raised
``NetworkException: UDP receive: Timeout`` from ``poll_motion`` after 1.1 s; reading the state raised
``RuntimeError: Net Exception``). Every such error becomes :class:`~robodojo.errors.ContactLostError`, the status
says ``lost``, and nothing is sent until :meth:`FrankaArm.connect` succeeds again (franky's ``move`` on a dead
connection returned without error: the adapter, not franky, refuses it). Other motion errors (reflexes) leave the
status ``error`` until :meth:`FrankaArm.recover_from_errors` is called: recovery is never automatic.
"""

from __future__ import annotations

import contextlib
import gc
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NoReturn, TypeVar

import numpy as np

from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.errors import ContactLostError, HardwareError, InvalidCommandError
from robodojo.hardware.adapter import RELEASE_ACTION, ArmStatus, GripperReading, JointReading, WatchdogStop
from robodojo.hardware.realtime import scheduling_kept, threads_started_at
from robodojo.hardware.settings import Fr3Settings
from robodojo.hardware.trajectory_guard import CheckedTrajectory, TrajectoryGuard
from robodojo.hardware.watchdog import CommandWatchdog

_T = TypeVar("_T")

# Waypoint velocities are kept this far inside franky's velocity limit (times the dynamics factor): a pass-through
# velocity at or above it is invalid input to franky's planner, which then fails the whole motion (measured:
# "Motion planner failed with error code -100" for 1.3 rad/s at factor 0.5, where franky allows 1.09 rad/s).
WAYPOINT_SPEED_FRACTION = 0.99
# The average acceleration over a segment is kept this far inside franky's (scaled) limit: franky's planner reaches
# each waypoint with zero acceleration, so within a segment it needs headroom above the average for its jerk ramps.
SEGMENT_ACCEL_FRACTION = 0.8
_MS_PER_S = 1000.0
# A brake is planned with this fraction of franky's (scaled) acceleration and jerk limits and handed to franky with the
# full ones: the headroom absorbs what the state read at the stop missed (the arm kept going for a cycle or two), so
# franky's planner never needs more than its limits to reach the braking point in the planned time.
BRAKE_LIMIT_FRACTION = 0.8
#: How long close() lets a running brake end [s]: a brake from franky's top speed at dynamics factor 0.5 takes 0.27 s
#: of robot time, which franky-sim runs at 0.5-0.9x wall time; well inside launch's 5 s shutdown window.
CLOSE_BRAKE_WAIT_S = 1.0
#: What an operator does about lost contact: the driver node reconnects on its own.
RECONNECT_ACTION = "the driver reconnects by itself once the FR3 answers (check its network cable and that FCI is on)"


@dataclass(frozen=True)
class BrakingPlan:
    """Where and when a stop from a moving state comes to rest (:func:`braking_plan`)."""

    target_rad: tuple[float, ...]  #: the braking point, per joint
    duration_s: float  #: from the state the plan starts at to rest, whole ms (franky's clock)


def braking_plan(
    position_rad: np.ndarray,
    velocity_rad_s: np.ndarray,
    accel_rad_s2: np.ndarray,
    accel_limit_rad_s2: np.ndarray,
    jerk_limit_rad_s3: np.ndarray,
) -> BrakingPlan:
    """A stop from a moving state within the limits, every joint braking over the same time so that the arm keeps to
    its direction of motion while it slows down.

    Per joint, the time a jerk-limited brake takes from ``velocity_rad_s`` and ``accel_rad_s2`` (first the current
    acceleration ramped to zero at the jerk limit, which adds a^2/2j of speed when it still speeds the joint up; then
    a trapezoidal deceleration, or a triangular one when the speed is below a_max^2/j_max); the plan's duration is
    the longest of them. Each joint then travels what a smooth velocity profile from (v, a) to rest in that time
    covers, v T/2 + a T^2/12 (the cubic velocity profile's integral; the second term kept within half the first, so
    that no joint is sent back): a joint that could stop sooner brakes more gently instead, so the joints stop
    together, near the straight continuation of the path."""
    v = np.asarray(velocity_rad_s, dtype=float)
    a = np.asarray(accel_rad_s2, dtype=float)
    a_max = np.asarray(accel_limit_rad_s2, dtype=float)
    j_max = np.asarray(jerk_limit_rad_s3, dtype=float)
    speeding_up = a * v > 0
    speed = np.abs(v) + np.where(speeding_up, a**2 / (2.0 * j_max), 0.0)
    trapezoid = speed >= a_max**2 / j_max
    brake_s = np.where(trapezoid, speed / a_max + a_max / j_max, 2.0 * np.sqrt(speed / j_max))
    per_joint_s = np.abs(a) / j_max + brake_s
    duration_s = max(float(per_joint_s.max()), 1.0 / _MS_PER_S)  # franky's clock ticks in ms
    duration_s = float(np.ceil(duration_s * _MS_PER_S)) / _MS_PER_S
    # The acceleration's share is kept from turning the travel against the velocity: a joint must never be asked to
    # come back (franky's planner then has to reverse it, and failed to synchronise such joints with "error code
    # -111" at times, measured: a joint at rest reads a few mrad/s^2 of estimator noise).
    cruise = v * duration_s / 2.0
    travel = cruise + np.clip(a * duration_s**2 / 12.0, -np.abs(cruise) / 2.0, np.abs(cruise) / 2.0)
    return BrakingPlan(tuple(map(float, np.asarray(position_rad, dtype=float) + travel)), duration_s)


def _franky() -> Any:
    """franky, imported on first use so that the package imports without the hardware extra."""
    try:
        import franky
    except ImportError as exc:  # pragma: no cover - depends on the installation
        raise HardwareError(f"franky is not installed ({exc}); pip install 'agent-bringup[hardware]'") from None
    return franky


class FrankaArm(WatchdogStop):
    """One FR3 arm and its Franka Hand. Thread-safe: the arm's calls to franky are serialised by one lock, the
    gripper's (which block until the fingers stop) by another, so a stop never waits behind a gripper move."""

    def __init__(self, settings: Fr3Settings, *, guard: TrajectoryGuard | None = None) -> None:
        self.settings = settings
        self.guard = guard or TrajectoryGuard(settings)
        self.joint_names = settings.joint_names
        self.max_width_m = 2.0 * settings.robot.arm(settings.arm).gripper_max_m  # two fingers
        self._lock = threading.RLock()  # the arm's calls; stop() never waits behind a gripper move
        self._gripper_lock = threading.Lock()
        self._waypoint_speed_rad_s = np.zeros(len(self.joint_names))  # set by connect(), from franky's limits
        self._segment_accel_rad_s2 = np.zeros(len(self.joint_names))  # likewise
        self._brake_accel_rad_s2 = np.zeros(len(self.joint_names))  # likewise, for stops
        self._brake_jerk_rad_s3 = np.zeros(len(self.joint_names))
        self.brakes = 0  #: braking motions handed to franky (a stop of an arm at rest sends none)
        self.last_brake: BrakingPlan | None = None  #: the last one
        self._braking = False  # a brake was handed to franky and its outcome is not known yet (see status)
        self.last_time_scale = 1.0  #: how much slower than stamped the last motion was sent (>= 1)
        self._robot: Any = None
        self._gripper: Any = None
        self._status = ArmStatus("disconnected", "not connected yet")
        self.ip = settings.robot_ip  #: the address connected to (or last tried)
        self.sent_motions = 0  #: motions handed to franky since construction (the tests' proof of "nothing sent")
        self.watchdog = CommandWatchdog(settings.watchdog_timeout_s, self._on_watchdog)
        self._fed_s = time.monotonic()  # the last play() or feed(): how fresh franky's commanded state is

    # -- connection ---------------------------------------------------------------------------------------------
    def connect(self, ip: str | None = None) -> None:
        """Connect to the controller at ``ip`` (default: the config's robot_ip) and its gripper."""
        franky = _franky()
        ip = ip or self.settings.robot_ip
        self.ip = ip
        realtime = {"ignore": franky.RealtimeConfig.Ignore, "enforce": franky.RealtimeConfig.Enforce}
        with self._lock:
            # A new franky.Robot hangs while the old one lives (measured after a lost connection): drop it first.
            self._robot = self._gripper = None
            gc.collect()
            try:
                # franky.Robot() puts its caller in SCHED_FIFO 99 even with RealtimeConfig.Ignore (measured), and
                # every thread and process started from it afterwards inherits that: one busy loop takes a core.
                with scheduling_kept(self.settings.realtime_config == "ignore"):
                    robot = franky.Robot(ip, realtime_config=realtime[self.settings.realtime_config])
                    robot.relative_dynamics_factor = self.settings.relative_dynamics_factor
                    gripper = franky.Gripper(ip)
            except (franky.Exception, RuntimeError) as exc:
                self._status = ArmStatus("lost", f"cannot connect to {ip}: {exc}")
                raise ContactLostError(f"cannot connect to the FR3 at {ip}: {exc}") from None
            self._robot, self._gripper = robot, gripper
            factor = self.settings.relative_dynamics_factor
            sdk_speed, sdk_accel, sdk_jerk = self._limit_franky(robot)
            self._brake_accel_rad_s2 = sdk_accel * factor * BRAKE_LIMIT_FRACTION
            self._brake_jerk_rad_s3 = sdk_jerk * factor * BRAKE_LIMIT_FRACTION
            self._waypoint_speed_rad_s = sdk_speed * factor * WAYPOINT_SPEED_FRACTION
            self._segment_accel_rad_s2 = sdk_accel * factor * SEGMENT_ACCEL_FRACTION
            self._status = ArmStatus("idle", "")

    def _limit_franky(self, robot: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Give franky, per joint, the smaller of its own joint limits and the FR3's documented ones (franky 2.0.0
        reports the Panda's, above the FR3's on five joints); the limits it now plans with: velocity, acceleration,
        jerk."""
        fci = self.settings.fci_limits
        limits = []
        for handle, documented in (
            (robot.joint_velocity_limit, fci.velocity_rad_s),
            (robot.joint_acceleration_limit, fci.accel_rad_s2),
            (robot.joint_jerk_limit, fci.jerk_rad_s3),
        ):
            kept = np.minimum(np.asarray(handle.get(), dtype=float), np.asarray(documented, dtype=float))
            handle.set(kept)
            limits.append(kept)
        return limits[0], limits[1], limits[2]

    def close(self) -> None:
        """Stop the watchdog thread and drop the connection (the arm holds where it is). A brake still running gets
        up to :data:`CLOSE_BRAKE_WAIT_S` to end first: franky stops a motion still running when it is dropped, at
        once."""
        self.watchdog.close()
        if self._robot is not None and self._status.status not in ("lost", "disconnected"):
            with contextlib.suppress(HardwareError):
                self.wait_at_rest(CLOSE_BRAKE_WAIT_S)
        with self._lock:
            self._robot = self._gripper = None
            self._status = ArmStatus("disconnected", "closed")

    @property
    def status(self) -> ArmStatus:
        """What the arm does now. A brake handed to franky by :meth:`stop` is checked here until it ends: when
        franky's planner refused it, franky aborted the motion (the arm stopped at once, not braked) and the status
        turns ``error``, with franky's reason, until :meth:`recover_from_errors`."""
        if self._braking:
            with self._lock:
                if self._braking:
                    try:
                        self._braking = not self._call(lambda robot: robot.join_motion(0.0))
                    except HardwareError:  # _call set the status: lost, or error with franky's reason
                        self._braking = False
                        if self._status.status == "error":
                            detail = f"the brake was refused, the arm stopped at once: {self._status.detail}"
                            self._status = ArmStatus("error", detail)
        return self._status

    # -- state --------------------------------------------------------------------------------------------------
    def joint_state(self) -> JointReading:
        """The measured joints; ContactLostError when the controller does not answer (after about 1 s)."""
        state = self._call(lambda robot: robot.state)
        return JointReading(
            positions_rad=tuple(float(v) for v in state.q),
            velocities_rad_s=tuple(float(v) for v in state.dq),
            efforts_nm=tuple(float(v) for v in state.tau_J),
            robot_time_s=float(state.time.to_sec()),
            read_s=time.monotonic(),
        )

    # -- motion -------------------------------------------------------------------------------------------------
    def follow(self, cmd: TrajectoryCommand) -> CheckedTrajectory | None:
        """joint_trajectory_controller semantics: an empty trajectory stops (None); any other is checked against the
        measured state and replaces what plays. TrajectoryRefusedError: refused, nothing was sent."""
        if not cmd.positions:
            self.stop()
            return None
        reading = self.joint_state()
        checked = self.guard.check(cmd, reading.positions_rad, reading.velocities_rad_s)
        self.play(checked)
        return checked

    def play(self, trajectory: CheckedTrajectory) -> None:
        """Hand a checked trajectory to franky as one waypoint motion (see the module docstring) and arm the watchdog:
        :meth:`feed` must then come at least every ``watchdog.timeout_s`` until the motion ends."""
        if not isinstance(trajectory, CheckedTrajectory) or trajectory.joint_names != self.joint_names:
            raise InvalidCommandError("play() takes a CheckedTrajectory of this arm's joints (TrajectoryGuard.check)")
        franky = _franky()
        scale = self.time_scale(trajectory)
        speed = self._waypoint_speed_rad_s
        velocities = np.clip(trajectory.velocities_rad_s / scale, -speed, speed)
        # Each segment takes at least its (stretched) duration, on the robot's clock (franky's unit is the ms); the
        # times from start are rounded, not the segments, so that rounding never adds up along the trajectory.
        times_ms = np.round(trajectory.times_from_start_s * scale * _MS_PER_S)
        segments_ms = np.diff(times_ms, prepend=0.0).astype(int)
        waypoints = [
            franky.JointWaypoint(franky.JointState(q, v), minimum_time=franky.Duration(int(ms)))
            for q, v, ms in zip(trajectory.positions_rad, velocities, segments_ms, strict=True)
        ]
        motion = franky.JointWaypointMotion(waypoints)

        def send(robot: Any) -> None:
            status = self.status  # a refused brake's error included
            if status.status == "error":
                raise HardwareError(f"the arm is in error ({status.detail}): {RELEASE_ACTION}")
            # franky starts its control thread here when no motion runs: only that thread gets the priority.
            with threads_started_at(self.settings.control_thread_priority):
                robot.move(motion, asynchronous=True)

        with self._lock:
            self._call(send)
            self.sent_motions += 1
            self.last_time_scale = scale
            self._status = ArmStatus("playing", "")
            self._fed_s = time.monotonic()
            self.watchdog.arm()

    def time_scale(self, trajectory: CheckedTrajectory) -> float:
        """By how much ``trajectory``'s times must be stretched (>= 1) for its velocities and segment accelerations to
        fit franky's limits times the dynamics factor (stretching by k divides velocities by k, accelerations by k^2).
        1.0 before connect(), when franky's limits are not known yet."""
        if not self._waypoint_speed_rad_s.any():
            return 1.0
        v = trajectory.velocities_rad_s
        dt = np.diff(trajectory.times_from_start_s, prepend=0.0)[:, None]
        accel = np.abs(np.diff(v, axis=0, prepend=np.zeros((1, v.shape[1])))) / np.maximum(dt, 1e-9)
        speed_ratio = float(np.max(np.abs(v) / self._waypoint_speed_rad_s))
        accel_ratio = float(np.max(accel / self._segment_accel_rad_s2))
        return max(1.0, speed_ratio, accel_ratio**0.5)

    def feed(self) -> None:
        """The commander is alive (a lease renewal): keeps a playing trajectory going."""
        self._fed_s = time.monotonic()
        self.watchdog.feed()

    def is_playing(self) -> bool:
        """Whether a motion is still running; raises what the motion raised (ContactLostError, HardwareError)."""
        with self._lock:
            if self._status.status != "playing":
                return False
            # join_motion(0) is True once the motion has finished. Not poll_motion: with franky 2.0.0 against
            # franky-sim it returned False while a motion ran and True after it ended, the opposite of its docstring.
            running = not self._call(lambda robot: robot.join_motion(0.0))
            if not running:
                self._finished()
            return running

    def wait(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` [s] for the motion to end (feeding the watchdog meanwhile); True if it did."""
        deadline = time.monotonic() + timeout_s
        poll_s = self.watchdog.timeout_s / 4.0  # feeds well within the timeout
        while time.monotonic() < deadline:
            if not self.is_playing():
                return True
            self.feed()
            time.sleep(min(poll_s, max(0.0, deadline - time.monotonic())))
        return not self.is_playing()

    def stop(self, *, why: str = "stopped on request") -> None:
        """Stop now, within the FR3's limits: a running motion is replaced by a brake to rest (see the module
        docstring), where the controller then holds the arm; an arm at rest gets nothing at all. Returns as soon as
        franky has the brake (it takes over at franky's next 1 ms cycle); :meth:`wait_at_rest` waits for its end.

        After a stall of this process (nothing fed for longer than the watchdog's timeout: SIGSTOP, starved of the
        CPU) the motion is stopped at once instead: franky's commanded state, which a brake starts from, is then its
        extrapolation over the whole pause (measured: a brake planned from it let the arm move on for seconds after
        the stop), and a real FR3 has aborted the motion itself after a few missed cycles anyway."""
        with self._lock:
            self.watchdog.disarm()
            if self._robot is None or self._status.status in ("lost", "disconnected"):
                return
            stalled = time.monotonic() - self._fed_s > self.watchdog.timeout_s
            self._call(self._stop_at_once if stalled else self._brake)
            if self._status.status != "error":
                self._status = ArmStatus("stopped", why)

    def _motion_runs(self, robot: Any) -> bool:
        """Whether a motion runs now; a motion that had already failed (the robot stopped it itself) sets the error
        status and counts as none."""
        try:
            return not robot.join_motion(0.0)
        except _franky().ControlException as exc:
            self._status = ArmStatus("error", f"{type(exc).__name__}: {exc}")
            return False

    def _stop_at_once(self, robot: Any) -> None:
        """franky's own stop of a running motion (the controller holds where it is); nothing if none runs."""
        if not self._motion_runs(robot):
            return
        robot.stop()
        # The stopped motion ends with "Move command preempted": collect it here, or the next move raises it.
        with contextlib.suppress(_franky().ControlException):
            robot.join_motion(self.watchdog.timeout_s)

    def _brake(self, robot: Any) -> None:
        """Hand franky a braking motion if a motion runs; nothing if none does (the controller holds)."""
        if not self._motion_runs(robot):
            return  # nothing runs: the controller holds the last command, and nothing must move it
        franky = _franky()
        try:
            state = robot.state
            plan = braking_plan(
                np.asarray(state.q_d, dtype=float),
                np.asarray(state.dq_d, dtype=float),
                np.asarray(state.ddq_d, dtype=float),
                self._brake_accel_rad_s2,
                self._brake_jerk_rad_s3,
            )
            waypoint = franky.JointWaypoint(
                franky.JointState(np.asarray(plan.target_rad)),
                minimum_time=franky.Duration(round(plan.duration_s * _MS_PER_S)),
            )
            with threads_started_at(self.settings.control_thread_priority):
                robot.move(franky.JointWaypointMotion([waypoint]), asynchronous=True)  # replaces what runs, seamlessly
        except (franky.Exception, RuntimeError):
            robot.stop()  # no brake could be planned or sent: an abrupt stop still beats none
            raise
        self.brakes += 1
        self.last_brake = plan
        self._braking = True

    def wait_at_rest(self, timeout_s: float) -> bool:
        """Wait up to ``timeout_s`` [s] until no motion (a brake included) runs; True if none does."""
        deadline = time.monotonic() + timeout_s
        while not self._call(lambda robot: robot.join_motion(0.0)):
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.01)
        return True

    def hold(self) -> None:
        """Hold the current position: stop any motion; the controller then holds where the arm stopped."""
        self.stop(why="holding")

    def recover_from_errors(self) -> None:
        """Clear the controller's error state (after a reflex, a refused brake); explicit, never automatic. A failed
        motion's error is collected first: franky keeps it and would raise it from the next move, after the release."""
        franky = _franky()

        def recover(robot: Any) -> None:
            try:
                ended = robot.join_motion(0.0)
            except (franky.Exception, RuntimeError):
                ended = True  # the failed motion's error, collected
            self._braking = self._braking and not ended
            robot.recover_from_errors()

        with self._lock:
            self._call(recover)
            self._status = ArmStatus("idle", "")

    def _finished(self) -> None:
        self.watchdog.disarm()
        self._status = ArmStatus("idle", "")

    # -- gripper ------------------------------------------------------------------------------------------------
    def gripper_state(self) -> GripperReading:
        width = float(self._gripper_call(lambda gripper: gripper.width))
        return GripperReading(
            width_m=width,
            opening=min(1.0, max(0.0, width / self.max_width_m)),
            grasped=bool(self._gripper_call(lambda gripper: gripper.is_grasped)),
        )

    def move_gripper(self, width_m: float) -> bool:
        """Move the fingers to ``width_m`` [m] apart (0 .. max_width_m); True when reached. Blocks until done."""
        if not 0.0 <= width_m <= self.max_width_m:
            raise InvalidCommandError(f"gripper width {width_m!r} m is outside [0, {self.max_width_m:g}] m")
        speed = self.settings.gripper.speed_m_s
        return bool(self._gripper_call(lambda gripper: gripper.move(width_m, speed)))

    def set_opening(self, opening: float) -> bool:
        """The agents' gripper command: 0 closed .. 1 fully open (``max_width_m``)."""
        if not 0.0 <= opening <= 1.0:
            raise InvalidCommandError(f"gripper opening {opening!r} is outside [0, 1]")
        return self.move_gripper(opening * self.max_width_m)

    def gripper_state_now(self) -> GripperReading | None:
        """The gripper's state, or None at once if a gripper call (a move of seconds) holds the gripper."""
        if not self._gripper_lock.acquire(blocking=False):
            return None
        try:
            width = float(self._mapped(lambda gripper: gripper.width, self._gripper))
            grasped = bool(self._mapped(lambda gripper: gripper.is_grasped, self._gripper))
        finally:
            self._gripper_lock.release()
        return GripperReading(width, min(1.0, max(0.0, width / self.max_width_m)), grasped)

    @property
    def gripper_busy(self) -> bool:
        """A gripper call (a move, a grasp, a reading) is under way."""
        return self._gripper_lock.locked()

    def close_on(self, width_m: float = 0.0) -> bool:
        """Close towards ``width_m`` [m] and hold whatever stops the fingers on the way with the configured force
        (a grasp that succeeds anywhere between ``width_m`` and fully open); True if something is held or the
        fingers reached ``width_m``."""
        if not 0.0 <= width_m <= self.max_width_m:
            raise InvalidCommandError(f"gripper width {width_m!r} m is outside [0, {self.max_width_m:g}] m")
        g = self.settings.gripper
        return bool(
            self._gripper_call(
                lambda gripper: gripper.grasp(
                    width_m, g.speed_m_s, g.force_n, epsilon_inner=g.epsilon_m, epsilon_outer=self.max_width_m
                )
            )
        )

    def grasp(self, width_m: float) -> bool:
        """Close on an object about ``width_m`` [m] wide with the configured force; True if it is held."""
        if not 0.0 <= width_m <= self.max_width_m:
            raise InvalidCommandError(f"grasp width {width_m!r} m is outside [0, {self.max_width_m:g}] m")
        g = self.settings.gripper
        return bool(
            self._gripper_call(
                lambda gripper: gripper.grasp(
                    width_m, g.speed_m_s, g.force_n, epsilon_inner=g.epsilon_m, epsilon_outer=g.epsilon_m
                )
            )
        )

    # -- franky calls -------------------------------------------------------------------------------------------
    def _call(self, fn: Callable[[Any], _T]) -> _T:
        """Run ``fn(robot)`` under the arm's lock, franky's errors mapped (:meth:`_mapped`)."""
        with self._lock:
            return self._mapped(fn, self._robot)

    def _gripper_call(self, fn: Callable[[Any], _T]) -> _T:
        """Run ``fn(gripper)`` under the gripper's own lock: a gripper move blocks for seconds, a stop must not wait."""
        with self._gripper_lock:
            return self._mapped(fn, self._gripper)

    def _mapped(self, fn: Callable[[Any], _T], target: Any) -> _T:
        """``fn(target)``; network errors become ContactLostError (status lost), other franky errors HardwareError
        (status error, until recover_from_errors())."""
        franky = _franky()
        if target is None or self._status.status in ("lost", "disconnected"):
            raise ContactLostError(f"no contact with the FR3 ({self._status.detail}): {RECONNECT_ACTION}")
        try:
            return fn(target)
        except franky.NetworkException as exc:
            self._lose(str(exc))
        except (franky.Exception, RuntimeError) as exc:
            # franky raises a bare RuntimeError("Net Exception") from state reads on a dead connection, and a bare
            # RuntimeError("Motion planner failed ...") when a motion cannot be planned.
            if isinstance(exc, RuntimeError) and str(exc).startswith("Net"):
                self._lose(str(exc))
            self._status = ArmStatus("error", f"{type(exc).__name__}: {exc}")
            self.watchdog.disarm()
            raise HardwareError(f"the FR3 reported {type(exc).__name__}: {exc}; {RELEASE_ACTION}") from None

    def _lose(self, why: str) -> NoReturn:
        self.watchdog.disarm()
        self._robot = self._gripper = None  # connect() builds new ones; a live old one makes that hang
        self._status = ArmStatus("lost", f"lost contact: {why}")
        raise ContactLostError(f"lost contact with the FR3 at {self.ip}: {why}")
