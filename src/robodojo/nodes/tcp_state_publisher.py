"""Grasp-point (TCP) poses from /joint_states, for any backend that publishes joint states (real arms, Isaac Sim).

Subscribes /joint_states (any subset of joints per message) and publishes, for each arm the message touched and whose
joints are all known, geometry_msgs/PoseStamped of the TCP in the world frame on /<arm>/tcp_pose, stamped with the
joint state's stamp, at most ``max_rate_hz`` per arm. Forward kinematics runs on the MuJoCo model built from the URDF
(ArmKinematics), the same model the simulator and the IK use. Bad messages are dropped with a throttled warning.
"""

from __future__ import annotations

import math
import sys
import time

from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import JointState

from robodojo.geometry import transform
from robodojo.nodes import convert, topics
from robodojo.nodes.parameters import TcpStatePublisherParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import GraphNode, run_node
from robodojo.robots.config import load_robot_config
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.joint_state import JointPositions

NODE_NAME = "tcp_state_publisher"
WARN_PERIOD_S = 5.0
# Best effort matches reliable and best-effort publishers alike; the depth absorbs bursts of per-arm messages.
JOINT_STATE_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)


class TcpStatePublisher(GraphNode):
    """Publishes each arm's TCP pose whenever a joint state for that arm arrives (rate-limited)."""

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        params = declare_parameters(self, TcpStatePublisherParams)
        self.robot = load_robot_config(params.robot)
        self.min_period_s = 1.0 / params.max_rate_hz
        self.kinematics = ArmKinematics(self.robot)
        m = self.kinematics.model
        self.joints = JointPositions(self.robot, (m.joint(i).name for i in range(m.njnt)))
        self.last_publish_s = {arm: -math.inf for arm in self.robot.arm_names}
        self.pose_publishers = {
            arm: self.create_publisher(PoseStamped, topics.tcp_pose(arm), 10) for arm in self.robot.arm_names
        }
        self.create_subscription(JointState, topics.JOINT_STATES, self._on_joint_state, JOINT_STATE_QOS)
        self.get_logger().info(
            f"robot {self.robot.name}: publishing {', '.join(topics.tcp_pose(a) for a in self.robot.arm_names)}"
        )

    def _on_joint_state(self, msg: JointState) -> None:
        now = time.monotonic()
        update = self.joints.update(msg.name, msg.position, now)
        if update.error:
            self.get_logger().warn(f"dropped a joint state: {update.error}", throttle_duration_sec=WARN_PERIOD_S)
            return
        if update.unknown:
            self.get_logger().warn(
                f"ignoring joints not in robot {self.robot.name!r}: {', '.join(update.unknown)}",
                throttle_duration_sec=WARN_PERIOD_S,
            )
        for arm in update.arms:
            q = self.joints.arm_q(arm)
            if q is None or now - self.last_publish_s[arm] < self.min_period_s:
                continue
            self.last_publish_s[arm] = now
            pos, R = self.kinematics.tcp_pose(arm, q)
            out = convert.pose_stamped(transform(R, pos), convert.seconds(msg.header.stamp), topics.WORLD_FRAME)
            out.header.stamp = msg.header.stamp  # exact: the float seconds above would round nanoseconds
            self.pose_publishers[arm].publish(out)


def main() -> int:
    # One executor thread: the callbacks share one mutually exclusive group anyway, and rclpy's multi-threaded
    # executor busy-waits while a message waits for a busy group (two camera_nodes under 25 Hz images held 94 % of a
    # core each with it).
    return run_node(TcpStatePublisher, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
