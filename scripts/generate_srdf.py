#!/usr/bin/env python3
"""Regenerate the MoveIt description files in config/moveit/<robot>/ from the scene URDF and the robot config.

Writes, per robot (config/robots/*.yaml):
- <robot>.srdf: one planning group per arm (a chain from the arm's base link to its TCP link), ``both_arms`` for a
  dual-arm robot, one gripper group and end effector per arm, named states (home; gripper open/closed), and the link
  pairs MoveIt need not collision-check;
- kinematics.yaml: KDL for every arm group;
- joint_limits.yaml: every arm joint's URDF velocity limit scaled by the config's motion.velocity_scale and its
  acceleration limit motion.joint_accel_rad_s2 (the limits the native planner plans with).

moveit_py.yaml (planning pipeline, request parameters) is written by hand. A test checks the files are up to date.

Disabled collision pairs (MoveIt Setup Assistant's reasons): "Adjacent" for a link and its nearest ancestor with
collision geometry; "Rigid" for links that no joint moves relative to each other (all links fixed to the world, for
example); "Default" for other pairs in contact at the home pose with the grippers open or closed (signed distances
on the MuJoCo model of the same URDF, with the margins of robodojo.robots.link_contacts so that the answer does not
depend on the machine's floating point; a pair too close to call stops the generator).
"""

from __future__ import annotations

import argparse
import itertools
import xml.etree.ElementTree as ET
from pathlib import Path

import mujoco

from robodojo.motion.moveit_planner import (
    BOTH_ARMS_GROUP,
    arm_group_name,
    gripper_group_name,
    moveit_config_dir,
)
from robodojo.robots.config import RobotConfig, available_robots, load_robot_config
from robodojo.robots.link_contacts import contact_pairs
from robodojo.robots.mujoco_model import kinematic_model
from robodojo.robots.urdf import UrdfModel, load_urdf

KDL = "kdl_kinematics_plugin/KDLKinematicsPlugin"
KDL_SEARCH_RESOLUTION = 0.005
KDL_TIMEOUT_S = 0.05


def _fmt(value: float) -> str:
    return repr(float(value))


def chain_joints(urdf: UrdfModel, base: str, tip: str) -> list[str]:
    """The movable joints from ``base`` to ``tip``, base first; raises ValueError if tip does not descend from base."""
    parent_joint = {j.child: j for j in urdf.joints.values()}
    names, link = [], tip
    while link != base:
        if link not in parent_joint:
            raise ValueError(f"{tip!r} does not descend from {base!r}")
        joint = parent_joint[link]
        if joint.movable:
            names.append(joint.name)
        link = joint.parent
    return names[::-1]


def arm_base_link(urdf: UrdfModel, robot: RobotConfig, arm: str) -> str:
    """The arm's base link: the parent of its first joint."""
    return urdf.joint(robot.arm(arm).joints[0]).parent


def gripper_joints(urdf: UrdfModel, robot: RobotConfig, arm: str) -> list[str]:
    """The gripper joint and the finger joints that mimic it."""
    leader = robot.arm(arm).gripper_joint
    return [leader] + [j.name for j in urdf.joints.values() if j.mimic is not None and j.mimic.joint == leader]


def _rigid_bodies(urdf: UrdfModel) -> dict[str, str]:
    """Each link's rigid body, named by its topmost link (links joined by fixed joints share one)."""
    parent_joint = {j.child: j for j in urdf.joints.values()}

    def top(link: str) -> str:
        while link in parent_joint and not parent_joint[link].movable:
            link = parent_joint[link].parent
        return link

    return {link: top(link) for link in urdf.links}


def _geometry_parent(urdf: UrdfModel, link: str) -> str | None:
    """The nearest ancestor of ``link`` with collision geometry."""
    parent_joint = {j.child: j for j in urdf.joints.values()}
    while link in parent_joint:
        link = parent_joint[link].parent
        if urdf.links[link].collisions:
            return link
    return None


# The sampled configurations of "Default": the home pose with every gripper open (1) and closed (0).
CONTACT_SAMPLE_GRIPPERS = (1.0, 0.0)


