"""Camera-driver stand-ins on ROS 2 for the test worlds (fr3_cameras.py, x5_world.py ``--camera-drivers FILE``): NOT
the drivers, but what realsense2_camera and usb_cam publish (robodojo.perception.driver_standins), made from frames the
world renders at the stand-in's own size.

``--camera-drivers`` names a camera inputs file (config/camera_inputs/); each camera with a ``driver`` entry gets a
stand-in publishing the topics that file's camera_node reads; the others keep the world's plain /<camera>/image_raw.
As both drivers do, a topic is published only while something subscribes to it; every rendered frame counts for the
world's "ready" line, subscribed or not.

Test support: rclpy directly, not the package's node runtime.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from robodojo.perception.camera_inputs import load_camera_inputs
from robodojo.perception.driver_standins import (
    StandinProfile,
    TopicQos,
    camera_info,
    compressed_frame,
    raw_frame,
    view_K,
)


@dataclass(frozen=True)
class Standin:
    """One camera's stand-in: its profile and the K of the view rendered at the profile's size."""

    camera: str
    profile: StandinProfile
    K: np.ndarray

    def describe(self) -> str:
        p = self.profile
        topics = [p.image_topic, p.info_topic] + ([p.compressed_topic] if p.compressed_topic else [])
        return f"{self.camera}: {p.driver} stand-in {p.width}x{p.height} {p.encoding} on {', '.join(topics)}"


def load_standins(path: str | Path, robot: str, base_views: Mapping[str, tuple[Any, int, int]]) -> list[Standin]:
    """The stand-ins of camera inputs file ``path`` for ``robot``; ``base_views``: camera -> (K, width, height) of
    the view the world's scene was built with (view_K widens it to the stand-in's size)."""
    inputs = load_camera_inputs(path, robot)
    standins = []
    for entry in inputs.inputs:
        profile = entry.standin_profile()
        if profile is not None:
            K, width, height = base_views[entry.camera]
            standins.append(Standin(entry.camera, profile, view_K(K, (width, height), profile.size)))
    return standins


def qos_profile(spec: TopicQos):
    """rclpy's QoS for a driver's TopicQos."""
    from rclpy.qos import DurabilityPolicy, HistoryPolicy, QoSProfile, ReliabilityPolicy, qos_profile_system_default

    if spec.system_default:
        return qos_profile_system_default
    reliability = ReliabilityPolicy.RELIABLE if spec.reliable else ReliabilityPolicy.BEST_EFFORT
    return QoSProfile(
        history=HistoryPolicy.KEEP_LAST, depth=spec.depth, reliability=reliability,
        durability=DurabilityPolicy.VOLATILE,
    )  # fmt: skip


class StandinPublisher:
    """A stand-in's publishers on ``node``; :meth:`publish` sends a rendered frame on each subscribed topic."""

    def __init__(self, node, standin: Standin) -> None:
        from sensor_msgs.msg import CameraInfo, CompressedImage, Image

        p = standin.profile
        self.standin = standin
        self.image = node.create_publisher(Image, p.image_topic, qos_profile(p.image_qos))
        self.info = node.create_publisher(CameraInfo, p.info_topic, qos_profile(p.info_qos))
        self.compressed = (
            node.create_publisher(CompressedImage, p.compressed_topic, qos_profile(p.image_qos))
            if p.compressed_topic
            else None
        )
        fields = camera_info(p, standin.K)
        self._info = CameraInfo(
            width=fields.width, height=fields.height, distortion_model=fields.distortion_model, d=list(fields.d),
            k=list(fields.k), r=list(fields.r), p=list(fields.p),
        )  # fmt: skip
        self._info.header.frame_id = fields.frame_id

    def publish(self, rgb: np.ndarray, stamp) -> None:
        """``rgb`` (the stand-in's size) stamped ``stamp`` (builtin_interfaces/Time) on every subscribed topic."""
        from sensor_msgs.msg import CompressedImage, Image

        p = self.standin.profile
        if self.image.get_subscription_count():
            raw = raw_frame(p, rgb)
            msg = Image(height=raw.height, width=raw.width, encoding=raw.encoding, is_bigendian=0, step=raw.step)
            msg.data = raw.data
            msg.header.stamp, msg.header.frame_id = stamp, p.frame_id
            self.image.publish(msg)
        if self.compressed is not None and self.compressed.get_subscription_count():
            jpeg = compressed_frame(p, rgb)
            out = CompressedImage(format=jpeg.format, data=jpeg.data)
            out.header.stamp, out.header.frame_id = stamp, p.frame_id
            self.compressed.publish(out)
        if self.info.get_subscription_count():
            self._info.header.stamp = stamp
            self.info.publish(self._info)


