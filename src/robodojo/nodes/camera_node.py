"""A real camera in the graph: the driver's frames republished with calibration and the optical frame's world pose.

Subscribes the driver's ``input_topic``: sensor_msgs/Image in any encoding robodojo.perception.image_formats takes
(``input_transport: raw``) or sensor_msgs/CompressedImage in JPEG or PNG (``compressed``), at any size. Per frame it
publishes on /cameras/<camera>/: ``pose`` (PoseStamped of the URDF optical frame in the world), ``camera_info`` and
``image_raw`` (rgb8), all with the driver's stamp and the optical frame as frame_id. Intrinsics come from the
calibration file or from the driver's CameraInfo (``intrinsics``), scaled to the frame's size, and optionally the
frame is resized for the agent (``output_width`` x ``output_height``) with K scaled exactly (perception.camera_stream).

A fixed camera's pose comes from its file; a wrist camera's is the arm's TCP pose from /joint_states composed with the
file's hand-eye transform, the arm's joint state being the one nearest the frame's stamp (ArmStateHistory). A wrist
camera's frames are dropped while the arm state is missing or older than ``joint_state_timeout_s`` (wall clock), or
when no joint state lies within ``max_frame_lag_s`` of the frame's stamp. Every dropped frame (bad data, unknown
encoding, another aspect ratio, no CameraInfo, stale pose) is counted on /diagnostics by reason and logged once per
reason every few seconds; nothing a driver sends stops the node.
"""

from __future__ import annotations

import math
import sys
import time
from typing import Any

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from numpy.typing import NDArray
from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState

from robodojo.errors import ConfigError
from robodojo.geometry import transform
from robodojo.nodes import convert, topics
from robodojo.nodes.camera_topics import CameraTopics
from robodojo.nodes.parameters import CameraNodeParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import GraphNode, run_node
from robodojo.perception.camera_stream import ArmStateHistory, CameraStream, StreamSettings, check_output_aspect
from robodojo.perception.distortion import Distortion
from robodojo.perception.frame_intrinsics import Intrinsics
from robodojo.perception.image_formats import FrameError
from robodojo.perception.mounted_camera import load_mounted_camera
from robodojo.robots.config import load_robot_config
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.joint_state import JointPositions

NODE_NAME = "camera_node"
TRANSPORTS = {"raw": Image, "compressed": CompressedImage}
# Best effort matches reliable and best-effort publishers alike (drivers differ).
JOINT_STATE_QOS = QoSProfile(depth=50, reliability=ReliabilityPolicy.BEST_EFFORT)
RELIABLE_INPUT_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)  # qos_profile_sensor_data's depth
# CameraInfo: best effort matches every driver; realsense2_camera and usb_cam publish it reliably, some best effort.
CAMERA_INFO_QOS = QoSProfile(depth=5, reliability=ReliabilityPolicy.BEST_EFFORT)


def camera_info_topic_of(image_topic: str, transport: str) -> str:
    """image_transport's CameraInfo topic for an image topic: ``camera_info`` beside the base topic
    (/camera/color/image_raw and /camera/color/image_raw/compressed -> /camera/color/camera_info)."""
    base = image_topic.rstrip("/")
    if transport == "compressed" and base.endswith("/compressed"):
        base = base[: -len("/compressed")]
    head, _, _ = base.rpartition("/")
    return f"{head}/camera_info" if head or base.startswith("/") else "camera_info"


