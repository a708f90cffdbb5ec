"""Real arms on the graph in the simulator node's place: the common part of fr3_driver_node and arx5_driver_node.

For every arm of the robot it publishes that arm's joints on /joint_states (position, velocity, measured torque and
the finger joint) at the hardware config's ``state.rate_hz``, follows ``/<arm>_arm_controller/joint_trajectory`` and
``/<arm>_gripper_controller/joint_trajectory`` and reports on their ``trajectory_status`` topics exactly as
``sim_node`` does, takes the motion server's leases on /motion/lease, and serves:

- ``/hardware/estop`` (std_srvs/Trigger): stop every arm now and refuse all trajectories until released;
- ``/hardware/release`` (std_srvs/Trigger): clear the e-stop and the arms' error states (recovery is never
  automatic: after a fault the driver refuses trajectories until an operator calls this).

Both are served in a thread of their own (:mod:`robodojo.nodes.operator_services`): an e-stop never queues behind a
flood of trajectory callbacks in the node's executor.

Lost contact is reported, never hidden, per arm: that arm's joints leave /joint_states (so the motion server and the
agent see it gone), its running trajectories end STOPPED with the reason, /diagnostics says ERROR with the SDK's
message, and the driver tries to connect it again every ``reconnect_period_s``; once it answers, it serves again
(/diagnostics OK). A fault that is not lost contact (a motor's error flag, a joint that does not follow) leaves the
arm's state on /joint_states where it is still known, says ERROR on /diagnostics and refuses trajectories until
``/hardware/release``.

Time: every stamp is the system clock (ROS time without /clock); trajectories stamped ahead start at their stamp.
A robot that keeps its own time (isaac_bridge_node: Isaac Sim's simulation time) overrides :meth:`ArmDriverNode.stamp_s`
and sets :attr:`ArmDriverNode.wall_clock_loops` False: it then publishes /joint_states as its robot's states arrive
(:meth:`ArmDriverNode.publish_joint_states`) and ticks the controllers on its robot's time
(:meth:`ArmDriverNode.control_tick`); the node's threads keep watching contact and publishing the holding controllers'
reports and /diagnostics on the system clock, so a silent robot is still noticed.
"""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from agent_bringup.msg import TrajectoryLease, TrajectoryStatus
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robodojo.control.pacing import Pacer
from robodojo.control.trajectory_controller import Lease, TrajectoryReport
from robodojo.errors import ConfigError, ContactLostError, HardwareError, InvalidCommandError
from robodojo.hardware.adapter import ArmAdapter, JointReading
from robodojo.hardware.arm_driver import ArmDriver
from robodojo.log_limits import RefusalLog
from robodojo.nodes import convert, topics
from robodojo.nodes.operator_services import ESTOP, RELEASE, OperatorServices
from robodojo.nodes.runtime import GraphNode

STATE_QOS = QoSProfile(depth=10)
REPORT_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)  # every end reaches its commander
#: close() waits this long in all for its state, control and reconnect threads (each sleeps at most a period, but a
#: reconnect attempt may sit in an SDK's connect for seconds): the node's way out stays below ros2 launch's 5 s.
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


def check_robot(parameter: str, hardware_robot: str) -> None:
    """The node's ``robot`` parameter must be the robot its hardware config drives: the motion server and the cameras
    would plan for another robot (ConfigError)."""
    if parameter != hardware_robot:
        raise ConfigError(
            f"parameter 'robot' is {parameter!r} but the hardware config drives robot {hardware_robot!r}; launch "
            f"with the same robot (robot:={hardware_robot})"
        )


def driven_arm(
    name: str, adapter: ArmAdapter, hardware_id: str, *, clock: Callable[[], float] = time.time
) -> DrivenArm:
    """An arm with its controllers named as on the graph (nodes.topics); ``clock`` is the robot's time [s] that
    trajectory stamps are on (the system clock for real arms)."""
    driver = ArmDriver(adapter, topics.controller_names(name), clock=clock)
    joints = (*adapter.settings.joint_names, driver.gripper_joint)
    return DrivenArm(name, adapter, driver, hardware_id, joint_names=joints)


