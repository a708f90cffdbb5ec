"""Cost of cameras as real drivers publish them: camera_node's conversion per frame, frames dropped at 30 Hz through a
real node pair, and the device source's capture-to-publish latency from a video file.

1. Conversion per frame, in this process, on what camera_node does for each frame: the driver's message decoded to RGB
   (robodojo.perception.image_formats through nodes.convert), the intrinsics for the frame's size (CameraStream, with
   the driver's CameraInfo for that size), and the output Image and CameraInfo messages built. Frames: 640x480 and
   1280x720 in rgb8, yuyv and bayer_rggb8, and JPEG (quality 90, as image_transport's default is 95 and usb_cam's
   mjpeg about 80-90) of the same images (a smooth gradient with noise, so JPEG has texture to code). Median and p95
   over ``--frames`` frames (200; 10 with ``--smoke``).
2. Frames dropped at 30 Hz, where rclpy is importable: camera_node (head camera, ``intrinsics: driver``) in its own
   process, fed by an rclpy publisher in this process at 30 Hz (640x480 and 1280x720 rgb8, 640x480 yuyv, each with
   its CameraInfo), once with a best-effort input (the sensor-data QoS) and once reliable, for ``--window`` s (10; 1
   with ``--smoke``, 640x480 rgb8 only) after discovery: frames sent, republished frames received here, and the drops
   camera_node counted on /diagnostics (bad frames: none are expected). "lost" = sent - republished: frames DDS or a
   full queue discarded on the way in or out (best effort drops a large frame whose fragments do not all arrive in
   time; reliable resends them), not frames camera_node refused.
3. Device source, capture to publish: DeviceCapture reading an MJPEG video file (made here with cv2.VideoWriter,
   640x480, looped) at 30 Hz; per frame the time from the capture stamp (taken right after ``grab()``) to the Image
   and CameraInfo messages built, as device_camera_node publishes them (in-process: the decode, colour conversion and
   message building). With rclpy, also device_camera_node as a process: capture stamp (wall clock, in the message
   header) to the moment this process's callback runs (adds DDS transport and deserialisation).

Run: ``.venv/bin/python benchmarks/cameras.py [--frames 200] [--window 10] [--smoke] [--no-graph] [--json out.json]``;
about 2 minutes, ``--smoke`` about 40 s (mostly node start-up and discovery). The machine's 2 cores are shared: the
load is printed in the header.
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import os
import platform
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path

import cv2
import numpy as np
from _common import cpu_model, nproc, table, version, write_figures
from _ros_client import SpunNode

from robodojo import PACKAGE_ROOT
from robodojo.observation import CameraCalibration
from robodojo.perception.camera_stream import CameraStream, StreamSettings
from robodojo.perception.distortion import Distortion
from robodojo.perception.frame_intrinsics import Intrinsics

SIZES = ((640, 480), (1280, 720))
ENCODINGS = ("rgb8", "yuyv", "bayer_rggb8", "jpeg")
JPEG_QUALITY = 90
RATE_HZ = 30.0
DISCOVERY_S = 30.0


def stats_ms(values_s: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values_s, dtype=float) * 1e3
    if a.size == 0:
        return {"n": 0, "median_ms": math.nan, "p95_ms": math.nan, "max_ms": math.nan}
    return {
        "n": int(a.size), "median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95)),
        "max_ms": float(a.max()),
    }  # fmt: skip


def f2(x: float) -> str:
    return "-" if math.isnan(x) else f"{x:.2f}"


def test_image(width: int, height: int, seed: int = 0) -> np.ndarray:
    yy, xx = np.mgrid[0:height, 0:width]
    rng = np.random.default_rng(seed)
    base = np.stack([xx * 255 / width, yy * 255 / height, (xx + yy) * 127 / (width + height) + 64], -1)
    return np.clip(base + rng.normal(0, 6, base.shape), 0, 255).astype(np.uint8)


def driver_message(rgb: np.ndarray, encoding: str):
    """``rgb`` as a driver's message (Image or CompressedImage), made with OpenCV."""
    from sensor_msgs.msg import CompressedImage, Image

    h, w = rgb.shape[:2]
    if encoding == "jpeg":
        ok, buf = cv2.imencode(".jpg", cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), [cv2.IMWRITE_JPEG_QUALITY, JPEG_QUALITY])
        assert ok
        return CompressedImage(format="rgb8; jpeg compressed bgr8", data=buf.tobytes())
    if encoding == "rgb8":
        pixels = rgb
    elif encoding == "yuyv":
        pixels = cv2.cvtColor(rgb, cv2.COLOR_RGB2YUV_YUYV)
    else:  # bayer_rggb8
        pixels = np.zeros((h, w), np.uint8)
        for k, c in enumerate((0, 1, 1, 2)):
            dr, dc = divmod(k, 2)
            pixels[dr::2, dc::2] = rgb[dr::2, dc::2, c]
    data = np.ascontiguousarray(pixels).tobytes()
    return Image(height=h, width=w, encoding=encoding, step=len(data) // h, data=data)


def intrinsics(width: int, height: int) -> Intrinsics:
    f = 0.9 * width
    K = np.array([[f, 0.0, (width - 1) / 2], [0.0, f, (height - 1) / 2], [0.0, 0.0, 1.0]])
    return Intrinsics(K, Distortion(), width, height)


def bench_conversion(n_frames: int) -> dict:
    """Part 1: camera_node's per-frame work in this process."""
    from robodojo.nodes import convert

    out: dict[str, dict] = {}
    rows = []
    for width, height in SIZES:
        rgb = test_image(width, height)
        stream = CameraStream(intrinsics(640, 480), StreamSettings(intrinsics="driver"))
        stream.set_driver_info(intrinsics(width, height))
        for encoding in ENCODINGS:
            msg = driver_message(rgb, encoding)
            decode = convert.compressed_rgb if encoding == "jpeg" else convert.image_rgb
            times = []
            for k in range(n_frames + 3):
                t0 = time.perf_counter()
                frame = stream.frame(decode(msg))
                image = convert.image_msg(frame.rgb, 1.0, "cam")
                info = convert.camera_info_msg(frame.calibration(np.eye(4)), 1.0, "cam")
                if k >= 3:  # warm-up frames (first allocations, OpenCV's dispatch) not counted
                    times.append(time.perf_counter() - t0)
                del image, info
            s = stats_ms(times)
            key = f"{width}x{height} {encoding}"
            out[key] = s
            rows.append((key, str(s["n"]), f2(s["median_ms"]), f2(s["p95_ms"]), f2(s["max_ms"])))
    print("\n1. camera_node conversion per frame (decode, intrinsics, output messages), this process")
    table(("frame", "n", "median ms", "p95 ms", "max ms"), rows, "<>>>>")
    return out


def write_video(path: Path, width: int, height: int, frames: int) -> None:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), RATE_HZ, (width, height))
    for i in range(frames):
        writer.write(cv2.cvtColor(test_image(width, height, seed=i), cv2.COLOR_RGB2BGR))
    writer.release()


