"""One real arm as the simulator's controller side runs it: trajectory controllers over a hardware adapter.

The simulator node plays each trajectory one point per control tick through a
:class:`~robodojo.control.trajectory_controller.TrajectoryController`. A real arm plays it inside its SDK (franky's
waypoint motion on the robot's 1 kHz clock), so here the same controller keeps the books on the same tick grid: it
checks what arrives, knows each trajectory by its start stamp, lapses it when its commander's lease stops, counts the
points played and reports every end, exactly as in simulation; the arm adapter moves the robot.

What reaches the SDK: only a trajectory the adapter's :class:`~robodojo.hardware.trajectory_guard.TrajectoryGuard`
accepted (joint position, velocity and acceleration limits at every control tick, the jump from the measured state,
the table and the workspace box), started at its stamp. A lapsed lease, a stop, an e-stop, lost contact or a failed
motion stops the arm and ends the trajectory in the books, with the reason, and it never plays again.

Thread-safe: a ROS node calls :meth:`ArmDriver.submit_arm` and friends from its callbacks and :meth:`ArmDriver.tick`
from its control thread.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

import numpy as np

from robodojo.control.trajectory_controller import (
    ControllerNames,
    Lease,
    TrajectoryController,
    TrajectoryReport,
    TrajectoryState,
    arm_fault_reason,
    lost_contact_reason,
)
from robodojo.control.trajectory_player import JointLimit, TrajectoryCommand, TrajectoryPlayer
from robodojo.errors import ContactLostError, HardwareError, InvalidCommandError
from robodojo.hardware.adapter import RELEASE_ACTION, ArmAdapter, GripperReading, JointReading
from robodojo.hardware.trajectory_guard import CheckedTrajectory, TrajectoryRefusedError

#: A gripper command closer than this to the current width [m] is already there: no SDK call.
GRIPPER_DEADBAND_M = 0.001
#: close() waits this long for a gripper move in progress (a driver's way out stays below ros2 launch's 5 s).
GRIPPER_STOP_S = 0.5


@dataclass(frozen=True)
class CommandLatency:
    """How long the last trajectory took to reach the SDK."""

    received_to_sdk_ms: float  #: from submit_arm() to the SDK's move() returning
    stamp_to_sdk_ms: float  #: from its stamped start (system clock) to the same; ~0 for a well-timed trajectory


@dataclass
class _Pending:
    trajectory: CheckedTrajectory
    start_s: float  # system clock
    received_s: float  # monotonic


class ArmDriver:
    """Trajectory and gripper controllers for one arm over its hardware adapter (see the module docstring)."""

    def __init__(
        self,
        arm: ArmAdapter,
        names: ControllerNames,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.arm = arm
        self.settings = arm.settings
        self.dt_s = self.settings.robot.control_dt_s
        self._clock = clock
        guard = arm.guard
        arm_config = self.settings.robot.arm(self.settings.arm)
        self.gripper_joint = arm_config.gripper_joint
        gripper_limit = JointLimit(0.0, arm_config.gripper_max_m, np.inf)  # the fingers' own speed is the SDK's
        self.joints = TrajectoryController(
            names.arm, TrajectoryPlayer(guard.joint_names, guard.limits, self.settings.guard.velocity_margin)
        )
        self.gripper = TrajectoryController(
            names.gripper, TrajectoryPlayer((self.gripper_joint,), {self.gripper_joint: gripper_limit}, 1.0)
        )
        self._lock = threading.RLock()
        self._pending: _Pending | None = None
        self._estop_reason = ""  # non-empty: latched, nothing moves until release()
        self.latency: CommandLatency | None = None  #: of the last trajectory sent
        self._gripper_target: float | None = None  # width [m] the worker should go to next
        self._gripper_wake = threading.Condition()
        self._gripper_reading: GripperReading | None = None
        self._arm_last_s = 0.0  # when the running arm trajectory's last point is due (system clock)
        self._gripper_last_s = 0.0  # when the running gripper trajectory's last point is due (system clock)
        self._last_tick_s: float | None = None  # monotonic, for the loop's own stalls
        self._closed = False
        self._gripper_thread = threading.Thread(target=self._gripper_worker, name="gripper", daemon=True)
        self._gripper_thread.start()

    # -- state ----------------------------------------------------------------------------------------------------
    @property
    def estopped(self) -> str:
        """Why the e-stop holds the arm, or "" when released."""
        return self._estop_reason

    def read_joints(self) -> JointReading:
        """The measured arm joints (ContactLostError when the robot does not answer)."""
        return self.arm.joint_state()

    def gripper_width_m(self) -> float | None:
        """The last width the gripper reported (read between its moves), None before the first reading."""
        reading = self._gripper_reading
        return None if reading is None else reading.width_m

    @property
    def gripper_moving(self) -> bool:
        """A gripper command is waiting or in the SDK."""
        return self._gripper_target is not None or self.arm.gripper_busy

    def refresh_gripper(self) -> None:
        """Read the gripper's width now, unless a move holds it (the worker reads it after every move)."""
        if not self.gripper_moving:
            reading = self.arm.gripper_state_now()  # never waits behind a move that starts meanwhile
            if reading is not None:
                self._gripper_reading = reading

    # -- commands -------------------------------------------------------------------------------------------------
    def submit_arm(self, cmd: TrajectoryCommand) -> None:
        """joint_trajectory_controller semantics: empty stops, a valid one replaces what plays (at its stamp, or now
        for stamp 0), an invalid one is refused with its reason (InvalidCommandError) and nothing reaches the SDK."""
        received = time.monotonic()
        with self._lock:
            now = self._clock()
            if not cmd.positions:
                self.stop("stopped by an empty trajectory")
                return
            if self._estop_reason:
                self._refuse(self.joints, cmd, f"the e-stop holds the arm ({self._estop_reason}); {RELEASE_ACTION}")
            try:
                reading = self.arm.joint_state()
                checked = self.arm.guard.check(cmd, reading.positions_rad, reading.velocities_rad_s)
            except TrajectoryRefusedError as exc:
                self._refuse(self.joints, cmd, str(exc))
            except ContactLostError as exc:  # nothing to check against, nothing sent
                self._refuse(self.joints, cmd, lost_contact_reason(str(exc)))
            except HardwareError as exc:  # a fault (a silent motor's reading is unknown): nothing sent either
                self._refuse(self.joints, cmd, arm_fault_reason(str(exc)))
            # The books: the same checks and the same tick grid as in simulation (a refusal is reported and raised).
            self.joints.submit(cmd, now, reading.positions_rad, self.dt_s)
            start = cmd.start_s if cmd.start_s > now else now
            self._pending = _Pending(checked, start, received)
            self._arm_last_s = start + float(cmd.times_from_start_s[-1])
            if start <= now:
                self._send_pending(now)

    def submit_gripper(self, cmd: TrajectoryCommand) -> None:
        """The gripper's trajectory: its last point is the finger position [m per finger]; the fingers go there at
        the SDK's speed (closing grasps whatever is between them). Empty stops it."""
        with self._lock:
            if not cmd.positions:
                self.gripper.submit(cmd, self._clock(), [0.0], self.dt_s)
                return
            if self._estop_reason:
                self._refuse(self.gripper, cmd, f"the e-stop holds the arm ({self._estop_reason}); {RELEASE_ACTION}")
            width = self.gripper_width_m()
            commanded = [0.0 if width is None else width / 2.0]
            now = self._clock()
            self.gripper.submit(cmd, now, commanded, self.dt_s)
            target = 2.0 * float(cmd.positions[-1][0])
            # The books keep the last point until the fingers got there (a real hand is slower than the plan).
            self._gripper_last_s = max(cmd.start_s, now) + float(cmd.times_from_start_s[-1])
        with self._gripper_wake:
            self._gripper_target = target
            self._gripper_wake.notify()

    def renew(self, lease: Lease) -> None:
        """A commander's lease for its trajectories (TrajectoryLease.msg)."""
        with self._lock:
            self.joints.renew(lease)
            self.gripper.renew(lease)

    def stop(self, reason: str) -> None:
        """End what plays (STOPPED, with ``reason``) and stop the arm; it holds where it stops."""
        with self._lock:
            self._pending = None
            self.joints.stop(TrajectoryState.STOPPED, reason)
            self.gripper.stop(TrajectoryState.STOPPED, reason)
            with contextlib.suppress(HardwareError):  # lost or in error: not moving under our command
                self.arm.stop(why=reason)

    def estop(self, reason: str) -> None:
        """Stop now and refuse every trajectory until :meth:`release`."""
        with self._lock:
            self._estop_reason = reason
            self.stop(f"e-stop: {reason}")

    def release(self) -> str:
        """Clear the e-stop and the robot's error state (an explicit operator action, never automatic); the error
        cleared (the adapter's words), "" when there was none."""
        with self._lock:
            status = self.arm.status
            self.arm.recover_from_errors()
            self._estop_reason = ""
            return status.detail if status.status == "error" else ""

    # -- the control tick -----------------------------------------------------------------------------------------
    def tick(self) -> list[TrajectoryReport]:
        """One control period: start a trajectory whose stamp came, keep the books, stop on a lapsed lease or a
        failed motion; the reports since the last tick (ends, refusals, and progress while playing).

        The books run on this process's clock but never finish before the robot does: the SDK keeps the stamps on
        the robot's clock, which a simulator runs slower than wall time, so the last point counts as played only once
        the SDK's motion ended (likewise the gripper's, once the fingers stopped).
        """
        with self._lock:
            now = self._clock()
            self._stop_after_a_stall()
            if self._pending is not None and now >= self._pending.start_s:
                self._send_pending(now)
            status = self.arm.status
            sdk_playing = self._watch_motion() if status.status == "playing" else False
            if self.joints.playing and self._pending is None:  # the adapter ended the motion on its own
                if status.status == "lost":
                    self.lose_contact(status.detail or "the arm is lost")
                elif status.status == "error":
                    self.joints.stop(TrajectoryState.STOPPED, arm_fault_reason(status.detail or "the arm is in error"))
                elif status.status in ("stopped", "watchdog"):
                    self.joints.stop(TrajectoryState.STOPPED, status.detail or f"the arm is {status.status}")
            arm_now = min(now, self._arm_last_s - self.dt_s / 2.0) if sdk_playing else now
            self.joints.sample(arm_now - self.dt_s, self.dt_s)  # the tick ending now: points played by now
            gripper_now = min(now, self._gripper_last_s - self.dt_s / 2.0) if self.gripper_moving else now
            self.gripper.sample(gripper_now - self.dt_s, self.dt_s)
            reports = self.joints.take_reports() + self.gripper.take_reports()
            arm_name = self.joints.name
            expired = [r.reason for r in reports if r.state == TrajectoryState.EXPIRED and r.controller == arm_name]
            if expired:
                self._pending = None
                with contextlib.suppress(HardwareError):  # lost or in error: not moving under our command
                    self.arm.stop(why=expired[0])
            if self.joints.playing:
                reports.append(self.joints.status())
            if self.gripper.playing:
                reports.append(self.gripper.status())
            return reports

    def take_reports(self) -> list[TrajectoryReport]:
        """The ends and refusals reported since the last tick, without ticking (a stop or lost contact between the
        ticks of a robot whose ticks follow its own time, which stands still while it is silent)."""
        with self._lock:
            return self.joints.take_reports() + self.gripper.take_reports()

    def status_reports(self) -> list[TrajectoryReport]:
        """Both controllers' current report (published at the status rate while they hold)."""
        with self._lock:
            return [self.joints.status(), self.gripper.status()]

    def lose_contact(self, why: str) -> None:
        """The robot stopped answering: end what plays (a lost-contact reason); nothing more is sent until the adapter
        reconnects."""
        reason = lost_contact_reason(why)
        with self._lock:
            self._pending = None
            self.joints.stop(TrajectoryState.STOPPED, reason)
            self.gripper.stop(TrajectoryState.STOPPED, reason)

    def close(self) -> None:
        """End the gripper worker: at once when idle; a move in the SDK is not waited for beyond
        :data:`GRIPPER_STOP_S` (the worker is a daemon thread, and the adapter's close ends the SDK)."""
        with self._gripper_wake:
            self._closed = True
            self._gripper_wake.notify()
        self._gripper_thread.join(timeout=GRIPPER_STOP_S)

    # -- internals ------------------------------------------------------------------------------------------------
    def _send_pending(self, now: float) -> None:
        pending, self._pending = self._pending, None
        assert pending is not None
        try:
            self.arm.play(pending.trajectory)
        except ContactLostError as exc:
            self.lose_contact(str(exc))
            return
        except HardwareError as exc:
            self.joints.stop(TrajectoryState.STOPPED, arm_fault_reason(f"the arm did not take the trajectory: {exc}"))
            return
        self.latency = CommandLatency(
            received_to_sdk_ms=(time.monotonic() - pending.received_s) * 1e3,
            stamp_to_sdk_ms=(self._clock() - pending.start_s) * 1e3,
        )

    def _stop_after_a_stall(self) -> None:
        """A loop that stalled longer than the watchdog's timeout (a frozen process, SIGSTOP) stops what plays before
        it feeds the watchdog again: the watchdog's own thread, frozen alike, may wake after this loop did, and the
        SDK's motion would then go on as if nothing had happened."""
        tick_s = time.monotonic()
        last_s, self._last_tick_s = self._last_tick_s, tick_s
        timeout_s = self.arm.watchdog.timeout_s
        if last_s is None or tick_s - last_s <= timeout_s or self.arm.status.status != "playing":
            return
        with contextlib.suppress(HardwareError):  # lost or in error: not moving under our command
            self.arm.stop(why=f"the driver's loop stalled for {tick_s - last_s:.1f} s (watchdog {timeout_s:g} s)")

    def _watch_motion(self) -> bool:
        """Whether the SDK still plays the motion. Feeds the adapter's watchdog while it does (a stalled driver loop
        lets the watchdog stop the arm); ends the books when the motion failed, stopped or lost contact."""
        try:
            playing = self.arm.is_playing()
        except ContactLostError as exc:
            self.lose_contact(str(exc))
            return False
        except HardwareError as exc:
            self.joints.stop(TrajectoryState.STOPPED, arm_fault_reason(f"the arm stopped the motion: {exc}"))
            return False
        if playing:
            self.arm.feed()
        return playing

    def _refuse(self, controller: TrajectoryController, cmd: TrajectoryCommand, reason: str) -> NoReturn:
        controller.refuse(cmd.start_s, len(cmd.positions), reason)
        raise InvalidCommandError(reason)

    def _gripper_worker(self) -> None:
        """Moves the fingers to the latest target, one blocking SDK call at a time (a newer target waits for the
        running move; the gripper has no preemption that keeps its grasp)."""
        while True:
            with self._gripper_wake:
                while self._gripper_target is None and not self._closed:
                    self._gripper_wake.wait()
                if self._closed:
                    return
                target = self._gripper_target
            assert target is not None
            try:
                width = self.gripper_width_m()
                if width is None or abs(target - width) > GRIPPER_DEADBAND_M:
                    if width is not None and target < width:
                        self.arm.close_on(target)  # closing: grasp whatever is between the fingers
                    else:
                        self.arm.move_gripper(min(target, self.arm.max_width_m))
                self._gripper_reading = self.arm.gripper_state()
            except HardwareError:
                pass  # lost contact: the joint-state reader reports it
            with self._gripper_wake:
                if self._gripper_target == target:
                    self._gripper_target = None
