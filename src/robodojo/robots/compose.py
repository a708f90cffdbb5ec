"""Compose a scene URDF (world, table, head camera, one or more prefixed arms) from a robot config and its arm URDF.

The arm is written once (urdf/arx_x5.urdf, urdf/fr3.urdf); scenes are generated, never copied by hand.
`make urdf` (scripts/generate_urdf.py) writes them to urdf/, and a test checks that the files are up to date.
"""

from __future__ import annotations

import copy
import math
import xml.etree.ElementTree as ET

from robodojo.robots.config import RobotConfig

WORLD_LINK = "world"
TABLE_LINK = "table"
TABLE_COLOR = "0.72 0.60 0.45 1"
TABLE_LEG_COLOR = "0.35 0.36 0.38 1"  # powder-coated steel
TABLE_TOP_THICKNESS_M = 0.03125  # a power of two: the top surface lands exactly on top_z_m (0.765 - 1/64 + 1/64)
TABLE_LEG_SIDE_M = 0.05
TABLE_LEG_INSET_M = 0.05  # from the top's edges


def _fmt(values: tuple[float, ...] | list[float]) -> str:
    return " ".join(repr(float(v)) for v in values)  # shortest text that round-trips exactly


def _prefixed_arm(arm_root: ET.Element, prefix: str) -> list[ET.Element]:
    """Copies of the arm's links and joints with every name and reference prefixed."""
    elements = []
    for elem in arm_root:
        if elem.tag not in ("link", "joint"):
            continue
        e = copy.deepcopy(elem)
        e.set("name", prefix + e.get("name", ""))
        for tag in ("parent", "child"):
            ref = e.find(tag)
            if ref is not None:
                ref.set("link", prefix + ref.get("link", ""))
        mimic = e.find("mimic")
        if mimic is not None:
            mimic.set("joint", prefix + mimic.get("joint", ""))
        elements.append(e)
    return elements


def _fixed_joint(name: str, parent: str, child: str, xyz: tuple[float, ...], rpy: tuple[float, ...]) -> ET.Element:
    joint = ET.Element("joint", name=name, type="fixed")
    ET.SubElement(joint, "parent", link=parent)
    ET.SubElement(joint, "child", link=child)
    ET.SubElement(joint, "origin", xyz=_fmt(xyz), rpy=_fmt(rpy))
    return joint


def compose_scene_urdf(robot: RobotConfig) -> str:
    """The scene URDF text for ``robot``: deterministic, so regenerating an unchanged scene gives identical bytes."""
    arm_root = ET.fromstring(robot.arm_urdf.read_text())
    scene = ET.Element("robot", name=robot.name)
    for material in arm_root.findall("material"):
        scene.append(copy.deepcopy(material))
    ET.SubElement(ET.SubElement(scene, "material", name="table_wood"), "color", rgba=TABLE_COLOR)
    ET.SubElement(ET.SubElement(scene, "material", name="table_leg"), "color", rgba=TABLE_LEG_COLOR)

    ET.SubElement(scene, "link", name=WORLD_LINK)

    # The table: a top slab (its first visual, the one the simulator textures) on four legs standing on the floor.
    t = robot.table
    table = ET.SubElement(scene, "link", name=TABLE_LINK)
    top_size = _fmt((t.size_xy_m[0], t.size_xy_m[1], TABLE_TOP_THICKNESS_M))
    leg_height = t.top_z_m - TABLE_TOP_THICKNESS_M
    leg_size = _fmt((TABLE_LEG_SIDE_M, TABLE_LEG_SIDE_M, leg_height))
    corner = [s / 2 - TABLE_LEG_INSET_M - TABLE_LEG_SIDE_M / 2 for s in t.size_xy_m]
    leg_z = -TABLE_TOP_THICKNESS_M - leg_height / 2
    legs = [(sx * corner[0], sy * corner[1], leg_z) for sx in (-1, 1) for sy in (-1, 1)]
    for kind in ("visual", "collision"):
        parts = [((0.0, 0.0, -TABLE_TOP_THICKNESS_M / 2), top_size, "table_wood")]
        parts += [(xyz, leg_size, "table_leg") for xyz in legs]
        for xyz, size, material_name in parts:
            e = ET.SubElement(table, kind)
            ET.SubElement(e, "origin", xyz=_fmt(xyz))
            ET.SubElement(ET.SubElement(e, "geometry"), "box", size=size)
            if kind == "visual":
                ET.SubElement(e, "material", name=material_name)
    scene.append(_fixed_joint("table_joint", WORLD_LINK, TABLE_LINK, (*t.center_xy_m, t.top_z_m), (0, 0, 0)))

    if robot.head_mount is not None:
        m = robot.head_mount
        # Camera body frame (x forward, z up) turned to its heading, then pitched down about its own y axis.
        scene.append(ET.Element("link", name="head_camera_link"))
        scene.append(
            _fixed_joint(
                "head_camera_joint",
                WORLD_LINK,
                "head_camera_link",
                m.xyz_m,
                (0, math.radians(m.pitch_down_deg), math.radians(m.yaw_deg)),
            )
        )
        scene.append(ET.Element("link", name="head_camera_optical_frame"))
        scene.append(
            _fixed_joint(
                "head_camera_optical_joint",
                "head_camera_link",
                "head_camera_optical_frame",
                (0, 0, 0),
                (-math.pi / 2, 0, -math.pi / 2),
            )
        )

    for arm in robot.arms:
        scene.extend(_prefixed_arm(arm_root, arm.prefix))
        base = arm_root.find("link")
        assert base is not None
        scene.append(
            _fixed_joint(
                f"{arm.prefix}base_joint",
                WORLD_LINK,
                arm.prefix + base.get("name", ""),
                arm.base_xyz_m,
                tuple(math.radians(a) for a in arm.base_rpy_deg),
            )
        )

    ET.indent(scene, space="  ")
    header = (
        f"\n  {robot.name}: {robot.description}\n"
        f"  GENERATED by `make urdf` (scripts/generate_urdf.py) from config/robots/{robot.name}.yaml and "
        f"{robot.arm_urdf.name}.\n  Do not edit by hand: change the arm URDF or the robot config and regenerate.\n"
    )
    return f'<?xml version="1.0"?>\n<!--{header}-->\n' + ET.tostring(scene, encoding="unicode") + "\n"
