"""Link contact classification with a dead band (robodojo.robots.link_contacts), on real MuJoCo geometry."""

from __future__ import annotations

import itertools
import xml.etree.ElementTree as ET

import mujoco
import numpy as np
import pytest

from robodojo.errors import ConfigError, UnknownNameError
from robodojo.motion.moveit_planner import moveit_config_dir
from robodojo.robots.config import available_robots, load_robot_config
from robodojo.robots.link_contacts import (
    CLEAR_DISTANCE_M,
    CONTACT_DISTANCE_M,
    contact_pairs,
    link_distance_m,
    link_geoms,
)
from robodojo.robots.mujoco_model import COLLISION_GROUP, VISUAL_GROUP
from robodojo.robots.urdf import load_urdf

BOX_HALF_M = 0.02


def _two_boxes(gap_m: float) -> tuple[mujoco.MjModel, mujoco.MjData]:
    """Link 'fixed' (a 4 cm cube at the origin) and link 'slider' (a 4 cm cube and a sphere) ``gap_m`` apart along x.

    The slider's sphere sits farther out, so the pair's distance is the smaller of two geom distances; each link also
    has a visual box overlapping the other, which must not count.
    """
    spec = mujoco.MjSpec()
    box = {"type": mujoco.mjtGeom.mjGEOM_BOX, "size": [BOX_HALF_M] * 3}
    fixed = spec.worldbody.add_body(name="fixed")
    fixed.add_geom(group=COLLISION_GROUP, **box)
    fixed.add_geom(group=VISUAL_GROUP, contype=0, conaffinity=0, pos=[0.03, 0, 0], **box)
    slider = spec.worldbody.add_body(name="slider")
    slider.add_joint(name="slide", type=mujoco.mjtJoint.mjJNT_SLIDE, axis=[1, 0, 0])
    slider.add_geom(group=COLLISION_GROUP, pos=[2 * BOX_HALF_M, 0, 0], **box)
    slider.add_geom(group=COLLISION_GROUP, type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.01, 0, 0], pos=[0.1, 0, 0])
    slider.add_geom(group=VISUAL_GROUP, contype=0, conaffinity=0, pos=[-0.02, 0, 0], **box)
    model = spec.compile()
    data = mujoco.MjData(model)
    data.qpos[0] = gap_m
    mujoco.mj_kinematics(model, data)
    return model, data


@pytest.mark.parametrize("gap_m", [-0.002, -1e-12, 0.0, 1e-12, 0.0005, CONTACT_DISTANCE_M - 1e-6])
def test_pairs_closer_than_the_contact_distance_touch(gap_m):
    model, data = _two_boxes(gap_m)
    geoms = link_geoms(model)
    assert link_distance_m(model, data, geoms["fixed"], geoms["slider"]) == pytest.approx(gap_m, abs=1e-9)
    assert contact_pairs(model, data, [("slider", "fixed")]) == {("fixed", "slider")}


@pytest.mark.parametrize("gap_m", [CLEAR_DISTANCE_M + 1e-6, 0.008, 0.05])
def test_pairs_farther_than_the_clear_distance_do_not_touch(gap_m):
    model, data = _two_boxes(gap_m)
    assert contact_pairs(model, data, [("fixed", "slider")]) == frozenset()


@pytest.mark.parametrize("gap_m", [CONTACT_DISTANCE_M + 1e-6, 0.003, CLEAR_DISTANCE_M - 1e-6])
def test_pairs_in_the_dead_band_are_an_error_naming_the_pair_and_distance(gap_m):
    model, data = _two_boxes(gap_m)
    with pytest.raises(ConfigError, match=rf"fixed and slider at {gap_m * 1e3:.3f} mm"):
        contact_pairs(model, data, [("fixed", "slider")])


def test_a_link_without_collision_geometry_is_named():
    model, data = _two_boxes(0.0)
    with pytest.raises(UnknownNameError, match=r"'nowhere'; available: fixed, slider"):
        contact_pairs(model, data, [("fixed", "nowhere")])


def test_the_shipped_fr3_hand_and_wrist_camera_sit_in_the_dead_band(generate_srdf):
    """Real geometry in the band (1.7 mm apart): why the generator leaves kinematically paired links to their rule."""
    robot = load_robot_config("fr3")
    model, data = generate_srdf.home_pose_data(robot, load_urdf(robot.scene_urdf), 1.0)
    with pytest.raises(ConfigError, match=r"fr3_hand and fr3_wrist_camera_link at 1\.\d{3} mm"):
        contact_pairs(model, data, [("fr3_wrist_camera_link", "fr3_hand"), ("fr3_link1", "table")])
    assert ("fr3_hand", "fr3_wrist_camera_link") in generate_srdf.kinematic_reasons(load_urdf(robot.scene_urdf))


def _default_pairs_in_srdf(robot):
    root = ET.parse(moveit_config_dir(robot) / f"{robot.name}.srdf").getroot()
    return {
        (d.get("link1"), d.get("link2")) for d in root.findall("disable_collisions") if d.get("reason") == "Default"
    }


@pytest.mark.parametrize("name", available_robots())
def test_shipped_robots_classify_the_same_under_tiny_perturbations(name, generate_srdf):
    """Every sampled pose, repeated and nudged by 1e-9 rad or m per joint, gives the same pairs (the committed ones)."""
    robot = load_robot_config(name)
    urdf = load_urdf(robot.scene_urdf)
    rules = generate_srdf.kinematic_reasons(urdf)
    links = sorted(link for link, spec in urdf.links.items() if spec.collisions)
    candidates = [pair for pair in itertools.combinations(links, 2) if pair not in rules]
    rng = np.random.default_rng(0)
    found = set()
    for gripper in generate_srdf.CONTACT_SAMPLE_GRIPPERS:
        model, data = generate_srdf.home_pose_data(robot, urdf, gripper)
        reference = contact_pairs(model, data, candidates)
        assert contact_pairs(model, data, candidates) == reference
        q_home = data.qpos.copy()
        for _ in range(5):
            data.qpos[:] = q_home + rng.uniform(-1e-9, 1e-9, size=q_home.shape)
            mujoco.mj_kinematics(model, data)
            assert contact_pairs(model, data, candidates) == reference
        found |= reference
    assert found == _default_pairs_in_srdf(robot)
    assert found, "each gripper's closed fingers touch"
