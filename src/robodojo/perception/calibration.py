"""Camera calibration from ChArUco boards: intrinsics, a fixed camera's pose, and a wrist camera's hand-eye transform.

Pure functions on images, arrays and poses (scripts/calibrate_cameras.py does the file handling). Every step returns
a result with ``ok``/``found`` and a ``reason`` instead of raising on bad input: too few corners, too few or too
similar views, degenerate arm motions.

Board frame (OpenCV's): origin at the outer corner of the top-left square of the printed board (:func:`board_image`
without margin), x along the printed columns, y down the printed rows, z = x cross y pointing into the board. A
board lying face up on the table therefore has its z axis pointing down.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace

import cv2
import numpy as np
from numpy.typing import ArrayLike, NDArray

from robodojo.geometry import Matrix, rotation_angle_between, transform

MIN_CORNERS = 6  # ChArUco corners for a usable view (a pose needs 4 non-collinear; a few more keep it stable)
MIN_INTRINSIC_VIEWS = 4
MIN_TILT_SPREAD_DEG = 10.0  # board orientations must differ this much across views, or focal length is unobservable
MAX_INTRINSIC_RMS_PX = 1.0
MIN_HAND_EYE_POSES = 3
MIN_MOTION_ROTATION_DEG = 3.0  # relative TCP rotations below this carry no hand-eye rotation information
MIN_AXIS_SPREAD_DEG = 10.0  # rotations must be about at least two axes this far apart
HAND_EYE_METHODS = {
    "tsai": cv2.CALIB_HAND_EYE_TSAI,
    "park": cv2.CALIB_HAND_EYE_PARK,
    "horaud": cv2.CALIB_HAND_EYE_HORAUD,
    "andreff": cv2.CALIB_HAND_EYE_ANDREFF,
    "daniilidis": cv2.CALIB_HAND_EYE_DANIILIDIS,
}
MAX_HAND_EYE_RESIDUAL_M = 0.005  # board poses implied by the views may scatter this much (RMS) ...
MAX_HAND_EYE_RESIDUAL_DEG = 1.0  # ... and this much in rotation
ROTATION_WEIGHT_M_PER_RAD = 0.1  # ranks hand-eye methods: 1 deg of board-pose scatter counts like 1.7 mm


# -- the board ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class CharucoBoardSpec:
    """A ChArUco board: ``squares_x`` x ``squares_y`` chessboard squares with ArUco markers in the white ones."""

    squares_x: int = 7
    squares_y: int = 5
    square_m: float = 0.04
    marker_m: float = 0.03
    dictionary: str = "DICT_4X4_50"

    def __post_init__(self) -> None:
        if self.squares_x < 2 or self.squares_y < 2:
            raise ValueError(f"a ChArUco board needs at least 2 x 2 squares, got {self.squares_x} x {self.squares_y}")
        if not 0 < self.marker_m < self.square_m:
            raise ValueError(f"marker size {self.marker_m} m must be positive and below the square size")
        if not self.dictionary.startswith("DICT_") or not hasattr(cv2.aruco, self.dictionary):
            raise ValueError(f"unknown ArUco dictionary {self.dictionary!r} (e.g. DICT_4X4_50, DICT_5X5_100)")
        needed = self.squares_x * self.squares_y // 2
        available = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, self.dictionary)).bytesList.shape[0]
        if needed > available:
            raise ValueError(f"{self.dictionary} has {available} markers; the board needs {needed}")

    @property
    def size_m(self) -> tuple[float, float]:
        """Width (along x) and height (along y) of the squares area [m]."""
        return self.squares_x * self.square_m, self.squares_y * self.square_m

    @property
    def corner_count(self) -> int:
        return (self.squares_x - 1) * (self.squares_y - 1)

    def opencv(self) -> cv2.aruco.CharucoBoard:
        return _opencv_board(self)

    def corner_points(self, ids: ArrayLike | None = None) -> NDArray[np.float64]:
        """Board-frame positions (Nx3) of the ChArUco corners ``ids`` (all corners if None)."""
        points = np.asarray(self.opencv().getChessboardCorners(), dtype=float)
        return points if ids is None else points[np.asarray(ids, dtype=int).ravel()]


@functools.cache
def _opencv_board(spec: CharucoBoardSpec) -> cv2.aruco.CharucoBoard:
    dictionary = cv2.aruco.getPredefinedDictionary(getattr(cv2.aruco, spec.dictionary))
    return cv2.aruco.CharucoBoard((spec.squares_x, spec.squares_y), spec.square_m, spec.marker_m, dictionary)


def board_image(board: CharucoBoardSpec, pixels_per_m: float, margin_m: float = 0.0) -> NDArray[np.uint8]:
    """The board as a grayscale image (row 0 = board y 0), with a white ``margin_m`` quiet zone on every side.

    Print it at ``pixels_per_m`` (e.g. 300 dpi = 11811 px/m) and check the printed square size; a margin of about half
    a square helps detection.
    """
    if pixels_per_m <= 0 or margin_m < 0:
        raise ValueError("pixels_per_m must be positive and margin_m non-negative")
    width_m, height_m = board.size_m
    margin_px = round(margin_m * pixels_per_m)
    size = (round(width_m * pixels_per_m) + 2 * margin_px, round(height_m * pixels_per_m) + 2 * margin_px)
    return board.opencv().generateImage(size, marginSize=margin_px, borderBits=1)


# -- detection ------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Detection:
    """ChArUco corners found in one image: pixel (u, v) = (col, row) positions, ids, and their board-frame points."""

    found: bool
    corners_px: NDArray[np.float64]  # (N, 2)
    ids: NDArray[np.int32]  # (N,)
    points_board: NDArray[np.float64]  # (N, 3) board-frame positions of the corners [m]
    image_size: tuple[int, int]  # (width, height)
    reason: str = ""
    markers: int = 0  # ArUco markers found

    @property
    def count(self) -> int:
        return len(self.ids)


def _no_detection(reason: str, image_size: tuple[int, int] = (0, 0), markers: int = 0) -> Detection:
    return Detection(False, np.zeros((0, 2)), np.zeros(0, np.int32), np.zeros((0, 3)), image_size, reason, markers)


def _gray(image: ArrayLike) -> NDArray[np.uint8] | str:
    img = np.asarray(image)
    if img.ndim == 3 and img.shape[2] == 1:
        img = img[:, :, 0]
    if img.ndim not in (2, 3) or (img.ndim == 3 and img.shape[2] not in (3, 4)) or min(img.shape[:2]) < 8:
        return f"not an image: array of shape {img.shape}"
    if img.dtype != np.uint8:
        if not np.issubdtype(img.dtype, np.number) or not np.all(np.isfinite(img)):
            return f"not an image: dtype {img.dtype} or non-finite values"
        scale = 255.0 if img.max() <= 1.0 else 1.0
        img = np.clip(img * scale, 0, 255).astype(np.uint8)
    if img.ndim == 3:  # colour order does not matter for finding black and white squares
        img = cv2.cvtColor(np.ascontiguousarray(img[:, :, :3]), cv2.COLOR_RGB2GRAY)
    return np.ascontiguousarray(img)


def detect_charuco(image: ArrayLike, board: CharucoBoardSpec, *, min_corners: int = MIN_CORNERS) -> Detection:
    """Find the ChArUco corners of ``board`` in an RGB (any channel order) or grayscale image."""
    gray = _gray(image)
    if isinstance(gray, str):
        return _no_detection(gray)
    size = (gray.shape[1], gray.shape[0])
    detector = cv2.aruco.CharucoDetector(board.opencv())
    corners, ids, _, marker_ids = detector.detectBoard(gray)
    markers = 0 if marker_ids is None else len(marker_ids)
    if markers == 0:
        blank = " (the image is blank)" if float(gray.std()) < 2.0 else ""
        return _no_detection(f"no {board.dictionary} markers found{blank}", size)
    n = 0 if ids is None else len(ids)
    if n < min_corners:
        return _no_detection(f"only {n} ChArUco corners found ({markers} markers); need {min_corners}", size, markers)
    ids = ids.ravel().astype(np.int32)
    points = board.corner_points(ids)
    spread = np.linalg.svd(points[:, :2] - points[:, :2].mean(axis=0), compute_uv=False)
    if spread[1] < 0.25 * board.square_m:
        return _no_detection(f"the {n} corners found lie on one line", size, markers)
    return Detection(True, corners.reshape(-1, 2).astype(float), ids, points, size, "", markers)


# -- intrinsics -----------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class IntrinsicsResult:
    ok: bool
    K: NDArray[np.float64]
    distortion: NDArray[np.float64]  # plumb_bob (k1, k2, p1, p2, k3)
    rms_px: float
    reason: str = ""
    image_size: tuple[int, int] = (0, 0)
    views_used: int = 0
    per_view_rms_px: tuple[float, ...] = ()
    tilt_spread_deg: float = 0.0  # largest angle between the board normals of two views


def _failed_intrinsics(reason: str, image_size: tuple[int, int], views: int = 0) -> IntrinsicsResult:
    return IntrinsicsResult(False, np.eye(3), np.zeros(5), math.inf, reason, image_size, views)


def calibrate_intrinsics(
    detections: Sequence[Detection],
    image_size: tuple[int, int],
    *,
    min_views: int = MIN_INTRINSIC_VIEWS,
    fix_k3: bool = True,
    max_rms_px: float = MAX_INTRINSIC_RMS_PX,
    min_tilt_spread_deg: float = MIN_TILT_SPREAD_DEG,
) -> IntrinsicsResult:
    """Pinhole + plumb_bob intrinsics from views of a board (``image_size`` = (width, height)).

    Views without a detection are skipped. The boards must be seen at several orientations (tilted 20-40 degrees
    in different directions); views that are all parallel leave the focal length undetermined and are rejected.
    ``fix_k3`` keeps the sixth-order radial term at zero, as usual for lenses without strong distortion.
    """
    size = (int(image_size[0]), int(image_size[1]))
    usable = [d for d in detections if d.found]
    wrong_size = [d.image_size for d in usable if tuple(d.image_size) != size]
    if wrong_size:
        return _failed_intrinsics(f"views of size {wrong_size[0]} given for image size {size}", size)
    if len(usable) < min_views:
        return _failed_intrinsics(
            f"only {len(usable)} usable views of {len(detections)} (need {min_views}, better 10 or more)",
            size,
            len(usable),
        )
    objects = [d.points_board.astype(np.float32).reshape(-1, 1, 3) for d in usable]
    images = [d.corners_px.astype(np.float32).reshape(-1, 1, 2) for d in usable]
    flags = cv2.CALIB_FIX_K3 if fix_k3 else 0
    try:
        rms, K, dist, rvecs, tvecs = cv2.calibrateCamera(objects, images, size, None, None, flags=flags)
    except cv2.error as exc:
        return _failed_intrinsics(f"OpenCV calibration failed: {exc.msg.strip()}", size, len(usable))
    K, dist = np.asarray(K, dtype=float), np.asarray(dist, dtype=float).ravel()
    dist = np.concatenate([dist, np.zeros(5)])[:5]
    per_view = []
    for obj, img, rvec, tvec in zip(objects, images, rvecs, tvecs, strict=True):
        projected, _ = cv2.projectPoints(obj, rvec, tvec, K, dist)
        per_view.append(float(np.sqrt(np.mean(np.sum((projected - img).reshape(-1, 2) ** 2, axis=1)))))
    normals = [cv2.Rodrigues(r)[0][:, 2] for r in rvecs]
    spread = max(
        (math.degrees(math.acos(np.clip(a @ b, -1.0, 1.0))) for a, b in itertools.combinations(normals, 2)),
        default=0.0,
    )
    result = IntrinsicsResult(True, K, dist, float(rms), "", size, len(usable), tuple(per_view), spread)
    if not (np.all(np.isfinite(K)) and np.all(np.isfinite(dist)) and K[0, 0] > 0 and K[1, 1] > 0):
        return replace(result, ok=False, reason="calibration diverged (non-finite or negative focal length)")
    if spread < min_tilt_spread_deg:
        return replace(
            result,
            ok=False,
            reason=f"views too similar: board orientations differ by at most {spread:.1f} deg (need "
            f"{min_tilt_spread_deg:g}); tilt the board 20-40 deg in different directions",
        )
    if rms > max_rms_px:
        return replace(result, ok=False, reason=f"reprojection error {rms:.2f} px exceeds {max_rms_px:g} px")
    return result


# -- board pose and a fixed camera's extrinsics -----------------------------------------------------------------------
@dataclass(frozen=True)
class BoardPose:
    ok: bool
    T_cam_board: NDArray[np.float64]  # board frame -> camera optical frame
    rms_px: float
    reason: str = ""


def _pnp(
    points_board: NDArray[np.float64], corners_px: NDArray[np.float64], K: ArrayLike, dist: ArrayLike
) -> tuple[Matrix, float] | None:
    obj = points_board.astype(np.float64).reshape(-1, 1, 3)
    img = corners_px.astype(np.float64).reshape(-1, 1, 2)
    K, dist = np.asarray(K, dtype=float), np.asarray(dist, dtype=float).ravel()
    try:
        n, rvecs, tvecs, _ = cv2.solvePnPGeneric(obj, img, K, dist, flags=cv2.SOLVEPNP_IPPE)
    except cv2.error:
        return None
    best = None
    for rvec, tvec in zip(rvecs[:n], tvecs[:n], strict=True):
        rvec, tvec = cv2.solvePnPRefineLM(obj, img, K, dist, rvec.copy(), tvec.copy())
        projected, _ = cv2.projectPoints(obj, rvec, tvec, K, dist)
        rms = float(np.sqrt(np.mean(np.sum((projected - img).reshape(-1, 2) ** 2, axis=1))))
        if tvec[2, 0] > 0 and (best is None or rms < best[1]):
            best = (transform(cv2.Rodrigues(rvec)[0], tvec.ravel()), rms)
    return best


def board_pose(detection: Detection, K: ArrayLike, dist: ArrayLike, *, max_rms_px: float = 2.0) -> BoardPose:
    """Pose of the board in the camera's optical frame (planar PnP, refined by Levenberg-Marquardt)."""
    if not detection.found:
        return BoardPose(False, np.eye(4), math.inf, f"no board: {detection.reason}")
    solved = _pnp(detection.points_board, detection.corners_px, K, dist)
    if solved is None:
        return BoardPose(False, np.eye(4), math.inf, "PnP found no board pose in front of the camera")
    T, rms = solved
    if rms > max_rms_px:
        reason = f"reprojection error {rms:.2f} px exceeds {max_rms_px:g} px (wrong intrinsics?)"
        return BoardPose(False, T, rms, reason)
    return BoardPose(True, T, rms)