@dataclass(frozen=True)
class AgentView:
    """What a camera's camera_node publishes under /cameras/<camera>/ when it reads its stand-in: the frame size the
    agent gets and its K (the driver's or the calibration file's, scaled as camera_node scales them)."""

    camera: str
    input_topic: str
    size: tuple[int, int]
    K: np.ndarray


def agent_views(
    path: str | Path,
    robot: str,
    base_views: Mapping[str, tuple[Any, int, int]],
    file_views: Mapping[str, tuple[Any, int, int]],
) -> dict[str, AgentView]:
    """Per camera with a stand-in in camera inputs file ``path``: the AgentView its camera_node should publish.
    ``base_views``: as load_standins; ``file_views``: camera -> (K, width, height) of its calibration file."""
    from robodojo.perception.frame_intrinsics import scale_K

    inputs = load_camera_inputs(path, robot)
    views = {}
    for standin in load_standins(path, robot, base_views):
        entry = inputs.camera(standin.camera)
        w, h = standin.profile.size
        if entry.intrinsics == "driver":
            K = standin.K
        else:
            K0, w0, h0 = file_views[standin.camera]
            K = scale_K(np.asarray(K0, dtype=float), w / w0, h / h0)
        out_w, out_h = entry.output_size or (w, h)
        K = scale_K(K, out_w / w, out_h / h) if (out_w, out_h) != (w, h) else K
        views[standin.camera] = AgentView(standin.camera, entry.topic, (out_w, out_h), K)
    return views


def check_agent_side(client, views: Mapping[str, AgentView], record: Path) -> None:
    """Assert that what the agent side got came through the stand-ins, not the world's plain topics: nothing publishes
    /<camera>/image_raw; each camera_node read its stand-in's topic and published frames (/diagnostics); the
    CameraInfo on /cameras/<camera>/camera_info has the stand-in path's size and K; and every frame the agent took
    (the episode record's episode.mcap) has that size. ``client``: fr3_client.Client subscribed to /diagnostics and
    to each camera's /cameras/<camera>/camera_info."""
    import cv2

    from robodojo.episodes.mcap_record import MCAP_FILE, camera_frames
    from robodojo.episodes.record import read_meta
    from robodojo.robots import topic_names

    for camera, view in views.items():
        plain = client.node.count_publishers(f"/{camera}/image_raw")
        assert plain == 0, f"{plain} publisher(s) of the plain /{camera}/image_raw beside the stand-in"
        published = [
            int(dict((kv.key, kv.value) for kv in s.values).get("frames_published", 0))
            for msg in client.messages("/diagnostics")
            for s in msg.status
            if s.name == f"camera_node: {camera}" and s.hardware_id == view.input_topic
        ]
        assert sum(published) > 0, f"camera_node {camera} published no frame read from {view.input_topic}"
        infos = client.messages(topic_names.camera_info(camera))
        assert infos, f"no CameraInfo on {topic_names.camera_info(camera)}"
        info = infos[-1]
        assert (info.width, info.height) == view.size, (camera, info.width, info.height, view.size)
        K = np.reshape(np.asarray(info.k, dtype=float), (3, 3))
        assert np.allclose(K, view.K, rtol=1e-9, atol=1e-6), (camera, K.tolist(), view.K.tolist())
    meta = read_meta(record)
    taken = [c for c in (meta.cameras or ()) if c in views]
    assert taken, f"the agent took no frame of {sorted(views)} (meta cameras {meta.cameras})"
    sizes: dict[str, set[tuple[int, int]]] = {}
    for camera, _stamp_ns, jpeg in camera_frames(record / MCAP_FILE, taken):
        rgb = cv2.imdecode(np.frombuffer(jpeg, np.uint8), cv2.IMREAD_COLOR)
        sizes.setdefault(camera, set()).add((rgb.shape[1], rgb.shape[0]))
    for camera in taken:
        assert sizes.get(camera) == {views[camera].size}, (camera, sizes.get(camera), views[camera].size)
