"""What an arm adapter is to :class:`~robodojo.hardware.arm_driver.ArmDriver`: one real arm behind its SDK.

:class:`~robodojo.hardware.franka.FrankaArm` (libfranka through franky), :class:`~robodojo.hardware.arx5.Arx5Arm`
(arx5-interface over CAN) and :class:`~robodojo.hardware.isaac.IsaacArm` (Isaac Sim's articulation over its ROS 2
bridge) implement it. Every trajectory an adapter plays has passed its
:class:`~robodojo.hardware.trajectory_guard.TrajectoryGuard`; errors are :class:`~robodojo.errors.HardwareError`,
and :class:`~robodojo.errors.ContactLostError` when the robot does not answer.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from typing import Protocol

from robodojo.errors import HardwareError
from robodojo.hardware.settings import ArmHardwareSettings
from robodojo.hardware.trajectory_guard import CheckedTrajectory, TrajectoryGuard
from robodojo.hardware.watchdog import CommandWatchdog

#: Arm statuses: idle (connected, nothing playing), playing, stopped (by stop()), watchdog (stopped because feed()
#: stopped), error (a motion failed or a motor reports a fault: recover_from_errors()), lost (no contact: connect()),
#: disconnected.
STATUSES = ("disconnected", "idle", "playing", "stopped", "watchdog", "error", "lost")
#: What an operator does about a fault, as every adapter's error says it: the driver node's release service
#: (robodojo.nodes.arm_driver_node.RELEASE), never an adapter method a commander cannot call.
RELEASE_ACTION = "release the arm with the driver's /hardware/release service (std_srvs/Trigger) once it is fixed"


@dataclass(frozen=True)
class JointReading:
    """One joint state of the arm, in the robot config's joint order."""

    positions_rad: tuple[float, ...]
    velocities_rad_s: tuple[float, ...]
    efforts_nm: tuple[float, ...]  #: measured joint torques (libfranka tau_J; the X5 motors' currents, scaled)
    robot_time_s: float  #: the controller's clock
    read_s: float  #: this process's monotonic clock when read


@dataclass(frozen=True)
class GripperReading:
    width_m: float  #: between the fingers, 0 .. max_width_m
    opening: float  #: width over the largest width, the 0..1 the agents use
    grasped: bool


@dataclass(frozen=True)
class ArmStatus:
    status: str  #: one of :data:`STATUSES`
    detail: str  #: why, in a sentence ("" when idle or playing)


class ArmAdapter(Protocol):
    """One arm and its gripper behind an SDK; thread-safe (the driver calls it from several threads)."""

    @property
    def settings(self) -> ArmHardwareSettings: ...

    @property
    def guard(self) -> TrajectoryGuard: ...

    @property
    def watchdog(self) -> CommandWatchdog: ...

    @property
    def max_width_m(self) -> float:
        """The gripper's full opening [m]."""

    @property
    def status(self) -> ArmStatus: ...

    def connect(self) -> None:
        """Connect (again); ContactLostError when the robot does not answer."""

    def close(self) -> None: ...

    def joint_state(self) -> JointReading: ...

    def play(self, trajectory: CheckedTrajectory) -> None:
        """Start a checked trajectory now (replacing what plays) and arm the watchdog."""

    def is_playing(self) -> bool:
        """Whether the motion still runs; raises what ended it (ContactLostError, HardwareError)."""

    def feed(self) -> None: ...

    def stop(self, *, why: str = "stopped on request") -> None:
        """Stop now; the arm holds where it stops."""

    def recover_from_errors(self) -> None: ...

    @property
    def gripper_busy(self) -> bool: ...

    def gripper_state(self) -> GripperReading: ...

    def gripper_state_now(self) -> GripperReading | None:
        """The gripper's state, or None at once when a gripper move holds it."""

    def move_gripper(self, width_m: float) -> bool:
        """Move the fingers ``width_m`` apart; blocks until there (True) or stopped."""

    def close_on(self, width_m: float = 0.0) -> bool:
        """Close towards ``width_m`` and hold what stops the fingers; blocks until done."""


class WatchdogStop:
    """An adapter's answer to its watchdog (``CommandWatchdog(timeout, self._on_watchdog)``): when ``feed()`` stopped
    coming and a motion still plays, stop it and hold, status ``watchdog``. Runs on the watchdog's thread."""

    _lock: threading.RLock
    _status: ArmStatus
    watchdog: CommandWatchdog

    def is_playing(self) -> bool:
        raise NotImplementedError

    def stop(self, *, why: str = "stopped on request") -> None:
        raise NotImplementedError

    def _on_watchdog(self) -> None:
        with self._lock:
            if self.watchdog.armed:
                return  # a new trajectory re-armed it meanwhile
            try:
                if not self.is_playing():
                    return  # it ended (or was stopped) before anyone asked
                self.stop(why=f"no feed() for {self.watchdog.timeout_s:g} s: stopped and holding")
            except HardwareError:
                return  # lost contact or a fault: the status says which
            self._status = ArmStatus("watchdog", self._status.detail)
