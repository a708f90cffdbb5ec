"""Cameras as real drivers publish them, through camera_node as a real process: raw frames in several encodings and
sizes, CompressedImage with the driver's CameraInfo, a wrist camera's frames against /joint_states stamps, bad frames
counted on /diagnostics; and device_camera_node reading a video file (real OpenCV decoding) into camera_node, and an
image sequence that disappears and comes back."""

from __future__ import annotations

import time

import cv2
import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")

from builtin_interfaces.msg import Time
from diagnostic_msgs.msg import DiagnosticArray
from geometry_msgs.msg import PoseStamped
from sensor_msgs.msg import CameraInfo, CompressedImage, Image, JointState
from std_msgs.msg import Header
from test_camera_and_tcp_nodes import DISCOVERY_S as NODE_DISCOVERY_S
from test_camera_and_tcp_nodes import Inbox, assert_pose, joint_state, publish_until

from robodojo.nodes import convert, topics
from robodojo.perception.camera import load_camera_file
from robodojo.perception.frame_intrinsics import scale_K
from robodojo.perception.mounted_camera import default_calibration_path
from robodojo.robots.config import load_robot_config

pytestmark = pytest.mark.ros

# Frames of up to 1280x960 published at ~50 Hz until they come out, beside a node starting up: on a loaded 2-core
# machine that takes longer than the small messages NODE_DISCOVERY_S was chosen for (a bound to fail, not a figure).
DISCOVERY_S = 3 * NODE_DISCOVERY_S

ROBOT = "dual_arx_x5"
COLOURS = np.array([[200, 40, 40], [40, 200, 40], [40, 40, 200], [220, 220, 60]], np.uint8)


def quadrants(width: int, height: int) -> np.ndarray:
    """Four uniform colour quadrants: every encoding's conversion is exact (or nearly) away from their borders."""
    rgb = np.zeros((height, width, 3), np.uint8)
    h2, w2 = height // 2, width // 2
    rgb[:h2, :w2], rgb[:h2, w2:], rgb[h2:, :w2], rgb[h2:, w2:] = COLOURS
    return rgb


