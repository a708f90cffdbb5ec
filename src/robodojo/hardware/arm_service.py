"""Real arms served in threads of their own, apart from any transport: contact watched and restored, joints read at
the state rate, the controllers ticked every control period, and what there is to publish handed to an
:class:`ArmServiceHost` (the driver node).

Lost contact is reported, never hidden, per arm: that arm's joints leave the joint rows (whoever reads them sees it
gone), its running trajectories end STOPPED with the reason, its health says ERROR with the SDK's message, and a
connection attempt follows every ``reconnect_period_s``; once it answers, it serves again. A fault that is not lost
contact (a motor's error flag, a joint that does not follow) leaves the arm's joints in the rows where still known,
says ERROR and refuses trajectories until released.

A robot that keeps its own time (Isaac Sim) runs without :attr:`ArmService.wall_clock_loops`: its host reads the
joints (:meth:`ArmService.joint_rows`) and ticks the controllers (:meth:`ArmService.control_tick`) on its robot's time,
while the threads keep watching contact and publishing the holding controllers' reports and the health on the system
clock, so that a silent robot is still noticed.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from enum import Enum
from typing import Protocol

from robodojo.control.pacing import Pacer
from robodojo.control.trajectory_controller import ControllerNames, TrajectoryReport
from robodojo.errors import ConfigError, ContactLostError, HardwareError
from robodojo.hardware.adapter import ArmAdapter, JointReading
from robodojo.hardware.arm_driver import ArmDriver

#: close() waits this long in all for the state, control and reconnect threads (each sleeps at most a period, but a
#: reconnect attempt may sit in an SDK's connect for seconds): a node's way out stays below ros2 launch's 5 s.
THREADS_STOP_S = 1.0


@dataclass
class DrivenArm:
    """One arm of the robot: its adapter, its controllers' books and its contact."""

    name: str  #: the robot config's arm
    adapter: ArmAdapter
    driver: ArmDriver
    hardware_id: str  #: for /diagnostics ("fr3@172.16.0.2", "arx_x5@can0")
    contact: threading.Event = field(default_factory=threading.Event)
    contact_detail: str = "not connected yet"
    fault: str = ""  #: the last error reading its state that was not lost contact ("" once it reads again)
    joint_names: tuple[str, ...] = ()


def driven_arm(
    name: str, adapter: ArmAdapter, hardware_id: str, controllers: ControllerNames,
    *, clock: Callable[[], float] = time.time,
) -> DrivenArm:  # fmt: skip
    """An arm with its controllers named ``controllers``; ``clock`` is the robot's time [s] that trajectory stamps are
    on (the system clock for real arms)."""
    driver = ArmDriver(adapter, controllers, clock=clock)
    joints = (*adapter.settings.joint_names, driver.gripper_joint)
    return DrivenArm(name, adapter, driver, hardware_id, joint_names=joints)


def check_robot(parameter: str, hardware_robot: str) -> None:
    """A driver's ``robot`` parameter must be the robot its hardware config drives: the motion server and the cameras
    would plan for another robot (ConfigError)."""
    if parameter != hardware_robot:
        raise ConfigError(
            f"parameter 'robot' is {parameter!r} but the hardware config drives robot {hardware_robot!r}; launch "
            f"with the same robot (robot:={hardware_robot})"
        )


@dataclass(frozen=True)
class ServiceRates:
    """How often the service reads, reports and reconnects."""

    state_rate_hz: float  #: joint rows (or, without wall-clock loops, contact checks)
    status_rate_hz: float  #: the holding controllers' reports and the health
    gripper_rate_hz: float  #: the gripper's width, read between its moves
    reconnect_period_s: float


@dataclass(frozen=True)
class JointRows:
    """Every known arm's joints for one joint-state message (the finger joint where the gripper's width is known)."""

    names: list[str]
    position: list[float]
    velocity: list[float]
    effort: list[float]


class Health(Enum):
    OK = "ok"
    WARN = "warn"
    ERROR = "error"


@dataclass(frozen=True)
class ArmHealth:
    """How an arm is, for /diagnostics: its level, a message, and figures (key: value)."""

    level: Health
    message: str
    values: dict[str, object]