def home_pose_data(robot: RobotConfig, urdf: UrdfModel, gripper: float) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """The scene URDF's MuJoCo model and its data posed at home with every gripper at ``gripper`` (0..1)."""
    model = kinematic_model(robot.scene_urdf)
    data = mujoco.MjData(model)
    for arm in robot.arms:
        for joint, q in zip(arm.joints, arm.home_joints_rad, strict=True):
            data.qpos[model.joint(joint).qposadr[0]] = q
        finger = gripper * arm.gripper_max_m
        for joint in gripper_joints(urdf, robot, arm.name):
            j = urdf.joint(joint)
            value = finger if j.mimic is None else j.mimic.multiplier * finger + j.mimic.offset
            data.qpos[model.joint(joint).qposadr[0]] = value
    mujoco.mj_kinematics(model, data)
    return model, data


def kinematic_reasons(urdf: UrdfModel) -> dict[tuple[str, str], str]:
    """The "Adjacent" and "Rigid" pairs (sorted within) of the links with collision geometry."""
    links = [name for name, link in urdf.links.items() if link.collisions]
    body = _rigid_bodies(urdf)
    reasons: dict[tuple[str, str], str] = {}
    for link in links:
        parent = _geometry_parent(urdf, link)
        if parent is not None:
            reasons[(min(link, parent), max(link, parent))] = "Adjacent"
    for a, b in itertools.combinations(links, 2):
        pair = (min(a, b), max(a, b))
        if pair not in reasons and body[a] == body[b]:
            reasons[pair] = "Rigid"
    return reasons


def disabled_collisions(robot: RobotConfig, urdf: UrdfModel) -> list[tuple[str, str, str]]:
    """(link1, link2, reason) for every pair MoveIt need not check, sorted by link names.

    Only the pairs no kinematic rule covers are decided by distance (link_contacts.contact_pairs, which raises on a
    pair too close to call). That is deliberate, not only economy: some kinematically paired shapes sit inside the
    undecided band at home (fr3_hand and its wrist camera 1.7 mm apart, "Adjacent"; fr3_link0 3 mm above the table
    top, "Rigid"). The closed finger pads of each gripper touch by design (0 mm apart), well inside the contact
    distance.
    """
    reasons = kinematic_reasons(urdf)
    links = [name for name, link in urdf.links.items() if link.collisions]
    candidates = [(min(a, b), max(a, b)) for a, b in itertools.combinations(links, 2)]
    candidates = [pair for pair in candidates if pair not in reasons]
    for gripper in CONTACT_SAMPLE_GRIPPERS:
        for pair in contact_pairs(*home_pose_data(robot, urdf, gripper), candidates):
            reasons.setdefault(pair, "Default")
    return [(a, b, reasons[(a, b)]) for a, b in sorted(reasons)]


