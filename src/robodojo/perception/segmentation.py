"""Segment the object under a pixel and measure where it stands, from RGB only (no depth).

Two parts:

* a pluggable :class:`Segmenter` (``mask(image, seed_px) -> bool HxW | None``) with an OpenCV implementation,
  :class:`ColorRegionSegmenter`, that grows a colour region from the clicked pixel. A learned segmenter (SAM and the
  like) can replace it by implementing the same method.
* :func:`segment`: the mask plus its 3D position. Without depth the position comes from the shape of the mask under
  the "upright prism" model explained below, and from a second calibrated view when one is given.

Method of the colour segmenter. Objects are shaded: the top face of a box is brighter than its sides, a cylinder's
side is a gradient, and bright faces clip and desaturate. All faces keep the object's hue, so the colour distance to
the seed is the chord between the two colours on the hue-saturation disc with the saturation difference at half
weight; brightness (HSV value) is only bounded (0.2x..2.5x the seed's) so that dark sides join but black or white
objects stay apart from the table. The seed colour is the median of the 5x5 pixels around the click that share the
clicked pixel's colour. The tolerance adapts to the local colours: the region containing the seed (4-connected
flood fill) is grown at increasing tolerances, and the last one before it leaks (area jumps 4x by more than 1500 px,
or beyond 35% of the image) is kept; inside an object the region grows from the clicked face to the other faces, a
leak into the table multiplies it. The region is then opened (3x3) to cut one-pixel bridges and its holes filled;
optional GrabCut refinement starts from it. A seed with the image's dominant colour (the table), or whose region
fills a large part of the image at once, is refused: the pixel is on the table or background.

3D method (one view). Assumptions: the object stands upright on the table (plane z = ``table_z_m``), its sides are
vertical (block, cylinder, plate, pad; a prism over its footprint), its footprint is convex, and the clicked pixel
is on its top face, which is visible. The top face is the part of the mask with the seed pixel's RGB (within 6% of
its brightness, connected to the seed). For a candidate top height h, the top face's
outline back-projected onto the plane z = h gives the footprint; that footprint extruded from the table to h
projects to a predicted silhouette (the convex hull of the top outline and the footprint projected at table
height). The height whose predicted silhouette best matches the mask (IoU) is the top height: the visible side
faces and the mask's lowest contact with the table fix it. x, y are the centroid of the footprint at that height.
The height is well conditioned when the camera sees the sides (head and wrist cameras looking obliquely) and poorly
when it looks straight down; a second view removes that weakness.

3D method (two views). The one-view estimate of the top-face centre is projected into the second view, the object
is segmented there from that pixel (refused if the pixel is outside the image or shows another colour), and the
height sweep scores the sum of both views' silhouette IoUs.

Not covered: open containers (a bowl's top is a rim, not a face: the click lands on its inside, and the result is
off by 1-4 cm), objects cut off by the image edge (``touches_border``; the visible top face is not the whole top),
stacked objects (the prism is assumed to reach down to the table), lying or tilted objects.

``world_xyz_m`` is the centre of the object's top face: x, y of the footprint's centroid (the object's vertical
axis) and z = ``top_z_m``, the measured top-face height. For a box or cylinder resting on the table its body centre
is at (x, y, (table_z_m + top_z_m) / 2).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

import cv2
import numpy as np
from numpy.typing import NDArray

from robodojo.perception.camera import CameraModel
from robodojo.perception.geometry import _pixel_problem

MAX_HEIGHT_M = 0.3  # tallest object the height sweep considers, above the table
COARSE_STEP_M = 0.004
FINE_STEP_M = 0.0005
MIN_AREA_PX = 12
MAX_AREA_FRACTION = 0.35  # a region larger than this share of the image is table or background
MIN_TOP_FRACTION = 0.08  # a top face smaller than this share of the mask: the click is not on a top face
MIN_FIT_IOU = 0.5  # predicted silhouette vs mask below this: the prism model does not explain the mask
MIN_SECOND_VIEW_IOU = 0.3
SECOND_VIEW_COLOUR_TOLERANCE = 0.15  # other cameras see the object under other light


# -- segmenters ------------------------------------------------------------------------------------------------------
@runtime_checkable
class Segmenter(Protocol):
    """Anything that returns the object mask under a pixel: ``image`` HxWx3 uint8 RGB, ``seed_px`` (row, col)."""

    def mask(self, image: np.ndarray, seed_px: tuple[int, int]) -> np.ndarray | None:
        """A bool HxW mask of the object containing ``seed_px``, or None if there is none."""
        ...


@dataclass(frozen=True)
class Region:
    """A segmenter's answer with its reason: the mask, the seed's chromaticity and brightness, the tolerance."""

    found: bool
    mask: NDArray[np.bool_] | None = None
    colour: tuple[float, float, float] | None = None  # hue [rad], saturation, value of the seed
    tolerance: float = 0.0  # the colour-distance tolerance the region was grown with
    reason: str = ""


def _nearest(v: float) -> int:
    """The nearest integer pixel index."""
    return math.floor(float(v) + 0.5)


def _hsv(image: NDArray[np.uint8]) -> tuple[NDArray[np.float32], NDArray[np.float32], NDArray[np.float32]]:
    """Hue [rad], saturation (0..1) and value (0..1)."""
    hsv = cv2.cvtColor(image.astype(np.float32) * np.float32(1 / 255), cv2.COLOR_RGB2HSV)
    return np.deg2rad(hsv[..., 0]), hsv[..., 1], hsv[..., 2]


def _colour_distance(hue, sat, val, seed: tuple[float, float, float], ratio: tuple[float, float]) -> NDArray:
    """Shading-tolerant colour distance to the seed: hue difference weighted by saturation (the chord between
    the two colours on the hue-saturation disc) plus half the saturation difference (highlights and clipping
    desaturate a lit face); brightness outside ``ratio`` x the seed's is excluded (distance 1)."""
    h0, s0, v0 = seed
    dist = np.sqrt((0.5 * (sat - s0)) ** 2 + 4.0 * sat * s0 * np.sin((hue - h0) * 0.5) ** 2)
    rel = val / max(v0, 1e-3)
    dist[(rel < ratio[0]) | (rel > ratio[1])] = 1.0
    return dist


