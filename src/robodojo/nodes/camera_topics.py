"""One camera's output topics: its image, its CameraInfo and its optical frame's pose in the world, published together.

Pose and calibration go out first, so that a consumer holding an image can already look up both for its stamp. The
simulator node and the camera node (a driver's stream, calibrated) publish through it.
"""

from __future__ import annotations

import numpy as np
from builtin_interfaces.msg import Time
from geometry_msgs.msg import PoseStamped
from numpy.typing import NDArray
from rclpy.node import Node
from rclpy.qos import QoSProfile
from sensor_msgs.msg import CameraInfo, Image

from robodojo.nodes import convert, topics
from robodojo.observation import CameraCalibration


class CameraTopics:
    """``/cameras/<name>/{image_raw,camera_info,pose}`` for one camera (nodes.topics names them)."""

    def __init__(self, node: Node, name: str, frame_id: str, qos: QoSProfile | int) -> None:
        self.frame_id = frame_id
        self.image = node.create_publisher(Image, topics.camera_image(name), qos)
        self.info = node.create_publisher(CameraInfo, topics.camera_info(name), qos)
        self.pose = node.create_publisher(PoseStamped, topics.camera_pose(name), qos)

    @property
    def watched(self) -> bool:
        """Whether anyone subscribes to the image (rendering one costs more than a control step on a slow CPU)."""
        return self.image.get_subscription_count() > 0

    def publish_calibration(self, calibration: CameraCalibration, t_s: float, stamp: Time | None = None) -> None:
        """The pose and CameraInfo at ``t_s`` (``stamp``, when given, exactly: float seconds round nanoseconds)."""
        pose = convert.pose_stamped(calibration.T_world_cam, t_s, topics.WORLD_FRAME)
        info = convert.camera_info_msg(calibration, t_s, self.frame_id)
        for msg in (pose, info):
            if stamp is not None:
                msg.header.stamp = stamp
        self.pose.publish(pose)
        self.info.publish(info)

    def publish(
        self, rgb: NDArray[np.uint8], calibration: CameraCalibration, t_s: float, stamp: Time | None = None
    ) -> None:
        """An image with the pose and CameraInfo of its instant, those two first."""
        self.publish_calibration(calibration, t_s, stamp)
        image = convert.image_msg(rgb, t_s, self.frame_id)
        if stamp is not None:
            image.header.stamp = stamp
        self.image.publish(image)