def bench_device_in_process(video: Path, n_frames: int) -> dict:
    """Part 3a: DeviceCapture from a video file; capture stamp to messages built."""
    from robodojo.hardware.video_capture import CaptureSettings, DeviceCapture, parse_source
    from robodojo.nodes import convert

    intr = intrinsics(640, 480)
    latencies: list[float] = []
    done = threading.Event()

    def on_frame(rgb: np.ndarray, stamp_s: float) -> None:
        stream_frame = CameraStream(intr, StreamSettings()).frame(rgb)
        convert.image_msg(rgb, stamp_s, "cam")
        convert.camera_info_msg(stream_frame.calibration(np.eye(4)), stamp_s, "cam")
        latencies.append(time.perf_counter() - stamp_s)
        if len(latencies) >= n_frames:
            done.set()

    settings = CaptureSettings(rate_hz=RATE_HZ, end_of_stream="loop")
    capture = DeviceCapture(parse_source(str(video)), settings, on_frame, clock=time.perf_counter, log=lambda _: None)
    capture.start()
    done.wait(timeout=max(30.0, 3 * n_frames / RATE_HZ))
    capture.stop()
    s = stats_ms(latencies)
    print("\n3a. device source, capture stamp to Image + CameraInfo built (MJPEG file 640x480, 30 Hz), this process")
    table(
        ("n", "median ms", "p95 ms", "max ms"),
        [(str(s["n"]), f2(s["median_ms"]), f2(s["p95_ms"]), f2(s["max_ms"]))],
        ">>>>",
    )
    return s


# -- the node pair ------------------------------------------------------------------------------------------------
class Client(SpunNode):
    """The benchmark's rclpy node (benchmarks/_ros_client.py)."""

    def __init__(self, domain_id: int) -> None:
        super().__init__(domain_id, f"camera_bench_{os.getpid()}")


