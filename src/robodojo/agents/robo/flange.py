"""The flange of each arm: where the gripper is mounted, and its fixed transform to the grasp point (TCP).

The robo API reports both poses (``eef_pos`` and ``tcp_pos``) and its reference quotes the distance between them.
"""

from __future__ import annotations

from functools import cache
from typing import Any

import numpy as np

from robodojo.geometry import Matrix
from robodojo.robots.config import load_robot_config
from robodojo.robots.urdf import UrdfModel, load_urdf


def _parent_joints(urdf: UrdfModel) -> dict[str, Any]:
    return {j.child: j for j in urdf.joints.values()}


@cache
def flange_to_tcp(robot_name: str, arm: str) -> Matrix:
    """T_flange_tcp of one arm, from the URDF.

    The flange is the mounting frame at the end of the last moving link: that link itself, or a frame-only link fixed
    to it without rotation (the FR3's fr3_link8), before the gripper's own frames.
    """
    robot = load_robot_config(robot_name)
    urdf = load_urdf(robot.scene_urdf)
    parents = _parent_joints(urdf)
    tcp = robot.arm(arm).tcp_link
    chain = [tcp]  # tcp up to the last moving link
    while not parents[chain[-1]].movable:
        chain.append(parents[chain[-1]].parent)
    chain.reverse()  # last moving link ... tcp
    flange = 0
    for i in range(1, len(chain) - 1):
        joint, link = parents[chain[i]], urdf.links[chain[i]]
        frame_only = not (link.visuals or link.collisions or link.inertial)
        if joint.movable or any(joint.origin.rpy) or not frame_only:
            break
        flange = i
    T = np.eye(4)
    for name in chain[flange + 1 :]:
        T = T @ parents[name].origin.matrix
    return T