def quadrant_colours(rgb: np.ndarray) -> np.ndarray:
    """The colour at the centre of each quadrant."""
    h, w = rgb.shape[:2]
    return np.array(
        [rgb[h // 4, w // 4], rgb[h // 4, 3 * w // 4], rgb[3 * h // 4, w // 4], rgb[3 * h // 4, 3 * w // 4]]
    )


def raw_frame(rgb: np.ndarray, encoding: str, stamp: Time) -> Image:
    """``rgb`` as a driver would send it in ``encoding`` (OpenCV does the conversion)."""
    h, w = rgb.shape[:2]
    if encoding == "rgb8":
        pixels = rgb
    elif encoding == "bgr8":
        pixels = cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR)
    elif encoding == "mono8":
        pixels = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    elif encoding == "yuyv":
        pixels = cv2.cvtColor(rgb, cv2.COLOR_RGB2YUV_YUYV)
    elif encoding == "bayer_rggb8":
        pixels = np.zeros((h, w), np.uint8)
        for k, c in enumerate((0, 1, 1, 2)):  # R G / G B
            dr, dc = divmod(k, 2)
            pixels[dr::2, dc::2] = rgb[dr::2, dc::2, c]
    else:
        raise ValueError(encoding)
    data = np.ascontiguousarray(pixels).tobytes()
    return Image(
        header=Header(stamp=stamp, frame_id="driver"), height=h, width=w, encoding=encoding, step=len(data) // h,
        data=data,
    )  # fmt: skip


def diagnostics_value(inbox: Inbox, status_name: str, key: str) -> int:
    """The sum of ``key`` over every /diagnostics report of ``status_name`` so far."""
    total = 0
    for msg in inbox.all(topics.DIAGNOSTICS):
        for status in msg.status:
            if status.name == status_name:
                total += sum(int(v.value) for v in status.values if v.key == key)
    return total


def camera_topics(camera: str) -> dict[str, type]:
    return {
        topics.camera_image(camera): Image,
        topics.camera_info(camera): CameraInfo,
        topics.camera_pose(camera): PoseStamped,
        topics.DIAGNOSTICS: DiagnosticArray,
    }


def test_raw_encodings_and_sizes_come_out_rgb_at_the_agent_size_with_k_scaled(graph) -> None:
    node = graph.start(
        "camera_node", robot=ROBOT, camera="head", input_topic="/drv/head/image_raw", output_width=320,
        output_height=240,
    )  # fmt: skip
    inbox = Inbox(graph, camera_topics("head"))
    pub = graph.client.create_publisher(Image, "/drv/head/image_raw", 10)
    calib = load_camera_file(default_calibration_path(ROBOT, "head")).model
    assert (calib.width, calib.height) == (640, 480)
    K_out = scale_K(calib.K, 0.5, 0.5)  # every accepted size has the calibration's aspect ratio: 320x240 out

    out_topics = [t for t in camera_topics("head") if t != topics.DIAGNOSTICS]
    cases = [
        ("rgb8", 1280, 960),
        ("bgr8", 640, 480),
        ("yuyv", 640, 480),
        ("bayer_rggb8", 1280, 960),
        ("mono8", 320, 240),
    ]
    for k, (encoding, w, h) in enumerate(cases):
        stamp = Time(sec=100 + k, nanosec=1)
        rgb = quadrants(w, h)
        msg = raw_frame(rgb, encoding, stamp)
        publish_until(
            graph, [(pub, msg)], lambda s=stamp: all(inbox.stamped(t, s) for t in out_topics), encoding, DISCOVERY_S
        )
        image = inbox.stamped(topics.camera_image("head"), stamp)[0]
        info = inbox.stamped(topics.camera_info("head"), stamp)[0]
        assert (image.encoding, image.width, image.height) == ("rgb8", 320, 240)
        assert (info.width, info.height) == (320, 240)
        np.testing.assert_allclose(np.array(info.k).reshape(3, 3), K_out, atol=1e-9)
        assert info.distortion_model == calib.distortion_model
        got = quadrant_colours(convert.image_rgb(image)).astype(int)
        want = COLOURS.astype(int)
        if encoding == "mono8":
            want = np.repeat(cv2.cvtColor(COLOURS[None], cv2.COLOR_RGB2GRAY).reshape(4, 1), 3, axis=1).astype(int)
        # YUV round trip through OpenCV's own BT.601 conversion: rounding of Y, U, V (about 2 levels); the rest exact
        assert np.abs(got - want).max() <= 3, (encoding, got, want)
        assert_pose(inbox.stamped(topics.camera_pose("head"), stamp)[0], calib.T_world_cam)

    # Bad frames: truncated, wrong step, unknown encoding, a huge header, another aspect ratio. All dropped, counted.
    bad_stamp = Time(sec=500)
    truncated = raw_frame(quadrants(640, 480), "rgb8", bad_stamp)
    truncated.data = truncated.data[:1000]
    short_step = raw_frame(quadrants(640, 480), "rgb8", bad_stamp)
    short_step.step = 100
    unknown = raw_frame(quadrants(640, 480), "rgb8", bad_stamp)
    unknown.encoding = "32FC1"
    huge = Image(header=Header(stamp=bad_stamp), height=100_000, width=100_000, encoding="rgb8", step=300_000)
    wide = raw_frame(quadrants(848, 480), "rgb8", bad_stamp)
    good_stamp = Time(sec=501)
    good = raw_frame(quadrants(640, 480), "rgb8", good_stamp)
    name = "camera_node: head"

    def counted() -> bool:
        for msg in (truncated, short_step, unknown, huge, wide):
            pub.publish(msg)
        pub.publish(good)
        time.sleep(0.05)
        return all(diagnostics_value(inbox, name, f"dropped_{k}") > 0 for k in ("data", "encoding", "size", "aspect"))

    graph.wait(counted, DISCOVERY_S, "every kind of bad frame counted on /diagnostics")
    assert node.alive
    assert not inbox.stamped(topics.camera_image("head"), bad_stamp)

    def good_came() -> bool:  # good frames between bad ones still go through (on a loaded machine, after the counts)
        pub.publish(good)
        time.sleep(0.05)
        return bool(inbox.stamped(topics.camera_image("head"), good_stamp))

    graph.wait(good_came, DISCOVERY_S, "a good frame among the bad ones")
    text = node.output()
    assert "another aspect ratio than the calibration file (640x480)" in text and "'32FC1'" in text
    assert text.count("dropped a frame (data)") <= 2, text  # rate-limited: one line per reason per 5 s


def test_compressed_frames_take_the_drivers_camera_info(graph) -> None:
    node = graph.start(
        "camera_node", robot=ROBOT, camera="head", input_topic="/camera/camera/color/image_raw/compressed",
        input_transport="compressed", intrinsics="driver",
    )  # fmt: skip
    inbox = Inbox(graph, camera_topics("head"))
    pub = graph.client.create_publisher(CompressedImage, "/camera/camera/color/image_raw/compressed", 10)
    info_pub = graph.client.create_publisher(CameraInfo, "/camera/camera/color/camera_info", 10)
    w, h = 848, 480  # realsense's usual colour profile: not the calibration file's aspect ratio
    rgb = quadrants(w, h)
    ok, jpeg = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, 95])
    assert ok

    def frame(stamp: Time) -> CompressedImage:
        return CompressedImage(header=Header(stamp=stamp), format="rgb8; jpeg compressed bgr8", data=jpeg.tobytes())

    blind = frame(Time(sec=10))

    def waited_for_info() -> bool:
        pub.publish(blind)
        time.sleep(0.05)
        return "no CameraInfo from the driver yet" in node.output()

    graph.wait(waited_for_info, DISCOVERY_S, "frames dropped until the driver's CameraInfo")
    K = [615.2, 0.0, 421.7, 0.0, 615.9, 243.1, 0.0, 0.0, 1.0]
    d = [0.1, -0.2, 0.001, 0.002, 0.05, 0.09, -0.1, 0.04]
    driver_info = CameraInfo(
        header=Header(frame_id="camera_color_optical_frame"), width=w, height=h,
        distortion_model="rational_polynomial", d=d, k=K,
    )  # fmt: skip
    stamp = Time(sec=11, nanosec=42)
    out_topics = [t for t in camera_topics("head") if t != topics.DIAGNOSTICS]
    publish_until(
        graph, [(info_pub, driver_info), (pub, frame(stamp))],
        lambda: all(inbox.stamped(t, stamp) for t in out_topics), "compressed frames republished", DISCOVERY_S,
    )  # fmt: skip
    info = inbox.stamped(topics.camera_info("head"), stamp)[0]
    image = inbox.stamped(topics.camera_image("head"), stamp)[0]
    assert (image.width, image.height, info.width, info.height) == (w, h, w, h)
    np.testing.assert_allclose(info.k, K)
    np.testing.assert_allclose(info.d, d)
    assert info.distortion_model == "rational_polynomial"
    got = quadrant_colours(convert.image_rgb(image)).astype(int)
    assert np.abs(got - COLOURS.astype(int)).max() <= 4  # JPEG q95 on uniform quadrants; a channel swap is ~160 off
    assert not inbox.stamped(topics.camera_image("head"), Time(sec=10))


