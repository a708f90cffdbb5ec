"""camera_node's policy, without ROS: which intrinsics a frame gets, the resize for the agent, which frames are dropped
and why, and the counts /diagnostics reports.

- Intrinsics come from the driver's CameraInfo (``driver``) or from the calibration file (``file``); either is scaled to
  the frame's size when the aspect ratio matches and the frame is refused otherwise (frame_intrinsics).
- ``output_width`` x ``output_height`` (0 x 0: the frame's own size) resizes every frame for the agent, K scaled
  exactly; a size of another aspect ratio is refused at start, not per frame.
- Wrist cameras: the arm's pose for a frame is that of the joint state nearest the frame's stamp (ArmStateHistory keeps
  the last JOINT_HISTORY_S of them), so a frame delivered late still gets the pose it was taken at; a frame with no
  joint state within ``max_frame_lag_s`` of its stamp is dropped. A frame newer than every joint state takes the
  latest (its age is the node's wall-clock check).
- Every dropped frame is counted by reason; the log gets one line per reason per WARN_PERIOD_S.
"""

from __future__ import annotations

import bisect
import math
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from numpy.typing import NDArray

from robodojo.errors import ConfigError, InvalidCommandError
from robodojo.observation import CameraCalibration
from robodojo.perception.distortion import Distortion
from robodojo.perception.frame_intrinsics import Intrinsics, resize_rgb
from robodojo.perception.image_formats import FrameError, check_frame_size

INTRINSICS_SOURCES = ("driver", "file")
#: One warning per drop reason per this period [s]: a persistent reason must not flood the log or hide a new one.
WARN_PERIOD_S = 5.0


@dataclass(frozen=True)
class StreamSettings:
    """What camera_node does with each frame (its parameters of the same names)."""

    intrinsics: str = "file"
    output_width: int = 0
    output_height: int = 0
    max_frame_lag_s: float = 0.1

    def __post_init__(self) -> None:
        if self.intrinsics not in INTRINSICS_SOURCES:
            raise ConfigError(
                f"parameter 'intrinsics' is {self.intrinsics!r}; choose one of: {', '.join(INTRINSICS_SOURCES)}"
            )
        if (self.output_width == 0) != (self.output_height == 0) or self.output_width < 0 or self.output_height < 0:
            raise ConfigError(
                f"parameters 'output_width' and 'output_height' are {self.output_width}x{self.output_height}; give "
                "both (> 0) to resize, or both 0 to keep each frame's size"
            )
        if self.output_width:
            try:
                check_frame_size(self.output_width, self.output_height)
            except FrameError as exc:
                raise ConfigError(f"output size: {exc}") from None
        if not self.max_frame_lag_s > 0:
            raise ConfigError(f"parameter 'max_frame_lag_s' must be > 0, got {self.max_frame_lag_s!r}")

    @property
    def output_size(self) -> tuple[int, int] | None:
        return (self.output_width, self.output_height) if self.output_width else None


@dataclass(frozen=True)
class StreamFrame:
    """A frame ready for the agent: RGB at the output size and the intrinsics that describe it."""

    rgb: NDArray[np.uint8]
    intrinsics: Intrinsics

    def calibration(self, T_world_cam: NDArray[np.float64]) -> CameraCalibration:
        """This frame's intrinsics with the optical frame's world pose, as the agent side takes them."""
        intr = self.intrinsics
        return CameraCalibration(
            K=intr.K, T_world_cam=T_world_cam, width=intr.width, height=intr.height,
            distortion=intr.distortion.coefficients, distortion_model=intr.distortion.model,
        )  # fmt: skip


def driver_intrinsics(
    k: Sequence[float],
    d: Sequence[float],
    distortion_model: str,
    width: int,
    height: int,
    *,
    binning: tuple[int, int] = (0, 0),
    roi: tuple[int, int, int, int] = (0, 0, 0, 0),
) -> Intrinsics:
    """A driver's CameraInfo fields as Intrinsics; FrameError (kind ``camera_info``) when they describe no camera.

    ``binning`` (x, y) and ``roi`` (x_offset, y_offset, height, width) must be unset (0 or 1; all zero): images with
    them describe a part of the calibrated sensor, which this does not model.
    """
    K = np.asarray(k, dtype=float).reshape(3, 3) if len(k) == 9 else np.zeros((3, 3))
    valid_K = (
        np.all(np.isfinite(K)) and K[0, 0] > 0 and K[1, 1] > 0 and K[2, 2] == 1.0
        and not np.any(K[1:, 0]) and K[2, 1] == 0
    )  # fmt: skip
    if not valid_K:
        raise FrameError("camera_info", f"the driver's CameraInfo has no intrinsic matrix (k={list(k)})")
    if max(binning) > 1 or any(roi):
        raise FrameError(
            "camera_info", f"the driver's CameraInfo sets binning {binning} or roi {roi}; set the driver to full frames"
        )
    try:
        check_frame_size(width, height)
        distortion = Distortion(distortion_model or "plumb_bob", tuple(d))
    except InvalidCommandError as exc:
        raise FrameError("camera_info", f"the driver's CameraInfo: {exc}") from None
    return Intrinsics(K, distortion, width, height)


@dataclass
class FrameCounts:
    """Frames received, published and dropped (by reason) since ``reset``; for /diagnostics."""

    received: int = 0
    published: int = 0
    dropped: Counter[str] = field(default_factory=Counter)

    def values(self) -> list[tuple[str, str]]:
        out = [("frames_received", str(self.received)), ("frames_published", str(self.published))]
        out.append(("frames_dropped", str(sum(self.dropped.values()))))
        out += [(f"dropped_{kind}", str(n)) for kind, n in sorted(self.dropped.items())]
        return out


