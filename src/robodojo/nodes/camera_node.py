"""A real camera in the graph: the driver's images republished with calibration and the optical frame's world pose.

Subscribes the driver's sensor_msgs/Image (``input_topic``, rgb8 or bgr8; remap it to the driver's topic) and, per
frame, publishes on /cameras/<camera>/: ``pose`` (PoseStamped of the URDF optical frame in the world), ``camera_info``
(from the calibration file) and ``image_raw`` (rgb8), all with the driver's stamp and the optical frame as frame_id.
A fixed camera's pose comes from its file; a wrist camera's is the arm's TCP pose from /joint_states composed with the
file's hand-eye transform, and its frames are dropped while the arm state is missing or older than
``joint_state_timeout_s``. Frames the calibration does not describe (other sizes, encodings) are dropped with a warning.
"""

from __future__ import annotations

import math
import sys
import time

from geometry_msgs.msg import PoseStamped
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, Image, JointState

from robodojo.errors import ConfigError, InvalidCommandError
from robodojo.geometry import transform
from robodojo.nodes import convert, topics
from robodojo.nodes.parameters import CameraNodeParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import GraphNode, run_node
from robodojo.perception.mounted_camera import load_mounted_camera
from robodojo.robots.config import load_robot_config
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.joint_state import JointPositions

NODE_NAME = "camera_node"
WARN_PERIOD_S = 5.0
# Best effort matches reliable and best-effort publishers alike (drivers differ).
JOINT_STATE_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)
RELIABLE_INPUT_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)  # qos_profile_sensor_data's depth


class CameraNode(GraphNode):
    """Republishes one camera's frames with its CameraInfo and optical-frame pose."""

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        params = declare_parameters(self, CameraNodeParams)
        self.robot = load_robot_config(params.robot)
        self.camera = load_mounted_camera(self.robot, params.camera, params.calibration_file)
        self.timeout_s = params.joint_state_timeout_s
        name = self.camera.name
        self.image_pub = self.create_publisher(Image, topics.camera_image(name), 10)
        self.info_pub = self.create_publisher(CameraInfo, topics.camera_info(name), 10)
        self.pose_pub = self.create_publisher(PoseStamped, topics.camera_pose(name), 10)
        self._warned: dict[str, float] = {}
        self.kinematics: ArmKinematics | None = None
        self.joints: JointPositions | None = None
        if self.camera.arm is not None:
            self.kinematics = ArmKinematics(self.robot)
            self.joints = JointPositions(self.robot, self._model_joints())
            self.create_subscription(JointState, topics.JOINT_STATES, self._on_joint_state, JOINT_STATE_QOS)
        input_qos = RELIABLE_INPUT_QOS if params.input_reliable else qos_profile_sensor_data
        self.input = self.create_subscription(Image, params.input_topic, self._on_image, input_qos)
        if self.input.topic_name == self.image_pub.topic_name:
            # the node would feed its own output back to itself
            raise ConfigError(f"parameter 'input_topic' resolves to the output topic {self.image_pub.topic_name}")
        mount = f"on arm {self.camera.arm!r}" if self.camera.arm else "fixed"
        self.get_logger().info(
            f"camera {name} ({mount}, {self.camera.width}x{self.camera.height}, frame {self.camera.frame}, "
            f"calibration {self.camera.path}): {self.input.topic_name} -> /cameras/{name}/"
        )

    def _model_joints(self) -> list[str]:
        m = self.kinematics.model  # type: ignore[union-attr]
        return [m.joint(i).name for i in range(m.njnt)]

    def _on_joint_state(self, msg: JointState) -> None:
        update = self.joints.update(msg.name, msg.position, time.monotonic())  # type: ignore[union-attr]
        if update.error:
            self.get_logger().warn(f"dropped a joint state: {update.error}", throttle_duration_sec=WARN_PERIOD_S)

    def _drop(self, kind: str, reason: str) -> None:
        """Warn about a dropped frame, at most every WARN_PERIOD_S per ``kind``.

        rclpy throttles per call site, which would let one persistent reason hide a new one.
        """
        now = time.monotonic()
        if now - self._warned.get(kind, -math.inf) >= WARN_PERIOD_S:
            self._warned[kind] = now
            self.get_logger().warn(f"dropped a frame: {reason}")

    def _on_image(self, msg: Image) -> None:
        cam = self.camera
        if (msg.width, msg.height) != (cam.width, cam.height):
            self._drop("size", f"{msg.width}x{msg.height} image, but {cam.path} calibrates {cam.width}x{cam.height}")
            return
        try:
            rgb = convert.image_rgb(msg)
        except InvalidCommandError as exc:
            self._drop("encoding", str(exc))
            return
        T_world_tcp = None
        if cam.arm is not None:
            age = self.joints.arm_age_s(cam.arm, time.monotonic())  # type: ignore[union-attr]
            if age > self.timeout_s:
                if math.isinf(age):
                    self._drop("missing", f"no joint state yet for arm {cam.arm!r}; its pose is unknown")
                else:
                    self._drop("stale", f"joint state of arm {cam.arm!r} {age:.2f} s old (limit {self.timeout_s} s)")
                return
            pos, R = self.kinematics.tcp_pose(cam.arm, self.joints.arm_q(cam.arm))  # type: ignore[union-attr,arg-type]
            T_world_tcp = transform(R, pos)
        t_s, stamp = convert.seconds(msg.header.stamp), msg.header.stamp
        pose = convert.pose_stamped(cam.T_world_cam(T_world_tcp), t_s, topics.WORLD_FRAME)
        info = convert.camera_info_msg(cam.calibration(T_world_tcp), t_s, cam.frame)
        image = convert.image_msg(rgb, t_s, cam.frame)
        for out in (pose, info, image):
            out.header.stamp = stamp  # exact: the float seconds above would round nanoseconds
        # Pose and calibration first, so a consumer holding the image can already look up both for its stamp.
        self.pose_pub.publish(pose)
        self.info_pub.publish(info)
        self.image_pub.publish(image)


def main() -> int:
    # One executor thread: the callbacks share one mutually exclusive group anyway, and rclpy's multi-threaded
    # executor busy-waits while a message waits for a busy group (two camera_nodes under 25 Hz images held 94 % of a
    # core each with it).
    return run_node(CameraNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