def wait_for(predicate: Callable[[], bool], timeout_s: float) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.02)
    return False


FEED_INPUTS = ((640, 480, "rgb8"), (1280, 720, "rgb8"), (640, 480, "yuyv"))


def feed_camera_node(
    client: Client, env: dict, log_dir: Path, window_s: float, inputs: Sequence[tuple[int, int, str]], *, reliable: bool
) -> tuple[dict, list]:
    """Part 2 for one input QoS: camera_node fed at 30 Hz with each input; (figures, table rows)."""
    from diagnostic_msgs.msg import DiagnosticArray
    from rclpy.qos import QoSProfile, ReliabilityPolicy, qos_profile_sensor_data
    from sensor_msgs.msg import CameraInfo, Image

    from robodojo.nodes import convert, topics
    from robodojo.nodes.process_graph import NodeProcess

    node = client.node
    qos_name = "reliable" if reliable else "best effort"
    topic = f"/bench_{int(reliable)}/head/image_raw"
    received: list[int] = []
    dropped: dict[str, int] = {}
    lock = threading.Lock()

    def on_image(msg: Image) -> None:
        with lock:
            received.append(msg.header.stamp.sec * 1_000_000_000 + msg.header.stamp.nanosec)

    def on_diag(msg: DiagnosticArray) -> None:
        for status in msg.status:
            if status.name.startswith("camera_node"):
                with lock:
                    for v in status.values:
                        if v.key.startswith("dropped_"):
                            dropped[v.key] = dropped.get(v.key, 0) + int(v.value)

    subs = [
        node.create_subscription(Image, topics.camera_image("head"), on_image, 50),
        node.create_subscription(DiagnosticArray, topics.DIAGNOSTICS, on_diag, 50),
    ]
    qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE) if reliable else qos_profile_sensor_data
    pub = node.create_publisher(Image, topic, qos)
    info_pub = node.create_publisher(CameraInfo, topic.replace("image_raw", "camera_info"), 10)
    camera = NodeProcess(
        "camera_node", {"robot": "dual_arx_x5", "camera": "head", "input_topic": topic, "intrinsics": "driver",
                        "input_reliable": reliable},
        env, log_dir / f"camera_node_{int(reliable)}.log", cwd=log_dir,
    )  # fmt: skip
    out: dict = {}
    rows = []
    seq = [0]
    try:
        for width, height, encoding in inputs:
            msg = driver_message(test_image(width, height), encoding)
            info = convert.camera_info_msg(calibration_of(intrinsics(width, height)), 0.0, "bench")

            def send(msg=msg, info=info) -> None:
                seq[0] += 1
                stamp = convert.time_msg(seq[0] * 1e-3)
                msg.header.stamp = info.header.stamp = stamp
                info_pub.publish(info)
                pub.publish(msg)

            with lock:
                received.clear()
            # discovery, and the switch of size: publish until a frame comes back
            if not wait_for(lambda: (send(), time.sleep(0.03), bool(received))[2], DISCOVERY_S):
                raise RuntimeError(f"camera_node republished nothing:\n{camera.output()[-2000:]}")
            time.sleep(1.0)
            first_ns = (seq[0] + 1) * 1_000_000
            with lock:
                dropped.clear()
            period = 1.0 / RATE_HZ
            t_next = time.monotonic()
            t_end = t_next + window_s
            n_sent = 0
            while time.monotonic() < t_end:
                send()
                n_sent += 1
                t_next += period
                time.sleep(max(0.0, t_next - time.monotonic()))
            time.sleep(1.5)  # the last frames, and one more /diagnostics report
            with lock:
                got = sum(1 for ns in received if ns >= first_ns)
                drops = sum(dropped.values())
            key = f"{width}x{height} {encoding}, {qos_name}"
            out[key] = {"sent": n_sent, "republished": got, "lost": n_sent - got, "dropped_by_node": drops}
            rows.append((key, str(n_sent), str(got), str(n_sent - got), str(drops)))
    finally:
        camera.stop()
        for sub in subs:
            node.destroy_subscription(sub)
        node.destroy_publisher(pub)
        node.destroy_publisher(info_pub)
    return out, rows


