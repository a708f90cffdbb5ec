"""The Franka FR3 driver: a real arm (or franky-sim) on the graph in the simulator node's place.

Publishes /joint_states (the arm joints with velocity and measured torque, and the finger joint) at the hardware
config's ``state.rate_hz``, follows ``/<arm>_arm_controller/joint_trajectory`` and ``/<arm>_gripper_controller/
joint_trajectory`` and reports on their ``trajectory_status`` topics exactly as ``sim_node`` does, takes the motion
server's leases on /motion/lease, and serves:

- ``/hardware/estop`` (std_srvs/Trigger): stop every arm now and refuse all trajectories until released;
- ``/hardware/release`` (std_srvs/Trigger): clear the e-stop and the robot's error state (recovery is never
  automatic: after a reflex the driver refuses trajectories until an operator calls this).

Lost contact is reported, never hidden: /joint_states stop (so the motion server and the agent see the robot gone),
running trajectories end STOPPED with the reason, /diagnostics says ERROR with libfranka's message, and the driver
tries to connect again every ``reconnect_period_s``; once the robot answers it serves again (/diagnostics OK).

Time: every stamp is the system clock (ROS time without /clock); trajectories stamped ahead start at their stamp.
"""

from __future__ import annotations

import sys
import threading
import time

from agent_bringup.msg import TrajectoryLease, TrajectoryStatus
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus, KeyValue
from rclpy.callback_groups import MutuallyExclusiveCallbackGroup
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState
from std_srvs.srv import Trigger
from trajectory_msgs.msg import JointTrajectory

from robodojo.control.trajectory_controller import Lease, TrajectoryReport
from robodojo.errors import ConfigError, HardwareError, InvalidCommandError
from robodojo.hardware.arm_driver import ArmDriver, ControllerNames
from robodojo.hardware.franka import FrankaArm
from robodojo.hardware.settings import load_hardware_settings
from robodojo.log_limits import RepeatLimiter
from robodojo.nodes import convert, topics
from robodojo.nodes.parameters import Fr3DriverParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import GraphNode, run_node

NODE_NAME = "fr3_driver_node"
STATE_QOS = QoSProfile(depth=10)
REPORT_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE)  # every end reaches its commander
ESTOP = "/hardware/estop"
RELEASE = "/hardware/release"


