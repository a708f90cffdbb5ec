"""Accuracy and speed of RGB perception against the embedded world's ground truth: table height, back-projection,
triangulation, segmentation from a click.

The layouts are seeded: five tasks of dual_arx_x5 whose objects stand apart on the table (general_pickup,
stack_blocks, push_to_pad, bowl_on_plate, handover) in every variant the tasks have (robodojo.sim.variants: standard,
cluttered, randomized), seeds 0 .. ``--seeds`` - 1 (default 20: 300 layouts; 4 with ``--quick``). Ground truth
comes from the privileged side of the world only: object poses and the MuJoCo geoms of
every object (the true top face of an object is the top of its highest geoms: a block's or cylinder's top, the rim of
a bowl's 16 wall segments), the rendered segmentation (per-pixel geom ids) and, for one reference row, the rendered
depth. Cameras are modelled with ``CameraModel.from_calibration`` of the world's calibration (exact in simulation).

Per layout, in one process with ``time.perf_counter`` around every perception call:

1. Table height. ``world.reset`` then ``observe()``; ``measure_table_height`` on the three cameras of that observation.
   Error against the table top of the robot config; found rate; time per call. Targets: every error <= 1 mm (max),
   median time < 100 ms. The measured height (or, where none was found, the config's, counted) is the ``table_z_m``
   of every segment() call of the layout.
2. Back-projection of top-face pixels. Pixels are picked on objects' visible top faces: a point is drawn uniformly on
   the true top face (1 mm from its edges), projected and rounded to the pixel grid (a click); the click is kept if
   the ray through the pixel's centre meets the true top face (1 mm inside its edges) and the rendered segmentation
   at that pixel is one of the object's geoms (not occluded). The true 3D point of the click is that ray's
   intersection with the true (possibly slightly tilted) top face. Views: the head camera at home (up to
   MAX_OBJECTS_PER_VIEW objects, PIXELS_PER_OBJECT clicks each); then each arm's wrist is moved with
   ``MotionServer(world).move_eef`` to WRIST_Y_OFFSET_M beyond an object on its side at grasp-point height
   WRIST_TCP_Z_M (the wrist camera then looks down at the object's top face from ~15 cm), and the clicks are drawn
   in the wrist view and, for the same objects, in the head view of that instant (the arm now in the picture).
   ``back_project`` of each click onto the object's top plane, that plane being:
   - "segment 1 view": ``segment(image, camera, row, col, table_z_m).top_z_m`` from that click (the measured plane);
   - "segment 2 views": the same with ``second_view`` (head click: the wrist view; wrist click: the head view), for
     objects seen by both;
   - "triangulated": the height of the triangulated top-face centroid of section 3 (GT-free), for those objects;
   - "true top plane": the horizontal plane at the true top-face centre's height (pure geometry, reference);
   - "rendered depth": not a back-projection: ``world_map`` of the rendered depth at the click (reference).
   Errors: distance to the click's true 3D point; clicks whose segment() fails have no measured plane (counted).
   Targets: median with the measured plane (segment 1 view) <= 3 mm head, <= 2 mm wrist.
3. Triangulation, head + moved wrist at one instant. (a) True top-face points (drawn as above) projected into both
   views and rounded to the pixel grid, kept where the segmentation at both pixels is the object's: ``triangulate``,
   error against the true point. (b) Matched pixels without ground truth: for each object clicked in both views, the
   segment() mask of the first click in each view, its top-face region (the part segment() itself uses:
   ``robodojo.perception.segmentation._top_face``, the mask's pixels of the clicked colour connected to the click) and
   that region's pixel centroid in each view, triangulated; error against the true top-face centre. Target: median
   <= 3 mm (each).
4. Segmentation and localisation from one clicked pixel (every click of section 2): ``segment()`` single view, and
   with ``second_view`` for clicks in the post-move pairs. Centroid error: ``world_xyz_m`` against the true top-face
   centre (3D distance; xy and |dz| separately); mask IoU against the rendered segmentation of the object in that
   view. Per camera and overall; subsets (no bowls; no bowls and not touching the image border) are printed next to
   the full set. Failed calls are counted: medians are given over found calls and over all calls with a failure
   counted as a miss (error infinite, IoU 0); the targets (centroid median <= 5 mm, IoU median >= 0.85) are judged
   on all calls.
5. Time per call of back_project, triangulate, world_map (640x480 depth), measure_table_height, segment (1 view,
   2 views): median and p95 over every call above. Targets on the median: back-projection and triangulation < 1 ms,
   table plane < 100 ms, segmentation < 30 ms.

A final table lists every target with its measured value and PASS/FAIL.

Run: ``make bench`` (every benchmark) or
``.venv/bin/python benchmarks/perception.py [--seeds 20] [--seed 0] [--quick] [--smoke] [--json out.json]``. On a
2-core CPU the default (200 layouts) takes about 2.5 minutes, ``--quick`` (40 layouts) about 30 s, ``--smoke`` (seed 0
of each task in one variant, the variants taken in turn: 5 layouts; the test suite runs it) about 5 s.
"""

from __future__ import annotations

import argparse
import math
import platform
import re
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import mujoco
import numpy as np
from _common import cpu_model, mark, nproc, table, version, write_figures
from numpy.typing import NDArray

from robodojo.motion.server import MotionServer
from robodojo.perception.camera import CameraModel
from robodojo.perception.geometry import back_project, triangulate, world_map
from robodojo.perception.segmentation import Segmentation, _top_face, segment
from robodojo.perception.table_plane import measure_table_height
from robodojo.sim.render import select_gl_backend
from robodojo.sim.variants import VARIANTS
from robodojo.sim.world import EmbeddedWorld

ROBOT = "dual_arx_x5"
TASKS = ("general_pickup", "stack_blocks", "push_to_pad", "bowl_on_plate", "handover")
DEFAULT_SEEDS = 20
QUICK_SEEDS = 4
HEAD = "head"

# -- sampling ------------------------------------------------------------------------------------------------------
EDGE_MARGIN_M = 0.001  # sampled points and pixel hits stay this far inside the top face's edges
PIXELS_PER_OBJECT = 2  # clicks per object per view
MAX_OBJECTS_PER_VIEW = 4
TRI_POINTS_PER_OBJECT = 4  # true top-face points per object per head + wrist pair
OUTLINE_POINTS = 32  # points along a top face's edge for the full-visibility check
SAMPLE_TRIES = 25  # draws per wanted pixel before giving up (occluded or out-of-view faces)
TOP_TOLERANCE_M = 0.001  # geoms whose top is this close to the highest form the top face
WRIST_TCP_Z_M = 0.90  # grasp-point height over an object (the home height; 6.5 cm above the tallest object)
WRIST_Y_OFFSET_M = 0.025  # grasp point this far beyond (+y) the object: the wrist camera looks back at it
ARM_SEPARATION_M = 0.15  # objects picked for the two wrists are at least this far apart in x (no arm collision)
MOVE_TRIES = 3  # objects tried per arm before it stays home