def bench_node_pair(window_s: float, video: Path, log_dir: Path, inputs: Sequence[tuple[int, int, str]]) -> dict:
    """Part 2 and 3b: camera_node fed at 30 Hz; device_camera_node's capture-to-receive latency."""
    from rclpy.qos import QoSProfile, ReliabilityPolicy
    from sensor_msgs.msg import Image

    from robodojo.nodes import convert
    from robodojo.nodes.process_graph import NodeProcess, claim_ros_domain, ros_environment

    domain_id, domain_lock = claim_ros_domain()
    env = ros_environment(PACKAGE_ROOT, domain_id=domain_id, log_dir=log_dir / "ros_log", with_install=False)
    client = Client(domain_id)
    out: dict = {}
    try:
        rows = []
        for reliable in (False, True):
            figures, r = feed_camera_node(client, env, log_dir, window_s, inputs, reliable=reliable)
            out.update(figures)
            rows += r
        print(f"\n2. camera_node in its own process fed at {RATE_HZ:g} Hz for {window_s:g} s per input")
        table(("input, QoS", "sent", "republished", "lost", "dropped by node"), rows, "<>>>>")

        latencies: list[float] = []

        def on_device(msg: Image) -> None:
            latencies.append(time.time() - convert.seconds(msg.header.stamp))

        reliable_qos = QoSProfile(depth=5, reliability=ReliabilityPolicy.RELIABLE)
        client.node.create_subscription(Image, "/head/image_raw", on_device, reliable_qos)
        device = NodeProcess(
            "device_camera_node", {"robot": "dual_arx_x5", "camera": "head", "source": str(video), "width": 640,
                                   "height": 480, "rate_hz": RATE_HZ},
            env, log_dir / "device_camera_node.log", cwd=log_dir,
        )  # fmt: skip
        try:
            if not wait_for(lambda: len(latencies) > 0, DISCOVERY_S):
                raise RuntimeError(f"device_camera_node published nothing:\n{device.output()[-2000:]}")
            time.sleep(1.0)
            latencies.clear()
            time.sleep(window_s)
        finally:
            device.stop()
        s = stats_ms(list(latencies))
        out["device_capture_to_receive"] = s
        print(
            "\n3b. device_camera_node (MJPEG file 640x480, 30 Hz) capture stamp to this process's callback (reliable)"
        )
        table(
            ("n", "median ms", "p95 ms", "max ms"),
            [(str(s["n"]), f2(s["median_ms"]), f2(s["p95_ms"]), f2(s["max_ms"]))],
            ">>>>",
        )
    finally:
        client.close()
        domain_lock.close()
    return out


def calibration_of(intr: Intrinsics) -> CameraCalibration:
    """Intrinsics as the CameraCalibration that convert.camera_info_msg takes (a driver has no world pose)."""
    return CameraCalibration(K=intr.K, T_world_cam=np.eye(4), width=intr.width, height=intr.height)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--frames", type=int, help="frames timed per case (default 200; 10 with --smoke)")
    parser.add_argument(
        "--window", type=float, help="30 Hz window per input of part 2 [s] (default 10; 1 with --smoke)"
    )
    parser.add_argument("--smoke", action="store_true", help="a few frames and short windows: a run of seconds")
    parser.add_argument("--no-graph", action="store_true", help="skip the node-pair parts (2 and 3b)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    n_frames = max(args.frames or (10 if args.smoke else 200), 1)
    window_s = args.window or (1.0 if args.smoke else 10.0)
    print(f"robodojo camera benchmark{' (smoke)' if args.smoke else ''}")
    print(
        f"{cpu_model()}, {nproc()} cores, load {os.getloadavg()[0]:.2f}; Python {platform.python_version()}, "
        f"OpenCV {cv2.__version__}, numpy {version('numpy')}"
    )
    figures: dict = {"conversion": bench_conversion(n_frames)}
    with tempfile.TemporaryDirectory(prefix="camera_bench_") as tmp:
        video = Path(tmp) / "clip.avi"
        write_video(video, 640, 480, 30)
        figures["device_in_process"] = bench_device_in_process(video, max(n_frames, 10))
        if args.no_graph or importlib.util.find_spec("rclpy") is None:
            print("\n2, 3b. skipped: " + ("--no-graph" if args.no_graph else "rclpy not importable"))
        else:
            inputs = FEED_INPUTS[:1] if args.smoke else FEED_INPUTS
            figures["node_pair"] = bench_node_pair(window_s, video, Path(tmp), inputs)
    if args.json is not None:
        write_figures(args.json, figures)
    return 0


if __name__ == "__main__":
    sys.exit(main())
