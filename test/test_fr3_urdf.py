"""Checks of urdf/fr3.urdf against the FR3 facts in ROBOT_FACTS.md (numpy only, no project imports)."""

import math
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pytest

URDF = Path(__file__).resolve().parents[1] / "urdf" / "fr3.urdf"

# ROBOT_FACTS.md, section "Franka FR3": modified DH (Craig) and limits.
MDH_A = [0.0, 0.0, 0.0, 0.0825, -0.0825, 0.0, 0.088]
MDH_D = [0.333, 0.0, 0.316, 0.0, 0.384, 0.0, 0.0]
MDH_ALPHA = [0.0, -math.pi / 2, math.pi / 2, math.pi / 2, -math.pi / 2, math.pi / 2, math.pi / 2]
FLANGE = 0.107
LOWER = [-2.7437, -1.7837, -2.9007, -3.0421, -2.8065, 0.5445, -3.0159]
UPPER = [2.7437, 1.7837, 2.9007, -0.1518, 2.8065, 4.5169, 3.0159]
VELOCITY = [2.62, 2.62, 2.62, 2.62, 5.26, 4.18, 5.26]
EFFORT = [87, 87, 87, 87, 12, 12, 12]
READY = [0.0, -math.pi / 4, 0.0, -3 * math.pi / 4, 0.0, math.pi / 2, math.pi / 4]
ARM_JOINTS = [f"fr3_joint{i}" for i in range(1, 8)]


@pytest.fixture(scope="module")
def robot():
    return ET.parse(URDF).getroot()


def _vec(text, default="0 0 0"):
    return np.array([float(x) for x in (text or default).split()])


def _rot_rpy(r, p, y):
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    rx = np.array([[1, 0, 0], [0, cr, -sr], [0, sr, cr]])
    ry = np.array([[cp, 0, sp], [0, 1, 0], [-sp, 0, cp]])
    rz = np.array([[cy, -sy, 0], [sy, cy, 0], [0, 0, 1]])
    return rz @ ry @ rx


def _rot_axis(axis, angle):
    k = axis / np.linalg.norm(axis)
    kx = np.array([[0, -k[2], k[1]], [k[2], 0, -k[0]], [-k[1], k[0], 0]])
    return np.eye(3) + math.sin(angle) * kx + (1 - math.cos(angle)) * kx @ kx


def _homog(rot=None, pos=None):
    t = np.eye(4)
    if rot is not None:
        t[:3, :3] = rot
    if pos is not None:
        t[:3, 3] = pos
    return t


def fk(robot, link, q, finger=0.0):
    """Pose of `link` in the root frame for arm angles q (7) and finger opening `finger` (m, each)."""
    by_child = {j.find("child").get("link"): j for j in robot.findall("joint")}
    chain = []
    while link in by_child:
        joint = by_child[link]
        chain.append(joint)
        link = joint.find("parent").get("link")
    t = np.eye(4)
    for joint in reversed(chain):
        origin = joint.find("origin")
        t = t @ _homog(_rot_rpy(*_vec(origin.get("rpy"))), _vec(origin.get("xyz")))
        kind = joint.get("type")
        axis = _vec(joint.find("axis").get("xyz")) if joint.find("axis") is not None else None
        if kind == "revolute":
            t = t @ _homog(rot=_rot_axis(axis, q[ARM_JOINTS.index(joint.get("name"))]))
        elif kind == "prismatic":
            t = t @ _homog(pos=axis * finger)
    return t


def mdh_flange(q):
    t = np.eye(4)
    for a, d, alpha, theta in zip(MDH_A, MDH_D, MDH_ALPHA, q, strict=True):
        t = (
            t
            @ _homog(rot=_rot_axis(np.array([1.0, 0, 0]), alpha))
            @ _homog(pos=[a, 0, 0])
            @ _homog(rot=_rot_axis(np.array([0, 0, 1.0]), theta))
            @ _homog(pos=[0, 0, d])
        )
    return t @ _homog(pos=[0, 0, FLANGE])