# -- targets -------------------------------------------------------------------------------------------------------
TABLE_ERROR_MM = 1.0
TABLE_MS = 100.0
BACKPROJECT_HEAD_MM = 3.0
BACKPROJECT_WRIST_MM = 2.0
TRIANGULATION_MM = 3.0
CENTROID_MM = 5.0
IOU_MIN = 0.85
GEOMETRY_MS = 1.0
SEGMENT_MS = 30.0

PLANES = ("segment 1 view", "segment 2 views", "triangulated", "true top plane", "rendered depth")
MEASURED_PLANE = "segment 1 view"
TIMED = ("back_project", "triangulate", "world_map", "measure_table_height", "segment 1 view", "segment 2 views")
REASON_WORDS = 12


# -- machine -------------------------------------------------------------------------------------------------------


def git_commit() -> str:
    try:
        out = subprocess.run(
            ["git", "-C", str(Path(__file__).resolve().parent), "describe", "--always", "--dirty"],
            capture_output=True,
            text=True,
            check=True,
        )
        return out.stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


# -- ground truth --------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Patch:
    """The top face of one geom: a rectangle (box) or a disc (cylinder) in the geom's xy plane."""

    centre: NDArray[np.float64]
    R: NDArray[np.float64]  # geom orientation in the world
    box: bool
    half: tuple[float, float]  # half extents, or (radius, radius)

    @property
    def area(self) -> float:
        return 4 * self.half[0] * self.half[1] if self.box else math.pi * self.half[0] ** 2

    def contains(self, p: NDArray[np.float64], margin: float) -> bool:
        x, y, _ = self.R.T @ (p - self.centre)
        if self.box:
            return abs(x) <= self.half[0] - margin and abs(y) <= self.half[1] - margin
        return math.hypot(x, y) <= self.half[0] - margin

    def outline(self, margin: float, n: int = OUTLINE_POINTS) -> NDArray[np.float64]:
        """About ``n`` world points along the edge of the patch, ``margin`` inside it."""
        if self.box:
            hx, hy = self.half[0] - margin, self.half[1] - margin
            t = np.linspace(-1.0, 1.0, max(n // 4, 2))
            xy = np.concatenate(
                [
                    np.c_[t * hx, -hy + 0 * t],
                    np.c_[t * hx, hy + 0 * t],
                    np.c_[-hx + 0 * t, t * hy],
                    np.c_[hx + 0 * t, t * hy],
                ]
            )
        else:
            a = np.linspace(0.0, 2 * math.pi, n, endpoint=False)
            xy = (self.half[0] - margin) * np.c_[np.cos(a), np.sin(a)]
        return self.centre + np.c_[xy, np.zeros(len(xy))] @ self.R.T

    def sample(self, rng: np.random.Generator, margin: float) -> NDArray[np.float64]:
        if self.box:
            x, y = rng.uniform(-1.0, 1.0, 2) * (np.array(self.half) - margin)
        else:
            r, a = (self.half[0] - margin) * math.sqrt(rng.uniform()), rng.uniform(0.0, 2 * math.pi)
            x, y = r * math.cos(a), r * math.sin(a)
        return self.centre + self.R @ np.array([x, y, 0.0])


@dataclass(frozen=True)
class TopFace:
    """An object's true top face now (privileged): the tops of its highest geoms, and the geoms of the whole body."""

    name: str
    kind: str
    geoms: NDArray[np.int64]
    patches: tuple[Patch, ...]
    centre: NDArray[np.float64]  # centre of the top face (a bowl's: the centre of its rim)

    def hit(self, origin: NDArray[np.float64], direction: NDArray[np.float64]) -> NDArray[np.float64] | None:
        """Where a ray meets the plane of the top face (None if it does not, from above)."""
        normal = self.patches[0].R[:, 2]
        denom = float(direction @ normal)
        if abs(denom) < 1e-9:
            return None
        t = float((self.patches[0].centre - origin) @ normal) / denom
        return origin + t * direction if t > 0 else None

    def contains(self, p: NDArray[np.float64], margin: float) -> bool:
        return any(patch.contains(p, margin) for patch in self.patches)

    def sample(self, rng: np.random.Generator, margin: float) -> NDArray[np.float64]:
        areas = np.array([p.area for p in self.patches])
        return self.patches[int(rng.choice(len(areas), p=areas / areas.sum()))].sample(rng, margin)

    def seen_at(self, seg: NDArray[np.int32], row: int, col: int) -> bool:
        return bool(np.isin(seg[row, col], self.geoms))

    def fully_visible(self, camera: CameraModel, seg: NDArray[np.int32]) -> bool:
        """Whether the whole top face is in the image and unoccluded: its outline, EDGE_MARGIN_M inside, is seen as
        the object at every point (a bowl's rim: every segment's outline)."""
        pts = np.concatenate([p.outline(EDGE_MARGIN_M) for p in self.patches])
        uv, front = camera.project_uv(pts)
        if not front.all():
            return False
        cols, rows = np.floor(uv[:, 0] + 0.5).astype(int), np.floor(uv[:, 1] + 0.5).astype(int)
        if rows.min() < 0 or cols.min() < 0 or rows.max() >= camera.height or cols.max() >= camera.width:
            return False
        return bool(np.isin(seg[rows, cols], self.geoms).all())


def top_faces(world: EmbeddedWorld) -> dict[str, TopFace]:
    m, d = world.model, world.data
    assert m is not None and d is not None and world.layout is not None
    faces = {}
    for obj in world.layout.objects:
        geoms = np.flatnonzero(m.geom_bodyid == m.body(obj.name).id)
        tops = []
        for g in geoms:
            R, size = d.geom_xmat[g].reshape(3, 3).copy(), m.geom_size[g]
            if m.geom_type[g] == mujoco.mjtGeom.mjGEOM_BOX:
                half_h, box, half = size[2], True, (float(size[0]), float(size[1]))
            elif m.geom_type[g] == mujoco.mjtGeom.mjGEOM_CYLINDER:
                half_h, box, half = size[1], False, (float(size[0]), float(size[0]))
            else:
                raise RuntimeError(f"object {obj.name!r}: geom type {m.geom_type[g]} has no top face model")
            tops.append(Patch(d.geom_xpos[g] + R[:, 2] * half_h, R, box, half))
        highest = max(p.centre[2] for p in tops)
        patches = tuple(p for p in tops if p.centre[2] >= highest - TOP_TOLERANCE_M)
        centre = np.mean([p.centre for p in patches], axis=0)
        faces[obj.name] = TopFace(obj.name, obj.kind, geoms, patches, centre)
    return faces


def pixel_ray(camera: CameraModel, row: float, col: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
    """The ray through a pixel centre, computed here from K and the pose (the simulated cameras have no distortion)."""
    d = camera.T_world_cam[:3, :3] @ np.linalg.solve(camera.K, np.array([col, row, 1.0]))
    return camera.position_m, d / np.linalg.norm(d)


def nearest(v: float) -> int:
    return math.floor(v + 0.5)


# -- views and records ---------------------------------------------------------------------------------------------
@dataclass
class View:
    """One camera image with its ground-truth segmentation and rendered depth, at one instant."""

    camera: CameraModel
    rgb: NDArray[np.uint8]
    seg: NDArray[np.int32]
    depth: NDArray[np.float32]
    pose: str  # "home" or "arm over object"
    xyz: NDArray[np.float64] | None = None  # world_map of the rendered depth

    @property
    def name(self) -> str:
        return self.camera.name

    def in_image(self, row: int, col: int) -> bool:
        return 0 <= row < self.camera.height and 0 <= col < self.camera.width


@dataclass
class Click:
    """One clicked top-face pixel: its true point, the back-projection errors per plane, the segment() results."""

    camera: str
    pose: str
    kind: str
    obj: str
    row: int
    col: int
    truth: NDArray[np.float64]
    errors_mm: dict[str, float] = field(default_factory=dict)  # plane -> error (absent: no such plane)
    plane_dz_mm: dict[str, float] = field(default_factory=dict)
    seg1: Segmentation | None = None


@dataclass
class Bench:
    """Everything measured, accumulated over the layouts."""

    rng: np.random.Generator
    layout: str = ""  # the current layout, "task/variant/seed"
    times: dict[str, list[float]] = field(default_factory=lambda: {k: [] for k in TIMED})
    table: list[dict[str, Any]] = field(default_factory=list)
    clicks: list[Click] = field(default_factory=list)
    segments: list[dict[str, Any]] = field(default_factory=list)
    tri_points: list[dict[str, Any]] = field(default_factory=list)
    tri_centroids: list[dict[str, Any]] = field(default_factory=list)
    moves: Counter[str] = field(default_factory=Counter)
    table_fallbacks: int = 0

    def timed(self, key: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        t0 = time.perf_counter()
        out = fn(*args, **kwargs)
        self.times[key].append(time.perf_counter() - t0)
        return out


def render_view(world: EmbeddedWorld, name: str, pose: str, bench: Bench) -> View:
    frame = world.render(name, depth=True, segmentation=True)
    camera = CameraModel.from_calibration(name, frame.calibration)
    if camera.has_distortion:
        raise RuntimeError(f"camera {name!r} has distortion; pixel_ray() here assumes an ideal pinhole")
    assert frame.depth_m is not None and frame.segmentation is not None
    view = View(camera, frame.rgb, frame.segmentation, frame.depth_m, pose)
    wm = bench.timed("world_map", world_map, camera, frame.depth_m)
    view.xyz = wm.xyz_m if wm.ok else None
    return view


def face_pixels(rng: np.random.Generator, view: View, face: TopFace, n: int) -> list[tuple[int, int, NDArray]]:
    """Up to ``n`` distinct clicks on the visible top face: (row, col, true 3D point of the pixel)."""
    out: list[tuple[int, int, NDArray]] = []
    seen: set[tuple[int, int]] = set()
    for _ in range(SAMPLE_TRIES * n):
        if len(out) >= n:
            break
        px = view.camera.project(face.sample(rng, EDGE_MARGIN_M))
        if px is None:
            continue
        r, c = nearest(px[0]), nearest(px[1])
        if (r, c) in seen or not view.in_image(r, c) or not face.seen_at(view.seg, r, c):
            continue
        hit = face.hit(*pixel_ray(view.camera, r, c))
        if hit is None or not face.contains(hit, EDGE_MARGIN_M):
            continue
        seen.add((r, c))
        out.append((r, c, hit))
    return out


def seg_record(bench: Bench, view: View, face: TopFace, result: Segmentation, second: View | None) -> None:
    gt = np.isin(view.seg, face.geoms)
    rec: dict[str, Any] = {
        "layout": bench.layout,
        "camera": view.name,
        "pose": view.pose,
        "views": 1 if second is None else 2,
        "second": "" if second is None else second.name,
        "kind": face.kind,
        "object": face.name,
        "found": result.found,
        "reason": result.reason,
        "gt_touches_border": bool(gt[0].any() or gt[-1].any() or gt[:, 0].any() or gt[:, -1].any()),
        "top_visible": face.fully_visible(view.camera, view.seg),
        "second_top_visible": second is not None and face.fully_visible(second.camera, second.seg),
    }
    if result.found:
        assert result.world_xyz_m is not None and result.mask is not None
        p = np.array(result.world_xyz_m)
        inter = int(np.count_nonzero(result.mask & gt))
        rec.update(
            centroid_mm=float(np.linalg.norm(p - face.centre)) * 1e3,
            xy_mm=float(np.linalg.norm(p[:2] - face.centre[:2])) * 1e3,
            dz_mm=abs(float(p[2] - face.centre[2])) * 1e3,
            iou=inter / max(int(np.count_nonzero(result.mask | gt)), 1),
            touches_border=result.touches_border,
        )
    bench.segments.append(rec)


def back_project_error(bench: Bench, view: View, click: Click, plane: str, z: float) -> None:
    hit = bench.timed("back_project", back_project, view.camera, click.row, click.col, z)
    if hit.found:
        click.errors_mm[plane] = float(np.linalg.norm(np.array(hit.point_m) - click.truth)) * 1e3
        click.plane_dz_mm[plane] = abs(z - float(click.truth[2])) * 1e3


def do_click(
    bench: Bench, view: View, face: TopFace, row: int, col: int, truth: NDArray, table_z: float, second: View | None
) -> Click:
    """Every measurement of one click: back-projections onto each plane, segment() in one and two views."""
    click = Click(view.name, view.pose, face.kind, face.name, row, col, truth)
    back_project_error(bench, view, click, "true top plane", float(face.centre[2]))
    if view.xyz is not None and np.all(np.isfinite(view.xyz[row, col])):
        click.errors_mm["rendered depth"] = float(np.linalg.norm(view.xyz[row, col] - truth)) * 1e3
    seg1 = bench.timed("segment 1 view", segment, view.rgb, view.camera, row, col, table_z_m=table_z)
    click.seg1 = seg1
    seg_record(bench, view, face, seg1, None)
    if seg1.found:
        back_project_error(bench, view, click, "segment 1 view", float(seg1.top_z_m))  # type: ignore[arg-type]
    if second is not None:
        seg2 = bench.timed(
            "segment 2 views",
            segment,
            view.rgb,
            view.camera,
            row,
            col,
            table_z_m=table_z,
            second_view=(second.rgb, second.camera),
        )
        seg_record(bench, view, face, seg2, second)
        if seg2.found:
            back_project_error(bench, view, click, "segment 2 views", float(seg2.top_z_m))  # type: ignore[arg-type]
    bench.clicks.append(click)
    return click


def top_face_centroid(view: View, click: Click) -> tuple[float, float] | None:
    """GT-free: the pixel centroid of the top-face region of the click's segment() mask."""
    seg = click.seg1
    if seg is None or not seg.found or seg.mask is None:
        return None
    top = _top_face(view.rgb, seg.mask.astype(np.uint8), click.row, click.col)
    ys, xs = np.nonzero(top)
    return (float(ys.mean()), float(xs.mean())) if len(ys) else None


def triangulate_points(bench: Bench, head: View, wrist: View, face: TopFace) -> None:
    """3(a): true top-face points, pixels rounded in both views, visible in both."""
    kept = 0
    for _ in range(SAMPLE_TRIES * TRI_POINTS_PER_OBJECT):
        if kept >= TRI_POINTS_PER_OBJECT:
            break
        p = face.sample(bench.rng, EDGE_MARGIN_M)
        pixels = []
        for view in (head, wrist):
            px = view.camera.project(p)
            if px is None:
                break
            r, c = nearest(px[0]), nearest(px[1])
            if not view.in_image(r, c) or not face.seen_at(view.seg, r, c):
                break
            pixels.append((view.camera, (r, c)))
        if len(pixels) < 2:
            continue
        kept += 1
        result = bench.timed("triangulate", triangulate, pixels)
        rec: dict[str, Any] = {
            "layout": bench.layout,
            "wrist": wrist.name,
            "kind": face.kind,
            "found": result.found,
            "reason": result.reason,
        }
        if result.found:
            q = np.array(result.point_m)
            rec.update(
                error_mm=float(np.linalg.norm(q - p)) * 1e3,
                dz_mm=abs(float(q[2] - p[2])) * 1e3,
                reprojection_px=result.reprojection_error_px,
            )
        bench.tri_points.append(rec)


def triangulate_centroids(
    bench: Bench, head: View, head_click: Click, wrist: View, wrist_click: Click, face: TopFace
) -> float | None:
    """3(b): top-face region centroids of the segment() masks in both views (no ground truth); returns the height."""
    a, b = top_face_centroid(head, head_click), top_face_centroid(wrist, wrist_click)
    rec: dict[str, Any] = {
        "layout": bench.layout,
        "wrist": wrist.name,
        "kind": face.kind,
        "found": False,
        "top_visible": face.fully_visible(head.camera, head.seg) and face.fully_visible(wrist.camera, wrist.seg),
    }
    if a is None or b is None:
        rec["reason"] = "segment() found no mask in " + ("the head view" if a is None else "the wrist view")
        bench.tri_centroids.append(rec)
        return None
    result = bench.timed("triangulate", triangulate, [(head.camera, a), (wrist.camera, b)])
    rec.update(found=result.found, reason=result.reason)
    z = None
    if result.found:
        q = np.array(result.point_m)
        z = float(q[2])
        rec.update(
            error_mm=float(np.linalg.norm(q - face.centre)) * 1e3,
            dz_mm=abs(z - float(face.centre[2])) * 1e3,
            reprojection_px=result.reprojection_error_px,
        )
    bench.tri_centroids.append(rec)
    return z


# -- one layout ----------------------------------------------------------------------------------------------------
def move_wrists(world: EmbeddedWorld, faces: dict[str, TopFace], bench: Bench) -> list[tuple[str, str]]:
    """Move each arm's wrist over an object on its side; (arm, object) for the arms that got there."""
    server = MotionServer(world)
    names = list(faces)
    bench.rng.shuffle(names)
    chosen: list[tuple[str, str]] = []
    for arm in world.robot.arm_names:
        side = [n for n in names if (faces[n].centre[0] < 0) == (arm == "left")]
        side = [
            n for n in side if all(abs(faces[n].centre[0] - faces[o].centre[0]) >= ARM_SEPARATION_M for _, o in chosen)
        ]
        for name in side[:MOVE_TRIES]:
            c = faces[name].centre
            report = server.move_eef({f"{arm}_x": c[0], f"{arm}_y": c[1] + WRIST_Y_OFFSET_M, f"{arm}_z": WRIST_TCP_Z_M})
            bench.moves["tried"] += 1
            if report.accepted and report.arms[arm].reached:
                bench.moves["reached"] += 1
                chosen.append((arm, name))
                break
            bench.moves["rejected" if not report.accepted else "not reached"] += 1
    return chosen


def ordered_faces(faces: dict[str, TopFace], rng: np.random.Generator, first: str | None = None) -> list[TopFace]:
    names = list(faces)
    rng.shuffle(names)
    if first is not None:
        names.remove(first)
        names.insert(0, first)
    return [faces[n] for n in names]


def run_layout(world: EmbeddedWorld, task: str, variant: str, seed: int, bench: Bench) -> None:
    rng = bench.rng
    bench.layout = f"{task}/{variant}/{seed}"
    obs = world.reset(task, seed=seed, variant=variant)
    views = [(f.rgb, CameraModel.from_calibration(n, f.calibration)) for n, f in obs.cameras.items()]
    table = bench.timed("measure_table_height", measure_table_height, views)
    truth_table = world.privileged().table_z_m
    bench.table.append(
        {
            "task": task,
            "variant": variant,
            "seed": seed,
            "found": table.found,
            "error_mm": abs(table.height_m - truth_table) * 1e3 if table.found else None,
            "pairs_found": len(table.pair_heights_m),
            "spread_mm": table.spread_mm,
            "ms": bench.times["measure_table_height"][-1] * 1e3,
            "reason": table.reason,
        }
    )
    if table.found:
        table_z = float(table.height_m)  # type: ignore[arg-type]
    else:
        table_z = world.robot.table.top_z_m  # the nominal height from the robot config
        bench.table_fallbacks += 1

    # The head camera at home.
    faces = top_faces(world)
    head = render_view(world, HEAD, "home", bench)
    done = 0
    for face in ordered_faces(faces, rng):
        if done >= MAX_OBJECTS_PER_VIEW:
            break
        pixels = face_pixels(rng, head, face, PIXELS_PER_OBJECT)
        done += bool(pixels)
        for r, c, p in pixels:
            do_click(bench, head, face, r, c, p, table_z, None)

    # Wrists moved over objects; head and wrist views of that instant.
    chosen = move_wrists(world, faces, bench)
    if not chosen:
        return
    faces = top_faces(world)
    head = render_view(world, HEAD, "arm over object", bench)
    head_first: dict[str, Click] = {}
    for arm, target in chosen:
        wrist = render_view(world, f"{arm}_wrist", "arm over object", bench)
        done = 0
        for face in ordered_faces(faces, rng, first=target):
            if done >= MAX_OBJECTS_PER_VIEW:
                break
            w_pixels = face_pixels(rng, wrist, face, PIXELS_PER_OBJECT)
            if not w_pixels:
                continue
            done += 1
            h_pixels = face_pixels(rng, head, face, PIXELS_PER_OBJECT)
            both = bool(h_pixels)
            w_clicks = [do_click(bench, wrist, face, r, c, p, table_z, head if both else None) for r, c, p in w_pixels]
            h_clicks: list[Click] = []
            if both and face.name not in head_first:
                h_clicks = [do_click(bench, head, face, r, c, p, table_z, wrist) for r, c, p in h_pixels]
                head_first[face.name] = h_clicks[0]
            if not both:
                continue
            triangulate_points(bench, head, wrist, face)
            z = triangulate_centroids(bench, head, head_first[face.name], wrist, w_clicks[0], face)
            if z is not None:
                for click, view in [(c, wrist) for c in w_clicks] + [(c, head) for c in h_clicks]:
                    back_project_error(bench, view, click, "triangulated", z)


# -- statistics and report -----------------------------------------------------------------------------------------
def spread(values: Sequence[float]) -> dict[str, float]:
    a = np.asarray(values, dtype=float)
    if a.size == 0:
        return {"n": 0, "median": math.nan, "p95": math.nan, "max": math.nan}
    return {"n": int(a.size), "median": float(np.median(a)), "p95": float(np.percentile(a, 95)), "max": float(a.max())}


def stats_ms(samples_s: Sequence[float]) -> dict[str, float]:
    a = np.asarray(samples_s, dtype=float) * 1e3
    if a.size == 0:
        return {"n": 0, "median_ms": math.nan, "p95_ms": math.nan}
    return {"n": int(a.size), "median_ms": float(np.median(a)), "p95_ms": float(np.percentile(a, 95))}


def fmt(v: float, digits: int = 2) -> str:
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else f"{v:.{digits}f}"


def plain(obj: Any) -> Any:
    """JSON-ready: numpy scalars to Python, NaN and infinities to None."""
    if isinstance(obj, dict):
        return {str(k): plain(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [plain(v) for v in obj]
    if isinstance(obj, np.generic):
        obj = obj.item()
    if isinstance(obj, float) and not math.isfinite(obj):
        return None
    return obj


def reason_key(reason: str) -> str:
    text = re.sub(r"\([^)]*\)", "", reason)
    text = re.sub(r"'[^']*'", "'…'", text)
    text = re.sub(r"-?\d+(\.\d+)?", "#", text)
    return " ".join(text.split()[:REASON_WORDS])


def seg_summary(recs: list[dict[str, Any]]) -> dict[str, Any]:
    found = [r for r in recs if r["found"]]
    n = len(recs)
    strict_err = [r.get("centroid_mm", math.inf) for r in recs]
    strict_iou = [r.get("iou", 0.0) for r in recs]
    return {
        "clicks": n,
        "found_rate": len(found) / n if n else math.nan,
        "centroid_mm": spread([r["centroid_mm"] for r in found]),
        "xy_mm": spread([r["xy_mm"] for r in found]),
        "dz_mm": spread([r["dz_mm"] for r in found]),
        "iou": spread([r["iou"] for r in found]),
        "iou_p5": float(np.percentile([r["iou"] for r in found], 5)) if found else math.nan,
        "centroid_mm_median_all": float(np.median(strict_err)) if n else math.nan,
        "iou_median_all": float(np.median(strict_iou)) if n else math.nan,
    }


def seg_ok(s: dict[str, Any]) -> bool:
    return s["clicks"] > 0 and s["centroid_mm_median_all"] <= CENTROID_MM and s["iou_median_all"] >= IOU_MIN


def tri_summary(recs: list[dict[str, Any]]) -> dict[str, Any]:
    found = [r for r in recs if r["found"]]
    return {
        "n": len(recs),
        "found_rate": len(found) / len(recs) if recs else math.nan,
        "error_mm": spread([r["error_mm"] for r in found]),
        "dz_mm": spread([r["dz_mm"] for r in found]),
        "reprojection_px_median": float(np.median([r["reprojection_px"] for r in found])) if found else math.nan,
        "error_mm_median_all": float(np.median([r.get("error_mm", math.inf) for r in recs])) if recs else math.nan,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, help=f"seeds per task and variant (default {DEFAULT_SEEDS}; {QUICK_SEEDS} "
                        "with --quick)")  # fmt: skip
    parser.add_argument("--seed", type=int, default=0, help="seed of the pixel sampling (default 0)")
    parser.add_argument("--quick", action="store_true", help=f"{QUICK_SEEDS} seeds per task and variant (about 30 s)")
    parser.add_argument("--smoke", action="store_true", help="every part at its smallest (make test runs it)")
    parser.add_argument("--json", type=Path, help="also write the figures to this JSON file")
    args = parser.parse_args(argv)
    if args.smoke:
        args.seeds = 1
    n_seeds = args.seeds or (QUICK_SEEDS if args.quick else DEFAULT_SEEDS)

    t_all = time.perf_counter()
    backend = select_gl_backend()
    world = EmbeddedWorld(ROBOT)
    cams = ", ".join(f"{c.name} {c.width}x{c.height}" for c in world.robot.cameras)
    layouts = [(t, v, s) for t in TASKS for v in VARIANTS for s in range(n_seeds)]
    if args.smoke:  # every task and every variant once
        layouts = [(t, list(VARIANTS)[i % len(VARIANTS)], 0) for i, t in enumerate(TASKS)]
    grid = "one per task, variants in turn" if args.smoke else f"{len(VARIANTS)} variants x seeds 0-{n_seeds - 1}"
    print(
        f"robodojo perception benchmark: robot {ROBOT}, {len(layouts)} layouts ({len(TASKS)} tasks x "
        f"{grid}), sampling seed {args.seed}" + (" (smoke)" if args.smoke else " (quick)" if args.quick else "")
    )
    print(f"  machine  : {nproc()} CPUs (nproc), {cpu_model()}; Python {platform.python_version()}")
    print(
        f"  versions : mujoco {mujoco.__version__}, numpy {np.__version__}, opencv {cv2.__version__}, "
        f"agent-bringup {version('agent-bringup')} (commit {git_commit()}); GL {backend}"
    )
    print(f"  tasks    : {', '.join(TASKS)}; variants {', '.join(VARIANTS)}")
    print(
        f"  render   : {cams}; table texture {world.settings.render.table_texture}; "
        f"table top {world.robot.table.top_z_m:g} m (config)"
    )
    print(
        f"  clicks   : up to {PIXELS_PER_OBJECT} per object and view, {MAX_OBJECTS_PER_VIEW} objects per view, "
        f"{EDGE_MARGIN_M * 1e3:g} mm inside the top face; wrists moved to {WRIST_Y_OFFSET_M * 100:g} cm beyond an "
        f"object at grasp-point z {WRIST_TCP_Z_M:g} m"
    )
    print(flush=True)

    bench = Bench(rng=np.random.default_rng(args.seed))
    t_layouts = time.perf_counter()
    for task, variant, seed in layouts:
        run_layout(world, task, variant, seed, bench)
    layouts_s = time.perf_counter() - t_layouts
    world.close()

    # -- 1. table height
    tab = bench.table
    tab_err = [r["error_mm"] for r in tab if r["found"]]
    tab_time = stats_ms([r["ms"] / 1e3 for r in tab])
    tab_overall = {**spread(tab_err), "found_rate": len(tab_err) / len(tab), "time": tab_time}
    print("1. table height by plane sweep (measure_table_height, 3 cameras of one observation per layout)")
    rows = []
    groups = [((t, v), [r for r in tab if r["task"] == t and r["variant"] == v]) for t in TASKS for v in VARIANTS]
    groups = [(key, recs) for key, recs in groups if recs]  # --smoke leaves some out
    for (t, v), recs in [*groups, (("all", ""), tab)]:
        err = spread([r["error_mm"] for r in recs if r["found"]])
        ms = stats_ms([r["ms"] / 1e3 for r in recs])
        pairs = np.mean([r["pairs_found"] for r in recs])
        rows.append(
            (
                f"{t} {v}".strip(),
                str(len(recs)),
                f"{100 * err['n'] / len(recs):.0f}",
                f"{pairs:.2f}",
                fmt(err["median"], 3),
                fmt(err["p95"], 3),
                fmt(err["max"], 3),
                fmt(ms["median_ms"], 1),
                fmt(ms["p95_ms"], 1),
            )
        )
    table(("layouts", "n", "found %", "pairs", "err median mm", "p95 mm", "max mm", "ms median", "ms p95"), rows,
          "<>>>>>>>>")  # fmt: skip
    table_err_ok = bool(tab_err) and tab_overall["max"] <= TABLE_ERROR_MM and len(tab_err) == len(tab)
    print(
        f"error <= {TABLE_ERROR_MM:g} mm on every layout (max {fmt(tab_overall['max'], 3)} mm, found "
        f"{len(tab_err)}/{len(tab)}): {mark(table_err_ok)}; time median {fmt(tab_time['median_ms'], 1)} ms "
        f"< {TABLE_MS:g} ms: {mark(tab_time['median_ms'] < TABLE_MS)}"
    )
    fails = Counter(reason_key(r["reason"]) for r in tab if not r["found"])
    for key, count in fails.most_common():
        print(f"  not found {count}x: {key} ...")
    print(f"(pairs: mean number of camera pairs that found the plane, of 3; table_z_m of segment() falls back to the "
          f"config's height on {bench.table_fallbacks} layouts)")  # fmt: skip
    print(flush=True)

    # -- 2. back-projection
    clicks = bench.clicks
    cam_groups: list[tuple[str, list[Click]]] = [
        ("head (home)", [c for c in clicks if c.camera == HEAD and c.pose == "home"]),
        ("head (arm over object)", [c for c in clicks if c.camera == HEAD and c.pose != "home"]),
        ("head (all)", [c for c in clicks if c.camera == HEAD]),
        ("left_wrist", [c for c in clicks if c.camera == "left_wrist"]),
        ("right_wrist", [c for c in clicks if c.camera == "right_wrist"]),
        ("wrists (both)", [c for c in clicks if c.camera != HEAD]),
    ]
    bp: dict[str, dict[str, Any]] = {}
    rows = []
    for label, group in cam_groups:
        bp[label] = {}
        target = BACKPROJECT_HEAD_MM if label.startswith("head") else BACKPROJECT_WRIST_MM
        for plane in PLANES:
            errs = [c.errors_mm[plane] for c in group if plane in c.errors_mm]
            dz = [c.plane_dz_mm[plane] for c in group if plane in c.plane_dz_mm]
            s = {**spread(errs), "samples": len(group), "plane_dz_mm_median": float(np.median(dz)) if dz else math.nan}
            bp[label][plane] = s
            if s["n"] == 0:
                continue  # 2-view and triangulated planes exist only in the post-move pairs
            judged = plane in ("segment 1 view", "segment 2 views", "triangulated")
            verdict = f"<= {target:g}: {mark(s['median'] <= target)}" if judged else ""
            rows.append(
                (
                    label,
                    plane,
                    str(len(group)),
                    str(s["n"]),
                    fmt(s["plane_dz_mm_median"]),
                    fmt(s["median"]),
                    fmt(s["p95"]),
                    fmt(s["max"]),
                    verdict,
                )
            )
    print("2. back-projection of top-face clicks onto the object's top plane (error vs the click's true 3D point)")
    table(("camera", "plane", "clicks", "with plane", "plane |dz| med", "median mm", "p95 mm", "max mm", "target mm"),
          rows, "<<>>>>>><")  # fmt: skip
    print(
        "(with plane: clicks for which that plane exists: segment() found the object; 2-view and triangulated planes "
        "exist only for objects seen by the head and a moved wrist at one instant (none at home); plane |dz|: median "
        "height error of the plane at the click; true top plane: horizontal through the true top-face centre (pure "
        "geometry); rendered depth: world_map of the rendered depth image at the click, a reference, not a "
        "back-projection)"
    )
    bp_head = bp["head (all)"][MEASURED_PLANE]
    bp_wrist = bp["wrists (both)"][MEASURED_PLANE]
    print(flush=True)

    # -- 3. triangulation
    print("3. triangulation from the head and a moved wrist camera (same instant)")
    rows = []
    tri: dict[str, dict[str, Any]] = {}
    for source, recs_all, what in (
        ("true points, rounded pixels", bench.tri_points, "points"),
        ("top-face centroids (no GT)", bench.tri_centroids, "objects"),
    ):
        groups: list[tuple[str, list[dict[str, Any]]]] = [
            (f"head + {w}", [r for r in recs_all if r["wrist"] == w]) for w in ("left_wrist", "right_wrist")
        ]
        groups.append(("all", recs_all))
        groups += [(f"  {k}", [r for r in recs_all if r["kind"] == k]) for k in sorted({r["kind"] for r in recs_all})]
        if recs_all and "top_visible" in recs_all[0]:
            groups += [
                ("  top face fully visible in both", [r for r in recs_all if r["top_visible"]]),
                ("  top face partly hidden", [r for r in recs_all if not r["top_visible"]]),
            ]
        for i, (name, recs) in enumerate(groups):
            s = tri_summary(recs)
            tri[f"{source}: {name.strip()}"] = s
            judged = name == "all" and s["n"] > 0
            rows.append(
                (
                    source if i == 0 else "",
                    name,
                    f"{s['n']} {what}",
                    fmt(100 * s["found_rate"], 0),
                    fmt(s["error_mm"]["median"]),
                    fmt(s["error_mm"]["p95"]),
                    fmt(s["error_mm"]["max"]),
                    fmt(s["dz_mm"]["median"]),
                    fmt(s["reprojection_px_median"]),
                    f"<= {TRIANGULATION_MM:g}: {mark(s['error_mm_median_all'] <= TRIANGULATION_MM)}" if judged else "",
                )
            )
    table(("matched pixels", "views / kind", "samples", "found %", "median mm", "p95 mm", "max mm", "|dz| med",
           "reproj px", "target mm"), rows, "<<>>>>>>><")  # fmt: skip
    print(
        "(true points: top-face points drawn uniformly, projected into both views and rounded to the pixel grid, "
        "visible in both; top-face centroids: the pixel centroid of the top-face region of segment()'s mask from "
        "the first click in each view, against the true top-face centre; a bowl's top face is its rim; "
        "the target is judged on the median over all samples, failures counting as misses)"
    )
    tri_gt = tri["true points, rounded pixels: all"]
    tri_seg = tri["top-face centroids (no GT): all"]
    for label, recs in (("true points", bench.tri_points), ("centroids", bench.tri_centroids)):
        for key, count in Counter(reason_key(r["reason"]) for r in recs if not r["found"]).most_common(4):
            print(f"  {label}: not found {count}x: {key} ...")
    print(flush=True)

    # -- 4. segmentation
    segs = bench.segments
    one = [r for r in segs if r["views"] == 1]
    two = [r for r in segs if r["views"] == 2]
    seg_groups: list[tuple[str, str, list[dict[str, Any]]]] = [
        ("head (home)", "1", [r for r in one if r["camera"] == HEAD and r["pose"] == "home"]),
        ("head (arm over object)", "1", [r for r in one if r["camera"] == HEAD and r["pose"] != "home"]),
        ("head (arm over object)", "2 (+wrist)", [r for r in two if r["camera"] == HEAD]),
        ("left_wrist", "1", [r for r in one if r["camera"] == "left_wrist"]),
        ("left_wrist", "2 (+head)", [r for r in two if r["camera"] == "left_wrist"]),
        ("right_wrist", "1", [r for r in one if r["camera"] == "right_wrist"]),
        ("right_wrist", "2 (+head)", [r for r in two if r["camera"] == "right_wrist"]),
        ("head (all)", "1", [r for r in one if r["camera"] == HEAD]),
        ("wrists (both)", "1", [r for r in one if r["camera"] != HEAD]),
        ("ALL CAMERAS", "1", one),
        ("ALL CAMERAS", "2", two),
        ("all, excluding bowls", "1", [r for r in one if r["kind"] != "bowl"]),
        ("all, excluding bowls", "2", [r for r in two if r["kind"] != "bowl"]),
        ("all, no bowls, top face fully visible", "1", [r for r in one if r["kind"] != "bowl" and r["top_visible"]]),
        ("all, no bowls, top face fully visible", "2",
         [r for r in two if r["kind"] != "bowl" and r["top_visible"] and r["second_top_visible"]]),
        ("all, top face partly hidden", "1", [r for r in one if not r["top_visible"]]),
        ("all, top face partly hidden", "2", [r for r in two if not (r["top_visible"] and r["second_top_visible"])]),
    ]  # fmt: skip
    seg_groups += [(f"  kind {k}", "1", [r for r in one if r["kind"] == k]) for k in sorted({r["kind"] for r in one})]
    seg_groups += [(f"  kind {k}", "2", [r for r in two if r["kind"] == k]) for k in sorted({r["kind"] for r in two})]
    seg: dict[str, dict[str, Any]] = {}
    rows = []
    for label, views, recs in seg_groups:
        s = seg_summary(recs)
        seg[f"{label.strip()} | {views}"] = s
        rows.append(
            (
                label,
                views,
                str(s["clicks"]),
                fmt(100 * s["found_rate"], 1),
                fmt(s["centroid_mm"]["median"]),
                fmt(s["centroid_mm"]["p95"]),
                fmt(s["xy_mm"]["median"]),
                fmt(s["dz_mm"]["median"]),
                fmt(s["iou"]["median"], 3),
                fmt(s["iou_p5"], 3),
                fmt(s["centroid_mm_median_all"]),
                fmt(s["iou_median_all"], 3),
                mark(seg_ok(s)) if s["clicks"] else "",
            )
        )
    print("4. segment() from one clicked top-face pixel: centroid (world_xyz_m vs true top-face centre), mask IoU")
    table(("camera / subset", "views", "clicks", "found %", "ctr med mm", "ctr p95", "xy med", "|dz| med", "IoU med",
           "IoU p5", "ctr med all", "IoU med all", "target"), rows, "<<>>>>>>>>>><")  # fmt: skip
    print(
        f"(med/p95/p5 over found calls; 'all' columns over every call, a failure counting as a miss: error infinite, "
        f"IoU 0; target: 'all' centroid median <= {CENTROID_MM:g} mm and IoU median >= {IOU_MIN:g}; 2-view calls are "
        "the clicks of objects seen by both the head and a moved wrist; 'top face fully visible': its whole outline, "
        "1 mm inside, is in the image and seen as the object in the rendered segmentation (for 2 views: in both); "
        "'partly hidden': the rest, occluded (in wrist views often by the gripper's fingers) or cut off by the image "
        "edge)"
    )
    for views, recs in (("1 view", one), ("2 views", two)):
        for key, count in Counter(reason_key(r["reason"]) for r in recs if not r["found"]).most_common(5):
            print(f"  {views}: failed {count}x: {key} ...")
    print(flush=True)

    # -- 5. timing
    timing = {k: stats_ms(v) for k, v in bench.times.items()}
    targets_ms = {
        "back_project": GEOMETRY_MS,
        "triangulate": GEOMETRY_MS,
        "world_map": None,
        "measure_table_height": TABLE_MS,
        "segment 1 view": SEGMENT_MS,
        "segment 2 views": SEGMENT_MS,
    }
    rows = []
    for key in TIMED:
        s, target = timing[key], targets_ms[key]
        rows.append(
            (
                key,
                str(s["n"]),
                fmt(s["median_ms"], 3),
                fmt(s["p95_ms"], 3),
                f"< {target:g}" if target else "",
                mark(s["median_ms"] < target) if target else "",
            )
        )
    print("5. time per call")
    table(("function", "calls", "median ms", "p95 ms", "target ms", "median"), rows, "<>>>><")
    print(f"(wall time of the layouts: {layouts_s:.1f} s including resets, rendering and {bench.moves['tried']} arm "
          f"moves, {bench.moves['reached']} of them reached)")  # fmt: skip
    print(flush=True)

    # -- summary
    def seg_line(key: str) -> tuple[str, bool]:
        s = seg[key]
        return (
            f"{fmt(s['centroid_mm_median_all'])} mm / IoU {fmt(s['iou_median_all'], 3)} ({s['clicks']} clicks, "
            f"found {fmt(100 * s['found_rate'], 1)}%)",
            seg_ok(s),
        )

    summary: list[tuple[str, str, str, bool]] = [
        ("1", f"table height error, every layout <= {TABLE_ERROR_MM:g} mm",
         f"max {fmt(tab_overall['max'], 3)} mm, median {fmt(tab_overall['median'], 3)} mm, found "
         f"{len(tab_err)}/{len(tab)}", table_err_ok),
        ("1", f"measure_table_height median < {TABLE_MS:g} ms", f"{fmt(tab_time['median_ms'], 1)} ms",
         tab_time["median_ms"] < TABLE_MS),
        ("2", f"back-projection head, measured plane, median <= {BACKPROJECT_HEAD_MM:g} mm",
         f"{fmt(bp_head['median'])} mm ({bp_head['n']}/{bp_head['samples']} clicks with a plane)",
         bp_head["n"] > 0 and bp_head["median"] <= BACKPROJECT_HEAD_MM),
        ("2", f"back-projection wrist, measured plane, median <= {BACKPROJECT_WRIST_MM:g} mm",
         f"{fmt(bp_wrist['median'])} mm ({bp_wrist['n']}/{bp_wrist['samples']} clicks with a plane)",
         bp_wrist["n"] > 0 and bp_wrist["median"] <= BACKPROJECT_WRIST_MM),
        ("3", f"triangulation, true points rounded, median <= {TRIANGULATION_MM:g} mm",
         f"{fmt(tri_gt['error_mm_median_all'])} mm ({tri_gt['n']} points)",
         tri_gt["n"] > 0 and tri_gt["error_mm_median_all"] <= TRIANGULATION_MM),
        ("3", f"triangulation, top-face centroids (no GT), median <= {TRIANGULATION_MM:g} mm",
         f"{fmt(tri_seg['error_mm_median_all'])} mm ({tri_seg['n']} objects)",
         tri_seg["n"] > 0 and tri_seg["error_mm_median_all"] <= TRIANGULATION_MM),
    ]  # fmt: skip
    for key in ("head (all) | 1", "left_wrist | 1", "right_wrist | 1", "ALL CAMERAS | 1", "ALL CAMERAS | 2"):
        text, ok = seg_line(key)
        label = key.replace(" | ", ", ").replace(", 1", ", 1 view").replace(", 2", ", 2 views")
        summary.append(("4", f"segment {label}: centroid <= {CENTROID_MM:g} mm, IoU >= {IOU_MIN:g}", text, ok))
    for key in TIMED:
        target = targets_ms[key]
        if target:
            s = timing[key]
            summary.append(
                (
                    "5",
                    f"{key} median < {target:g} ms",
                    f"{fmt(s['median_ms'], 3)} ms (p95 {fmt(s['p95_ms'], 3)})",
                    s["median_ms"] < target,
                )
            )
    print("summary")
    table(("#", "target", "measured", "result"), [(a, b, c, mark(d)) for a, b, c, d in summary], "<<<<")
    passed = sum(d for *_, d in summary)
    print(f"{passed}/{len(summary)} targets met")
    total = time.perf_counter() - t_all
    print(f"\nbenchmark wall time {total:.1f} s")

    if args.json is not None:
        figures = {
            "machine": {"nproc": nproc(), "cpu_model": cpu_model(), "python": platform.python_version()},
            "versions": {"mujoco": mujoco.__version__, "numpy": np.__version__, "opencv": cv2.__version__},
            "gl_backend": backend,
            "robot": ROBOT,
            "tasks": list(TASKS),
            "variants": list(VARIANTS),
            "seeds": n_seeds,
            "sampling_seed": args.seed,
            "quick": args.quick,
            "layouts": len(layouts),
            "table_height": {"overall": tab_overall, "per_layout": tab, "config_fallbacks": bench.table_fallbacks},
            "back_projection_mm": bp,
            "triangulation": tri,
            "segmentation": seg,
            "timing_ms": timing,
            "moves": dict(bench.moves),
            "summary": [{"section": a, "target": b, "measured": c, "ok": d} for a, b, c, d in summary],
            "benchmark_wall_s": total,
        }
        write_figures(args.json, plain(figures))
    return 0


if __name__ == "__main__":
    sys.exit(main())
