"""Isaac Sim on the graph in the simulator node's place: its articulation driven like a real arm's driver drives one.

Isaac Sim (scripts/isaac_sim_robodojo.py) publishes its joint states on /isaac/joint_states and follows position
targets on /isaac/joint_command. This node is the robot's driver over that bridge
(:mod:`robodojo.hardware.isaac`, inside :mod:`robodojo.nodes.arm_driver_node`'s framework): it republishes the arms'
joints on /joint_states, follows ``/<arm>_arm_controller/joint_trajectory`` and ``/<arm>_gripper_controller/
joint_trajectory`` and reports on their ``trajectory_status`` topics exactly as ``sim_node`` and the arm drivers do
(leases on /motion/lease, refusals before a single target is sent, points played), and sends Isaac one position
target for every joint (arms, grippers and the fingers that mimic them) per control tick; with nothing playing it
sends the held position. ``/hardware/estop`` and ``/hardware/release``, /diagnostics and lost contact (Isaac silent
for the config's ``contact.timeout_s``: paused, frozen or gone) are the arm drivers'.

Time: Isaac publishes /clock and stamps its joint states with the same simulation time. The control tick follows
those stamps (one tick each time they cross a multiple of the control period), and every stamp this node publishes
(/joint_states, trajectory_status, /diagnostics) is that time, so the motion server's trajectory stamps (taken from
/joint_states) and this node's playing agree however fast Isaac runs. The node reads no ROS clock, so use_sim_time
changes nothing in it; launch sets it true for the whole graph under sim:=isaac, as for sim:=mujoco. Leases are judged
on the system clock (TrajectoryLease.msg), and contact on this process's monotonic clock: a paused simulation is
noticed although its time stands still.
"""

from __future__ import annotations

import sys

from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from robodojo.hardware.arm_service import DrivenArm, ServiceRates, driven_arm
from robodojo.hardware.isaac import IsaacArm, IsaacArticulation
from robodojo.hardware.settings import load_isaac_settings
from robodojo.log_limits import RepeatLimiter
from robodojo.nodes import convert, topics
from robodojo.nodes.arm_driver_node import ArmDriverNode
from robodojo.nodes.parameters import IsaacBridgeParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import run_node

NODE_NAME = "isaac_bridge_node"
# Best effort matches Isaac's publisher whatever QoS its graph node was given; the depth absorbs a burst.
ISAAC_STATE_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)
# Reliable: every tick's targets reach the articulation controller (a reliable writer also serves best-effort readers).
COMMAND_QOS = QoSProfile(depth=10, reliability=ReliabilityPolicy.RELIABLE)


class IsaacBridgeNode(ArmDriverNode):
    """Every arm of Isaac Sim's articulation as a driven arm; ticks on Isaac's simulation time."""

    wall_clock_loops = False

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        p = declare_parameters(self, IsaacBridgeParams)
        self.params = p
        self.settings = load_isaac_settings(p.robot, p.isaac_config or None)
        self.articulation = IsaacArticulation(self.settings)
        self._bad_states = RepeatLimiter()
        self.command_pub = self.create_publisher(JointState, topics.ISAAC_JOINT_COMMAND, COMMAND_QOS)
        arms = [
            driven_arm(
                name,
                self.articulation.arm(name),
                f"isaac_sim:{name}",
                topics.controller_names(name),
                clock=self.articulation.now_s,
            )
            for name in self.settings.robot.arm_names
        ]
        check_hz = self.settings.arms[0].state_rate_hz
        self.start(arms, ServiceRates(check_hz, p.status_rate_hz, check_hz, p.reconnect_period_s))
        self.create_subscription(JointState, topics.ISAAC_JOINT_STATES, self._on_isaac_state, ISAAC_STATE_QOS)
        self.get_logger().info(
            f"{self.settings.robot.name} in Isaac Sim: {topics.ISAAC_JOINT_STATES} -> {topics.JOINT_STATES}, "
            f"controllers {', '.join(self.status_pubs)} -> {topics.ISAAC_JOINT_COMMAND} at "
            f"{self.settings.robot.control_hz:g} Hz of simulation time"
        )

    # -- ArmDriverNode's hooks ------------------------------------------------------------------------------------
    def stamp_s(self) -> float:
        """Isaac's simulation time (its latest joint state's stamp)."""
        return self.articulation.now_s()

    def connect_arm(self, arm: DrivenArm) -> None:
        arm.adapter.connect()

    def finger_position_m(self, arm: DrivenArm) -> float | None:
        """The gripper joint as Isaac reports it, live (a real gripper's width is read only between its moves)."""
        assert isinstance(arm.adapter, IsaacArm)
        return arm.adapter.finger_position_m()

    def diagnostic_values(self, arm: DrivenArm) -> dict[str, object]:
        assert isinstance(arm.adapter, IsaacArm)
        age = self.articulation.age_s()
        return {
            "simulation_time_s": f"{self.articulation.now_s():.3f}",
            "joint_state_age_s": "never" if age == float("inf") else f"{age:.3f}",
            "trajectories_played": arm.adapter.sent_trajectories,
            "control_ticks_commanded": self.articulation.commanded_ticks,
            "control_ticks_skipped": self.articulation.skipped_ticks,
        }

    # -- Isaac's side ---------------------------------------------------------------------------------------------
    def _on_isaac_state(self, msg: JointState) -> None:
        """Each joint state: republish the arms' joints; on a control tick, tick the controllers and send Isaac the
        targets for every joint."""
        stamp_s = convert.seconds(msg.header.stamp)
        try:
            ticks = self.articulation.update(msg.name, msg.position, msg.velocity, msg.effort, stamp_s)
        except ValueError as exc:  # names and positions of different lengths
            line = self._bad_states.message("joint state", f"dropped a joint state from Isaac Sim: {exc}")
            if line is not None:
                self.get_logger().error(line)
            return
        self.publish_joint_states(refresh_gripper=True)
        if not ticks:
            return
        if self.service is not None:  # started in __init__; None only before
            self.service.control_tick()
        names, positions = self.articulation.command(ticks)
        if names:
            self.command_pub.publish(JointState(header=convert.header(stamp_s, ""), name=names, position=positions))


def main() -> int:
    # One executor thread, as the arm drivers: Isaac's joint states, trajectories and leases in arrival order.
    return run_node(IsaacBridgeNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
