"""DeviceCapture with real OpenCV decoding: a video file and an image sequence made here with cv2.VideoWriter and
cv2.imwrite, read at a rate, looped or reopened at their end, and a source that disappears and comes back."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import cv2
import numpy as np
import pytest

from robodojo.errors import ConfigError
from robodojo.hardware.video_capture import CaptureSettings, DeviceCapture, gstreamer_available, parse_source

W, H, N = 96, 64, 5
LEVEL_STEP = 40  # grey level per frame index: far beyond MJPEG's error on a uniform frame (a level or two)
WAIT_S = 60.0  # generous deadline for counts to be reached on a loaded machine (no timing is asserted)


def frame_image(index: int) -> np.ndarray:
    """Frame ``index``: uniform grey 20 + 40 * index in the left half, pure red in the right half (channel order)."""
    img = np.zeros((H, W, 3), np.uint8)
    img[:, : W // 2] = 20 + LEVEL_STEP * index
    img[:, W // 2 :] = (0, 0, 255)  # BGR red
    return img


def index_of(rgb: np.ndarray) -> int:
    return round((float(rgb[:, : W // 4].mean()) - 20) / LEVEL_STEP)


def write_video(path: Path) -> Path:
    writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*"MJPG"), 30.0, (W, H))
    assert writer.isOpened()
    for i in range(N):
        writer.write(frame_image(i))
    writer.release()
    return path


def write_sequence(folder: Path) -> str:
    folder.mkdir(exist_ok=True)
    for i in range(N):
        assert cv2.imwrite(str(folder / f"frame_{i:04d}.png"), frame_image(i))
    return str(folder / "frame_%04d.png")


class Collector:
    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.frames: list[tuple[np.ndarray, float]] = []
        self.logs: list[str] = []

    def on_frame(self, rgb: np.ndarray, stamp_s: float) -> None:
        with self.lock:
            self.frames.append((rgb, stamp_s))

    def log(self, line: str) -> None:
        with self.lock:
            self.logs.append(line)

    def indices(self) -> list[int]:
        with self.lock:
            return [index_of(f) for f, _ in self.frames]

    def count(self) -> int:
        with self.lock:
            return len(self.frames)


def wait_for(predicate, what: str) -> None:
    deadline = time.monotonic() + WAIT_S
    while not predicate():
        if time.monotonic() > deadline:
            pytest.fail(f"timed out waiting for {what}")
        time.sleep(0.01)


def run(source: str, settings: CaptureSettings, collector: Collector, clock=time.time) -> DeviceCapture:
    capture = DeviceCapture(parse_source(source), settings, collector.on_frame, clock=clock, log=collector.log)
    capture.start()
    return capture


def test_sources_are_classified_for_opencv(tmp_path) -> None:
    assert parse_source("/dev/video2").kind == "v4l2" and parse_source("/dev/video2").target == 2
    assert parse_source("0").kind == "v4l2"
    assert parse_source("rtsp://127.0.0.1:8554/cam").kind == "stream"
    assert parse_source(str(tmp_path / "a.mp4")).kind == "file"
    assert parse_source(str(tmp_path / "f_%03d.jpg")).kind == "images"
    with pytest.raises(ConfigError, match="'source' is empty"):
        parse_source(" ")
    pipeline = "v4l2src ! videoconvert ! appsink"
    if gstreamer_available():
        assert parse_source(pipeline).kind == "gstreamer"
    else:
        with pytest.raises(ConfigError, match="no GStreamer backend"):
            parse_source(pipeline)
    with pytest.raises(ConfigError, match="'end_of_stream' is 'stop'"):
        CaptureSettings(end_of_stream="stop")


def test_video_file_loops_in_order_with_capture_stamps_and_size(tmp_path) -> None:
    video = write_video(tmp_path / "clip.avi")
    got = Collector()
    ticks = iter(range(1_000_000))
    settings = CaptureSettings(rate_hz=200.0, width=48, height=32, end_of_stream="loop")
    capture = run(str(video), settings, got, clock=lambda: 1000.0 + next(ticks))
    wait_for(lambda: got.count() >= 2 * N + 2, "two passes through the file")
    assert capture.stop()
    indices = got.indices()[: 2 * N + 2]
    assert indices == [0, 1, 2, 3, 4, 0, 1, 2, 3, 4, 0, 1], indices
    rgb, _ = got.frames[0]
    assert rgb.shape == (32, 48, 3)  # resized to the configured size
    assert tuple(rgb[16, 40]) == pytest.approx((255, 0, 0), abs=8)  # RGB order: the red half is red
    stamps = [s for _, s in got.frames]
    assert stamps == sorted(stamps) and len(set(stamps)) == len(stamps)  # one clock read per captured frame
    stats = capture.stats
    assert stats.ends >= 2 and stats.opens >= 3 and stats.open_failures == 0 and stats.frames == got.count()


def test_image_sequence_reconnects_with_backoff_when_it_disappears(tmp_path) -> None:
    folder = tmp_path / "seq"
    pattern = write_sequence(folder)
    got = Collector()
    settings = CaptureSettings(rate_hz=200.0, end_of_stream="reconnect", reconnect_min_s=0.02, reconnect_max_s=0.08)
    capture = run(pattern, settings, got)
    wait_for(lambda: got.count() >= N + 1, "the sequence, reopened after its end")
    assert got.indices()[: N + 1] == [0, 1, 2, 3, 4, 0]
    assert capture.stats.ends >= 1 and any("ended; opening it again" in line for line in got.logs)

    hidden = tmp_path / "hidden"
    folder.rename(hidden)  # the source disappears
    wait_for(lambda: capture.stats.open_failures >= 4, "failed attempts to open the vanished source")
    before = got.count()
    logs = [line for line in got.logs if line.startswith("cannot open")]
    waits = [float(line.rsplit(" in ", 1)[1].split()[0]) for line in logs]
    # after the sequence's own end (one wait of 0.02 s) every failed open doubles the wait, up to reconnect_max_s
    assert waits[:3] == [0.04, 0.08, 0.08] and max(waits) == 0.08, waits
    hidden.rename(folder)  # plugged back in
    wait_for(lambda: got.count() >= before + N, "frames after the source came back")
    assert capture.stop()
    assert got.indices()[before : before + N] == list(range(N))
    assert capture.stats.frames == got.count()


def test_a_device_that_does_not_exist_is_retried_not_fatal(tmp_path) -> None:
    got = Collector()
    settings = CaptureSettings(rate_hz=30.0, reconnect_min_s=0.01, reconnect_max_s=0.02)
    capture = run(str(tmp_path / "missing.avi"), settings, got)
    wait_for(lambda: capture.stats.open_failures >= 3, "retries")
    assert capture.stop()
    assert got.count() == 0 and capture.stats.opens == 0