class CameraStream:
    """The per-frame policy of one camera (module docstring); the node feeds it frames and publishes what it returns."""

    def __init__(self, file_intrinsics: Intrinsics, settings: StreamSettings) -> None:
        self.file_intrinsics = file_intrinsics
        self.settings = settings
        self.driver: Intrinsics | None = None
        self.window = FrameCounts()  # since the last diagnostics report
        self.total = FrameCounts()
        self._warned: dict[str, float] = {}
        self._driver_error: FrameError | None = None

    def set_driver_info(self, info: Intrinsics | FrameError) -> None:
        """The driver's latest CameraInfo, or why it was unusable (frames are then dropped with that reason)."""
        if isinstance(info, FrameError):
            self.driver, self._driver_error = None, info
        else:
            self.driver, self._driver_error = info, None

    def intrinsics_for(self, width: int, height: int) -> Intrinsics:
        """The intrinsics of a ``width`` x ``height`` frame from the configured source; FrameError if none fit."""
        if self.settings.intrinsics == "file":
            return self.file_intrinsics.scaled_to(width, height, source="the calibration file")
        if self.driver is None:
            if self._driver_error is not None:
                raise self._driver_error
            raise FrameError("camera_info", "no CameraInfo from the driver yet (intrinsics: driver)")
        return self.driver.scaled_to(width, height, source="the driver's CameraInfo")

    def frame(self, rgb: NDArray[np.uint8]) -> StreamFrame:
        """A decoded frame at the output size with its intrinsics; FrameError when its intrinsics are unknown."""
        h, w = rgb.shape[:2]
        intrinsics = self.intrinsics_for(w, h)
        size = self.settings.output_size
        if size is None:
            return StreamFrame(rgb, intrinsics)
        return StreamFrame(resize_rgb(rgb, *size), intrinsics.scaled_to(*size, source=f"{w}x{h} frames"))

    # -- counting -------------------------------------------------------------------------------------------------
    def received(self) -> None:
        self.window.received += 1
        self.total.received += 1

    def published(self) -> None:
        self.window.published += 1
        self.total.published += 1

    def dropped(self, error: FrameError, now_s: float) -> bool:
        """Count a dropped frame; whether to log it now (the first of its kind in WARN_PERIOD_S)."""
        self.window.dropped[error.kind] += 1
        self.total.dropped[error.kind] += 1
        if now_s - self._warned.get(error.kind, -math.inf) >= WARN_PERIOD_S:
            self._warned[error.kind] = now_s
            return True
        return False

    def take_window(self) -> FrameCounts:
        """The counts since the last call (for one /diagnostics report), and start a new window."""
        window, self.window = self.window, FrameCounts()
        return window


#: How much /joint_states history a wrist camera keeps [s]: several times a driver's latency (30-100 ms), so a late
#: frame still finds the arm state of its own instant.
JOINT_HISTORY_S = 2.0


class ArmStateHistory:
    """One arm's recent joint states by stamp, to look up the state at a frame's stamp."""

    def __init__(self, arm: str, keep_s: float = JOINT_HISTORY_S) -> None:
        self.arm = arm
        self.keep_s = keep_s
        self._stamps: list[float] = []
        self._states: list[NDArray[np.float64]] = []

    def add(self, stamp_s: float, q: NDArray[np.float64]) -> None:
        """Record the arm's joint angles ``q`` stamped ``stamp_s``; states older than the newest by keep_s go. A stamp
        that far behind the newest is a clock that jumped back (a restarted simulator): the history starts over."""
        if self._stamps and stamp_s < self._stamps[-1] - self.keep_s:
            self._stamps.clear()
            self._states.clear()
        i = bisect.bisect_right(self._stamps, stamp_s)
        self._stamps.insert(i, stamp_s)
        self._states.insert(i, np.array(q, dtype=float))
        cut = bisect.bisect_left(self._stamps, self._stamps[-1] - self.keep_s)
        del self._stamps[:cut], self._states[:cut]

    def at(self, stamp_s: float, max_gap_s: float) -> NDArray[np.float64]:
        """The joint state nearest ``stamp_s``; FrameError ``missing`` without any, ``lag`` when the nearest is more
        than ``max_gap_s`` away, a frame newer than every state included (the arm may have moved since: its joint
        states lag behind the camera)."""
        if not self._stamps:
            raise FrameError("missing", f"no joint state yet for arm {self.arm!r}; its pose is unknown")
        i = bisect.bisect_right(self._stamps, stamp_s)
        nearest = min(
            (j for j in (i - 1, i) if 0 <= j < len(self._stamps)), key=lambda j: abs(self._stamps[j] - stamp_s)
        )
        gap_s = abs(self._stamps[nearest] - stamp_s)
        if gap_s > max_gap_s:
            raise FrameError(
                "lag",
                f"no joint state of arm {self.arm!r} within {max_gap_s} s of the frame's stamp (nearest {gap_s:.3f} s "
                f"away; states kept from {self._stamps[0]:.3f} to {self._stamps[-1]:.3f} s): check the driver's "
                "clock and latency",
            )
        return self._states[nearest]


def check_output_aspect(file_intrinsics: Intrinsics, settings: StreamSettings) -> None:
    """With intrinsics from the file, an output size of another aspect ratio could never be served: refuse at start."""
    size = settings.output_size
    if size is not None and settings.intrinsics == "file":
        try:
            file_intrinsics.scaled_to(*size, source="the calibration file")
        except FrameError as exc:
            raise ConfigError(f"output_width x output_height: {exc}") from None