@dataclass(frozen=True)
class ExtrinsicsResult:
    ok: bool
    T_world_cam: NDArray[np.float64]
    T_cam_board: NDArray[np.float64]
    rms_px: float
    reason: str = ""


def head_extrinsics(
    detection: Detection | Sequence[Detection],
    K: ArrayLike,
    dist: ArrayLike,
    T_world_board: ArrayLike,
    *,
    max_rms_px: float = 2.0,
) -> ExtrinsicsResult:
    """A fixed camera's pose from a board at a known world pose ``T_world_board`` (board frame as in this module).

    Several detections of the same board placement (e.g. a few frames) are solved together.
    """
    detections = [detection] if isinstance(detection, Detection) else list(detection)
    found = [d for d in detections if d.found]
    if not found:
        reasons = "; ".join(sorted({d.reason for d in detections})) or "no images"
        return ExtrinsicsResult(False, np.eye(4), np.eye(4), math.inf, f"board not found: {reasons}")
    merged = Detection(
        True,
        np.concatenate([d.corners_px for d in found]),
        np.concatenate([d.ids for d in found]),
        np.concatenate([d.points_board for d in found]),
        found[0].image_size,
    )
    pose = board_pose(merged, K, dist, max_rms_px=max_rms_px)
    T_world_board = np.asarray(T_world_board, dtype=float)
    T_world_cam = T_world_board @ np.linalg.inv(pose.T_cam_board)
    return ExtrinsicsResult(pose.ok, T_world_cam, pose.T_cam_board, pose.rms_px, pose.reason)