class ArmDriverNode(GraphNode):
    """The driver node for ``arms`` (built by the subclass before calling :meth:`start`)."""

    #: True: a thread reads every arm at ``state_rate_hz`` and publishes /joint_states, and the control thread ticks
    #: the controllers every control period of the system clock. False (a robot with its own time): the subclass calls
    #: :meth:`publish_joint_states` and :meth:`control_tick` on its robot's time; the state thread then only watches
    #: contact (at ``state_rate_hz``) and the control thread publishes the holding reports and /diagnostics.
    wall_clock_loops = True

    def __init__(self, node_name: str) -> None:
        super().__init__(node_name)
        self.node_name = node_name
        self.arms: list[DrivenArm] = []
        self._refusals = RefusalLog("nothing sent")
        self._running = True
        self._threads: list[threading.Thread] = []
        self.operator: OperatorServices | None = None

    # -- the subclass's part --------------------------------------------------------------------------------------
    def connect_arm(self, arm: DrivenArm) -> None:
        """Connect ``arm``'s adapter (ContactLostError/HardwareError when it does not answer)."""
        arm.adapter.connect()

    def diagnostic_values(self, arm: DrivenArm) -> dict[str, object]:
        """Adapter-specific /diagnostics values for ``arm`` (key: value, written with str())."""
        return {}

    def stamp_s(self) -> float:
        """The robot's time now, for every stamp this node publishes: the system clock here."""
        return time.time()

    def finger_position_m(self, arm: DrivenArm) -> float | None:
        """``arm``'s gripper joint for /joint_states [m per finger]: half the width the gripper last reported (read
        between its moves); None while unknown."""
        width = arm.driver.gripper_width_m()
        return None if width is None else width / 2.0

    # -- setup ----------------------------------------------------------------------------------------------------
    def start(
        self, arms: Sequence[DrivenArm], *, state_rate_hz: float, status_rate_hz: float, gripper_rate_hz: float,
        reconnect_period_s: float,
    ) -> None:  # fmt: skip
        """Publish, subscribe and serve for ``arms``, connect them, and start the state, control and reconnect
        threads."""
        self.arms = list(arms)
        self.state_rate_hz, self.status_rate_hz = state_rate_hz, status_rate_hz
        self.gripper_rate_hz, self.reconnect_period_s = gripper_rate_hz, reconnect_period_s
        self.joint_pub = self.create_publisher(JointState, topics.JOINT_STATES, STATE_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, STATE_QOS)
        commands = MutuallyExclusiveCallbackGroup()  # trajectories and leases in arrival order
        self.status_pubs = {}
        for arm in self.arms:
            for controller in (arm.driver.joints, arm.driver.gripper):
                topic = topics.trajectory_status(controller.name)
                self.status_pubs[controller.name] = self.create_publisher(TrajectoryStatus, topic, REPORT_QOS)
            controllers = {"arm": topics.arm_controller(arm.name), "gripper": topics.gripper_controller(arm.name)}
            for kind, topic in controllers.items():
                callback = functools.partial(self._submit, arm, kind)
                self.create_subscription(JointTrajectory, topic, callback, 10, callback_group=commands)
        self.create_subscription(TrajectoryLease, topics.MOTION_LEASE, self._on_lease, 10, callback_group=commands)
        self.operator = OperatorServices(self, self._on_estop, self._on_release)  # never behind a trajectory flood
        for arm in self.arms:
            self._connect(arm)
        self._threads = [
            threading.Thread(target=self._state_loop, name="joint_states", daemon=True),
            threading.Thread(target=self._control_loop, name="control", daemon=True),
            threading.Thread(target=self._reconnect_loop, name="reconnect", daemon=True),
        ]
        for thread in self._threads:
            thread.start()

    # -- connection -----------------------------------------------------------------------------------------------
    def _connect(self, arm: DrivenArm) -> bool:
        try:
            self.connect_arm(arm)
        except HardwareError as exc:
            arm.contact_detail = str(exc)
            self.get_logger().error(f"{arm.name}: {exc}; trying again every {self.reconnect_period_s:g} s")
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
        self.get_logger().error(
            f"{arm.name}: {why}: trajectories stopped; reconnecting every {self.reconnect_period_s:g} s"
        )
        self._publish_diagnostics()

    def _reconnect_loop(self) -> None:
        """Arms without contact: a connection attempt every reconnect period (an SDK may take seconds to start or
        to let go of a dead connection, so not on the state loop)."""
        while self._running:
            time.sleep(self.reconnect_period_s)
            for arm in self.arms:
                if self._running and not arm.contact.is_set() and self._connect(arm):
                    self.get_logger().info(f"{arm.name}: contact with {arm.hardware_id} restored: serving again")
                    self._publish_diagnostics()

    # -- threads --------------------------------------------------------------------------------------------------
    def _state_loop(self) -> None:
        """/joint_states at the configured rate with every arm whose state is known (or, without
        :attr:`wall_clock_loops`, only each arm's contact checked at that rate)."""
        pacer = Pacer(1.0 / self.state_rate_hz)  # far behind (a loaded machine): keeps the period, drops the backlog
        gripper_every = max(1, round(self.state_rate_hz / self.gripper_rate_hz))
        n = 0
        while self._running:
            if self.wall_clock_loops:
                self.publish_joint_states(refresh_gripper=n % gripper_every == 0)
            else:
                for arm in self.arms:
                    self._read(arm, refresh_gripper=False)
            n += 1
            pacer.wait()

    def publish_joint_states(self, *, refresh_gripper: bool) -> None:
        """One /joint_states message with every arm whose state is known, stamped :meth:`stamp_s`."""
        names: list[str] = []
        position: list[float] = []
        velocity: list[float] = []
        effort: list[float] = []
        for arm in self.arms:
            reading = self._read(arm, refresh_gripper=refresh_gripper)
            if reading is None:
                continue
            finger_m = self.finger_position_m(arm)
            finger = [] if finger_m is None else [finger_m]
            names += arm.joint_names if finger else list(arm.adapter.settings.joint_names)
            position += [*reading.positions_rad, *finger]
            velocity += [*reading.velocities_rad_s, *([0.0] if finger else [])]
            effort += [*reading.efforts_nm, *([0.0] if finger else [])]
        if names:
            msg = JointState(header=convert.header(self.stamp_s(), ""), name=names, position=position)
            msg.velocity, msg.effort = velocity, effort
            self.joint_pub.publish(msg)

    def _read(self, arm: DrivenArm, *, refresh_gripper: bool) -> JointReading | None:
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
                self.get_logger().error(f"{arm.name}: {exc}")
                self._publish_diagnostics()
            return None
        if arm.fault:
            self.get_logger().info(f"{arm.name}: its state reads again")
            arm.fault = ""
        return reading

    def control_tick(self) -> None:
        """One control period of every arm's controllers (books, starts, lease lapses) and their reports published;
        the control thread calls it on the system clock, or the subclass on its robot's time."""
        for report in [r for arm in self.arms for r in arm.driver.tick()]:
            self._publish_report(report)

    def _control_loop(self) -> None:
        """The controllers' tick (the robot config's control period): books, lease lapses, reports."""
        pacer = Pacer(self.arms[0].driver.dt_s)
        status_period = 1.0 / self.status_rate_hz
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
                    self._publish_diagnostics()
                    for line in self._refusals.summaries():
                        self.get_logger().error(line)
                for report in reports:
                    self._publish_report(report)
            except Exception as exc:  # the loop is the robot's controller: log and go on
                if not self.context.ok():
                    return
                self.get_logger().error(f"control tick failed: {type(exc).__name__}: {exc}")
            pacer.wait()

    # -- commands -------------------------------------------------------------------------------------------------
    def _submit(self, arm: DrivenArm, kind: str, msg: JointTrajectory) -> None:
        driver = arm.driver
        controller = driver.joints if kind == "arm" else driver.gripper
        try:
            start_s = convert.seconds(msg.header.stamp)
            controller.check_sizes(msg.joint_names, len(msg.points), driver.dt_s, start_s)
            cmd = convert.trajectory_command(msg)
            if kind == "arm":
                driver.submit_arm(cmd)
            else:
                driver.submit_gripper(cmd)
        except InvalidCommandError as exc:
            what = f"{arm.name} {kind}"
            line = self._refusals.refused(what, exc)
            if line is not None:
                self.get_logger().error(line)
        finally:
            reports = controller.take_reports()
            if controller.playing:  # accepted: say so now, not at the next tick (the commander checks it started)
                reports.append(controller.status())
            for report in reports:
                self._publish_report(report)

    def _on_lease(self, msg: TrajectoryLease) -> None:
        lease = Lease(convert.seconds(msg.start), convert.seconds(msg.sent), msg.timeout_s)
        for arm in self.arms:
            arm.driver.renew(lease)

    def _on_estop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        for arm in self.arms:
            arm.driver.estop(f"{ESTOP} called")
        self.get_logger().warning(f"e-stop: every arm is stopped; trajectories are refused until {RELEASE}")
        response.success, response.message = True, f"stopped; call {RELEASE} to move again"
        return response

    def _on_release(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        failed = []
        for arm in self.arms:
            try:
                arm.driver.release()
            except HardwareError as exc:
                failed.append(f"{arm.name}: {exc}")
        if failed:
            response.success, response.message = False, "; ".join(failed)
            return response
        self.get_logger().info("e-stop released and errors cleared: trajectories are accepted again")
        response.success, response.message = True, "released"
        return response

    # -- publishing -----------------------------------------------------------------------------------------------
    def _publish_report(self, report: TrajectoryReport) -> None:
        self.status_pubs[report.controller].publish(
            convert.trajectory_status_msg(TrajectoryStatus, report, self.stamp_s())
        )

    def _publish_diagnostics(self) -> None:
        self.diagnostics_pub.publish(convert.diagnostic_array(self.stamp_s(), [self._diagnostic(a) for a in self.arms]))

    def _diagnostic(self, arm: DrivenArm) -> DiagnosticStatus:
        status = arm.adapter.status
        latency = arm.driver.latency
        values: dict[str, object] = {"arm_status": status.status, "estop": arm.driver.estopped or "released"}
        if latency is not None:
            values["received_to_sdk_ms"] = f"{latency.received_to_sdk_ms:.3f}"
            values["stamp_to_sdk_ms"] = f"{latency.stamp_to_sdk_ms:.3f}"
        values.update(self.diagnostic_values(arm))
        if not arm.contact.is_set():
            level, message = DiagnosticStatus.ERROR, f"lost contact: {arm.contact_detail}"
        elif arm.fault or status.status == "error":  # a fault: nothing moves until an operator releases it
            level, message = DiagnosticStatus.ERROR, arm.fault or status.detail
        elif arm.driver.estopped or status.status == "watchdog":
            level, message = DiagnosticStatus.WARN, arm.driver.estopped or status.detail
        else:
            level, message = DiagnosticStatus.OK, status.status
        return convert.diagnostic_status(level, f"{self.node_name}: {arm.name}", message, arm.hardware_id, values)

    def close(self) -> None:
        """Stop every arm (each holds where it stops), then the threads, then each adapter's shutdown sequence, all
        arms at once (the X5's homes and damps for seconds: one after the other they outlast launch's 5 s before
        SIGTERM)."""
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
        if self.operator is not None:
            self.operator.close()

    def _close_arm(self, arm: DrivenArm) -> None:
        try:
            arm.driver.close()
            arm.adapter.close()
        except Exception as exc:  # the other arms still shut down
            self.get_logger().error(f"{arm.name}: shutdown failed: {type(exc).__name__}: {exc}")
