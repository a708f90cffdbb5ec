"""URDF reader, scene composition and agreement between URDF kinematics and the MuJoCo model."""

from __future__ import annotations

import mujoco
import numpy as np
import pytest

from robodojo.errors import ConfigError
from robodojo.geometry import matrix_from_quat, quat_from_matrix, rotation_from_rpy
from robodojo.robots.compose import compose_scene_urdf
from robodojo.robots.config import available_robots, load_robot_config
from robodojo.robots.urdf import load_urdf, parse_urdf
from robodojo.sim.describe import describe_layout
from robodojo.sim.scene import build_scene_spec
from robodojo.sim.settings import load_sim_settings


@pytest.mark.parametrize("robot", available_robots())
def test_generated_scene_urdf_is_up_to_date(robot):
    config = load_robot_config(robot)
    assert config.scene_urdf.read_text() == compose_scene_urdf(config), "run `make urdf` and commit the result"


@pytest.mark.parametrize("robot", available_robots())
def test_urdf_forward_kinematics_matches_mujoco_body_poses(robot):
    config = load_robot_config(robot)
    urdf = load_urdf(config.scene_urdf)
    settings = load_sim_settings()
    spec, _ = build_scene_spec(config, settings, describe_layout(config, None, settings))
    model = spec.compile()
    data = mujoco.MjData(model)
    rng = np.random.default_rng(7)
    movable = [j for j in urdf.movable_joints if j.mimic is None]
    for _ in range(20):
        q = {j.name: float(rng.uniform(j.lower, j.upper)) for j in movable}
        for name, value in q.items():
            data.qpos[model.joint(name).qposadr[0]] = value
        for j in urdf.movable_joints:
            if j.mimic is not None:
                data.qpos[model.joint(j.name).qposadr[0]] = urdf.position_of(j, q)
        mujoco.mj_kinematics(model, data)
        poses = urdf.forward_kinematics(q)
        for link, T in poses.items():
            if link == urdf.root:
                continue
            body = model.body(link).id
            np.testing.assert_allclose(data.xpos[body], T[:3, 3], atol=1e-6, err_msg=link)
            np.testing.assert_allclose(data.xmat[body].reshape(3, 3), T[:3, :3], atol=1e-6, err_msg=link)


def test_arm_tcp_frame_convention_and_placement():
    config = load_robot_config("dual_arx_x5")
    urdf = load_urdf(config.scene_urdf)
    for arm in config.arms:
        poses = urdf.forward_kinematics(dict(zip(arm.joints, arm.home_joints_rad, strict=True)))
        T_tcp = poses[arm.tcp_link]
        # Home is a straight-down grasp: TCP z (approach) points down, in front of the arm's base.
        np.testing.assert_allclose(T_tcp[:3, 2], [0, 0, -1], atol=0.01)
        assert T_tcp[1, 3] > arm.base_xyz_m[1] + 0.1
        # Base pose as documented: at the configured place, rotated +90 deg about z.
        base = poses[arm.prefix + "base_link"]
        np.testing.assert_allclose(base[:3, 3], arm.base_xyz_m)
        np.testing.assert_allclose(base[:3, 0], [0, 1, 0], atol=1e-12)


def test_gripper_opening_is_the_sum_of_both_fingers():
    urdf = load_urdf(load_robot_config("dual_arx_x5").arm_urdf)
    for q in (0.0, 0.02, 0.044):
        poses = urdf.forward_kinematics({"finger_left_joint": q})
        gap = poses["finger_left"][1, 3] - poses["finger_right"][1, 3] - 2 * 0.0249
        assert gap == pytest.approx(2 * q, abs=1e-12)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<robot", "not valid XML"),
        ("<model/>", "root element must be <robot>"),
        ('<robot><link name="a"/><joint name="j" type="revolute"><parent link="a"/><child link="b"/></joint></robot>',
         "unknown link 'b'"),
        ('<robot><link name="a"/><link name="b"/><joint name="j" type="revolute"><parent link="a"/>'
         '<child link="b"/></joint></robot>', "needs <limit lower upper>"),
        ('<robot><link name="a"><collision><geometry><mesh filename="x.stl"/></geometry></collision></link></robot>',
         "mesh collisions are not supported"),
        ('<robot><link name="a"><visual><geometry><mesh/></geometry></visual></link></robot>',
         "has no 'filename' attribute"),
        ('<robot><link name="a"><visual><geometry><capsule radius="1"/></geometry></visual></link></robot>',
         "unsupported geometry <capsule>"),
        ('<robot><link name="a"><visual><geometry><box size="1 -1 1"/></geometry></visual></link></robot>',
         "dimensions must be positive"),
        ('<robot><link name="a"/><link name="b"/><joint name="j" type="planar"><parent link="a"/>'
         '<child link="b"/></joint></robot>', "unsupported type 'planar'"),
    ],
)  # fmt: skip
def test_bad_urdf_gets_a_precise_error(text, message):
    with pytest.raises(ConfigError, match=message):
        parse_urdf(text)


def test_rotation_helpers_round_trip():
    rng = np.random.default_rng(3)
    for _ in range(200):
        R = rotation_from_rpy(rng.uniform(-np.pi, np.pi, 3))
        q = quat_from_matrix(R)
        assert q[0] >= 0 and np.linalg.norm(q) == pytest.approx(1.0)
        np.testing.assert_allclose(matrix_from_quat(q), R, atol=1e-12)


def test_package_data_is_found_from_a_colcon_install_layout(tmp_path, monkeypatch):
    import importlib

    import robodojo

    share = tmp_path / "share" / "agent_bringup"
    (share / "config").mkdir(parents=True)
    monkeypatch.setenv("AMENT_PREFIX_PATH", str(tmp_path))
    monkeypatch.setattr(robodojo, "__file__", str(tmp_path / "lib" / "python3.11" / "site-packages" / "robodojo" / "x"))
    assert importlib.import_module("robodojo")._find_package_root() == share