# -- hand-eye -------------------------------------------------------------------------------------------------------
@dataclass(frozen=True)
class HandEyeResult:
    ok: bool
    T_tcp_cam: NDArray[np.float64]
    reason: str = ""
    method: str = ""
    T_world_board: NDArray[np.float64] = field(default_factory=lambda: np.eye(4))  # the board pose it implies
    # Scatter of the board's world pose over the views (T_world_tcp @ T_tcp_cam @ T_cam_board): a consistency check.
    residual_m: float = math.inf
    residual_deg: float = math.inf


def _rotation_vector(R: Matrix) -> NDArray[np.float64]:
    return cv2.Rodrigues(np.asarray(R, dtype=float))[0].ravel()


def hand_eye_degeneracy(T_world_tcp: Sequence[ArrayLike]) -> str:
    """Why these TCP poses cannot determine a hand-eye transform ('' if they can)."""
    poses = [np.asarray(T, dtype=float) for T in T_world_tcp]
    axes = []
    for A, B in itertools.combinations(poses, 2):
        rvec = _rotation_vector(A[:3, :3].T @ B[:3, :3])
        angle = np.linalg.norm(rvec)
        if math.degrees(angle) >= MIN_MOTION_ROTATION_DEG:
            axes.append(rvec / angle)
    if len(axes) < 2:
        return (
            f"degenerate poses: the TCP rotates by less than {MIN_MOTION_ROTATION_DEG:g} deg between poses; "
            "tilt and turn the wrist between views"
        )
    spread = max(math.degrees(math.acos(min(abs(float(a @ b)), 1.0))) for a, b in itertools.combinations(axes, 2))
    if spread < MIN_AXIS_SPREAD_DEG:
        return (
            f"degenerate poses: all TCP rotations are about one axis (within {spread:.1f} deg); "
            "rotate the wrist about at least two different axes"
        )
    return ""