def _fill_holes(mask: NDArray[np.uint8]) -> NDArray[np.uint8]:
    """Fill the holes of a 0/1 mask (regions of 0 not connected to the border)."""
    padded = np.pad(mask, 1)
    flood = padded.copy()
    ff_mask = np.zeros((padded.shape[0] + 2, padded.shape[1] + 2), np.uint8)
    cv2.floodFill(flood, ff_mask, (0, 0), 1)
    return (padded | (1 - flood))[1:-1, 1:-1]


def _seed_component(mask: NDArray[np.uint8], row: int, col: int) -> NDArray[np.uint8] | None:
    """The 4-connected component of ``mask`` containing (row, col), or the one nearest to it within 3 px."""
    n, labels = cv2.connectedComponents(mask, connectivity=4)
    if n <= 1:
        return None
    label = labels[row, col]
    if label == 0:
        r0, c0 = max(row - 3, 0), max(col - 3, 0)
        window = labels[r0 : row + 4, c0 : col + 4]
        ys, xs = np.nonzero(window)
        if len(ys) == 0:
            return None
        k = int(np.argmin((ys + r0 - row) ** 2 + (xs + c0 - col) ** 2))
        label = window[ys[k], xs[k]]
    return (labels == label).astype(np.uint8)


LEVELS = (0.03, 0.05, 0.07, 0.09, 0.11, 0.14, 0.17, 0.2, 0.24, 0.28)  # colour-distance tolerances tried in turn
DIST_SCALE = 255 / 0.5  # colour distance -> uint8 for flood fill
GROW_WINDOW_PX = 100  # half-size of the first region-growing window