def test_wrist_frames_without_a_joint_state_near_their_stamp_are_dropped_and_counted(graph) -> None:
    camera = "left_wrist"
    node = graph.start("camera_node", robot=ROBOT, camera=camera, input_topic="/drv/wrist", max_frame_lag_s=0.1)
    inbox = Inbox(graph, camera_topics(camera))
    image_pub = graph.client.create_publisher(Image, "/drv/wrist", 10)
    joint_pub = graph.client.create_publisher(JointState, topics.JOINT_STATES, 10)
    file = load_camera_file(default_calibration_path(ROBOT, camera)).model
    arm = load_robot_config(ROBOT).arm("left")
    arm_joints = list(arm.joints)
    q = list(arm.home_joints_rad)
    rgb = quadrants(file.width, file.height)
    late, fresh = Time(sec=20, nanosec=0), Time(sec=20, nanosec=450_000_000)
    joints_at = Time(
        sec=20, nanosec=500_000_000
    )  # the only joint state: 0.5 s after the late frame, 0.05 s after the other
    publish_until(
        graph,
        [(joint_pub, joint_state(arm_joints, q, joints_at)), (image_pub, raw_frame(rgb, "rgb8", late)),
         (image_pub, raw_frame(rgb, "rgb8", fresh))],
        lambda: bool(inbox.stamped(topics.camera_image(camera), fresh))
        and diagnostics_value(inbox, f"camera_node: {camera}", "dropped_lag") > 0,
        "a fresh wrist frame published and a late one counted", DISCOVERY_S,
    )  # fmt: skip
    assert not inbox.stamped(topics.camera_image(camera), late)
    assert "no joint state of arm 'left' within 0.1 s of the frame's stamp (nearest 0.500 s away" in node.output()
    assert node.alive


