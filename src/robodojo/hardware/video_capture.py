"""A camera without a ROS driver, read through OpenCV's VideoCapture: a V4L2 device, a GStreamer pipeline, an RTSP or
HTTP stream, a video file or an image sequence, at a configured rate and size, reopened when it fails.

The capture runs in a thread of its own (reads block for up to a frame period, or longer when a device hangs) and
hands each frame to a callback as HxWx3 RGB with its capture stamp: the clock read as soon as ``grab()`` returned, the
closest this side of the driver gets to the exposure. A live source is grabbed continuously (so the frame handed on
is the newest, not one queued in the driver's buffers) and a frame is decoded (``retrieve()``) only when the rate
says one is due; a file or image sequence is grabbed at the rate, since it has no clock of its own.

Failures: a source that will not open, or a read that fails on a live source (a USB camera unplugged, a stream cut),
closes the capture and opens it again after a backoff that starts at ``reconnect_min_s`` and doubles up to
``reconnect_max_s``, reset by the first good frame. The end of a file or image sequence either opens it again at once
(``loop``) or goes through the same backoff (``reconnect``). Everything is counted (:class:`CaptureStats`).

Honest limits: the OpenCV wheel from PyPI has no GStreamer backend (``gstreamer_available``); a pipeline source is
refused with a line saying so, where a system OpenCV built with it would open it. The capture stamp includes the
driver's buffering and USB transfer, a few milliseconds on UVC cameras; it is not the sensor's exposure time.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from functools import cache
from pathlib import Path

import cv2
import numpy as np
from numpy.typing import NDArray

from robodojo.errors import ConfigError

END_OF_STREAM = ("loop", "reconnect")
#: How long stop() waits for the capture thread; a read blocked in a hung driver can outlast it (then it is left to
#: end with the process, as a daemon thread).
STOP_TIMEOUT_S = 5.0
_DEVICE_RE = re.compile(r"^(?:/dev/video)?(\d+)$")


@cache
def gstreamer_available() -> bool:
    """Whether this OpenCV build can open GStreamer pipelines."""
    info = cv2.getBuildInformation()
    match = re.search(r"GStreamer:\s*(\S+)", info)
    return bool(match) and match.group(1).upper() != "NO"  # type: ignore[union-attr]


@dataclass(frozen=True)
class VideoSource:
    """What to open, how (an OpenCV capture API), and whether it ends (a file or image sequence)."""

    text: str
    kind: str  # v4l2, gstreamer, stream, file, images
    target: str | int
    api: int

    @property
    def finite(self) -> bool:
        return self.kind in ("file", "images")


def parse_source(text: str) -> VideoSource:
    """Classify a ``source`` parameter; ConfigError naming it when it cannot be opened by this OpenCV at all."""
    text = text.strip()
    if not text:
        raise ConfigError("parameter 'source' is empty; give a device (/dev/video0), pipeline, URL or file")
    device = _DEVICE_RE.match(text)
    if device:
        return VideoSource(text, "v4l2", int(device.group(1)), cv2.CAP_V4L2)
    if "!" in text:
        if not gstreamer_available():
            raise ConfigError(
                f"source {text!r} is a GStreamer pipeline, but this OpenCV ({cv2.__version__}) has no GStreamer "
                "backend (the PyPI wheel has none); use a system OpenCV built with GStreamer, or a device or URL"
            )
        return VideoSource(text, "gstreamer", text, cv2.CAP_GSTREAMER)
    if re.match(r"^[a-z][a-z0-9+.-]*://", text, re.IGNORECASE):
        return VideoSource(text, "stream", text, cv2.CAP_FFMPEG)
    if "%" in text:  # frame_%04d.png: OpenCV's image-sequence reader
        return VideoSource(text, "images", text, cv2.CAP_IMAGES)
    return VideoSource(text, "file", str(Path(text).expanduser()), cv2.CAP_FFMPEG)


@dataclass(frozen=True)
class CaptureSettings:
    """Rate, size and failure handling of one capture (device_camera_node's parameters of the same names)."""

    rate_hz: float = 30.0
    width: int = 0
    height: int = 0
    end_of_stream: str = "loop"
    reconnect_min_s: float = 0.5
    reconnect_max_s: float = 5.0

    def __post_init__(self) -> None:
        if self.end_of_stream not in END_OF_STREAM:
            raise ConfigError(
                f"parameter 'end_of_stream' is {self.end_of_stream!r}; choose one of: {', '.join(END_OF_STREAM)}"
            )
        if (self.width == 0) != (self.height == 0) or self.width < 0 or self.height < 0:
            raise ConfigError(f"width x height is {self.width}x{self.height}: give both (> 0), or both 0")
        if not 0 < self.reconnect_min_s <= self.reconnect_max_s:
            raise ConfigError(
                f"reconnect_min_s {self.reconnect_min_s} must be > 0 and <= reconnect_max_s {self.reconnect_max_s}"
            )
        if not self.rate_hz > 0:
            raise ConfigError(f"parameter 'rate_hz' must be > 0, got {self.rate_hz}")


@dataclass(frozen=True)
class CaptureStats:
    """Counts since the capture started."""

    frames: int = 0  # handed to the callback
    opens: int = 0  # successful opens (the first, then every reconnect or loop)
    open_failures: int = 0  # attempts to open that failed
    read_failures: int = 0  # reads that failed on a live source (then a reconnect)
    ends: int = 0  # ends of a file or image sequence
    callback_errors: int = 0  # frames whose callback raised


class DeviceCapture:
    """Reads ``source`` in a thread and calls ``on_frame(rgb, stamp_s)`` per frame (module docstring).

    ``clock`` gives the stamp (the node's ROS clock); ``log`` takes one line per failure, already rate-limited by
    the backoff.
    """

    def __init__(
        self,
        source: VideoSource,
        settings: CaptureSettings,
        on_frame: Callable[[NDArray[np.uint8], float], None],
        *,
        clock: Callable[[], float] = time.time,
        log: Callable[[str], None] = print,
    ) -> None:
        self.source = source
        self.settings = settings
        self.on_frame = on_frame
        self.clock = clock
        self.log = log
        self._stats = CaptureStats()
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="device_capture", daemon=True)

    @property
    def stats(self) -> CaptureStats:
        with self._lock:
            return self._stats

    def _count(self, **changes: int) -> None:
        with self._lock:
            self._stats = replace(self._stats, **{k: getattr(self._stats, k) + v for k, v in changes.items()})

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> bool:
        """Stop reading and release the source; whether the thread ended within STOP_TIMEOUT_S."""
        self._stop.set()
        self._thread.join(timeout=STOP_TIMEOUT_S)
        return not self._thread.is_alive()

    # -- the capture thread ---------------------------------------------------------------------------------------
    def _open(self) -> cv2.VideoCapture | None:
        cap = cv2.VideoCapture(self.source.target, self.source.api)
        if not cap.isOpened():
            cap.release()
            return None
        s = self.settings
        if self.source.kind == "v4l2":
            # ask the device for the size and rate; it may deliver others (the frame is resized below)
            if s.width:
                cap.set(cv2.CAP_PROP_FRAME_WIDTH, s.width)
                cap.set(cv2.CAP_PROP_FRAME_HEIGHT, s.height)
            cap.set(cv2.CAP_PROP_FPS, s.rate_hz)
            cap.set(cv2.CAP_PROP_BUFFERSIZE, 1)  # the newest frame, not one queued behind others
        return cap

    def _run(self) -> None:
        s = self.settings
        period_s = 1.0 / s.rate_hz
        backoff_s = s.reconnect_min_s
        cap: cv2.VideoCapture | None = None
        next_s = time.monotonic()
        try:
            while not self._stop.is_set():
                if cap is None:
                    cap = self._open()
                    if cap is None:
                        self._count(open_failures=1)
                        self.log(
                            f"cannot open {self.source.text!r} ({self.source.kind}); trying again in {backoff_s:.2f} s"
                        )
                        self._stop.wait(backoff_s)
                        backoff_s = min(2 * backoff_s, s.reconnect_max_s)
                        continue
                    self._count(opens=1)
                    next_s = time.monotonic()
                if self.source.finite:  # no clock of its own: grab at the rate
                    self._stop.wait(max(0.0, next_s - time.monotonic()))
                    if self._stop.is_set():
                        break
                ok = cap.grab()
                stamp_s = self.clock()
                if not ok:
                    cap.release()
                    cap = None
                    if self.source.finite:
                        self._count(ends=1)
                        if s.end_of_stream == "loop":
                            continue
                        self.log(f"{self.source.text!r} ended; opening it again in {backoff_s:.2f} s")
                    else:
                        self._count(read_failures=1)
                        self.log(f"reading {self.source.text!r} failed (unplugged?); reconnecting in {backoff_s:.2f} s")
                    self._stop.wait(backoff_s)
                    backoff_s = min(2 * backoff_s, s.reconnect_max_s)
                    continue
                now = time.monotonic()
                if now < next_s:  # a live source faster than the rate: keep the buffer fresh, publish when due
                    continue
                next_s = max(next_s + period_s, now)  # no burst after a stall
                ok, bgr = cap.retrieve()
                if not ok or bgr is None:
                    self._count(read_failures=1)
                    continue
                backoff_s = s.reconnect_min_s
                self._deliver(bgr, stamp_s)
        finally:
            if cap is not None:
                cap.release()

    def _deliver(self, frame: NDArray[np.uint8], stamp_s: float) -> None:
        s = self.settings
        if frame.ndim == 2:
            rgb = cv2.cvtColor(frame, cv2.COLOR_GRAY2RGB)
        elif frame.shape[2] == 4:
            rgb = cv2.cvtColor(frame, cv2.COLOR_BGRA2RGB)
        else:
            rgb = cv2.cvtColor(frame, cv2.COLOR_BGR2RGB)
        if s.width and (rgb.shape[1], rgb.shape[0]) != (s.width, s.height):
            shrink = s.width < rgb.shape[1] and s.height < rgb.shape[0]
            rgb = cv2.resize(rgb, (s.width, s.height), interpolation=cv2.INTER_AREA if shrink else cv2.INTER_LINEAR)
        try:
            self.on_frame(rgb, stamp_s)
        except Exception as exc:  # a publisher failing must not end the capture; counted and logged
            self._count(callback_errors=1)
            self.log(f"publishing a frame failed: {type(exc).__name__}: {exc}")
            return
        self._count(frames=1)
