"""Isaac Sim's articulation over its ROS 2 bridge, as arm adapters for :class:`~robodojo.hardware.arm_driver.ArmDriver`.

Isaac Sim (scripts/isaac_sim_robodojo.py) publishes the joint states of its one articulation, every joint of every
arm, stamped with simulation time, and follows sensor_msgs/JointState position targets through its articulation
controller; it plays no trajectories. So here, per arm, an :class:`IsaacArm` is what an arm's SDK is to a real
driver: it takes a :class:`~robodojo.hardware.trajectory_guard.CheckedTrajectory` and plays it itself, one position
target per control tick, and holds the last target when nothing plays. :class:`IsaacArticulation` holds the arms
together: the node hands it each joint state Isaac published (:meth:`IsaacArticulation.update`) and, once per control
tick, sends the one command it builds for every joint of the robot (:meth:`IsaacArticulation.command`): each arm's
joints, its gripper joint and the fingers that mimic it (their URDF multiplier and offset).

Time: the control tick follows Isaac's simulation time, the joint states' stamps (the same time Isaac publishes on
/clock), not this process's clock. A tick is due each time the stamps cross a multiple of the control period, so a
trajectory plays at 25 Hz of simulated time however fast Isaac runs (an RTX machine renders at 0.3-1x real time), and
point k of a trajectory stamped on that grid is sent for tick k exactly, as in the embedded simulator
(robodojo.control.trajectory_player: the target sent at tick t is the trajectory at t + dt). When the stamps jump over
several ticks (a slow frame), the targets skip to the current tick rather than play late.

Lost contact: no joint state for ``contact_timeout_s`` of wall time (the timeline paused or stopped, Isaac frozen or
gone), or simulation time going backwards (the simulation restarted), is lost contact: what plays stops and nothing
plays again until :meth:`IsaacArm.connect`, which succeeds once fresh joint states arrive and holds the arm where Isaac
reports it then. While the states are missing the bridge sends nothing (its ticks follow them); Isaac's articulation
holds the last target it received.

Gripper: Isaac has position drives, no gripper SDK. A gripper move ramps the finger target at ``gripper.speed_m_s``
towards its goal and returns once the fingers are there, or have stopped short on something (moved less than
``tolerance_m`` for ``stalled_s``: a grasp when closing), or after ``timeout_s`` of simulation time. The target stays
where the move sent it, so a closed gripper keeps squeezing what it holds, as the embedded world's servo does.

Not verified against Isaac Sim itself (it cannot run on the machines this project is developed on): the tests drive
these classes and the bridge node through a stand-in process that speaks Isaac's topics (test/ros/fake_isaac_sim.py).
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from robodojo.control.trajectory_player import tick_samples
from robodojo.errors import ContactLostError, HardwareError, InvalidCommandError
from robodojo.hardware.adapter import RELEASE_ACTION, ArmStatus, GripperReading, JointReading, WatchdogStop
from robodojo.hardware.settings import ArmHardwareSettings, IsaacGripperSettings, IsaacSettings
from robodojo.hardware.trajectory_guard import CheckedTrajectory, TrajectoryGuard
from robodojo.hardware.watchdog import CommandWatchdog
from robodojo.robots.topic_names import ISAAC_JOINT_STATES
from robodojo.robots.urdf import load_urdf

_TICK_EPS = 1e-6  # a stamp this close below a tick boundary is on it (stamps round-trip through nanoseconds)


@dataclass(frozen=True)
class IsaacJointState:
    """One joint state Isaac Sim published: by joint name, its simulation-time stamp and when it arrived here."""

    positions: Mapping[str, float]
    velocities: Mapping[str, float]
    efforts: Mapping[str, float]
    stamp_s: float  #: simulation time
    received_s: float  #: this process's monotonic clock


@dataclass(frozen=True)
class FingerFollower:
    """A finger joint that mimics an arm's gripper joint in the URDF: ``multiplier * gripper + offset``."""

    joint: str
    multiplier: float
    offset: float


