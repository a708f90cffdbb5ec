"""Rigid-body helpers on plain numpy arrays. Quaternions are (w, x, y, z) everywhere in this project."""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike, NDArray

Matrix = NDArray[np.float64]
Xyz = tuple[float, float, float]
Wxyz = tuple[float, float, float, float]


def xyz_tuple(v: ArrayLike) -> Xyz:
    """Three numbers as plain floats (positions in frozen results)."""
    x, y, z = (float(c) for c in np.asarray(v, dtype=float).reshape(3))
    return x, y, z


def wxyz_tuple(q: ArrayLike) -> Wxyz:
    """A quaternion (w, x, y, z) as plain floats."""
    w, x, y, z = (float(c) for c in np.asarray(q, dtype=float).reshape(4))
    return w, x, y, z


def rotation_from_rpy(rpy: ArrayLike) -> Matrix:
    """URDF roll-pitch-yaw (fixed axes x, then y, then z) to a 3x3 rotation: R = Rz(yaw) Ry(pitch) Rx(roll)."""
    r, p, y = np.asarray(rpy, dtype=float)
    cr, sr, cp, sp, cy, sy = np.cos(r), np.sin(r), np.cos(p), np.sin(p), np.cos(y), np.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


GIMBAL_LOCK_COS = 1e-12  # |cos(pitch)| below this: roll and yaw turn about one axis, roll is set to 0


def rpy_from_rotation(R: ArrayLike) -> tuple[float, float, float]:
    """The URDF roll-pitch-yaw [rad] of a 3x3 rotation (the inverse of :func:`rotation_from_rpy`): pitch in
    [-pi/2, pi/2], roll and yaw in [-pi, pi]; at pitch +-pi/2 (gimbal lock) roll is 0 and yaw carries the turn."""
    m = np.asarray(R, dtype=float)
    cp = float(np.hypot(m[0, 0], m[1, 0]))
    pitch = float(np.arctan2(-m[2, 0], cp))
    if cp < GIMBAL_LOCK_COS:
        return 0.0, pitch, float(np.arctan2(-m[0, 1], m[1, 1]))
    return float(np.arctan2(m[2, 1], m[2, 2])), pitch, float(np.arctan2(m[1, 0], m[0, 0]))


def rotation_about_axis(axis: ArrayLike, angle_rad: float) -> Matrix:
    """Rodrigues' formula for a rotation of ``angle_rad`` about the unit vector ``axis``."""
    k = np.asarray(axis, dtype=float)
    k = k / np.linalg.norm(k)
    kx = np.array([[0.0, -k[2], k[1]], [k[2], 0.0, -k[0]], [-k[1], k[0], 0.0]])
    return np.eye(3) + np.sin(angle_rad) * kx + (1.0 - np.cos(angle_rad)) * (kx @ kx)


def transform(rotation: ArrayLike | None = None, translation: ArrayLike | None = None) -> Matrix:
    """A 4x4 homogeneous transform from a 3x3 rotation and a translation."""
    T = np.eye(4)
    if rotation is not None:
        T[:3, :3] = rotation
    if translation is not None:
        T[:3, 3] = translation
    return T


def quat_from_matrix(R: ArrayLike) -> NDArray[np.float64]:
    """3x3 rotation to a unit quaternion (w, x, y, z) with w >= 0."""
    m = np.asarray(R, dtype=float)
    tr = np.trace(m)
    if tr > 0:
        s = 2.0 * np.sqrt(tr + 1.0)
        q = np.array([0.25 * s, (m[2, 1] - m[1, 2]) / s, (m[0, 2] - m[2, 0]) / s, (m[1, 0] - m[0, 1]) / s])
    elif m[0, 0] > m[1, 1] and m[0, 0] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[0, 0] - m[1, 1] - m[2, 2])
        q = np.array([(m[2, 1] - m[1, 2]) / s, 0.25 * s, (m[0, 1] + m[1, 0]) / s, (m[0, 2] + m[2, 0]) / s])
    elif m[1, 1] > m[2, 2]:
        s = 2.0 * np.sqrt(1.0 + m[1, 1] - m[0, 0] - m[2, 2])
        q = np.array([(m[0, 2] - m[2, 0]) / s, (m[0, 1] + m[1, 0]) / s, 0.25 * s, (m[1, 2] + m[2, 1]) / s])
    else:
        s = 2.0 * np.sqrt(1.0 + m[2, 2] - m[0, 0] - m[1, 1])
        q = np.array([(m[1, 0] - m[0, 1]) / s, (m[0, 2] + m[2, 0]) / s, (m[1, 2] + m[2, 1]) / s, 0.25 * s])
    q /= np.linalg.norm(q)
    return q if q[0] >= 0 else -q


def matrix_from_quat(q: ArrayLike) -> Matrix:
    """Unit quaternion (w, x, y, z) to a 3x3 rotation."""
    w, x, y, z = np.asarray(q, dtype=float) / np.linalg.norm(q)
    return np.array(
        [
            [1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y)],
            [2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x)],
            [2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)],
        ]
    )


def rotation_angle_between(R_a: ArrayLike, R_b: ArrayLike) -> float:
    """Angle [rad] of the relative rotation between two 3x3 rotations."""
    c = (np.trace(np.asarray(R_a).T @ np.asarray(R_b)) - 1.0) / 2.0
    return float(np.arccos(np.clip(c, -1.0, 1.0)))


def look_at(eye: ArrayLike, target: ArrayLike, up: ArrayLike = (0.0, 0.0, 1.0)) -> Matrix:
    """T_world_cam of a REP 103 optical frame at ``eye`` looking at ``target`` (z forward, x right, y down)."""
    eye = np.asarray(eye, dtype=float)
    z = np.asarray(target, dtype=float) - eye
    z /= np.linalg.norm(z)
    x = np.cross(z, np.asarray(up, dtype=float))
    x /= np.linalg.norm(x)
    return transform(np.column_stack([x, np.cross(z, x), z]), eye)
