"""Lens distortion as ROS CameraInfo states it: the model's name and its coefficients, and what each model does to
normalised image coordinates (x/z, y/z).

ROS names (sensor_msgs/distortion_models) and their OpenCV counterparts:

- ``plumb_bob``: k1, k2, p1, p2[, k3]; OpenCV's standard model (cv2.projectPoints, cv2.undistortPoints).
- ``rational_polynomial``: k1, k2, p1, p2, k3, k4, k5, k6; the same model with a rational radial term
  (1 + k1 r^2 + k2 r^4 + k3 r^6) / (1 + k4 r^2 + k5 r^4 + k6 r^6).
- ``equidistant``: k1, k2, k3, k4; OpenCV's fisheye model (cv2.fisheye), distortion applied to the angle theta.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np
from numpy.typing import ArrayLike, NDArray

from robodojo.errors import InvalidCommandError

PLUMB_BOB = "plumb_bob"
RATIONAL_POLYNOMIAL = "rational_polynomial"
EQUIDISTANT = "equidistant"
#: Model name -> the coefficient counts ROS drivers send for it (plumb_bob: 4 from some drivers, usually 5).
COEFFICIENT_COUNTS: dict[str, tuple[int, ...]] = {PLUMB_BOB: (4, 5), RATIONAL_POLYNOMIAL: (8,), EQUIDISTANT: (4,)}
EPS = 1e-12


@dataclass(frozen=True)
class Distortion:
    """A lens distortion model and its coefficients, checked against each other on construction.

    Raises InvalidCommandError naming the model (and the valid ones) for an unknown model, a wrong count or a
    non-finite coefficient; callers reading a config file turn it into a ConfigError with the file's name.
    """

    model: str = PLUMB_BOB
    coefficients: tuple[float, ...] = (0.0,) * 5

    def __post_init__(self) -> None:
        counts = COEFFICIENT_COUNTS.get(self.model)
        if counts is None:
            raise InvalidCommandError(
                f"distortion model {self.model!r} is not supported; models: {', '.join(COEFFICIENT_COUNTS)}"
            )
        coefficients = tuple(float(v) for v in self.coefficients)
        object.__setattr__(self, "coefficients", coefficients)
        if len(coefficients) not in counts:
            # an empty D is how many drivers say "no distortion" (e.g. a simulator): accept it as zeros
            if not coefficients:
                object.__setattr__(self, "coefficients", (0.0,) * counts[-1])
            else:
                wanted = " or ".join(str(c) for c in counts)
                raise InvalidCommandError(
                    f"distortion model {self.model!r} takes {wanted} coefficients, got {len(coefficients)}"
                )
        if not all(np.isfinite(self.coefficients)):
            raise InvalidCommandError(f"distortion coefficients must be finite, got {list(self.coefficients)}")

    @property
    def array(self) -> NDArray[np.float64]:
        return np.array(self.coefficients, dtype=float)

    @property
    def is_zero(self) -> bool:
        return not any(abs(v) > EPS for v in self.coefficients)

    def distort(self, x: NDArray[np.float64], y: NDArray[np.float64]) -> tuple[NDArray, NDArray]:
        """Ideal normalised coordinates -> distorted normalised coordinates."""
        if self.model == EQUIDISTANT:
            return _distort_equidistant(x, y, self.coefficients)
        return distort_normalized(x, y, self.array)

    def undistort_pixels(self, uv: ArrayLike, K: ArrayLike) -> NDArray[np.float64]:
        """Nx2 pixels (u = col, v = row) -> Nx2 ideal normalised coordinates."""
        pts = np.asarray(uv, dtype=float).reshape(-1, 1, 2)
        K = np.asarray(K, dtype=float)
        if self.model == EQUIDISTANT:
            return cv2.fisheye.undistortPoints(pts, K, self.array).reshape(-1, 2)
        return cv2.undistortPoints(pts, K, self.array).reshape(-1, 2)


def distort_normalized(
    x: NDArray[np.float64], y: NDArray[np.float64], d: NDArray[np.float64]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """OpenCV's standard model applied to normalised coordinates: plumb_bob (k1, k2, p1, p2[, k3]) or
    rational_polynomial (k1, k2, p1, p2, k3, k4, k5, k6)."""
    k1, k2, p1, p2, k3, k4, k5, k6 = (list(d) + [0.0] * 8)[:8]
    r2 = x * x + y * y
    radial = (1 + k1 * r2 + k2 * r2**2 + k3 * r2**3) / (1 + k4 * r2 + k5 * r2**2 + k6 * r2**3)
    xd = x * radial + 2 * p1 * x * y + p2 * (r2 + 2 * x * x)
    yd = y * radial + p1 * (r2 + 2 * y * y) + 2 * p2 * x * y
    return xd, yd


def _distort_equidistant(
    x: NDArray[np.float64], y: NDArray[np.float64], d: tuple[float, ...]
) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """OpenCV's fisheye model: theta_d = theta (1 + k1 theta^2 + k2 theta^4 + k3 theta^6 + k4 theta^8)."""
    k1, k2, k3, k4 = d
    r = np.sqrt(x * x + y * y)
    theta = np.arctan(r)
    t2 = theta * theta
    theta_d = theta * (1 + k1 * t2 + k2 * t2**2 + k3 * t2**3 + k4 * t2**4)
    scale = np.where(r > EPS, theta_d / np.where(r > EPS, r, 1.0), 1.0)
    return x * scale, y * scale