class IsaacArticulation:
    """Isaac Sim's articulation as the bridge sees it: the latest joint state and one :class:`IsaacArm` per arm."""

    def __init__(self, settings: IsaacSettings, *, monotonic: Callable[[], float] = time.monotonic) -> None:
        self.settings = settings
        self.dt_s = settings.robot.control_dt_s
        self._monotonic = monotonic
        self.lock = threading.RLock()
        self.changed = threading.Condition(self.lock)  #: notified on every joint state (gripper moves wait on it)
        self.latest: IsaacJointState | None = None
        self._tick: int | None = None  # the latest control tick a command was due for (simulation time / dt)
        #: control ticks no command was sent for: Isaac's stamps jumped over them (a slow frame or states lost on the
        #: way, the joint states being best effort); their targets were skipped, never played late
        self.skipped_ticks = 0
        self.commanded_ticks = 0  #: control ticks a command was built for (one command each)
        urdf = load_urdf(settings.robot.scene_urdf)
        self.arms: dict[str, IsaacArm] = {}
        for arm_settings in settings.arms:
            gripper_joint = settings.robot.arm(arm_settings.arm).gripper_joint
            followers = tuple(
                FingerFollower(j.name, j.mimic.multiplier, j.mimic.offset)
                for j in urdf.movable_joints
                if j.mimic is not None and j.mimic.joint == gripper_joint
            )
            self.arms[arm_settings.arm] = IsaacArm(self, arm_settings, settings.gripper, followers)

    def arm(self, name: str) -> IsaacArm:
        return self.arms[name]

    def now_s(self) -> float:
        """Simulation time: the latest joint state's stamp (0 before the first)."""
        latest = self.latest
        return 0.0 if latest is None else latest.stamp_s

    def age_s(self) -> float:
        """Wall time since the latest joint state arrived (infinite before the first)."""
        latest = self.latest
        return math.inf if latest is None else self._monotonic() - latest.received_s

    def update(
        self,
        names: Sequence[str],
        positions: Sequence[float],
        velocities: Sequence[float],
        efforts: Sequence[float],
        stamp_s: float,
    ) -> int:
        """Take a joint state Isaac published; how many control ticks are due since the last command (0: none).

        Velocities and efforts may be empty (zeros). Simulation time going backwards is a restart: every arm loses
        contact (the robot was put back; nothing that played before may go on)."""
        n = len(names)
        state = IsaacJointState(
            positions=dict(zip(names, (float(p) for p in positions), strict=True)),
            velocities=dict(zip(names, (float(v) for v in velocities), strict=True)) if len(velocities) == n else {},
            efforts=dict(zip(names, (float(e) for e in efforts), strict=True)) if len(efforts) == n else {},
            stamp_s=stamp_s,
            received_s=self._monotonic(),
        )
        with self.lock:
            previous = self.latest
            if previous is not None and stamp_s < previous.stamp_s - _TICK_EPS:
                for arm in self.arms.values():
                    arm.lose(
                        f"Isaac Sim's time went back from {previous.stamp_s:.3f} s to {stamp_s:.3f} s (the simulation "
                        "restarted)"
                    )
                self._tick = None
            self.latest = state
            tick = math.floor(stamp_s / self.dt_s + _TICK_EPS)
            due = 1 if self._tick is None else max(0, tick - self._tick)
            self.skipped_ticks += max(0, due - 1)
            self._tick = tick if self._tick is None else max(tick, self._tick)
            self.changed.notify_all()
            return due

    def command(self, ticks: int = 1) -> tuple[list[str], list[float]]:
        """One control tick's position targets (``ticks`` ticks after the last command): every joint of every arm
        that holds a target (connected at least once), each arm's playing trajectory advanced by ``ticks``."""
        names: list[str] = []
        positions: list[float] = []
        with self.lock:
            for arm in self.arms.values():
                targets = arm.advance(ticks)
                names += list(targets)
                positions += list(targets.values())
            if names:
                self.commanded_ticks += 1
        return names, positions


