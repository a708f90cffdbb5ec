"""Intrinsics for the frame at hand: a calibration made at one size used at another, and an image resized for the
agent, with K scaled exactly.

Pixel-centre convention (the one CameraModel and CameraCalibration use): pixel (col, row) covers [col - 0.5,
col + 0.5) x [row - 0.5, row + 0.5), so the image spans [-0.5, width - 0.5). Scaling an image from width W to W' maps
edge to edge: u' = (u + 0.5) * W'/W - 0.5. So fx' = fx * sx, s' = s * sx, cx' = (cx + 0.5) * sx - 0.5, and likewise
for y. cv2.resize samples with the same half-pixel convention (INTER_LINEAR, INTER_AREA), and a sensor binned 2x2
(or a camera delivering its full field of view at another resolution) obeys it as well. Distortion coefficients act on
normalised coordinates and do not change.

A calibration is only used at another size when the aspect ratio matches: a crop or another field of view would
shift the principal point in a way no scale describes, so the frame is refused with one line saying so.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import NDArray

from robodojo.perception.distortion import Distortion
from robodojo.perception.image_formats import FrameError

#: Two sizes have the same aspect ratio when scaling one to the other's width gets its height within this many
#: pixels (1280x720 -> 640x360 exactly; 848x480 -> 640x362.3: refused).
ASPECT_TOLERANCE_PX = 0.5


@dataclass(frozen=True)
class Intrinsics:
    """A camera's K, lens distortion and the image size they describe."""

    K: NDArray[np.float64]
    distortion: Distortion
    width: int
    height: int

    def scaled_to(self, width: int, height: int, *, source: str = "the calibration") -> Intrinsics:
        """These intrinsics for an image of ``width`` x ``height`` showing the same field of view.

        Raises FrameError (kind ``aspect``) naming ``source`` when the aspect ratio differs.
        """
        if (width, height) == (self.width, self.height):
            return self
        if abs(self.height * width / self.width - height) > ASPECT_TOLERANCE_PX:
            raise FrameError(
                "aspect",
                f"a {width}x{height} frame has another aspect ratio than {source} ({self.width}x{self.height}); "
                "calibrate the camera at this size or set the driver to a size of the same aspect ratio",
            )
        return Intrinsics(scale_K(self.K, width / self.width, height / self.height), self.distortion, width, height)


def scale_K(K: NDArray[np.float64], sx: float, sy: float) -> NDArray[np.float64]:
    """K for an image scaled by ``sx`` (columns) and ``sy`` (rows), pixel centres at integers (module docstring)."""
    S = np.array([[sx, 0.0, 0.5 * sx - 0.5], [0.0, sy, 0.5 * sy - 0.5], [0.0, 0.0, 1.0]])
    return S @ np.asarray(K, dtype=float)


def resize_rgb(rgb: NDArray[np.uint8], width: int, height: int) -> NDArray[np.uint8]:
    """``rgb`` resized to ``width`` x ``height``: area averaging when shrinking (no aliasing), bilinear when growing."""
    h, w = rgb.shape[:2]
    if (w, h) == (width, height):
        return rgb
    interpolation = cv2.INTER_AREA if width < w and height < h else cv2.INTER_LINEAR
    return cv2.resize(rgb, (width, height), interpolation=interpolation)
