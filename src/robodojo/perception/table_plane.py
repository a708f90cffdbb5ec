"""The table's height from two or more calibrated RGB views taken at one instant, by plane sweep.

For every pair of views and candidate heights z, view B is warped into view A through the horizontal plane z (A's
pixel rays meet the plane, the points are projected into B) and the photo-consistency of A and the warped B is
scored. The table is where the views agree best. The score is a vote of small tiles: each tile of A that has texture
scores its zero-mean normalised cross-correlation (NCC) with the warped B, on band-passed grey levels (smooth,
view-dependent shading removed), and the score of a height is the mean over tiles. Objects, arms and grippers cover
a minority of tiles, so they cannot outvote the table however strong their contrast.

The search is coarse to fine: 1 cm steps over [z_min, z_max] on images downscaled 8x, then 2 mm steps on 4x, then
0.5 mm steps on 2x, and a parabola through the peak for the sub-millimetre height. Pairs are combined by the median.

A pair fails (and does not count) when its views see no common part of any plane in the range, when that part has
no texture, when the score has no clear peak, or when the tiles agree poorly at the peak (views that see different
surfaces, e.g. two wrist cameras over disjoint parts of the table, match only by chance). One exception: when every
pair agrees poorly but two or more of them still peak at the same plane (within MAX_CONSENSUS_SPREAD_MM), that
consensus of independent pairs is accepted (clutter covering a wrist view lowers every pair's agreement, not where
its peak lies). The sweep needs texture on
the table itself: a plain, single-colour table gives no signal of its own (its smooth shading is view-dependent), only
objects' footprints do, and tops of objects outvote them; such views mostly give found=False rather than a wrong
height.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations

import cv2
import numpy as np
from numpy.typing import NDArray

from robodojo.perception.camera import CameraModel

COARSE_STEP_M = 0.01
# (pyramid level, half-width of the searched interval [m], step [m]) after the coarse stage
REFINE_STAGES = ((2, 0.01, 0.002), (1, 0.002, 0.0005))
COARSE_LEVEL = 3
TILE_PX = 8  # tile side at every pyramid level
MIN_TILE_STD = 1.2  # grey levels (band-passed) a tile of A needs to vote
MIN_TILE_VALID = 0.8  # fraction of a tile's pixels that must land inside B
MIN_TILES = 6  # fewer voting tiles than this: the pair sees too little common texture
MIN_PEAK_CONTRAST = 0.05  # peak score minus the median score over the coarse sweep
MIN_AGREEMENT = 0.2  # mean tile NCC at the peak, at every refining stage
MAX_TILES = 256  # refining stages use at most this many tiles, evenly spread
MAX_PAIR_SPREAD_MM = 5.0  # two pairs that disagree by more: neither can be trusted
# When every pair agrees poorly (clutter covering much of a wrist view), two or more pairs whose best planes still
# coincide are independent evidence for the same plane: accepted down to this agreement, within this spread.
MIN_CONSENSUS_AGREEMENT = 0.12
MAX_CONSENSUS_SPREAD_MM = 1.5
BAND_SIGMAS_PX = (0.7, 3.0)  # band-pass: difference of Gaussians at every level
MIN_RAY_DZ = 1e-6
REMAP_MAX_ROWS = 32000


@dataclass(frozen=True)
class PairHeight:
    """One pair's sweep: A's pixels are compared with B warped into A."""

    camera_a: str
    camera_b: str
    found: bool
    height_m: float | None = None
    agreement: float | None = None  # mean tile NCC at the height
    tiles: int = 0  # tiles that voted at the finest stage
    reason: str = ""


@dataclass(frozen=True)
class TableHeight:
    """The table top's height [m] in the world frame, measured by plane sweep between camera pairs."""

    found: bool
    height_m: float | None = None
    agreement: float | None = None  # median over pairs of the mean tile NCC at their heights (1 = perfect)
    pair_heights_m: tuple[float, ...] = ()  # one per pair that found a height
    spread_mm: float | None = None  # max - min of pair_heights_m
    reason: str = ""
    pairs: tuple[PairHeight, ...] = ()  # every pair tried, with a reason for those that failed


@dataclass
class _View:
    camera: CameraModel
    levels: dict[int, NDArray[np.float32]]  # band-passed grey image per pyramid level