class IsaacArm(WatchdogStop):
    """One arm of Isaac's articulation and its gripper as an :class:`~robodojo.hardware.adapter.ArmAdapter`."""

    def __init__(
        self,
        articulation: IsaacArticulation,
        settings: ArmHardwareSettings,
        gripper: IsaacGripperSettings,
        followers: Sequence[FingerFollower],
        *,
        guard: TrajectoryGuard | None = None,
    ) -> None:
        self._articulation = articulation
        self.settings = settings
        self.guard = guard or TrajectoryGuard(settings)
        self.joint_names = settings.joint_names
        arm_config = settings.robot.arm(settings.arm)
        self.gripper_joint = arm_config.gripper_joint
        self.followers = tuple(followers)
        self.max_width_m = 2.0 * arm_config.gripper_max_m  # two fingers
        self._gripper = gripper
        self._contact_timeout_s = articulation.settings.contact_timeout_s
        self._dt_s = articulation.dt_s
        self._lock = articulation.lock  # one lock for the whole articulation: its command is built under it
        self._status = ArmStatus("disconnected", "connect() first")
        self._target: NDArray[np.float64] | None = None  # the arm joints' position target [rad]; None: not connected
        self._finger_target_m = 0.0  # the gripper joint's target [m per finger], ramping towards the goal
        self._finger_goal_m = 0.0
        self._rows: NDArray[np.float64] | None = None  # the playing trajectory, one row of targets per control tick
        self._row = 0  # rows sent so far
        self._gripper_moves = 0
        self._grasped = False
        self.sent_trajectories = 0  #: trajectories that started playing (the tests' proof of "nothing sent")
        self.watchdog = CommandWatchdog(settings.watchdog_timeout_s, self._on_watchdog)

    # -- connection -----------------------------------------------------------------------------------------------
    @property
    def status(self) -> ArmStatus:
        return self._status

    def connect(self) -> None:
        """Take contact once Isaac's joint states arrive fresh, with every joint of this arm: hold where it stands."""
        with self._lock:
            state = self._fresh_state()
            self._target = np.array([state.positions[j] for j in self.joint_names])
            self._finger_target_m = self._finger_goal_m = state.positions[self.gripper_joint]
            self._rows = None
            self._status = ArmStatus("idle", "")

    def close(self) -> None:
        self.watchdog.close()
        with self._lock:
            self._rows = None
            self._status = ArmStatus("disconnected", "closed")

    def lose(self, why: str) -> None:
        """Contact is lost (``why``): stop what plays, hold the last target, refuse everything until connect()."""
        with self._lock:
            self.watchdog.disarm()
            self._rows = None
            if self._status.status != "disconnected":
                self._status = ArmStatus("lost", f"lost contact: {why}")

    # -- state ----------------------------------------------------------------------------------------------------
    def joint_state(self) -> JointReading:
        """This arm's joints as Isaac reported them last; ContactLostError once they are older than the timeout."""
        with self._lock:
            self._check_contact()
            state = self._fresh_state()
        return JointReading(
            positions_rad=tuple(state.positions[j] for j in self.joint_names),
            velocities_rad_s=tuple(state.velocities.get(j, 0.0) for j in self.joint_names),
            efforts_nm=tuple(state.efforts.get(j, 0.0) for j in self.joint_names),
            robot_time_s=state.stamp_s,
            read_s=state.received_s,
        )

    def finger_position_m(self) -> float | None:
        """The gripper joint as Isaac reported it last [m per finger]; None before the first joint state."""
        state = self._articulation.latest
        return None if state is None else state.positions.get(self.gripper_joint)

    # -- motion ---------------------------------------------------------------------------------------------------
    def play(self, trajectory: CheckedTrajectory) -> None:
        """Play a checked trajectory from the next control tick, interpolated from the current target at the control
        period exactly as the guard checked it (the simulator's player's arithmetic), and arm the watchdog."""
        if not isinstance(trajectory, CheckedTrajectory) or trajectory.joint_names != self.joint_names:
            raise InvalidCommandError("play() takes a CheckedTrajectory of this arm's joints (TrajectoryGuard.check)")
        with self._lock:
            self._check_contact()
            if self._status.status == "error":
                raise HardwareError(f"the arm is in error ({self._status.detail}): {RELEASE_ACTION}")
            assert self._target is not None  # connected
            _, rows = tick_samples(
                trajectory.times_from_start_s, trajectory.positions_rad, self._target, 0.0, self._dt_s
            )
            self._rows, self._row = rows, 0
            self.sent_trajectories += 1
            self._status = ArmStatus("playing", "")
            self.watchdog.arm()

    def advance(self, ticks: int) -> dict[str, float]:
        """The targets for the control tick ``ticks`` ticks after the last one (called by the articulation): the
        playing trajectory's row for that tick (it ends with its last row), else the held target; the finger target
        ramped towards its goal. Empty before the arm was ever connected."""
        if self._target is None:
            return {}
        if self._rows is not None and ticks > 0:
            self._row = min(self._row + ticks, len(self._rows))
            self._target = self._rows[self._row - 1].copy()
            if self._row == len(self._rows):
                self._rows = None
                self.watchdog.disarm()
                if self._status.status == "playing":
                    self._status = ArmStatus("idle", "")
        step = self._gripper.speed_m_s / 2.0 * self._dt_s * ticks  # per finger
        gap = self._finger_goal_m - self._finger_target_m
        self._finger_target_m += float(np.clip(gap, -step, step))
        targets = dict(zip(self.joint_names, (float(q) for q in self._target), strict=True))
        targets[self.gripper_joint] = self._finger_target_m
        for f in self.followers:
            targets[f.joint] = f.multiplier * self._finger_target_m + f.offset
        return targets

    def is_playing(self) -> bool:
        """Whether a trajectory still plays; ContactLostError when contact was lost meanwhile."""
        with self._lock:
            if self._status.status == "lost":
                raise ContactLostError(self._status.detail)
            if self._status.status != "playing":
                return False
            self._check_contact()
            return True

    def feed(self) -> None:
        self.watchdog.feed()

    def stop(self, *, why: str = "stopped on request") -> None:
        """Stop now: the arm holds the last target sent (the embedded simulator stops the same way)."""
        with self._lock:
            self.watchdog.disarm()
            self._rows = None
            if self._status.status in ("lost", "disconnected"):
                return
            self._status = ArmStatus("stopped", why)

    def recover_from_errors(self) -> None:
        """Back to idle after a stop or the watchdog; ContactLostError while contact is lost."""
        with self._lock:
            if self._status.status in ("lost", "disconnected"):
                raise ContactLostError(f"no contact with Isaac Sim ({self._status.detail}): it connects again itself")
            if self._status.status != "playing":
                self._status = ArmStatus("idle", "")

    # -- gripper --------------------------------------------------------------------------------------------------
    @property
    def gripper_busy(self) -> bool:
        return self._gripper_moves > 0

    def gripper_state(self) -> GripperReading:
        with self._lock:
            self._check_contact()
            finger = self._fresh_state().positions[self.gripper_joint]
        width = 2.0 * finger
        return GripperReading(width, min(1.0, max(0.0, width / self.max_width_m)), self._grasped)

    def gripper_state_now(self) -> GripperReading | None:
        """Never waits: a reading is the latest joint state."""
        return self.gripper_state()

    def move_gripper(self, width_m: float) -> bool:
        """Move the fingers ``width_m`` [m] apart; True once there (False: stopped short or timed out)."""
        return self._move_fingers(width_m, grasp=False)

    def close_on(self, width_m: float = 0.0) -> bool:
        """Close towards ``width_m`` [m] and keep squeezing what stops the fingers; True if held or there."""
        return self._move_fingers(width_m, grasp=True)

    def _move_fingers(self, width_m: float, *, grasp: bool) -> bool:
        if not 0.0 <= width_m <= self.max_width_m:
            raise InvalidCommandError(f"gripper width {width_m!r} m is outside [0, {self.max_width_m:g}] m")
        g = self._gripper
        goal = width_m / 2.0
        with self._articulation.changed:
            self._check_contact()
            self._finger_goal_m, self._grasped = goal, False
            self._gripper_moves += 1
            try:
                start_s = ref_s = self._articulation.now_s()
                ref = self._fresh_state().positions[self.gripper_joint]
                while True:
                    state = self._fresh_state()
                    finger, now = state.positions[self.gripper_joint], state.stamp_s
                    if abs(finger - goal) * 2.0 <= g.tolerance_m:
                        return True
                    if abs(finger - ref) * 2.0 > g.tolerance_m:
                        ref, ref_s = finger, now
                    ramped = self._finger_target_m == self._finger_goal_m
                    if ramped and now - ref_s >= g.stalled_s:  # stopped on something
                        self._grasped = grasp and finger > goal
                        return self._grasped
                    if now - start_s >= g.timeout_s:
                        return False
                    self._articulation.changed.wait(timeout=self._contact_timeout_s)
                    self._check_contact()
            finally:
                self._gripper_moves -= 1

    # -- internals ------------------------------------------------------------------------------------------------
    def _check_contact(self) -> None:
        """ContactLostError while contact is lost or not taken, and when the joint states went silent (then lost)."""
        if self._status.status in ("lost", "disconnected"):
            raise ContactLostError(f"no contact with Isaac Sim: {self._status.detail}")
        age = self._articulation.age_s()
        if age > self._contact_timeout_s:
            why = f"no joint state from Isaac Sim on {ISAAC_JOINT_STATES} for {age:.2f} s (paused, frozen or gone)"
            self.lose(why)
            raise ContactLostError(f"lost contact with Isaac Sim: {why}")

    def _fresh_state(self) -> IsaacJointState:
        """The latest joint state if it is fresh and names this arm's joints; ContactLostError otherwise."""
        state = self._articulation.latest
        age = self._articulation.age_s()
        if state is None or age > self._contact_timeout_s:
            since = "yet" if state is None else f"for {age:.2f} s"
            raise ContactLostError(
                f"no joint state from Isaac Sim on {ISAAC_JOINT_STATES} {since} (is it playing the scene?)"
            )
        missing = [j for j in (*self.joint_names, self.gripper_joint) if j not in state.positions]
        if missing:
            raise ContactLostError(
                f"Isaac Sim's joint states have no {', '.join(missing)}: is it running this robot's scene "
                f"({self.settings.robot.name})?"
            )
        return state