def mean_pose(poses: Sequence[Matrix]) -> Matrix:
    """The mean of poses: positions averaged, rotations by the chordal L2 mean (the summed matrices projected onto
    SO(3))."""
    U, _, Vt = np.linalg.svd(sum(T[:3, :3] for T in poses))
    R = U @ np.diag([1.0, 1.0, np.linalg.det(U @ Vt)]) @ Vt
    return transform(R, np.mean([T[:3, 3] for T in poses], axis=0))


def board_scatter(
    T_world_tcp: Sequence[Matrix], T_cam_board: Sequence[Matrix], T_tcp_cam: Matrix
) -> tuple[Matrix, float, float]:
    """The board's world pose each view implies (T_world_tcp @ T_tcp_cam @ T_cam_board): their mean, and their RMS
    scatter about it [m], [deg]."""
    boards = [A @ T_tcp_cam @ B for A, B in zip(T_world_tcp, T_cam_board, strict=True)]
    positions = np.array([T[:3, 3] for T in boards])
    mean = mean_pose(boards)
    mean_pos, R_mean = mean[:3, 3], mean[:3, :3]
    residual_m = float(np.sqrt(np.mean(np.sum((positions - mean_pos) ** 2, axis=1))))
    residual_rad = float(np.sqrt(np.mean([rotation_angle_between(R_mean, T[:3, :3]) ** 2 for T in boards])))
    return transform(R_mean, mean_pos), residual_m, math.degrees(residual_rad)


