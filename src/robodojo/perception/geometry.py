"""Metric 3D from calibrated pixels: back-projection onto a horizontal plane, triangulation across views, and
world maps from depth images.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from numpy.typing import NDArray

from robodojo.perception.camera import CameraModel

PARALLEL_COS = 1e-6  # |ray . z| below this: the ray runs parallel to a horizontal plane
MIN_RAY_ANGLE_DEG = 0.5  # rays closer than this in direction cannot fix depth
MAX_REPROJECTION_PX = 10.0  # above this the pixels do not show one point
REFINE_ITERATIONS = 10
NUMERIC_STEP_M = 1e-6
Pixel = tuple[float, float]  # (row, col)


@dataclass(frozen=True)
class PlanePoint:
    """Where a pixel's ray meets the horizontal plane z = plane_z."""

    found: bool
    point_m: tuple[float, float, float] | None = None
    distance_m: float | None = None  # from the camera along the ray
    reason: str = ""


@dataclass(frozen=True)
class Triangulation:
    """One point seen in several views: position, worst reprojection error [px], widest gap between rays [mm]."""

    found: bool
    point_m: tuple[float, float, float] | None = None
    reprojection_error_px: float | None = None
    ray_gap_mm: float | None = None
    reason: str = ""


@dataclass(frozen=True)
class WorldMap:
    """Per-pixel world xyz [m] from a depth image; ``valid`` marks pixels with a depth reading."""

    ok: bool
    xyz_m: NDArray[np.float64] | None = None  # HxWx3
    valid: NDArray[np.bool_] | None = None  # HxW
    reason: str = ""


def _pixel_problem(camera: CameraModel, row: object, col: object) -> str:
    if any(isinstance(v, bool) or not isinstance(v, int | float | np.integer | np.floating) for v in (row, col)):
        return f"pixel (row, col) must be two numbers, got ({row!r}, {col!r})"
    if not (math.isfinite(row) and math.isfinite(col)):  # type: ignore[arg-type]
        return f"pixel ({row}, {col}) is not finite"
    if not camera.in_image(row, col):  # type: ignore[arg-type]
        return f"pixel ({row}, {col}) is outside the {camera.width}x{camera.height} image of '{camera.name}'"
    return ""


def back_project(camera: CameraModel, row: float, col: float, plane_z: float) -> PlanePoint:
    """Intersect the ray through pixel (row, col) with the horizontal plane z = ``plane_z`` [m]."""
    problem = _pixel_problem(camera, row, col)
    if problem:
        return PlanePoint(found=False, reason=problem)
    if isinstance(plane_z, bool) or not isinstance(plane_z, int | float | np.floating) or not math.isfinite(plane_z):
        return PlanePoint(found=False, reason=f"plane_z must be a finite height in metres, got {plane_z!r}")
    ray = camera.pixel_ray(row, col)
    if abs(ray.direction[2]) < PARALLEL_COS:
        return PlanePoint(found=False, reason=f"the ray through pixel ({row}, {col}) runs parallel to z={plane_z:.3f}")
    t = (plane_z - ray.origin_m[2]) / ray.direction[2]
    if t <= 0:
        return PlanePoint(
            found=False,
            reason=f"the plane z={plane_z:.3f} is behind '{camera.name}' along pixel ({row}, {col}): "
            "the ray points away from it",
        )
    p = ray.origin_m + t * ray.direction
    return PlanePoint(found=True, point_m=(float(p[0]), float(p[1]), float(p[2])), distance_m=float(t))


def _closest_gap(o1, d1, o2, d2) -> float:
    """Shortest distance between two lines (rays treated as lines)."""
    n = np.cross(d1, d2)
    norm = np.linalg.norm(n)
    if norm < 1e-12:
        return float(np.linalg.norm(np.cross(o2 - o1, d1)))
    return float(abs(np.dot(o2 - o1, n)) / norm)


def _reprojection(views: Sequence[tuple[CameraModel, Pixel]], p: NDArray[np.float64]) -> NDArray[np.float64]:
    """Stacked (du, dv) residuals [px] of point p in every view."""
    res = []
    for cam, (row, col) in views:
        uv, _ = cam.project_uv(p)
        res.extend([uv[0, 0] - col, uv[0, 1] - row])
    return np.array(res)