def test_root_and_names(robot):
    assert robot.get("name") == "fr3"
    children = {j.find("child").get("link") for j in robot.findall("joint")}
    roots = [link.get("name") for link in robot.findall("link") if link.get("name") not in children]
    assert roots == ["fr3_link0"]


def test_flange_matches_mdh_on_random_configurations(robot):
    rng = np.random.default_rng(7)
    for _ in range(20):
        q = rng.uniform(LOWER, UPPER)
        np.testing.assert_allclose(fk(robot, "fr3_link8", q), mdh_flange(q), atol=1e-9)


def test_ready_pose_tcp_points_straight_down(robot):
    tcp = fk(robot, "fr3_tcp", READY)
    np.testing.assert_allclose(tcp[:3, 2], [0, 0, -1], atol=1e-9)
    np.testing.assert_allclose(tcp[:3, 3], [0.307, 0.0, 0.487], atol=2e-3)
    # TCP y axis is the finger opening direction: the left finger moves along +y of the TCP frame.
    left = fk(robot, "fr3_leftfinger", READY, finger=0.04)[:3, 3] - fk(robot, "fr3_leftfinger", READY)[:3, 3]
    np.testing.assert_allclose(left / 0.04, tcp[:3, 1], atol=1e-9)


def test_arm_joint_limits_match_robot_facts(robot):
    joints = {j.get("name"): j for j in robot.findall("joint")}
    for i, name in enumerate(ARM_JOINTS):
        joint = joints[name]
        assert joint.get("type") == "revolute"
        np.testing.assert_allclose(_vec(joint.find("axis").get("xyz")), [0, 0, 1])
        limit = joint.find("limit")
        assert float(limit.get("lower")) == LOWER[i]
        assert float(limit.get("upper")) == UPPER[i]
        assert float(limit.get("velocity")) == VELOCITY[i]
        assert float(limit.get("effort")) == EFFORT[i]


def _is_frame_only(link):
    return link.find("visual") is None and link.find("collision") is None


def test_inertials_are_physical(robot):
    total = 0.0
    for link in robot.findall("link"):
        inertial = link.find("inertial")
        if _is_frame_only(link):
            assert inertial is None, link.get("name")
            continue
        assert inertial is not None, link.get("name")
        mass = float(inertial.find("mass").get("value"))
        assert mass > 0, link.get("name")
        total += mass
        inertia = inertial.find("inertia")
        ixx, iyy, izz = (float(inertia.get(k)) for k in ("ixx", "iyy", "izz"))
        assert all(float(inertia.get(k)) == 0 for k in ("ixy", "ixz", "iyz"))
        assert min(ixx, iyy, izz) > 0, link.get("name")
        assert ixx + iyy >= izz and iyy + izz >= ixx and izz + ixx >= iyy, link.get("name")
    assert 17.0 < total < 20.0


def _pad_y_extent(robot, link_name, finger):
    """y interval (hand frame) of a finger's collision box."""
    rel = np.linalg.inv(fk(robot, "fr3_hand", READY, finger)) @ fk(robot, link_name, READY, finger)
    link = robot.find(f"link[@name='{link_name}']")
    collision = link.find("collision")
    center = rel[:3, :3] @ _vec(collision.find("origin").get("xyz")) + rel[:3, 3]
    half = _vec(collision.find("geometry/box").get("size")) / 2
    return center[1] - half[1], center[1] + half[1]


@pytest.mark.parametrize(("finger", "gap"), [(0.0, 0.0), (0.04, 0.08)])
def test_finger_pad_gap(robot, finger, gap):
    left_lo, _ = _pad_y_extent(robot, "fr3_leftfinger", finger)
    _, right_hi = _pad_y_extent(robot, "fr3_rightfinger", finger)
    assert left_lo - right_hi == pytest.approx(gap, abs=1e-9)
    assert left_lo == pytest.approx(gap / 2, abs=1e-9)