def write_video(path, width: int, height: int, frames: int) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (width, height))
    assert writer.isOpened()
    for i in range(frames):
        img = cv2.cvtColor(quadrants(width, height), cv2.COLOR_RGB2BGR)
        img[: height // 8, : width // 8] = 30 + 50 * i  # the frame's index, as a grey patch
        writer.write(img)
    writer.release()


def test_device_source_feeds_camera_node_from_a_video_file_and_survives_a_vanished_source(graph, tmp_path) -> None:
    video = tmp_path / "clip.avi"
    write_video(video, 320, 240, 4)
    device = graph.start(
        "device_camera_node", robot=ROBOT, camera="head", source=str(video), width=640, height=480, rate_hz=30.0,
        end_of_stream="loop",
    )  # fmt: skip
    camera = graph.start("camera_node", robot=ROBOT, camera="head", input_topic="/head/image_raw")
    inbox = Inbox(graph, {**camera_topics("head"), "/head/image_raw": Image, "/head/camera_info": CameraInfo})
    calib = load_camera_file(default_calibration_path(ROBOT, "head")).model
    graph.wait(lambda: len(inbox.all(topics.camera_image("head"))) >= 10, DISCOVERY_S, "device frames via camera_node")
    image = inbox.all(topics.camera_image("head"))[-1]
    assert (image.width, image.height, image.encoding) == (640, 480, "rgb8")
    rgb = convert.image_rgb(image)
    assert np.abs(quadrant_colours(rgb).astype(int)[1:] - COLOURS[1:].astype(int)).max() <= 6  # MJPEG, resized

    def patches() -> set[int]:  # the frame indices seen: a best-effort stream delivers only some frames of each loop
        return {
            round((float(convert.image_rgb(m)[10:50, 10:70].mean()) - 30) / 50)
            for m in inbox.all(topics.camera_image("head"))
        }

    graph.wait(lambda: patches() >= {0, 1, 2, 3}, DISCOVERY_S, "every frame of the looped file")
    stamp = image.header.stamp  # its CameraInfo travels on a topic of its own: it may arrive just after the image
    graph.wait(lambda: bool(inbox.stamped(topics.camera_info("head"), stamp)), DISCOVERY_S, "the frame's CameraInfo")
    info = inbox.stamped(topics.camera_info("head"), stamp)[0]
    np.testing.assert_allclose(np.array(info.k).reshape(3, 3), calib.K)
    graph.wait(lambda: bool(inbox.all("/head/camera_info")), DISCOVERY_S, "the device node's own CameraInfo")
    driver_info = inbox.all("/head/camera_info")[-1]
    np.testing.assert_allclose(np.array(driver_info.k).reshape(3, 3), calib.K)  # 640x480, the file's own size
    assert driver_info.header.frame_id == "head_camera_optical_frame"
    graph.wait(
        lambda: diagnostics_value(inbox, "device_camera_node: head_camera_optical_frame", "ends") > 0,
        DISCOVERY_S, "the file's end counted on /diagnostics",
    )  # fmt: skip

    # An image sequence that disappears and comes back: retried with backoff, counted, and frames resume.
    seq = tmp_path / "seq"
    seq.mkdir()
    for i in range(3):
        cv2.imwrite(str(seq / f"f_{i:03d}.png"), cv2.cvtColor(quadrants(640, 480), cv2.COLOR_RGB2BGR))
    vanishing = graph.start(
        "device_camera_node", name="vanishing", robot=ROBOT, camera="left_wrist", source=str(seq / "f_%03d.png"),
        width=0, height=0, rate_hz=30.0, end_of_stream="reconnect", reconnect_min_s=0.05, reconnect_max_s=0.2,
    )  # fmt: skip
    seq_inbox = Inbox(graph, {"/left_wrist/image_raw": Image})
    graph.wait(lambda: len(seq_inbox.all("/left_wrist/image_raw")) >= 3, DISCOVERY_S, "image-sequence frames")
    seq.rename(tmp_path / "gone")
    name = "device_camera_node: left_wrist_camera_optical_frame"
    graph.wait(lambda: diagnostics_value(inbox, name, "open_failures") >= 2, DISCOVERY_S, "failed reopens counted")
    before = len(seq_inbox.all("/left_wrist/image_raw"))
    (tmp_path / "gone").rename(seq)
    graph.wait(lambda: len(seq_inbox.all("/left_wrist/image_raw")) > before, DISCOVERY_S, "frames after the return")
    assert vanishing.alive and device.alive and camera.alive
    assert "cannot open" in vanishing.output()
    assert vanishing.stop() == 0 and device.stop() == 0