def triangulate(views: Sequence[tuple[CameraModel, Pixel]]) -> Triangulation:
    """The world point seen at pixel (row, col) in each of two or more calibrated views.

    Linear (DLT) triangulation on undistorted coordinates, refined by Gauss-Newton on the reprojection error.
    """
    if len(views) < 2:
        return Triangulation(found=False, reason=f"need at least two views, got {len(views)}")
    for cam, px in views:
        if not isinstance(px, Sequence | np.ndarray) or len(px) != 2:
            return Triangulation(found=False, reason=f"pixel for '{cam.name}' must be (row, col), got {px!r}")
        problem = _pixel_problem(cam, *px)
        if problem:
            return Triangulation(found=False, reason=problem)
    origins, dirs = [], []
    rows = []
    for cam, (row, col) in views:
        x, y = cam.normalized([row], [col])[0]
        P = cam.T_cam_world[:3, :]
        rows.extend([x * P[2] - P[0], y * P[2] - P[1]])
        origins.append(cam.position_m)
        dirs.append(cam.pixel_rays([row], [col])[0])
    max_angle = max(
        math.degrees(math.acos(np.clip(abs(np.dot(dirs[i], dirs[j])), -1.0, 1.0)))
        for i in range(len(dirs))
        for j in range(i + 1, len(dirs))
    )
    if max_angle < MIN_RAY_ANGLE_DEG:
        return Triangulation(
            found=False,
            reason=f"the rays are within {max_angle:.2f} deg of parallel: the views see the point from the same "
            "direction and cannot fix its depth",
        )
    A = np.array(rows)
    _, _, vt = np.linalg.svd(A)
    X = vt[-1]
    if abs(X[3]) < 1e-12:
        return Triangulation(found=False, reason="the rays meet at infinity: the views do not overlap")
    p = X[:3] / X[3]
    targets = np.array([(col, row) for _, (row, col) in views], dtype=float)
    nudges = np.vstack([np.zeros(3), np.eye(3) * NUMERIC_STEP_M])
    for _ in range(REFINE_ITERATIONS):
        # The point and its three nudged copies projected in one call per view: residuals and a numeric Jacobian.
        uv = np.stack([cam.project_uv(p + nudges)[0] for cam, _ in views])  # (views, 4, 2)
        r = (uv[:, 0] - targets).ravel()
        J = ((uv[:, 1:] - uv[:, :1]) / NUMERIC_STEP_M).transpose(0, 2, 1).reshape(-1, 3)
        step = np.linalg.lstsq(J, -r, rcond=None)[0]
        p = p + step
        if np.linalg.norm(step) < 1e-9:
            break
    for cam, _ in views:
        if (cam.T_cam_world @ np.append(p, 1.0))[2] <= 0:
            return Triangulation(
                found=False, reason=f"the rays meet behind camera '{cam.name}': the pixels do not match"
            )
    residual = _reprojection(views, p).reshape(-1, 2)
    error = float(np.max(np.linalg.norm(residual, axis=1)))
    gap = max(
        _closest_gap(origins[i], dirs[i], origins[j], dirs[j])
        for i in range(len(views))
        for j in range(i + 1, len(views))
    )
    point = (float(p[0]), float(p[1]), float(p[2]))
    if error > MAX_REPROJECTION_PX:
        return Triangulation(
            found=False,
            point_m=point,
            reprojection_error_px=error,
            ray_gap_mm=gap * 1e3,
            reason=f"the pixels do not show one point: the rays pass {gap * 1e3:.0f} mm apart "
            f"({error:.1f} px reprojection error)",
        )
    return Triangulation(found=True, point_m=point, reprojection_error_px=error, ray_gap_mm=gap * 1e3)


def world_map(camera: CameraModel, depth_m: NDArray[np.floating] | None) -> WorldMap:
    """World xyz of every pixel of a depth image (z along the optical axis, as rendered or from RGB-D drivers)."""
    if depth_m is None:
        return WorldMap(ok=False, reason=f"camera '{camera.name}' has no depth: use back_project or triangulate")
    depth = np.asarray(depth_m, dtype=float)
    if depth.shape != (camera.height, camera.width):
        return WorldMap(
            ok=False,
            reason=f"depth image is {depth.shape[1] if depth.ndim > 1 else '?'}x{depth.shape[0]}, "
            f"camera '{camera.name}' is {camera.width}x{camera.height}",
        )
    rows, cols = np.mgrid[0 : camera.height, 0 : camera.width]
    xy = camera.normalized(rows, cols).reshape(camera.height, camera.width, 2)
    valid = np.isfinite(depth) & (depth > 0)
    z = np.where(valid, depth, 0.0)
    cam = np.stack([xy[..., 0] * z, xy[..., 1] * z, z], axis=-1)
    xyz = cam @ camera.T_world_cam[:3, :3].T + camera.T_world_cam[:3, 3]
    xyz[~valid] = np.nan
    return WorldMap(ok=True, xyz_m=xyz, valid=valid)
