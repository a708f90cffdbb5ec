"""Scene descriptions (robodojo.sim.description) from a task layout, as the tasks define it.

:func:`describe_layout` is what every builder starts from: the embedded world builds its MuJoCo model from it, and
``robodojo scene export`` writes it as USD. The robot stands at home; objects are where the layout puts them, drawn in
the layout's appearance; cameras sit on their mounts with the appearance's offsets; the lights are the appearance's.
"""

from __future__ import annotations

from pathlib import Path

from robodojo import PACKAGE_ROOT
from robodojo.geometry import quat_from_matrix, rotation_from_rpy, transform, wxyz_tuple, xyz_tuple
from robodojo.robots.compose import TABLE_LINK
from robodojo.robots.config import RobotConfig, TableConfig
from robodojo.robots.urdf import UrdfModel, load_urdf
from robodojo.sim.appearance import NOMINAL
from robodojo.sim.description import (
    CameraDescription,
    LightDescription,
    RobotDescription,
    SceneDescription,
    Shape,
    TableDescription,
    matrix_rows,
)
from robodojo.sim.objects import COLORS, object_parts
from robodojo.sim.settings import RoomSettings, SimSettings
from robodojo.sim.tasks.base import Layout

WALL_THICKNESS_M = 0.05


def describe_layout(
    robot: RobotConfig, layout: Layout | None, settings: SimSettings, urdf: UrdfModel | None = None
) -> SceneDescription:
    """The scene of ``layout`` on ``robot`` (None: the robot and table alone, as designed), arms at home. ``urdf`` is
    the robot's scene URDF if the caller has it parsed already."""
    appearance = NOMINAL if layout is None else layout.appearance
    urdf = urdf or load_urdf(robot.scene_urdf)
    joints = home_joint_positions(robot)
    joints.update({j.name: urdf.position_of(j, joints) for j in urdf.movable_joints if j.mimic is not None})
    links = urdf.forward_kinematics(joints)
    cameras = []
    for cam in robot.cameras:
        offset = appearance.camera_offset(cam.name)
        T_frame_cam = transform(offset.rotation(), offset.xyz_m)
        cameras.append(
            CameraDescription(
                name=cam.name,
                frame=cam.frame,
                width=cam.width,
                height=cam.height,
                fovy_deg=cam.fovy_deg,
                offset_xyz_m=offset.xyz_m,
                offset_quat_wxyz=wxyz_tuple(quat_from_matrix(offset.rotation())),
                T_world_cam=matrix_rows(links[cam.frame] @ T_frame_cam),
            )
        )
    objects = () if layout is None else layout.objects
    return SceneDescription(
        robot=RobotDescription(name=robot.name, urdf=_package_relative(robot.scene_urdf), joint_positions_rad=joints),
        table=TableDescription(
            center_xy_m=robot.table.center_xy_m,
            size_xy_m=robot.table.size_xy_m,
            top_z_m=robot.table.top_z_m,
            shapes=_table_shapes(urdf),
            grain_seed=appearance.table_grain_seed if settings.render.table_texture == "wood_grain" else None,
            tint_rgb=appearance.table_tint_rgb,
        ),
        objects=tuple(
            part for obj in objects for part in object_parts(obj, appearance.object_color(obj.name, COLORS[obj.color]))
        ),
        cameras=tuple(cameras),
        lights=tuple(LightDescription(lt.name, lt.pos_m, lt.dir, lt.diffuse_rgb) for lt in appearance.lights),
        ambient_rgb=appearance.headlight_ambient_rgb,
        headlight_rgb=appearance.headlight_diffuse_rgb,
        floor_rgba=settings.room.floor_rgba,
        walls=_walls(robot.table, settings.room),
        task="" if layout is None else layout.task,
        seed=0 if layout is None else layout.seed,
        variant="" if layout is None else layout.variant,
    )


def home_joint_positions(robot: RobotConfig) -> dict[str, float]:
    """Every arm joint at home and every gripper open, by joint name."""
    joints: dict[str, float] = {}
    for arm in robot.arms:
        joints.update(zip(arm.joints, (float(q) for q in arm.home_joints_rad), strict=True))
        joints[arm.gripper_joint] = float(arm.gripper_max_m)
    return joints


def _table_shapes(urdf: UrdfModel) -> tuple[Shape, ...]:
    """The table link's visual boxes (robodojo.robots.compose: the top, then the legs) as shapes."""
    shapes = []
    for i, visual in enumerate(urdf.links[TABLE_LINK].visuals):
        if visual.kind != "box":
            raise ValueError(f"the table's visual {i} is a {visual.kind}; the table is made of boxes")
        r, g, b, a = visual.rgba or (1.0, 1.0, 1.0, 1.0)
        shapes.append(
            Shape(
                name=f"{TABLE_LINK}_visual{i}",
                kind="box",
                size_m=tuple(visual.size),
                rgba=(r, g, b, a),
                pos_m=xyz_tuple(visual.origin.xyz),
                quat_wxyz=wxyz_tuple(quat_from_matrix(rotation_from_rpy(visual.origin.rpy))),
            )
        )
    return tuple(shapes)


def _walls(table: TableConfig, room: RoomSettings) -> tuple[Shape, ...]:
    """Four walls around the table, ``wall_margin_m`` beyond its edges, standing on the floor."""
    cx, cy = table.center_xy_m
    half_x, half_y = table.size_xy_m[0] / 2 + room.wall_margin_m, table.size_xy_m[1] / 2 + room.wall_margin_m
    h, thick, rgba = room.wall_height_m, WALL_THICKNESS_M, room.wall_rgba
    along_x, along_y = (2 * half_x, thick, h), (thick, 2 * half_y, h)
    return (
        Shape("wall_back", "box", along_x, rgba, pos_m=(cx, cy + half_y, h / 2), contact="none"),
        Shape("wall_front", "box", along_x, rgba, pos_m=(cx, cy - half_y, h / 2), contact="none"),
        Shape("wall_left", "box", along_y, rgba, pos_m=(cx - half_x, cy, h / 2), contact="none"),
        Shape("wall_right", "box", along_y, rgba, pos_m=(cx + half_x, cy, h / 2), contact="none"),
    )


def _package_relative(path: Path) -> Path:
    """``path`` relative to the package root when it lies inside it (descriptions travel between machines)."""
    try:
        return path.resolve().relative_to(PACKAGE_ROOT)
    except ValueError:
        return path
