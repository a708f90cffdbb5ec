"""Real arms on the graph in the simulator node's place: the common part of fr3_driver_node, arx5_driver_node and
isaac_bridge_node, over the library's :class:`~robodojo.hardware.arm_service.ArmService` (contact, reads, ticks).

For every arm of the robot it publishes that arm's joints on /joint_states (position, velocity, measured torque and
the finger joint) at the hardware config's ``state.rate_hz``, follows ``/<arm>_arm_controller/joint_trajectory`` and
``/<arm>_gripper_controller/joint_trajectory`` and reports on their ``trajectory_status`` topics exactly as
``sim_node`` does, takes the motion server's leases on /motion/lease, says each arm's health on /diagnostics (lost
contact and faults ERROR, an e-stop WARN), and serves:

- ``/hardware/estop`` (std_srvs/Trigger): stop every arm now and refuse all trajectories until released;
- ``/hardware/release`` (std_srvs/Trigger): clear the e-stop and the arms' error states (recovery is never
  automatic: after a fault the driver refuses trajectories until an operator calls this).

Both are served in a thread of their own (:mod:`robodojo.nodes.operator_services`): an e-stop never queues behind a
flood of trajectory callbacks in the node's executor.

Time: every stamp is the system clock (ROS time without /clock); trajectories stamped ahead start at their stamp.
A robot that keeps its own time (isaac_bridge_node: Isaac Sim's simulation time) overrides :meth:`ArmDriverNode.stamp_s`
and sets :attr:`ArmDriverNode.wall_clock_loops` False (see ArmService).
"""

from __future__ import annotations

import functools
import time
from collections.abc import Sequence

from agent_bringup.msg import TrajectoryLease, TrajectoryStatus
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robodojo.control.trajectory_controller import Lease, TrajectoryReport
from robodojo.errors import HardwareError, InvalidCommandError
from robodojo.hardware.arm_service import ArmService, DrivenArm, Health, JointRows, ServiceRates
from robodojo.log_limits import RefusalLog
from robodojo.nodes import convert, topics
from robodojo.nodes.operator_services import ESTOP, RELEASE, OperatorServices
from robodojo.nodes.runtime import GraphNode

STATE_QOS = QoSProfile(depth=10)
REPORT_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)  # every end reaches its commander
DIAGNOSTIC_LEVELS = {
    Health.OK: DiagnosticStatus.OK,
    Health.WARN: DiagnosticStatus.WARN,
    Health.ERROR: DiagnosticStatus.ERROR,
}


class ArmDriverNode(GraphNode):
    """The driver node for ``arms`` (built by the subclass before calling :meth:`start`)."""

    #: True: a thread reads every arm at ``state_rate_hz`` and publishes /joint_states, and the control thread ticks
    #: the controllers every control period of the system clock. False (a robot with its own time): the subclass calls
    #: :meth:`publish_joint_states` and ``service.control_tick`` on its robot's time (ArmService).
    wall_clock_loops = True

    def __init__(self, node_name: str) -> None:
        super().__init__(node_name)
        self.node_name = node_name
        self.arms: list[DrivenArm] = []
        self._refusals = RefusalLog("nothing sent")
        self.service: ArmService | None = None
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
    def start(self, arms: Sequence[DrivenArm], rates: ServiceRates) -> None:
        """Publish, subscribe and serve for ``arms``, connect them, and start the service's threads."""
        self.arms = list(arms)
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
        self.service = ArmService(self.arms, self, rates, wall_clock_loops=self.wall_clock_loops)
        self.service.start()

    def publish_joint_states(self, *, refresh_gripper: bool) -> None:
        """One /joint_states message with every arm whose state is known, read now (a robot with its own time)."""
        assert self.service is not None
        rows = self.service.joint_rows(refresh_gripper=refresh_gripper)
        if rows is not None:
            self.publish_joint_rows(rows)

    # -- the service's host (ArmServiceHost) ---------------------------------------------------------------------
    def publish_joint_rows(self, rows: JointRows) -> None:
        msg = JointState(header=convert.header(self.stamp_s(), ""), name=rows.names, position=rows.position)
        msg.velocity, msg.effort = rows.velocity, rows.effort
        self.joint_pub.publish(msg)

    def publish_report(self, report: TrajectoryReport) -> None:
        self.status_pubs[report.controller].publish(
            convert.trajectory_status_msg(TrajectoryStatus, report, self.stamp_s())
        )

    def publish_health(self, *, periodic: bool) -> None:
        self.diagnostics_pub.publish(convert.diagnostic_array(self.stamp_s(), [self._diagnostic(a) for a in self.arms]))
        if periodic:
            for line in self._refusals.summaries():
                self.get_logger().error(line)

    def log(self, level: str, text: str) -> None:
        # one call site per severity: rclpy's logger refuses a second severity from one line
        if level == "error":
            self.get_logger().error(text)
        elif level == "warning":
            self.get_logger().warning(text)
        else:
            self.get_logger().info(text)

    def loop_error(self, text: str) -> bool:
        if not self.context.ok():
            return False
        self.get_logger().error(text)
        return True

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
                self.publish_report(report)

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
        failed, cleared = [], []
        for arm in self.arms:
            try:
                error = arm.driver.release()
            except HardwareError as exc:
                failed.append(f"{arm.name}: {exc}")
            else:
                cleared.extend([f"{arm.name}: {error}"] if error else [])
        if failed:
            response.success, response.message = False, "; ".join(failed)
            return response
        errors = f" (cleared: {'; '.join(cleared)})" if cleared else ""
        self.get_logger().info(f"e-stop released and errors cleared{errors}: trajectories are accepted again")
        response.success, response.message = True, f"released{errors}"
        return response

    def _diagnostic(self, arm: DrivenArm) -> DiagnosticStatus:
        health = ArmService.health(arm)
        level = DIAGNOSTIC_LEVELS[health.level]
        values = {**health.values, **self.diagnostic_values(arm)}
        name = f"{self.node_name}: {arm.name}"
        return convert.diagnostic_status(level, name, health.message, arm.hardware_id, values)

    def close(self) -> None:
        """Stop every arm and close its adapter (ArmService.close), then the operator's services."""
        if self.service is not None:
            self.service.close()
        if self.operator is not None:
            self.operator.close()