class ArmServiceHost(Protocol):
    """What the service needs of its node: the adapter's connection, and where its output goes."""

    def connect_arm(self, arm: DrivenArm) -> None:
        """Connect ``arm``'s adapter (ContactLostError/HardwareError when it does not answer)."""

    def finger_position_m(self, arm: DrivenArm) -> float | None:
        """``arm``'s finger joint [m], None while unknown."""

    def publish_joint_rows(self, rows: JointRows) -> None: ...

    def publish_report(self, report: TrajectoryReport) -> None: ...

    def publish_health(self, *, periodic: bool) -> None:
        """Every arm's :meth:`ArmService.health`, now: on a change of contact or fault, and ``periodic``-ally at the
        status rate (when the host also summarises what it refused)."""

    def log(self, level: str, text: str) -> None:
        """A line for the operator: ``level`` is info, warning or error."""

    def loop_error(self, text: str) -> bool:
        """A control tick failed; whether the loop goes on (not while shutting down)."""


class ArmService:
    """The arms of one driver, served by a state, a control and a reconnect thread."""

    def __init__(
        self, arms: Sequence[DrivenArm], host: ArmServiceHost, rates: ServiceRates, *, wall_clock_loops: bool = True
    ) -> None:
        self.arms = list(arms)
        self.host, self.rates = host, rates
        self.wall_clock_loops = wall_clock_loops
        self._running = True
        self._closed = False
        self._threads: list[threading.Thread] = []

    def start(self) -> None:
        """Connect every arm (one that does not answer is tried again later) and start the threads."""
        for arm in self.arms:
            self._connect(arm)
        self._threads = [
            threading.Thread(target=self._state_loop, name="joint_states", daemon=True),
            threading.Thread(target=self._control_loop, name="control", daemon=True),
            threading.Thread(target=self._reconnect_loop, name="reconnect", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- contact --------------------------------------------------------------------------------------------------
    def _connect(self, arm: DrivenArm) -> bool:
        try:
            self.host.connect_arm(arm)
        except HardwareError as exc:
            arm.contact_detail = str(exc)
            self.host.log("error", f"{arm.name}: {exc}; trying again every {self.rates.reconnect_period_s:g} s")
            return False
        arm.contact_detail, arm.fault = "", ""
        arm.contact.set()
        return True

    def _lost(self, arm: DrivenArm, why: str) -> None:
        if not arm.contact.is_set():
            return
        arm.contact.clear()
        arm.contact_detail = why
        arm.driver.lose_contact(why)
        self.host.log(
            "error", f"{arm.name}: {why}: trajectories stopped; reconnecting every {self.rates.reconnect_period_s:g} s"
        )
        self.host.publish_health(periodic=False)

    def _reconnect_loop(self) -> None:
        """Arms without contact: a connection attempt every reconnect period (an SDK may take seconds to start or
        to let go of a dead connection, so not on the state loop)."""
        while self._running:
            time.sleep(self.rates.reconnect_period_s)
            for arm in self.arms:
                if self._running and not arm.contact.is_set() and self._connect(arm):
                    self.host.log("info", f"{arm.name}: contact with {arm.hardware_id} restored: serving again")
                    self.host.publish_health(periodic=False)

    # -- state ----------------------------------------------------------------------------------------------------
    def _state_loop(self) -> None:
        """Joint rows at the state rate (or, without wall-clock loops, each arm's contact checked at that rate)."""
        pacer = Pacer(1.0 / self.rates.state_rate_hz)  # far behind (a loaded machine): keeps the period
        gripper_every = max(1, round(self.rates.state_rate_hz / self.rates.gripper_rate_hz))
        n = 0
        while self._running:
            if self.wall_clock_loops:
                rows = self.joint_rows(refresh_gripper=n % gripper_every == 0)
                if rows is not None:
                    self.host.publish_joint_rows(rows)
            else:
                for arm in self.arms:
                    self.read(arm, refresh_gripper=False)
            n += 1
            pacer.wait()

    def joint_rows(self, *, refresh_gripper: bool) -> JointRows | None:
        """Every arm whose state is known, read now (None: none is)."""
        rows = JointRows([], [], [], [])
        for arm in self.arms:
            reading = self.read(arm, refresh_gripper=refresh_gripper)
            if reading is None:
                continue
            finger_m = self.host.finger_position_m(arm)
            finger = [] if finger_m is None else [finger_m]
            rows.names.extend(arm.joint_names if finger else arm.adapter.settings.joint_names)
            rows.position.extend([*reading.positions_rad, *finger])
            rows.velocity.extend([*reading.velocities_rad_s, *([0.0] if finger else [])])
            rows.effort.extend([*reading.efforts_nm, *([0.0] if finger else [])])
        return rows if rows.names else None

    def read(self, arm: DrivenArm, *, refresh_gripper: bool) -> JointReading | None:
        """``arm``'s joints, or None while its state is unknown (lost contact, a silent motor)."""
        if not arm.contact.is_set():
            return None
        try:
            reading = arm.driver.read_joints()
            if refresh_gripper:
                arm.driver.refresh_gripper()
        except ContactLostError as exc:
            self._lost(arm, str(exc))
            return None
        except HardwareError as exc:
            if arm.fault != str(exc):
                arm.fault = str(exc)
                self.host.log("error", f"{arm.name}: {exc}")
                self.host.publish_health(periodic=False)
            return None
        if arm.fault:
            self.host.log("info", f"{arm.name}: its state reads again")
            arm.fault = ""
        return reading

    # -- control --------------------------------------------------------------------------------------------------
    def control_tick(self) -> None:
        """One control period of every arm's controllers (books, starts, lease lapses), their reports published; the
        control thread calls it on the system clock, or the host on its robot's time."""
        for report in [r for arm in self.arms for r in arm.driver.tick()]:
            self.host.publish_report(report)

    def _control_loop(self) -> None:
        pacer = Pacer(self.arms[0].driver.dt_s)
        status_period = 1.0 / self.rates.status_rate_hz
        next_status = 0.0
        while self._running:
            try:
                reports: list[TrajectoryReport] = []
                if self.wall_clock_loops:
                    self.control_tick()
                else:  # the robot's ticks may stand still (a silent robot): its ends are published all the same
                    reports += [r for arm in self.arms for r in arm.driver.take_reports()]
                if time.monotonic() >= next_status:
                    next_status = time.monotonic() + status_period
                    reports += [r for arm in self.arms for r in arm.driver.status_reports() if r.holding]
                    self.host.publish_health(periodic=True)
                for report in reports:
                    self.host.publish_report(report)
            except Exception as exc:  # the loop is the robot's controller: report and go on
                if not self.host.loop_error(f"control tick failed: {type(exc).__name__}: {exc}"):
                    return
            pacer.wait()

    # -- health ---------------------------------------------------------------------------------------------------
    @staticmethod
    def health(arm: DrivenArm) -> ArmHealth:
        """``arm``'s level and message: lost contact and faults are errors (nothing moves until an operator releases
        a fault), an e-stop or the adapter's watchdog a warning."""
        status = arm.adapter.status
        latency = arm.driver.latency
        values: dict[str, object] = {"arm_status": status.status, "estop": arm.driver.estopped or "released"}
        if latency is not None:
            values["received_to_sdk_ms"] = f"{latency.received_to_sdk_ms:.3f}"
            values["stamp_to_sdk_ms"] = f"{latency.stamp_to_sdk_ms:.3f}"
        if not arm.contact.is_set():
            return ArmHealth(Health.ERROR, f"lost contact: {arm.contact_detail}", values)
        if arm.fault or status.status == "error":
            return ArmHealth(Health.ERROR, arm.fault or status.detail, values)
        if arm.driver.estopped or status.status == "watchdog":
            return ArmHealth(Health.WARN, arm.driver.estopped or status.detail, values)
        return ArmHealth(Health.OK, status.status, values)

    # -- the end --------------------------------------------------------------------------------------------------
    def close(self) -> None:
        """Stop every arm (each holds where it stops), then the threads, then each adapter's shutdown sequence, all
        arms at once (the X5's homes and damps for seconds: one after the other they outlast launch's 5 s before
        SIGTERM). Once: a second call does nothing."""
        if self._closed:
            return
        self._closed = True
        for arm in self.arms:
            arm.driver.stop("the driver is shutting down")
        self._running = False
        deadline = time.monotonic() + THREADS_STOP_S  # daemon threads: one bound for all, not one each
        for thread in self._threads:
            thread.join(timeout=max(0.0, deadline - time.monotonic()))
        closers = [threading.Thread(target=self._close_arm, args=(arm,), name=f"close-{arm.name}") for arm in self.arms]
        for closer in closers:
            closer.start()
        for closer in closers:
            closer.join()

    def _close_arm(self, arm: DrivenArm) -> None:
        try:
            arm.driver.close()
            arm.adapter.close()
        except Exception as exc:  # the other arms still shut down
            self.host.log("error", f"{arm.name}: shutdown failed: {type(exc).__name__}: {exc}")