class ColorRegionSegmenter:
    """Colour region growing from the clicked pixel (see the module docstring). Implements :class:`Segmenter`.

    The tolerance adapts to the object: the region is grown at increasing colour-distance tolerances ``levels``
    and the last one before the region leaks (grows ``leak_factor`` times and by more than ``leak_min_px``, or
    beyond ``max_area_fraction`` of the image) is kept: inside an object the region grows from the seed's face
    to the other, differently shaded faces; a leak into the table multiplies it.
    ``brightness_ratio``: accepted brightness (HSV value) range relative to the seed (shaded sides are darker);
    ``grabcut``: refine the grown region with a few GrabCut iterations initialised from it (slower; for real
    images with soft edges).
    """

    def __init__(
        self,
        *,
        levels: tuple[float, ...] = LEVELS,
        leak_factor: float = 4.0,
        leak_min_px: int = 1500,
        brightness_ratio: tuple[float, float] = (0.2, 2.5),
        max_area_fraction: float = MAX_AREA_FRACTION,
        grabcut: bool = False,
    ) -> None:
        self.levels = tuple(sorted(levels))
        self.leak_factor = leak_factor
        self.leak_min_px = leak_min_px
        self.brightness_ratio = brightness_ratio
        self.max_area_fraction = max_area_fraction
        self.grabcut = grabcut

    def mask(self, image: np.ndarray, seed_px: tuple[int, int]) -> np.ndarray | None:
        return self.region(image, seed_px).mask

    def region(self, image: np.ndarray, seed_px: tuple[int, int]) -> Region:
        problem = _image_problem(image)
        if problem:
            return Region(found=False, reason=problem)
        h, w = image.shape[:2]
        row, col = _nearest(seed_px[0]), _nearest(seed_px[1])
        if not (0 <= row < h and 0 <= col < w):
            return Region(found=False, reason=f"pixel ({seed_px[0]}, {seed_px[1]}) is outside the {w}x{h} image")
        # Seed colour: the median of the 5x5 window's pixels of the seed pixel's colour (robust to a click on an edge).
        r0, c0 = max(row - 2, 0), max(col - 2, 0)
        hue, sat, val = _hsv(image[r0 : row + 3, c0 : col + 3])
        centre = (float(hue[row - r0, col - c0]), float(sat[row - r0, col - c0]), float(val[row - r0, col - c0]))
        close = _colour_distance(hue, sat, val, centre, (0.8, 1.25)) < self.levels[0]
        seed = (
            float(np.angle(np.mean(np.exp(1j * hue[close])))),
            float(np.median(sat[close])),
            float(np.median(val[close])),
        )
        # The image's dominant colour is the table or background: refuse seeds of that colour.
        hue, sat, val = _hsv(image[::8, ::8])
        dominant = (float(np.angle(np.mean(np.exp(1j * hue)))), float(np.median(sat)), float(np.median(val)))
        to_dominant = _colour_distance(
            np.array([seed[0]]), np.array([seed[1]]), np.array([seed[2]]), dominant, (0.5, 2.0)
        )
        if to_dominant[0] < self.levels[0]:
            return Region(
                found=False,
                reason=f"pixel ({row}, {col}) has the image's dominant colour (the table or background), "
                "not an object's",
            )
        # Grow in a window around the seed first (fast); again in the whole image if the region reaches its edge.
        grown = self._grow(image, row, col, seed, GROW_WINDOW_PX)
        if grown is None:
            grown = self._grow(image, row, col, seed, max(h, w))
        assert grown is not None
        region, tol, area = grown
        if region is None:
            return Region(
                found=False,
                reason=f"the region grown from pixel ({row}, {col}) covers {100 * area / (h * w):.0f}% of the image: "
                "the pixel is on the table or background, not on an object",
            )
        if self.grabcut and region.sum() >= MIN_AREA_PX:
            region = _grabcut(image, region, row, col)
        return Region(found=True, mask=region.astype(bool), colour=seed, tolerance=tol)

    def _grow(
        self, image: NDArray[np.uint8], row: int, col: int, seed: tuple[float, float, float], half: int
    ) -> tuple[NDArray[np.uint8] | None, float, int] | None:
        """(region 0/1 HxW or None if it leaks at once, tolerance, area) grown in a window of ``half`` px around the
        seed; None if the region reaches an edge of the window inside the image (the window is too small)."""
        h, w = image.shape[:2]
        r0, r1, c0, c1 = max(row - half, 0), min(row + half + 1, h), max(col - half, 0), min(col + half + 1, w)
        hue, sat, val = _hsv(image[r0:r1, c0:c1])
        dist = _colour_distance(hue, sat, val, seed, self.brightness_ratio)
        dist8 = np.clip(dist * DIST_SCALE, 0, 255).astype(np.uint8)
        rr, cc = row - r0, col - c0
        ff = np.zeros((r1 - r0 + 2, c1 - c0 + 2), np.uint8)
        flags = 4 | cv2.FLOODFILL_FIXED_RANGE | cv2.FLOODFILL_MASK_ONLY | (1 << 8)
        best, best_rect, best_area, tol, area = None, (0, 0, 0, 0), 0, 0.0, 0
        max_area = self.max_area_fraction * h * w
        for level in self.levels:
            ff[:] = 0
            # (floodFill's own pixel count is unreliable with FLOODFILL_MASK_ONLY: count the mask in its rect.)
            up = max(int(level * DIST_SCALE) - int(dist8[rr, cc]), 0)
            x, y, rw, rh = cv2.floodFill(dist8, ff, (cc, rr), 0, 255, up, flags)[3]
            area = int(np.count_nonzero(ff[y + 1 : y + rh + 1, x + 1 : x + rw + 1]))
            leaked = area > max_area or (
                best is not None and area > self.leak_factor * best_area and area - best_area > self.leak_min_px
            )
            if leaked:
                break
            best, best_rect, best_area, tol = ff[1:-1, 1:-1].copy(), (x, y, rw, rh), area, level
        if best is None:
            return None, 0.0, area
        x, y, rw, rh = best_rect
        at_edge = (
            (y == 0 and r0 > 0)
            or (x == 0 and c0 > 0)
            or (y + rh == r1 - r0 and r1 < h)
            or (x + rw == c1 - c0 and c1 < w)
        )
        if at_edge:
            return None
        region = best
        opened = cv2.morphologyEx(region, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
        opened = _seed_component(opened, rr, cc)
        if opened is not None and opened.sum() >= MIN_AREA_PX:
            region = opened
        out = np.zeros((h, w), np.uint8)
        out[r0:r1, c0:c1] = _fill_holes(region)
        return out, tol, best_area


def _grabcut(image: NDArray[np.uint8], region: NDArray[np.uint8], row: int, col: int) -> NDArray[np.uint8]:
    """Refine a region with GrabCut in a box around it: eroded region = sure object, far outside = sure background."""
    ys, xs = np.nonzero(region)
    pad = max(8, int(0.3 * max(np.ptp(ys), np.ptp(xs))))
    h, w = region.shape
    r0, r1, c0, c1 = (
        max(ys.min() - pad, 0),
        min(ys.max() + pad + 1, h),
        max(xs.min() - pad, 0),
        min(xs.max() + pad + 1, w),
    )
    sub = region[r0:r1, c0:c1]
    gc = np.where(sub > 0, cv2.GC_PR_FGD, cv2.GC_PR_BGD).astype(np.uint8)
    gc[cv2.erode(sub, np.ones((5, 5), np.uint8)) > 0] = cv2.GC_FGD
    gc[cv2.dilate(sub, np.ones((9, 9), np.uint8)) == 0] = cv2.GC_BGD
    bgd, fgd = np.zeros((1, 65), np.float64), np.zeros((1, 65), np.float64)
    cv2.grabCut(np.ascontiguousarray(image[r0:r1, c0:c1, ::-1]), gc, None, bgd, fgd, 2, cv2.GC_INIT_WITH_MASK)
    refined = np.zeros_like(region)
    refined[r0:r1, c0:c1] = ((gc == cv2.GC_FGD) | (gc == cv2.GC_PR_FGD)).astype(np.uint8)
    out = _seed_component(refined, row, col)
    return _fill_holes(out) if out is not None else region


def _image_problem(image: object) -> str:
    if not isinstance(image, np.ndarray) or image.ndim != 3 or image.shape[2] != 3 or image.dtype != np.uint8:
        desc = f"{image.dtype} array of shape {image.shape}" if isinstance(image, np.ndarray) else type(image).__name__
        return f"image must be an HxWx3 uint8 RGB array, got {desc}"
    if image.shape[0] < 2 or image.shape[1] < 2:
        return f"image is too small ({image.shape[1]}x{image.shape[0]})"
    return ""


# -- segment + 3D ----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Segmentation:
    """The object under a pixel: its mask and where it stands.

    ``world_xyz_m`` is the centre of the top face (x, y on the object's vertical axis, z = ``top_z_m``);
    ``height_m`` = top_z_m - table_z_m; ``footprint_xy_m`` the top face outline on the table (Nx2, convex);
    ``fit_iou`` how well the upright-prism model explains the mask(s) (1 = exactly); ``views`` 1 or 2;
    ``touches_border``: the mask reaches the image edge, so part of the object may be cut off (less accurate 3D).
    """

    found: bool
    mask: NDArray[np.bool_] | None = None
    centroid_px: tuple[float, float] | None = None  # (row, col) of the mask
    area_px: int = 0
    world_xyz_m: tuple[float, float, float] | None = None
    top_z_m: float | None = None
    height_m: float | None = None
    footprint_xy_m: NDArray[np.float64] | None = None
    fit_iou: float | None = None
    views: int = 1
    touches_border: bool = False
    reason: str = ""


@dataclass(frozen=True)
class _View:
    camera: CameraModel
    mask: NDArray[np.uint8]  # 0/1 HxW
    roi: tuple[int, int, int, int]  # r0, r1, c0, c1

    @classmethod
    def of(cls, camera: CameraModel, mask: NDArray[np.uint8]) -> _View:
        ys, xs = np.nonzero(mask)
        pad = max(10, int(0.5 * max(ys.max() - ys.min(), xs.max() - xs.min())))
        h, w = mask.shape
        roi = (max(ys.min() - pad, 0), min(ys.max() + pad + 1, h), max(xs.min() - pad, 0), min(xs.max() + pad + 1, w))
        return cls(camera, mask, roi)

    def ious(self, tops: Sequence[NDArray[np.float64]], table_z: float) -> NDArray[np.float64]:
        """IoU with the mask of the prism silhouette for each candidate top outline (N_k x 3 world points)."""
        r0, r1, c0, c1 = self.roi
        target = self.mask[r0:r1, c0:c1]
        target_area = int(target.sum())
        sizes = [len(t) for t in tops]
        pts = np.concatenate([np.concatenate([t, t * [1, 1, 0] + [0, 0, table_z]]) for t in tops])
        uv, front = self.camera.project_uv(pts)
        uv -= np.array([c0, r0])
        out = np.zeros(len(tops))
        canvas = np.zeros_like(target)
        limit = 4.0 * max(target.shape)
        start = 0
        for k, n in enumerate(sizes):
            sl = slice(start, start + 2 * n)
            start += 2 * n
            if n < 3 or not front[sl].all() or not np.all(np.abs(uv[sl]) < limit):
                continue
            hull = cv2.convexHull(np.round(uv[sl]).astype(np.int32))
            canvas[:] = 0
            cv2.fillConvexPoly(canvas, hull, 1)
            inter = int(np.count_nonzero(canvas & target))
            out[k] = inter / (target_area + int(np.count_nonzero(canvas)) - inter)
        return out


def _fail(reason: str, **kw) -> Segmentation:
    return Segmentation(found=False, reason=reason, **kw)


def _top_face(image: NDArray[np.uint8], mask: NDArray[np.uint8], row: int, col: int) -> NDArray[np.uint8]:
    """The part of ``mask`` with the seed pixel's colour and brightness (the face the seed is on), connected to it."""
    ys, xs = np.nonzero(mask)
    r0, r1, c0, c1 = ys.min(), ys.max() + 1, xs.min(), xs.max() + 1
    sub = image[r0:r1, c0:c1].astype(np.float32)
    rr, cc = row - r0, col - c0
    win = sub[max(rr - 1, 0) : rr + 2, max(cc - 1, 0) : cc + 2].reshape(-1, 3)
    seed = np.median(win, axis=0)
    seed_i = float(seed.sum()) + 1.0
    diff = np.abs(sub - seed).sum(axis=2)
    same = ((diff < 0.06 * seed_i + 6.0) & (mask[r0:r1, c0:c1] > 0)).astype(np.uint8)
    comp = _seed_component(same, rr, cc)
    out = np.zeros_like(mask)
    if comp is None:
        return out
    opened = cv2.morphologyEx(comp, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    opened = _seed_component(opened, rr, cc)
    if opened is not None and opened.sum() >= 0.5 * comp.sum():
        comp = opened
    out[r0:r1, c0:c1] = _fill_holes(comp)
    return out


def _outline(mask: NDArray[np.uint8]) -> NDArray[np.float64]:
    """Nx2 (row, col) outline of a mask's convex hull (pixel centres)."""
    contours, _ = cv2.findContours(mask, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    pts = np.concatenate(contours).reshape(-1, 2)
    hull = cv2.convexHull(pts).reshape(-1, 2).astype(float)
    return hull[:, ::-1]


def _polygon_centroid(xy: NDArray[np.float64]) -> tuple[float, float]:
    x, y = xy[:, 0], xy[:, 1]
    x1, y1 = np.roll(x, -1), np.roll(y, -1)
    cross = x * y1 - x1 * y
    area = cross.sum() / 2
    if abs(area) < 1e-12:
        return float(x.mean()), float(y.mean())
    return float(((x + x1) * cross).sum() / (6 * area)), float(((y + y1) * cross).sum() / (6 * area))


def _lift(rays: NDArray[np.float64], origin: NDArray[np.float64], z: NDArray[np.float64]) -> NDArray[np.float64]:
    """Points where rays (N x 3) from ``origin`` meet the planes z (H): H x N x 3 (NaN where a plane is behind)."""
    t = (z[:, None] - origin[2]) / rays[None, :, 2]
    t = np.where(t > 0, t, np.nan)
    return origin + t[..., None] * rays[None]


def segment(
    image: np.ndarray,
    camera: CameraModel,
    row: float,
    col: float,
    *,
    table_z_m: float,
    segmenter: Segmenter | None = None,
    second_view: tuple[np.ndarray, CameraModel] | None = None,
) -> Segmentation:
    """Segment the object whose top face shows at pixel (row, col) of ``image`` and measure its top-face centre.

    ``image`` HxWx3 uint8 RGB from ``camera``; ``table_z_m`` the table height (e.g. from a table-plane measurement);
    ``segmenter`` defaults to :class:`ColorRegionSegmenter`; ``second_view`` (image, camera) refines the height.
    See the module docstring for the method and its assumptions. Never raises on bad input: ``found`` is False
    and ``reason`` says why.
    """
    problem = _image_problem(image)
    if problem:
        return _fail(problem)
    if image.shape[:2] != (camera.height, camera.width):
        return _fail(
            f"image is {image.shape[1]}x{image.shape[0]}, camera '{camera.name}' is {camera.width}x{camera.height}"
        )
    problem = _pixel_problem(camera, row, col)
    if problem:
        return _fail(problem)
    if (
        isinstance(table_z_m, bool)
        or not isinstance(table_z_m, int | float | np.floating)
        or not math.isfinite(table_z_m)
    ):
        return _fail(f"table_z_m must be a finite height in metres, got {table_z_m!r}")
    if camera.position_m[2] <= table_z_m:
        return _fail(f"camera '{camera.name}' is not above the table (z={camera.position_m[2]:.3f} m)")
    r, c = min(max(_nearest(row), 0), camera.height - 1), min(max(_nearest(col), 0), camera.width - 1)
    segmenter = segmenter or ColorRegionSegmenter()
    mask, reason = _run_segmenter(segmenter, image, (r, c))
    if mask is None:
        return _fail(reason)
    area = int(mask.sum())
    h, w = mask.shape
    if area == 0:
        return _fail(f"the segmenter returned an empty mask at pixel ({r}, {c})")
    if not mask[r, c]:
        return _fail(f"the segmenter's mask does not contain pixel ({r}, {c})")
    ys, xs = np.nonzero(mask)
    centroid = (float(ys.mean()), float(xs.mean()))
    border = bool(ys.min() == 0 or xs.min() == 0 or ys.max() == h - 1 or xs.max() == w - 1)
    partial = {"mask": mask, "centroid_px": centroid, "area_px": area, "touches_border": border}
    if area < MIN_AREA_PX:
        return _fail(f"the mask at pixel ({r}, {c}) has only {area} pixels: too small to measure", **partial)
    if area > MAX_AREA_FRACTION * h * w:
        return _fail(
            f"the mask at pixel ({r}, {c}) covers {100 * area / (h * w):.0f}% of the image: table or background, "
            "not an object",
            **partial,
        )
    m8 = mask.astype(np.uint8)
    top = _top_face(image, m8, r, c)
    if top.sum() < max(MIN_TOP_FRACTION * area, 4):
        return _fail(
            f"pixel ({r}, {c}) is not on a visible top face: the part of the mask with its brightness has "
            f"{int(top.sum())} of {area} pixels",
            **partial,
        )
    origin = camera.position_m
    views = [_View.of(camera, m8)]
    outline = _outline(top)
    rays = camera.pixel_rays(outline[:, 0], outline[:, 1])

    def tops(heights: NDArray[np.float64]) -> list[NDArray[np.float64]]:
        """The top face's outline back-projected onto each candidate top height."""
        return list(_lift(rays, origin, table_z_m + heights))

    heights = np.arange(0.0, MAX_HEIGHT_M + 1e-9, COARSE_STEP_M)
    candidates = tops(heights)
    score = views[0].ious(candidates, table_z_m)
    best = float(heights[int(np.argmax(score))])
    second_mask = None
    if second_view is not None:
        best_xyz = _top_centre(candidates[int(np.argmax(score))])
        second = _second_view(second_view, best_xyz, segmenter, image, r, c)
        if isinstance(second, str):
            return _fail(second, **partial)
        views.append(second)
        second_mask = second.mask
        score = score + second.ious(candidates, table_z_m)
        best = float(heights[int(np.argmax(score))])
    fine = np.arange(max(best - COARSE_STEP_M, 0.0), best + COARSE_STEP_M + 1e-9, FINE_STEP_M)
    lifted = tops(fine)
    fine_score = np.sum([v.ious(lifted, table_z_m) for v in views], axis=0)
    k = int(np.argmax(fine_score))
    height, fit = float(fine[k]), float(fine_score[k]) / len(views)
    if second_mask is not None and views[1].ious(lifted[k : k + 1], table_z_m)[0] < MIN_SECOND_VIEW_IOU:
        return _fail(
            f"the second view '{views[1].camera.name}' does not see the same object: its region does not match "
            "the object's predicted outline",
            **partial,
        )
    if fit < MIN_FIT_IOU:
        return _fail(
            f"the mask is not explained by an upright object on the table (best silhouette IoU {fit:.2f}): the "
            "object is occluded, lying over, or not on the table",
            **partial,
        )
    footprint = lifted[k][:, :2]
    if len(footprint) < 3 or not np.all(np.isfinite(footprint)):
        return _fail(f"the rays of the top face miss the plane z={table_z_m + height:.3f} m", **partial)
    cx, cy = _polygon_centroid(footprint)
    top_z = table_z_m + height
    return Segmentation(
        found=True,
        mask=mask,
        centroid_px=centroid,
        area_px=area,
        world_xyz_m=(cx, cy, top_z),
        top_z_m=top_z,
        height_m=height,
        footprint_xy_m=footprint,
        fit_iou=fit,
        views=len(views),
        touches_border=border,
    )


def _top_centre(top: NDArray[np.float64]) -> tuple[float, float, float]:
    cx, cy = _polygon_centroid(top[:, :2])
    return (cx, cy, float(top[0, 2]))


def _run_segmenter(segmenter: Segmenter, image: np.ndarray, seed: tuple[int, int]) -> tuple[np.ndarray | None, str]:
    if isinstance(segmenter, ColorRegionSegmenter):
        region = segmenter.region(image, seed)
        return region.mask, region.reason
    if not isinstance(segmenter, Segmenter):
        return None, f"segmenter must have a mask(image, seed_px) method, got {type(segmenter).__name__}"
    out = segmenter.mask(image, seed)
    if out is None:
        return None, f"the segmenter found no object at pixel {seed}"
    out = np.asarray(out)
    if out.shape != image.shape[:2]:
        return None, f"the segmenter returned a mask of shape {out.shape}, the image is {image.shape[:2]}"
    return out.astype(bool), ""


def _second_view(
    second_view: object,
    xyz: tuple[float, float, float],
    segmenter: Segmenter,
    first_image: NDArray[np.uint8],
    r: int,
    c: int,
) -> _View | str:
    if (
        not isinstance(second_view, tuple | list)
        or len(second_view) != 2
        or not isinstance(second_view[1], CameraModel)
    ):
        return "second_view must be (image, CameraModel)"
    image, camera = second_view
    problem = _image_problem(image)
    if problem:
        return f"second view: {problem}"
    if image.shape[:2] != (camera.height, camera.width):
        return (
            f"second view: image is {image.shape[1]}x{image.shape[0]}, camera '{camera.name}' is "
            f"{camera.width}x{camera.height}"
        )
    px = camera.project(xyz)
    if px is None or not camera.in_image(*px):
        where = "behind the camera" if px is None else f"at ({px[0]:.0f}, {px[1]:.0f}), outside the image"
        return f"the second view '{camera.name}' does not see the object: its top centre projects {where}"
    r2, c2 = min(max(_nearest(px[0]), 0), camera.height - 1), min(max(_nearest(px[1]), 0), camera.width - 1)
    h1, s1, v1 = _hsv(first_image[max(r - 1, 0) : r + 2, max(c - 1, 0) : c + 2])
    h2, s2, v2 = _hsv(image[max(r2 - 1, 0) : r2 + 2, max(c2 - 1, 0) : c2 + 2])
    seed = (float(np.angle(np.mean(np.exp(1j * h1)))), float(np.median(s1)), float(np.median(v1)))
    here = np.median(_colour_distance(h2, s2, v2, seed, (0.2, 5.0)))
    if here > SECOND_VIEW_COLOUR_TOLERANCE:
        return (
            f"the second view '{camera.name}' does not see the object at pixel ({r2}, {c2}): another colour is there "
            "(occluded, or the first view's estimate is off)"
        )
    mask, reason = _run_segmenter(segmenter, image, (r2, c2))
    if mask is None:
        return f"the second view '{camera.name}' does not see the object at pixel ({r2}, {c2}): {reason}"
    if not mask.any() or mask.sum() > MAX_AREA_FRACTION * mask.size:
        return f"the second view '{camera.name}' gives an empty or huge region at pixel ({r2}, {c2})"
    return _View.of(camera, mask.astype(np.uint8))
