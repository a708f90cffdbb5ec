"""Grasp orientation in degrees from straight down (the move_eef convention) <-> rotation matrices and quaternions.

All zero means a straight-down grasp: the TCP approach axis (z) points down (world -z) and the fingers open along the
robot's ``zero_orientation_finger_axis`` (a horizontal world direction, the wrist's natural pose). A non-zero
orientation is

    R = Rz(yaw) @ Ry(roll) @ Rx(pitch) @ R_down

with rotations about the world axes: pitch about x tilts the fingers towards +y (away from the robot) for positive
values, roll about y tilts them sideways, yaw about z turns the grip about the vertical. Roll is the middle angle, so
it is the one limited to [-90, 90] deg, which makes the decomposition unique away from roll = +/-90 deg.
Quaternions are (w, x, y, z).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike, NDArray

from robodojo.geometry import Matrix, matrix_from_quat, quat_from_matrix, rotation_about_axis


@dataclass(frozen=True)
class DownAngles:
    """Orientation in degrees from a straight-down grasp."""

    pitch_deg: float
    roll_deg: float
    yaw_deg: float


def down_rotation(finger_axis: ArrayLike) -> Matrix:
    """The straight-down TCP rotation: z = world -z, y = the finger opening axis, x = y cross z."""
    y = np.asarray(finger_axis, dtype=float)
    z = np.array([0.0, 0.0, -1.0])
    return np.column_stack([np.cross(y, z), y, z])


def rotation_from_down_angles(angles: DownAngles, finger_axis: ArrayLike) -> Matrix:
    Rz = rotation_about_axis([0, 0, 1], math.radians(angles.yaw_deg))
    Ry = rotation_about_axis([0, 1, 0], math.radians(angles.roll_deg))
    Rx = rotation_about_axis([1, 0, 0], math.radians(angles.pitch_deg))
    return Rz @ Ry @ Rx @ down_rotation(finger_axis)


def down_angles_from_rotation(R: ArrayLike, finger_axis: ArrayLike) -> DownAngles:
    """Inverse of :func:`rotation_from_down_angles` (roll in [-90, 90], pitch and yaw in [-180, 180])."""
    M = np.asarray(R, dtype=float) @ down_rotation(finger_axis).T  # = Rz(yaw) Ry(roll) Rx(pitch)
    roll = math.asin(float(np.clip(-M[2, 0], -1.0, 1.0)))
    if abs(M[2, 0]) < 1.0 - 1e-12:
        pitch = math.atan2(M[2, 1], M[2, 2])
        yaw = math.atan2(M[1, 0], M[0, 0])
    else:  # gimbal lock at roll = +/-90 deg: only pitch -/+ yaw is defined; put it all in pitch
        yaw = 0.0
        pitch = math.atan2(-M[1, 2], M[1, 1])
    return DownAngles(pitch_deg=math.degrees(pitch), roll_deg=math.degrees(roll), yaw_deg=math.degrees(yaw))


def quat_from_down_angles(angles: DownAngles, finger_axis: ArrayLike) -> NDArray[np.float64]:
    return quat_from_matrix(rotation_from_down_angles(angles, finger_axis))


def down_angles_from_quat(quat_wxyz: ArrayLike, finger_axis: ArrayLike) -> DownAngles:
    return down_angles_from_rotation(matrix_from_quat(quat_wxyz), finger_axis)
