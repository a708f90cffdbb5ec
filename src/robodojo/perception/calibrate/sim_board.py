"""A ChArUco board in a MuJoCo scene: what the simulators show for a calibration rehearsal.

The board is a thin box whose top face carries the board image (half-square margin), added to a scene spec by a
scene extra (robodojo.sim.world.EmbeddedWorld's ``scene_extras``, the FR3 test world's scene). It never collides:
objects and fingers pass through it, so it changes nothing of a task but what the cameras see.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import mujoco
import numpy as np
from numpy.typing import NDArray

from robodojo.geometry import quat_from_matrix, rotation_about_axis, transform
from robodojo.perception.calibrate.settings import SimBoard, load_calibration_settings
from robodojo.perception.calibration import CharucoBoardSpec, board_image
from robodojo.robots.config import load_robot_config

BOARD_THICKNESS_M = 0.001
PIXELS_PER_SQUARE = 100  # texture resolution: sharp at every distance the cameras see it from
PARKED_XYZ_M = (10.0, 10.0, -10.0)  # a movable board out of every camera's view, under the floor
BOARD_BODY = "calibration_board"


def body_from_board(board: CharucoBoardSpec) -> NDArray[np.float64]:
    """T_body_board: the texture's row 0 lies along the box's +y edge of the top face; the squares are centred."""
    width, height = board.size_m
    return transform(np.diag([1.0, -1.0, -1.0]), [-width / 2, height / 2, BOARD_THICKNESS_M / 2])


def table_board_pose(board: CharucoBoardSpec, table_top_z_m: float, place: SimBoard) -> NDArray[np.float64]:
    """T_world_board of a board lying face up on the table (its z axis down), squares centred on ``place``."""
    x = rotation_about_axis((0, 0, 1), math.radians(place.yaw_deg)) @ np.array([1.0, 0.0, 0.0])
    z = np.array([0.0, 0.0, -1.0])
    R = np.column_stack([x, np.cross(z, x), z])
    center = np.array([*place.center_xy_m, table_top_z_m + BOARD_THICKNESS_M])
    width, height = board.size_m
    return transform(R, center - R @ np.array([width / 2, height / 2, 0.0]))


@dataclass(frozen=True)
class BoardLook:
    """What a simulator shows of a board: the image on the box's top face, the box's half sizes, and where the box's
    centre lies for a board pose (``body_pose``)."""

    rgb: NDArray[np.uint8]
    half_size_m: tuple[float, float, float]
    board: CharucoBoardSpec

    def body_pose(self, T_world_board: NDArray[np.float64]) -> NDArray[np.float64]:
        return np.asarray(T_world_board, dtype=float) @ np.linalg.inv(body_from_board(self.board))


def board_look(board: CharucoBoardSpec) -> BoardLook:
    pixels_per_m = PIXELS_PER_SQUARE / board.square_m
    rgb = np.repeat(board_image(board, pixels_per_m, board.square_m / 2)[:, :, None], 3, axis=2)
    height_px, width_px = rgb.shape[:2]
    half = (width_px / pixels_per_m / 2, height_px / pixels_per_m / 2, BOARD_THICKNESS_M / 2)
    return BoardLook(rgb, half, board)


def board_scene_extra(
    name: str, board: CharucoBoardSpec, T_world_board: NDArray[np.float64] | None = None
) -> Callable[[mujoco.MjSpec], None]:
    """A scene extra adding body ``name`` showing ``board``: fixed at ``T_world_board``, or a mocap body parked out
    of view when no pose is given (moved with its mocap pose)."""
    look = board_look(board)
    height_px, width_px = look.rgb.shape[:2]
    body_pose = transform(None, PARKED_XYZ_M) if T_world_board is None else look.body_pose(T_world_board)

    def extra(spec: mujoco.MjSpec) -> None:
        texture = spec.add_texture(
            name=f"{name}_texture", type=mujoco.mjtTexture.mjTEXTURE_2D, width=width_px, height=height_px, nchannel=3
        )
        texture.data = look.rgb.tobytes()
        material = spec.add_material(name=f"{name}_material")
        material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = texture.name
        body = spec.worldbody.add_body(
            name=name, mocap=T_world_board is None, pos=body_pose[:3, 3].tolist(),
            quat=quat_from_matrix(body_pose[:3, :3]).tolist(),
        )  # fmt: skip
        body.add_geom(
            name=f"{name}_geom", type=mujoco.mjtGeom.mjGEOM_BOX, size=list(look.half_size_m), material=material.name,
            contype=0, conaffinity=0,
        )  # fmt: skip

    return extra


def calibration_board_pose(robot: str) -> NDArray[np.float64]:
    """T_world_board of the rehearsal board on ``robot``'s table (config/calibration.yaml's board and sim_board)."""
    settings = load_calibration_settings()
    table_z = load_robot_config(robot).table.top_z_m
    return table_board_pose(settings.board, table_z, settings.sim_board(robot))


def calibration_board(robot: str) -> Callable[[mujoco.MjSpec], None]:
    """The scene extra of the rehearsal board on ``robot``'s table."""
    return board_scene_extra(BOARD_BODY, load_calibration_settings().board, calibration_board_pose(robot))