class Fr3DriverNode(GraphNode):
    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, Fr3DriverParams)
        self.params = p
        self.settings = load_hardware_settings(p.hardware_config or None)
        self.robot = self.settings.robot
        if p.robot != self.robot.name:  # the motion server and cameras would plan for another robot
            raise ConfigError(
                f"parameter 'robot' is {p.robot!r} but the hardware config drives robot {self.robot.name!r}; "
                "launch with the same robot (robot:=fr3)"
            )
        arm_name = self.settings.arm
        self.arm = FrankaArm(self.settings)
        self.driver = ArmDriver(
            self.arm,
            ControllerNames(topics.arm_controller_name(arm_name), topics.gripper_controller_name(arm_name)),
        )
        self.ip = p.robot_ip or self.settings.robot_ip
        self._names = [*self.settings.joint_names, self.driver.gripper_joint]
        self._log_limit = RepeatLimiter()
        self._running = True
        self._contact = threading.Event()
        self._contact_detail = "not connected yet"

        self.joint_pub = self.create_publisher(JointState, topics.JOINT_STATES, STATE_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, STATE_QOS)
        self.status_pubs = {
            c.name: self.create_publisher(TrajectoryStatus, topics.trajectory_status(c.name), REPORT_QOS)
            for c in (self.driver.joints, self.driver.gripper)
        }
        commands = MutuallyExclusiveCallbackGroup()  # trajectories and leases in arrival order
        self.create_subscription(
            JointTrajectory, topics.arm_controller(arm_name), self._on_arm, 10, callback_group=commands
        )
        self.create_subscription(
            JointTrajectory, topics.gripper_controller(arm_name), self._on_gripper, 10, callback_group=commands
        )
        self.create_subscription(TrajectoryLease, topics.MOTION_LEASE, self._on_lease, 10, callback_group=commands)
        services = MutuallyExclusiveCallbackGroup()  # never behind a trajectory's check
        self.create_service(Trigger, ESTOP, self._on_estop, callback_group=services)
        self.create_service(Trigger, RELEASE, self._on_release, callback_group=services)

        self._connect()
        self._threads = [
            threading.Thread(target=self._state_loop, name="joint_states", daemon=True),
            threading.Thread(target=self._control_loop, name="control", daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        self.get_logger().info(
            f"FR3 at {self.ip} ({self.settings.realtime_config} real-time, dynamics factor "
            f"{self.settings.relative_dynamics_factor:g}): joint states at {self.settings.state_rate_hz:g} Hz, "
            f"controllers {', '.join(self.status_pubs)}"
        )

    # -- connection -----------------------------------------------------------------------------------------------
    def _connect(self) -> bool:
        try:
            self.arm.connect(self.ip)
        except HardwareError as exc:
            self._contact_detail = str(exc)
            self.get_logger().error(f"{exc}; trying again every {self.params.reconnect_period_s:g} s")
            return False
        self._contact_detail = ""
        self._contact.set()
        return True

    def _lost(self, why: str) -> None:
        if not self._contact.is_set():
            return
        self._contact.clear()
        self._contact_detail = why
        self.driver.lose_contact(why)
        self.get_logger().error(f"{why}: trajectories stopped; reconnecting every {self.params.reconnect_period_s:g} s")
        self._publish_diagnostics()

    # -- threads --------------------------------------------------------------------------------------------------
    def _state_loop(self) -> None:
        """/joint_states at the configured rate while the robot answers; reconnect attempts while it does not."""
        period = 1.0 / self.settings.state_rate_hz
        gripper_every = max(1, round(self.settings.state_rate_hz / self.params.gripper_rate_hz))
        next_t, n = time.monotonic(), 0
        while self._running:
            if not self._contact.is_set():
                time.sleep(self.params.reconnect_period_s)
                if self._running and self._connect():
                    self.get_logger().info(f"contact with the FR3 at {self.ip} restored: serving again")
                    self._publish_diagnostics()
                next_t = time.monotonic()
                continue
            try:
                reading = self.driver.read_joints()
                if n % gripper_every == 0:
                    self.driver.refresh_gripper()
            except HardwareError as exc:
                self._lost(str(exc))
                continue
            n += 1
            width = self.driver.gripper_width_m()
            finger = [] if width is None else [width / 2.0]
            msg = JointState(
                header=convert.header(time.time(), ""),
                name=self._names if finger else list(self.settings.joint_names),
                position=[*reading.positions_rad, *finger],
                velocity=[*reading.velocities_rad_s, *([0.0] if finger else [])],
                effort=[*reading.efforts_nm, *([0.0] if finger else [])],
            )
            self.joint_pub.publish(msg)
            next_t += period
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -5 * period:  # far behind (a loaded machine): keep the period, drop the backlog
                next_t = time.monotonic()

    def _control_loop(self) -> None:
        """The controllers' tick (the robot config's control period): books, lease lapses, reports."""
        dt = self.driver.dt_s
        status_period = 1.0 / self.params.status_rate_hz
        next_t, next_status = time.monotonic(), 0.0
        while self._running:
            try:
                reports = self.driver.tick()
                if time.monotonic() >= next_status:
                    next_status = time.monotonic() + status_period
                    reports += [r for r in self.driver.status_reports() if r.holding]
                    self._publish_diagnostics()
                    self._log_repeats()
                for report in reports:
                    self._publish_report(report)
            except Exception as exc:  # the loop is the robot's controller: log and go on
                if not self.context.ok():
                    return
                self.get_logger().error(f"control tick failed: {type(exc).__name__}: {exc}")
            next_t += dt
            delay = next_t - time.monotonic()
            if delay > 0:
                time.sleep(delay)
            elif delay < -5 * dt:
                next_t = time.monotonic()

    # -- commands -------------------------------------------------------------------------------------------------
    def _on_arm(self, msg: JointTrajectory) -> None:
        self._submit("arm", msg)

    def _on_gripper(self, msg: JointTrajectory) -> None:
        self._submit("gripper", msg)

    def _submit(self, kind: str, msg: JointTrajectory) -> None:
        controller = self.driver.joints if kind == "arm" else self.driver.gripper
        try:
            start_s = convert.seconds(msg.header.stamp)
            controller.check_sizes(msg.joint_names, len(msg.points), self.driver.dt_s, start_s)
            cmd = convert.trajectory_command(msg)
            if kind == "arm":
                self.driver.submit_arm(cmd)
            else:
                self.driver.submit_gripper(cmd)
        except InvalidCommandError as exc:
            what = f"{self.settings.arm} {kind}"
            line = self._log_limit.message((what, str(exc)[:60]), f"{what} trajectory refused, nothing sent: {exc}")
            if line is not None:
                self.get_logger().error(line)
        finally:
            reports = controller.take_reports()
            if controller.playing:  # accepted: say so now, not at the next tick (the commander checks it started)
                reports.append(controller.status())
            for report in reports:
                self._publish_report(report)

    def _on_lease(self, msg: TrajectoryLease) -> None:
        self.driver.renew(Lease(convert.seconds(msg.start), convert.seconds(msg.sent), msg.timeout_s))

    def _on_estop(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        self.driver.estop(f"{ESTOP} called")
        self.get_logger().warning(f"e-stop: the arm is stopped; trajectories are refused until {RELEASE}")
        response.success, response.message = True, f"stopped; call {RELEASE} to move again"
        return response

    def _on_release(self, request: Trigger.Request, response: Trigger.Response) -> Trigger.Response:
        try:
            self.driver.release()
        except HardwareError as exc:
            response.success, response.message = False, str(exc)
            return response
        self.get_logger().info("e-stop released and errors cleared: trajectories are accepted again")
        response.success, response.message = True, "released"
        return response

    # -- publishing -----------------------------------------------------------------------------------------------
    def _publish_report(self, report: TrajectoryReport) -> None:
        self.status_pubs[report.controller].publish(
            TrajectoryStatus(
                header=convert.header(time.time(), ""), controller=report.controller,
                start=convert.time_msg(report.start_s), state=int(report.state), points_played=report.points_played,
                points=report.points, holding=report.holding, reason=report.reason,
            )
        )  # fmt: skip

    def _publish_diagnostics(self) -> None:
        contact = self._contact.is_set()
        status = self.arm.status
        latency = self.driver.latency
        values = [
            KeyValue(key="robot_ip", value=self.ip),
            KeyValue(key="arm_status", value=status.status),
            KeyValue(key="estop", value=self.driver.estopped or "released"),
        ]
        if latency is not None:
            values += [
                KeyValue(key="received_to_sdk_ms", value=f"{latency.received_to_sdk_ms:.3f}"),
                KeyValue(key="stamp_to_sdk_ms", value=f"{latency.stamp_to_sdk_ms:.3f}"),
            ]
        if not contact:
            level, message = DiagnosticStatus.ERROR, f"lost contact: {self._contact_detail}"
        elif self.driver.estopped or status.status in ("error", "watchdog"):
            level, message = DiagnosticStatus.WARN, self.driver.estopped or status.detail
        else:
            level, message = DiagnosticStatus.OK, status.status
        self.diagnostics_pub.publish(
            DiagnosticArray(
                header=convert.header(time.time(), ""),
                status=[
                    DiagnosticStatus(
                        level=level, name=f"{NODE_NAME}: {self.settings.arm}", message=message,
                        hardware_id=f"fr3@{self.ip}", values=values,
                    )
                ],
            )
        )  # fmt: skip

    def _log_repeats(self) -> None:
        for key, decision in self._log_limit.due():
            what = key[0] if isinstance(key, tuple) else key
            self.get_logger().error(
                f"{what}: {decision.suppressed} more trajectories refused in the last {decision.since_s:.1f} s "
                "(each with its reason on the controller's trajectory_status topic)"
            )

    def close(self) -> None:
        """Stop the arm (it holds where it stops), then the threads and the connection."""
        self.driver.stop("the driver is shutting down")
        self._running = False
        for thread in self._threads:
            thread.join(timeout=5.0)
        self.driver.close()
        self.arm.close()


def main() -> int:
    # One executor thread: rclpy's multi-threaded executor busy-waited at 90 % of a core here (a message waiting
    # for a busy callback group); an e-stop then waits at most behind one trajectory's check (milliseconds).
    return run_node(Fr3DriverNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