def hand_eye(
    T_world_tcp: Sequence[ArrayLike],
    T_cam_board: Sequence[ArrayLike],
    *,
    method: str | None = None,
    min_poses: int = MIN_HAND_EYE_POSES,
    max_residual_m: float = MAX_HAND_EYE_RESIDUAL_M,
    max_residual_deg: float = MAX_HAND_EYE_RESIDUAL_DEG,
) -> HandEyeResult:
    """Eye-in-hand calibration: the camera-to-TCP transform ``T_tcp_cam`` from TCP poses and board poses.

    The board stays fixed in the world while the arm moves; ``T_world_tcp[i]`` and ``T_cam_board[i]`` belong to the
    same view. OpenCV's calibrateHandEye with gripper = TCP, base = world, target = board. ``method`` is one of
    HAND_EYE_METHODS; None tries them all and keeps the one whose implied board poses agree best. If those still
    scatter more than ``max_residual_m`` / ``max_residual_deg`` the result is not ok: wrong intrinsics, TCP poses
    that do not belong to the images, or a board that moved.
    """
    if len(T_world_tcp) != len(T_cam_board):
        return HandEyeResult(False, np.eye(4), f"{len(T_world_tcp)} TCP poses but {len(T_cam_board)} board poses")
    if len(T_world_tcp) < min_poses:
        return HandEyeResult(
            False, np.eye(4), f"only {len(T_world_tcp)} poses (need {min_poses}, better 8 or more with varied tilts)"
        )
    if method is not None and method not in HAND_EYE_METHODS:
        return HandEyeResult(False, np.eye(4), f"unknown method {method!r}; one of {sorted(HAND_EYE_METHODS)}")
    tcp = [np.asarray(T, dtype=float) for T in T_world_tcp]
    cam = [np.asarray(T, dtype=float) for T in T_cam_board]
    for name, poses in (("TCP", tcp), ("board", cam)):
        for i, T in enumerate(poses):
            R = T[:3, :3] if T.shape == (4, 4) else None
            if R is None or not np.all(np.isfinite(T)) or not np.allclose(R.T @ R, np.eye(3), atol=1e-6):
                return HandEyeResult(False, np.eye(4), f"{name} pose {i} is not a rigid 4x4 transform")
    degenerate = hand_eye_degeneracy(tcp)
    if degenerate:
        return HandEyeResult(False, np.eye(4), degenerate)
    best: HandEyeResult | None = None
    for name in [method] if method else list(HAND_EYE_METHODS):
        try:
            R, t = cv2.calibrateHandEye(
                [T[:3, :3] for T in tcp],
                [T[:3, 3] for T in tcp],
                [T[:3, :3] for T in cam],
                [T[:3, 3] for T in cam],
                method=HAND_EYE_METHODS[name],
            )
        except cv2.error:
            continue
        if not (np.all(np.isfinite(R)) and np.all(np.isfinite(t))):
            continue
        T_tcp_cam = transform(R, np.asarray(t).ravel())
        T_world_board, res_m, res_deg = board_scatter(tcp, cam, T_tcp_cam)
        candidate = HandEyeResult(True, T_tcp_cam, "", name, T_world_board, res_m, res_deg)
        score = res_m + ROTATION_WEIGHT_M_PER_RAD * math.radians(res_deg)
        if best is None or score < best.residual_m + ROTATION_WEIGHT_M_PER_RAD * math.radians(best.residual_deg):
            best = candidate
    if best is None:
        return HandEyeResult(False, np.eye(4), "OpenCV calibrateHandEye failed for every method")
    if best.residual_m > max_residual_m or best.residual_deg > max_residual_deg:
        reason = (
            f"inconsistent views: the board's world pose scatters by {best.residual_m * 1000:.1f} mm / "
            f"{best.residual_deg:.2f} deg over the views (allowed {max_residual_m * 1000:g} mm / {max_residual_deg:g} "
            "deg); check the intrinsics, that each TCP pose belongs to its image, and that the board did not move"
        )
        return replace(best, ok=False, reason=reason)
    return best
