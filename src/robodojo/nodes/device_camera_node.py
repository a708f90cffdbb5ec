"""A camera driver for labs without a ROS one: a V4L2 device, a GStreamer pipeline, an RTSP URL or a video file read
through OpenCV (robodojo.hardware.video_capture), published as a driver publishes it, so camera_node takes it.

Publishes ``output_topic`` (default /<camera>/image_raw: sensor_msgs/Image, rgb8) and ``camera_info`` beside it
(the calibration file's intrinsics scaled to the published size), both stamped at capture with the node's clock and
the camera's optical frame as frame_id; reliable QoS, which camera_node's best-effort and reliable subscriptions both
match. A source that fails or ends is reopened with a backoff (``end_of_stream``); frames, failures and reconnects
are counted on /diagnostics.
"""

from __future__ import annotations

import sys

import numpy as np
from diagnostic_msgs.msg import DiagnosticArray, DiagnosticStatus
from numpy.typing import NDArray
from rclpy.qos import QoSProfile, ReliabilityPolicy
from sensor_msgs.msg import CameraInfo, Image

from robodojo.errors import ConfigError
from robodojo.hardware.video_capture import CaptureSettings, CaptureStats, DeviceCapture, parse_source
from robodojo.nodes import convert, topics
from robodojo.nodes.camera_node import camera_info_topic_of
from robodojo.nodes.parameters import DeviceCameraParams
from robodojo.nodes.params import declare_parameters
from robodojo.nodes.runtime import GraphNode, run_node
from robodojo.observation import CameraCalibration
from robodojo.perception.distortion import Distortion
from robodojo.perception.frame_intrinsics import Intrinsics
from robodojo.perception.image_formats import FrameError
from robodojo.perception.mounted_camera import load_mounted_camera
from robodojo.robots.config import load_robot_config

NODE_NAME = "device_camera_node"
#: Reliable, as usb_cam publishes: matched by best-effort and reliable subscribers alike; two frames queued at most.
OUTPUT_QOS = QoSProfile(depth=2, reliability=ReliabilityPolicy.RELIABLE)


class DeviceCameraNode(GraphNode):
    """Captures one device and publishes its frames with CameraInfo (module docstring)."""

    def __init__(self) -> None:
        super().__init__(NODE_NAME)
        params = declare_parameters(self, DeviceCameraParams)
        robot = load_robot_config(params.robot)
        camera = load_mounted_camera(robot, params.camera, params.calibration_file)
        self.frame_id = camera.frame
        model = camera.file.model
        self.intrinsics = Intrinsics(
            model.K, Distortion(model.distortion_model, tuple(model.distortion)), model.width, model.height
        )
        settings = CaptureSettings(
            rate_hz=params.rate_hz, width=params.width, height=params.height, end_of_stream=params.end_of_stream,
            reconnect_min_s=params.reconnect_min_s, reconnect_max_s=params.reconnect_max_s,
        )  # fmt: skip
        if settings.width:
            try:
                self.intrinsics.scaled_to(settings.width, settings.height, source=str(camera.path))
            except FrameError as exc:
                raise ConfigError(f"width x height: {exc}") from None
        source = parse_source(params.source)
        image_topic = params.output_topic or f"/{camera.name}/image_raw"
        self.image_pub = self.create_publisher(Image, image_topic, OUTPUT_QOS)
        self.info_pub = self.create_publisher(CameraInfo, camera_info_topic_of(image_topic, "raw"), OUTPUT_QOS)
        self.diagnostics_pub = self.create_publisher(DiagnosticArray, topics.DIAGNOSTICS, 10)
        self.source_text = source.text
        self._stats0 = CaptureStats()
        self._info_warned = False
        self.capture = DeviceCapture(
            source, settings, self._publish, clock=self._now_s, log=lambda line: self.get_logger().warn(line)
        )
        self.create_timer(params.diagnostics_period_s, self._publish_diagnostics)
        size = f"{settings.width}x{settings.height}" if settings.width else "the source's size"
        self.get_logger().info(
            f"{source.kind} source {source.text!r} at {settings.rate_hz:g} Hz, {size} -> {self.image_pub.topic_name} "
            f"and {self.info_pub.topic_name} (calibration {camera.path}, end of stream: {settings.end_of_stream})"
        )
        self.capture.start()

    def _now_s(self) -> float:
        return self.get_clock().now().nanoseconds * 1e-9

    def _publish(self, rgb: NDArray[np.uint8], stamp_s: float) -> None:
        """Called from the capture thread: the frame and its CameraInfo, stamped at capture."""
        h, w = rgb.shape[:2]
        stamp = convert.time_msg(stamp_s)
        try:
            intr = self.intrinsics.scaled_to(w, h, source="the calibration file")
        except FrameError as exc:
            if not self._info_warned:  # the source's own size has another aspect: say it once, publish images
                self._info_warned = True
                self.get_logger().warn(f"no CameraInfo published: {exc}")
        else:
            info = convert.camera_info_msg(
                CameraCalibration(
                    K=intr.K, T_world_cam=np.eye(4), width=w, height=h, distortion=intr.distortion.coefficients,
                    distortion_model=intr.distortion.model,
                ),
                stamp_s, self.frame_id,
            )  # fmt: skip
            info.header.stamp = stamp
            self.info_pub.publish(info)
        image = convert.image_msg(rgb, stamp_s, self.frame_id)
        image.header.stamp = stamp
        self.image_pub.publish(image)

    def _publish_diagnostics(self) -> None:
        stats, before = self.capture.stats, self._stats0
        self._stats0 = stats
        frames = stats.frames - before.frames
        failures = (stats.open_failures - before.open_failures) + (stats.read_failures - before.read_failures)
        if frames == 0:
            level, message = DiagnosticStatus.ERROR, f"no frames from {self.source_text!r}"
        elif failures:
            level, message = DiagnosticStatus.WARN, f"{frames} frames, {failures} failures"
        else:
            level, message = DiagnosticStatus.OK, f"{frames} frames"
        fields = ("frames", "opens", "open_failures", "read_failures", "ends", "callback_errors")
        values = {f: getattr(stats, f) - getattr(before, f) for f in fields}
        values.update({f"total_{f}": getattr(stats, f) for f in ("frames", "opens", "ends")})
        status = convert.diagnostic_status(level, f"{NODE_NAME}: {self.frame_id}", message, self.source_text, values)
        self.diagnostics_pub.publish(convert.diagnostic_array(self._now_s(), [status]))

    def close(self) -> None:
        if not self.capture.stop():
            self.get_logger().warn("the capture thread is still in a read; leaving it to end with the process")


def main() -> int:
    return run_node(DeviceCameraNode, NODE_NAME, threads=1)


if __name__ == "__main__":
    sys.exit(main())