class CameraNode(GraphNode):
    """Republishes one camera's frames with its CameraInfo and optical-frame pose."""

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        params = declare_parameters(self, CameraNodeParams)
        if params.input_transport not in TRANSPORTS:
            raise ConfigError(
                f"parameter 'input_transport' is {params.input_transport!r}; choose one of: {', '.join(TRANSPORTS)}"
            )
        self.robot = load_robot_config(params.robot)
        self.camera = load_mounted_camera(self.robot, params.camera, params.calibration_file)
        self.timeout_s = params.joint_state_timeout_s
        model = self.camera.file.model
        file_intrinsics = Intrinsics(
            model.K, Distortion(model.distortion_model, tuple(model.distortion)), model.width, model.height
        )
        settings = StreamSettings(
            intrinsics=params.intrinsics, output_width=params.output_width, output_height=params.output_height,
            max_frame_lag_s=params.max_frame_lag_s,
        )  # fmt: skip
        check_output_aspect(file_intrinsics, settings)
        self.stream = CameraStream(file_intrinsics, settings)
        name = self.camera.name
        self.out = CameraTopics(self, name, self.camera.frame, 10)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, 10)
        self.kinematics: ArmKinematics | None = None
        self.joints: JointPositions | None = None
        self.history: ArmStateHistory | None = None
        self.max_frame_lag_s = params.max_frame_lag_s
        if self.camera.arm is not None:
            self.kinematics = ArmKinematics(self.robot)
            self.joints = JointPositions(self.robot, self._model_joints())
            self.history = ArmStateHistory(self.camera.arm)
            self.create_subscription(JointState, topics.JOINT_STATES, self._on_joint_state, JOINT_STATE_QOS)
        input_qos = RELIABLE_INPUT_QOS if params.input_reliable else qos_profile_sensor_data
        kind = TRANSPORTS[params.input_transport]
        self.decode = convert.image_rgb if kind is Image else convert.compressed_rgb
        self.input = self.create_subscription(kind, params.input_topic, self._on_frame, input_qos)
        if self.input.topic_name == self.out.image.topic_name:
            # the node would feed its own output back to itself
            raise ConfigError(f"parameter 'input_topic' resolves to the output topic {self.out.image.topic_name}")
        source = "the calibration file"
        if params.intrinsics == "driver":
            info_topic = params.camera_info_topic or camera_info_topic_of(params.input_topic, params.input_transport)
            sub = self.create_subscription(CameraInfo, info_topic, self._on_camera_info, CAMERA_INFO_QOS)
            source = f"the driver's CameraInfo on {sub.topic_name}"
        self.create_timer(params.diagnostics_period_s, self._publish_diagnostics)
        mount = f"on arm {self.camera.arm!r}" if self.camera.arm else "fixed"
        size = settings.output_size
        self.get_logger().info(
            f"camera {name} ({mount}, frame {self.camera.frame}, calibration {self.camera.path}): "
            f"{self.input.topic_name} ({params.input_transport}) -> /cameras/{name}/, intrinsics from {source}, "
            + (f"resized to {size[0]}x{size[1]}" if size else "at the driver's size")
        )

    def _model_joints(self) -> list[str]:
        m = self.kinematics.model  # type: ignore[union-attr]
        return [m.joint(i).name for i in range(m.njnt)]

    def _on_joint_state(self, msg: JointState) -> None:
        update = self.joints.update(msg.name, msg.position, time.monotonic())  # type: ignore[union-attr]
        if update.error:
            self.get_logger().warn(f"dropped a joint state: {update.error}", throttle_duration_sec=5.0)
        arm = self.camera.arm
        if arm is not None and arm in update.arms:
            q = self.joints.arm_q(arm)  # type: ignore[union-attr]
            if q is not None:
                self.history.add(convert.seconds(msg.header.stamp), q)  # type: ignore[union-attr]

    def _on_camera_info(self, msg: CameraInfo) -> None:
        try:
            self.stream.set_driver_info(convert.driver_intrinsics(msg))
        except FrameError as exc:
            self.stream.set_driver_info(exc)

    def _on_frame(self, msg: Any) -> None:
        self.stream.received()
        try:
            self._republish(msg)
        except FrameError as exc:
            if self.stream.dropped(exc, time.monotonic()):
                self.get_logger().warn(f"dropped a frame ({exc.kind}): {exc}")

    def _republish(self, msg: Any) -> None:
        cam = self.camera
        T_world_tcp = None
        if cam.arm is not None:
            T_world_tcp = self._tcp_pose(cam.arm, convert.seconds(msg.header.stamp))
        frame = self.stream.frame(self.decode(msg))
        t_s = convert.seconds(msg.header.stamp)
        self.out.publish(frame.rgb, frame.calibration(cam.T_world_cam(T_world_tcp)), t_s, msg.header.stamp)
        self.stream.published()

    def _tcp_pose(self, arm: str, frame_stamp_s: float) -> NDArray[np.float64]:
        """The arm's TCP pose at a frame's stamp ``frame_stamp_s``; FrameError when it is unknown or stale."""
        age = self.joints.arm_age_s(arm, time.monotonic())  # type: ignore[union-attr]
        if math.isinf(age):
            raise FrameError("missing", f"no joint state yet for arm {arm!r}; its pose is unknown")
        if age > self.timeout_s:
            raise FrameError("stale", f"joint state of arm {arm!r} {age:.2f} s old (limit {self.timeout_s} s)")
        q = self.history.at(frame_stamp_s, self.max_frame_lag_s)  # type: ignore[union-attr]
        pos, R = self.kinematics.tcp_pose(arm, q)  # type: ignore[union-attr]
        return transform(R, pos)

    def _publish_diagnostics(self) -> None:
        window = self.stream.take_window()
        dropped = sum(window.dropped.values())
        if window.received == 0:
            level, message = DiagnosticStatus.WARN, f"no frames on {self.input.topic_name}"
        elif dropped:
            reasons = ", ".join(f"{n} {kind}" for kind, n in sorted(window.dropped.items()))
            level, message = DiagnosticStatus.WARN, f"dropped {dropped} of {window.received} frames ({reasons})"
        else:
            level, message = DiagnosticStatus.OK, f"{window.published} frames published"
        status = convert.diagnostic_status(
            level, f"{NODE_NAME}: {self.camera.name}", message, self.input.topic_name, dict(window.values())
        )
        self.diagnostics_pub.publish(convert.diagnostic_array(self.get_clock().now().nanoseconds * 1e-9, [status]))


def main() -> int:
    # One executor thread: the callbacks share one mutually exclusive group anyway, and rclpy's multi-threaded
    # executor busy-waits while a message waits for a busy group (two camera_nodes under 25 Hz images held 94 % of a
    # core each with it).
    return run_node(CameraNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