def srdf_text(robot: RobotConfig) -> str:
    urdf = load_urdf(robot.scene_urdf)
    root = ET.Element("robot", name=robot.name)
    for arm in robot.arms:
        group = ET.SubElement(root, "group", name=arm_group_name(arm.name))
        ET.SubElement(group, "chain", base_link=arm_base_link(urdf, robot, arm.name), tip_link=arm.tcp_link)
    if len(robot.arms) == 2:
        group = ET.SubElement(root, "group", name=BOTH_ARMS_GROUP)
        for arm in robot.arms:
            ET.SubElement(group, "group", name=arm_group_name(arm.name))
    for arm in robot.arms:
        group = ET.SubElement(root, "group", name=gripper_group_name(arm.name))
        for joint in gripper_joints(urdf, robot, arm.name):
            ET.SubElement(group, "joint", name=joint)
    for arm in robot.arms:
        state = ET.SubElement(root, "group_state", name="home", group=arm_group_name(arm.name))
        for joint, q in zip(arm.joints, arm.home_joints_rad, strict=True):
            ET.SubElement(state, "joint", name=joint, value=_fmt(q))
    if len(robot.arms) == 2:
        state = ET.SubElement(root, "group_state", name="home", group=BOTH_ARMS_GROUP)
        for arm in robot.arms:
            for joint, q in zip(arm.joints, arm.home_joints_rad, strict=True):
                ET.SubElement(state, "joint", name=joint, value=_fmt(q))
    for arm in robot.arms:
        for name, opening in (("open", 1.0), ("closed", 0.0)):
            state = ET.SubElement(root, "group_state", name=name, group=gripper_group_name(arm.name))
            ET.SubElement(state, "joint", name=arm.gripper_joint, value=_fmt(opening * arm.gripper_max_m))
    for arm in robot.arms:
        ET.SubElement(
            root,
            "end_effector",
            name=gripper_group_name(arm.name),
            parent_link=arm.tcp_link,
            group=gripper_group_name(arm.name),
            parent_group=arm_group_name(arm.name),
        )
    for a, b, reason in disabled_collisions(robot, urdf):
        ET.SubElement(root, "disable_collisions", link1=a, link2=b, reason=reason)
    ET.indent(root, space="  ")
    header = (
        f"\n  {robot.name}: MoveIt semantic description of {robot.scene_urdf.name}.\n"
        f"  GENERATED by scripts/generate_srdf.py from config/robots/{robot.name}.yaml and the scene URDF.\n"
        "  Do not edit by hand: change the URDF or the robot config and regenerate.\n"
    )
    return f'<?xml version="1.0"?>\n<!--{header}-->\n' + ET.tostring(root, encoding="unicode") + "\n"


def kinematics_yaml(robot: RobotConfig) -> str:
    lines = [
        f"# {robot.name}: IK solvers per planning group (robot_description_kinematics).",
        "# GENERATED by scripts/generate_srdf.py; do not edit by hand.",
    ]
    for arm in robot.arms:
        lines += [
            f"{arm_group_name(arm.name)}:",
            f"  kinematics_solver: {KDL}",
            f"  kinematics_solver_search_resolution: {_fmt(KDL_SEARCH_RESOLUTION)}",
            f"  kinematics_solver_timeout: {_fmt(KDL_TIMEOUT_S)}",
        ]
    return "\n".join(lines) + "\n"


def joint_limits_yaml(robot: RobotConfig) -> str:
    urdf = load_urdf(robot.scene_urdf)
    m = robot.motion
    lines = [
        f"# {robot.name}: joint limits MoveIt plans with (robot_description_planning): URDF velocity x "
        f"motion.velocity_scale ({_fmt(m.velocity_scale)}),",
        f"# acceleration motion.joint_accel_rad_s2 (config/robots/{robot.name}.yaml). "
        "GENERATED by scripts/generate_srdf.py; do not edit by hand.",
        "default_velocity_scaling_factor: 1.0",
        "default_acceleration_scaling_factor: 1.0",
        "joint_limits:",
    ]
    for arm in robot.arms:
        for joint, accel in zip(arm.joints, m.joint_accel_rad_s2, strict=True):
            lines += [
                f"  {joint}:",
                "    has_velocity_limits: true",
                f"    max_velocity: {_fmt(urdf.joint(joint).velocity * m.velocity_scale)}",
                "    has_acceleration_limits: true",
                f"    max_acceleration: {_fmt(accel)}",
            ]
    return "\n".join(lines) + "\n"


def generated_files(robot: RobotConfig, config_dir: Path | None = None) -> dict[Path, str]:
    """Every generated file of ``robot`` and its text."""
    folder = moveit_config_dir(robot, config_dir)
    return {
        folder / f"{robot.name}.srdf": srdf_text(robot),
        folder / "kinematics.yaml": kinematics_yaml(robot),
        folder / "joint_limits.yaml": joint_limits_yaml(robot),
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Regenerate config/moveit/<robot>/ (SRDF, kinematics, joint limits).")
    parser.add_argument("robots", nargs="*", help=f"robots to regenerate (default: all of {available_robots()})")
    names = parser.parse_args(argv).robots or available_robots()
    for name in names:
        for path, text in generated_files(load_robot_config(name)).items():
            changed = not path.is_file() or path.read_text() != text
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
            print(f"{path}: {'written' if changed else 'up to date'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