def _grey(image: NDArray) -> NDArray[np.float32]:
    if image.ndim == 3:
        return cv2.cvtColor(np.ascontiguousarray(image[..., :3]), cv2.COLOR_RGB2GRAY).astype(np.float32)
    return image.astype(np.float32)


def _pyramid(grey: NDArray[np.float32], levels: Sequence[int]) -> dict[int, NDArray[np.float32]]:
    out: dict[int, NDArray[np.float32]] = {}
    img = grey
    for level in range(max(levels) + 1):
        if level > 0:
            img = cv2.resize(img, (img.shape[1] // 2, img.shape[0] // 2), interpolation=cv2.INTER_AREA)
        if level in levels:
            lo, hi = BAND_SIGMAS_PX
            out[level] = cv2.GaussianBlur(img, (0, 0), lo) - cv2.GaussianBlur(img, (0, 0), hi)
    return out


def _input_problem(views: object) -> str:
    if not isinstance(views, Sequence) or isinstance(views, str | bytes):
        return f"views must be a sequence of (image, CameraModel) pairs, got {type(views).__name__}"
    if len(views) < 2:
        return f"need at least two views of the table, got {len(views)}"
    for i, view in enumerate(views):
        if not isinstance(view, Sequence) or len(view) != 2 or not isinstance(view[1], CameraModel):
            return f"view {i} must be an (image, CameraModel) pair"
        image, camera = view
        if not isinstance(image, np.ndarray) or image.ndim not in (2, 3) or (image.ndim == 3 and image.shape[2] < 3):
            return f"image of '{camera.name}' must be an HxWx3 RGB or HxW grey array"
        if image.shape[:2] != (camera.height, camera.width):
            return (
                f"image of '{camera.name}' is {image.shape[1]}x{image.shape[0]}, "
                f"its camera is {camera.width}x{camera.height}"
            )
        if min(camera.width, camera.height) < TILE_PX * 2 ** (COARSE_LEVEL + 1):
            return f"image of '{camera.name}' is too small for the sweep ({camera.width}x{camera.height})"
    return ""


def _remap(img: NDArray[np.float32], u: NDArray[np.float32], v: NDArray[np.float32]) -> NDArray[np.float32]:
    """cv2.remap for maps of any number of rows (OpenCV takes fewer than 32767 per call)."""
    chunk = REMAP_MAX_ROWS
    parts = [
        cv2.remap(img, u[i : i + chunk], v[i : i + chunk], cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
        for i in range(0, max(len(u), 1), chunk)
    ]
    return np.concatenate(parts, axis=0) if len(parts) > 1 else parts[0]


@dataclass(frozen=True)
class _Scores:
    mean_ncc: NDArray[np.float64]  # per height, NaN where no tile votes
    voters: NDArray[np.int64]  # per height
    overlap_px: int  # A's pixels that land inside B, summed over heights


class _Stage:
    """Warps B into A through horizontal planes at one pyramid level, for the pixels of A's textured tiles."""

    def __init__(self, a: _View, b: _View, level: int, textured_only: bool = True) -> None:
        img_a, self.img_b = a.levels[level], b.levels[level]
        cam_a, self.cam_b = a.camera, b.camera
        ty, tx = img_a.shape[0] // TILE_PX, img_a.shape[1] // TILE_PX
        blocks = img_a[: ty * TILE_PX, : tx * TILE_PX].reshape(ty, TILE_PX, tx, TILE_PX).transpose(0, 2, 1, 3)
        tiles_a = blocks.reshape(ty * tx, TILE_PX * TILE_PX)
        textured = tiles_a.std(axis=1) >= MIN_TILE_STD
        keep = textured if textured_only else np.ones(len(tiles_a), dtype=bool)
        self.tile_ids = np.flatnonzero(keep)
        if textured_only and len(self.tile_ids) > MAX_TILES:
            self.tile_ids = self.tile_ids[np.linspace(0, len(self.tile_ids) - 1, MAX_TILES).round().astype(int)]
            keep = np.zeros(len(tiles_a), dtype=bool)
            keep[self.tile_ids] = True
        self.textured = textured[keep]
        self.a = tiles_a[keep]  # (tiles, pixels)
        # Full-resolution pixel centres of the kept tiles' pixels, and their rays.
        dr, dc = np.divmod(np.arange(TILE_PX * TILE_PX), TILE_PX)
        rows = (self.tile_ids // tx)[:, None] * TILE_PX + dr[None, :]
        cols = (self.tile_ids % tx)[:, None] * TILE_PX + dc[None, :]
        sx, sy = cam_a.width / img_a.shape[1], cam_a.height / img_a.shape[0]
        xy = cam_a.normalized((rows.ravel() + 0.5) * sy - 0.5, (cols.ravel() + 0.5) * sx - 0.5)
        rays = np.concatenate([xy, np.ones((len(xy), 1))], axis=1) @ cam_a.T_world_cam[:3, :3].T
        R_b = self.cam_b.T_cam_world[:3, :3]
        q = rays @ R_b.T  # ray directions in B's frame
        e = R_b @ (cam_a.position_m - self.cam_b.position_m)  # A's centre in B's frame
        dz = rays[:, 2]
        inv_dz = np.where(np.abs(dz) > MIN_RAY_DZ, 1.0 / np.where(dz == 0, 1.0, dz), np.nan)
        self.z_a = float(cam_a.position_m[2])
        hb, wb = self.img_b.shape
        # B's intrinsics at this level: full-resolution pixel (u, v) -> ((u + 0.5) * s - 0.5)
        sx, sy = wb / self.cam_b.width, hb / self.cam_b.height
        self.kb = np.diag([sx, sy, 1.0]) @ self.cam_b.K
        self.kb[:2, 2] += 0.5 * np.array([sx, sy]) - 0.5
        self.b_size = (wb, hb)
        self.q, self.e, self.inv_dz = q.astype(np.float32), e.astype(np.float32), inv_dz.astype(np.float32)
        self.qk, self.ek = (q @ self.kb.T).astype(np.float32), (self.kb @ e).astype(np.float32)
        self._e64, self._q64, self._inv_dz64 = e, q, inv_dz

    @property
    def n_tiles(self) -> int:
        return len(self.tile_ids)

    def distances(self, z: float) -> tuple[NDArray[np.float64], NDArray[np.float64]]:
        """Distances [m] from A and from B to the plane points of A's pixels (NaN where A does not see the plane)."""
        t = (z - self.z_a) * self._inv_dz64
        t = np.where(t > 0, t, np.nan)
        return t, np.linalg.norm(self._e64 + t[:, None] * self._q64, axis=1)

    def warp(self, zs: NDArray[np.float64]) -> tuple[NDArray[np.float32], NDArray[np.bool_]]:
        """B at A's pixels through each plane z: values (0 where invalid) and validity, (heights, tiles, pixels)."""
        t = (np.asarray(zs, dtype=np.float32)[:, None] - np.float32(self.z_a)) * self.inv_dz[None, :]  # (Z, N)
        w = self.e[2] + t * self.q[:, 2]  # depth in B
        ok = (t > 0) & (w > 1e-6)
        w = np.where(ok, w, np.float32(1.0))
        if self.cam_b.has_distortion:
            x, y = (self.e[0] + t * self.q[:, 0]) / w, (self.e[1] + t * self.q[:, 1]) / w
            x, y = self.cam_b.lens.distort(x, y)
            u = (x * self.kb[0, 0] + y * self.kb[0, 1] + self.kb[0, 2]).astype(np.float32)
            v = (y * self.kb[1, 1] + self.kb[1, 2]).astype(np.float32)
        else:  # pixel = K e + t K q, homogeneous
            u = (self.ek[0] + t * self.qk[:, 0]) / w
            v = (self.ek[1] + t * self.qk[:, 1]) / w
        wb, hb = self.b_size
        ok &= (u >= 0) & (u <= wb - 1) & (v >= 0) & (v <= hb - 1)
        u[~ok] = -10.0
        shape = (len(zs), self.n_tiles, TILE_PX * TILE_PX)
        warped = _remap(self.img_b, u.reshape(-1, TILE_PX**2), v.reshape(-1, TILE_PX**2))
        return warped.reshape(shape), ok.reshape(shape)

    def scores(self, zs: NDArray[np.float64], voters: NDArray[np.bool_], same_voters: bool) -> _Scores:
        """Per height: the mean over voting tiles of the zero-mean NCC of A and warped B, and the number of voters.

        A tile votes at a height if it is among ``voters`` and at least MIN_TILE_VALID of it lands inside B there;
        with ``same_voters`` only tiles that do so at every height vote.
        """
        b, ok = self.warp(zs)
        m = ok.astype(np.float32)
        n = m.sum(axis=2)
        valid = (n >= MIN_TILE_VALID * TILE_PX**2) & voters[None, :]  # (Z, tiles)
        if same_voters:
            valid = np.broadcast_to(valid.all(axis=0), valid.shape)
        n = np.maximum(n, 1.0)
        a = self.a[None, :, :] * m
        sa, sb = a.sum(axis=2), b.sum(axis=2)
        cov = np.einsum("ztp,ztp->zt", a, b) - sa * sb / n
        va = np.einsum("ztp,ztp->zt", a, a) - sa * sa / n
        vb = np.einsum("ztp,ztp->zt", b, b) - sb * sb / n
        ncc = cov / np.sqrt(np.maximum(va * vb, 1e-6))
        count = valid.sum(axis=1)
        mean = np.where(count > 0, (ncc * valid).sum(axis=1) / np.maximum(count, 1), np.nan)
        return _Scores(mean, count, int(ok.sum()))


def _parabola_peak(zs: NDArray[np.float64], scores: NDArray[np.float64]) -> float:
    i = int(np.nanargmax(scores))
    if i == 0 or i == len(zs) - 1:
        return float(zs[i])
    lo, mid, hi = scores[i - 1], scores[i], scores[i + 1]
    denom = lo - 2 * mid + hi
    if not denom < 0:
        return float(zs[i])
    offset = 0.5 * (lo - hi) / denom
    return float(zs[i] + np.clip(offset, -1.0, 1.0) * (zs[1] - zs[0]))


def _sweep_pair(a: _View, b: _View, z_min: float, z_max: float) -> PairHeight:
    names = (a.camera.name, b.camera.name)
    coarse = _Stage(a, b, COARSE_LEVEL, textured_only=False)
    zs = np.arange(z_min, z_max + 0.5 * COARSE_STEP_M, COARSE_STEP_M)
    sc = coarse.scores(zs, coarse.textured, same_voters=False)
    if sc.overlap_px == 0:
        return PairHeight(*names, found=False, reason="the views see no common part of any plane in the range")
    if sc.voters.max() < MIN_TILES:
        return PairHeight(
            *names,
            found=False,
            reason=f"at most {int(sc.voters.max())} textured tiles seen by both views: the common view is textureless",
        )
    scores = np.where(sc.voters >= MIN_TILES, sc.mean_ncc, np.nan)
    best = int(np.nanargmax(scores))
    median = float(np.nanmedian(scores))
    if scores[best] - median < MIN_PEAK_CONTRAST:
        return PairHeight(
            *names,
            found=False,
            agreement=float(scores[best]),
            reason=f"no peak in photo-consistency (best {scores[best]:.3f}, median {median:.3f}): "
            "the common view has too little texture",
        )
    z0 = _parabola_peak(zs, scores)
    for level, half, step in REFINE_STAGES:
        stage = _Stage(a, b, level)
        zs = z0 + np.arange(-half, half + 0.5 * step, step)
        sc = stage.scores(zs, np.ones(stage.n_tiles, dtype=bool), same_voters=True)
        tiles = int(sc.voters.min())
        if tiles < MIN_TILES:
            return PairHeight(
                *names, found=False, reason=f"only {tiles} textured tiles near {z0:.3f} m at pyramid level {level}"
            )
        z0 = _parabola_peak(zs, sc.mean_ncc)
        agreement = float(np.nanmax(sc.mean_ncc))
        if agreement < MIN_AGREEMENT:
            return PairHeight(
                *names,
                found=False,
                height_m=z0,
                agreement=agreement,
                tiles=tiles,
                reason=f"the views agree poorly at their best plane {z0:.4f} m (NCC {agreement:.2f} at pyramid level "
                f"{level}): too little texture on the plane, or the views do not see the same surface",
            )
    if not z_min <= z0 <= z_max:
        return PairHeight(*names, found=False, reason=f"the best plane {z0:.4f} m lies outside the range")
    return PairHeight(*names, found=True, height_m=z0, agreement=agreement, tiles=tiles)


def _ordered(a: _View, b: _View, z_mid: float) -> tuple[_View, _View]:
    """(A, B) with A the view that resolves the common plane more finely (B is then sampled, not decimated)."""
    stage = _Stage(a, b, COARSE_LEVEL, textured_only=False)
    dist_a, dist_b = stage.distances(z_mid)
    seen = np.isfinite(dist_a)
    if not seen.any():
        return a, b
    gsd_a = float(np.median(dist_a[seen])) / a.camera.K[0, 0]
    gsd_b = float(np.median(dist_b[seen])) / b.camera.K[0, 0]
    return (a, b) if gsd_a <= gsd_b else (b, a)


def _consensus(pairs: list[PairHeight]) -> list[PairHeight]:
    """``pairs`` with those that failed only on agreement but whose best planes coincide (at least two, within
    MAX_CONSENSUS_SPREAD_MM) marked found; unchanged when there is no such consensus."""
    weak = [
        i for i, p in enumerate(pairs)
        if p.height_m is not None and p.agreement is not None and p.agreement >= MIN_CONSENSUS_AGREEMENT
    ]  # fmt: skip
    heights = [float(pairs[i].height_m) for i in weak]  # type: ignore[arg-type]
    if len(weak) < 2 or (max(heights) - min(heights)) * 1e3 > MAX_CONSENSUS_SPREAD_MM:
        return pairs
    return [replace(p, found=True, reason=f"accepted by consensus: {p.reason}") if i in weak else p
            for i, p in enumerate(pairs)]  # fmt: skip


def measure_table_height(
    views: Sequence[tuple[np.ndarray, CameraModel]], z_min_m: float = 0.5, z_max_m: float = 1.2
) -> TableHeight:
    """The height [m] of the horizontal table plane seen in ``views``: (RGB image, calibrated camera) pairs.

    All images must be from one instant (wrist cameras move with the arms). Every pair of views that sees a common
    part of the plane gives a height; the result is their median, with their spread. Never raises on bad input:
    ``found`` is False and ``reason`` says why.
    """
    problem = _input_problem(views)
    if problem:
        return TableHeight(found=False, reason=problem)
    if not all(isinstance(v, int | float) and math.isfinite(v) for v in (z_min_m, z_max_m)) or z_min_m >= z_max_m:
        return TableHeight(found=False, reason=f"need finite z_min_m < z_max_m, got {z_min_m!r}, {z_max_m!r}")
    if z_max_m - z_min_m > 5.0:
        return TableHeight(found=False, reason=f"search range {z_max_m - z_min_m:.1f} m is too wide (at most 5 m)")
    levels = (COARSE_LEVEL, *(s[0] for s in REFINE_STAGES))
    prepared = [_View(camera, _pyramid(_grey(np.asarray(image)), levels)) for image, camera in views]
    z_mid = 0.5 * (z_min_m + z_max_m)
    pairs = [_sweep_pair(*_ordered(a, b, z_mid), z_min_m, z_max_m) for a, b in combinations(prepared, 2)]
    good = [p for p in pairs if p.found]
    if not good:
        pairs = _consensus(pairs)
        good = [p for p in pairs if p.found]
    if not good:
        if all("no common part" in p.reason for p in pairs):
            reason = f"no pair of views sees a common part of any plane between {z_min_m} and {z_max_m} m"
        else:
            reason = "no pair of views found the table: " + "; ".join(
                f"{p.camera_a}/{p.camera_b}: {p.reason}" for p in pairs
            )
        return TableHeight(found=False, reason=reason, pairs=tuple(pairs))
    heights = tuple(float(p.height_m) for p in good)  # type: ignore[arg-type]
    spread_mm = (max(heights) - min(heights)) * 1e3
    if len(good) == 2 and spread_mm > MAX_PAIR_SPREAD_MM:
        return TableHeight(
            found=False,
            pair_heights_m=heights,
            spread_mm=spread_mm,
            reason=f"the two pairs that found a plane disagree by {spread_mm:.1f} mm "
            f"({', '.join(f'{h:.4f}' for h in heights)} m); a third view would decide",
            pairs=tuple(pairs),
        )
    return TableHeight(
        found=True,
        height_m=float(np.median(heights)),
        agreement=float(np.median([p.agreement for p in good])),
        pair_heights_m=heights,
        spread_mm=spread_mm,
        pairs=tuple(pairs),
    )
