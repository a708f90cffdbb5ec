"""Config files load once and bad values get errors that name the file, the key and the rule."""

from __future__ import annotations

import copy

import pytest
import yaml

from robodojo.config import load_yaml
from robodojo.errors import ConfigError
from robodojo.robots.config import ROBOTS_DIR, available_robots, load_robot_config, parse_robot_config
from robodojo.sim.settings import parse_sim_settings
from robodojo.sim.world import EmbeddedWorld

GOOD_ROBOT = load_yaml(ROBOTS_DIR / "dual_arx_x5.yaml")
GOOD_SIM = yaml.safe_load((ROBOTS_DIR.parent / "sim.yaml").read_text())


def _with(data, path, value):
    data = copy.deepcopy(data)
    node = data
    for key in path[:-1]:
        node = node[key]
    if value is _DELETE:
        del node[path[-1]]
    else:
        node[path[-1]] = value
    return data


_DELETE = object()


@pytest.mark.parametrize("robot", available_robots())
def test_shipped_robot_configs_load(robot):
    config = load_robot_config(robot)
    assert config.scene_urdf.is_file() and config.arm_urdf.is_file()
    assert all(len(a.home_joints_rad) == len(a.joints) for a in config.arms)


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("arm", "joints"), _DELETE, r"r\.yaml\.arm: missing key 'joints'"),
        (("arm", "home_joints_rad"), [0, 1, 2], r"arm\.home_joints_rad: expected 6 numbers, got 3"),
        (("arms", "left", "base_xyz_m"), [0, "a", 0], r"arms\.left\.base_xyz_m: expected finite numbers, got 'a'"),
        (("arms",), {}, r"arms: at least one arm is required"),
        (("table", "top_z_m"), -1, r"table\.top_z_m: must be > 0"),
        (("control_hz",), 0, r"r\.yaml\.control_hz: must be > 0, got 0"),
        (("cameras", "head", "fovy_deg"), "wide", r"cameras\.head\.fovy_deg: expected a finite number"),
        (("cameras", "left_wrist", "width"), 640.5, r"cameras\.left_wrist\.width: expected an integer"),
        (("sim", "joint_kp"), [1, 2], r"sim\.joint_kp: expected 6 numbers, got 2"),
        (("sim", "gripper_force_n"), True, r"sim\.gripper_force_n: expected a finite number, got True"),
    ],
)
def test_bad_robot_config_values(path, value, message):
    with pytest.raises(ConfigError, match=message):
        parse_robot_config(_with(GOOD_ROBOT, path, value), "r.yaml")


@pytest.mark.parametrize(
    ("path", "value", "message"),
    [
        (("physics", "integrator"), "verlet", "'verlet' is not one of euler, rk4, implicit, implicitfast"),
        (("physics", "cone"), "round", "'round' is not one of pyramidal, elliptic"),
        (("object_contact", "condim"), 5, "condim: must be 1, 3, 4 or 6, got 5"),
        (("render", "shadows"), "no", r"render\.shadows: expected true or false, got 'no'"),
        (("render", "round_slices"), 0, r"render\.round_slices: must be > 0"),
        (("render", "robot_mesh_face_fraction"), 0, r"render\.robot_mesh_face_fraction: must be > 0"),
        (("render", "robot_mesh_face_fraction"), 1.5, r"robot_mesh_face_fraction: must be in \(0, 1\], got 1\.5"),
        (("room", "wall_rgba"), [1.0, 0.5, 2.0, 1.0], r"room\.wall_rgba: every component must be in \[0, 1\], got"),
        (("room", "floor_rgba"), [0.5, 0.5, 0.5], r"room\.floor_rgba"),
        (("room", "wall_margin_m"), -1.0, r"room\.wall_margin_m: must be > 0"),
    ],
)
def test_bad_sim_settings(path, value, message):
    with pytest.raises(ConfigError, match=message):
        parse_sim_settings(_with(GOOD_SIM, path, value), "sim.yaml")


def test_the_control_period_is_the_robots_in_whole_physics_steps():
    settings = parse_sim_settings(GOOD_SIM, "sim.yaml")
    assert settings.substeps(0.04) == 20 and settings.substeps(0.01) == 5
    with pytest.raises(ConfigError, match=r"not a whole number of 2 ms physics steps \(1\.5000\)"):
        settings.substeps(0.003)
    robot = parse_robot_config(GOOD_ROBOT, "r.yaml")
    assert robot.control_dt_s == pytest.approx(1 / robot.control_hz)


def test_unreadable_files(tmp_path):
    with pytest.raises(ConfigError, match="config file not found"):
        load_yaml(tmp_path / "missing.yaml")
    bad = tmp_path / "bad.yaml"
    bad.write_text("a: [1, 2\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_yaml(bad)
    bad.write_text("- 1\n- 2\n")
    with pytest.raises(ConfigError, match="expected a mapping at the top level"):
        load_yaml(bad)


def test_world_takes_custom_render_settings():
    import dataclasses

    from robodojo.sim.settings import RenderSettings, load_sim_settings

    settings = dataclasses.replace(load_sim_settings(), render=RenderSettings(msaa_samples=4, shadows=True))
    world = EmbeddedWorld(settings=settings)
    try:
        assert world.model.vis.quality.offsamples == 4 and world.model.vis.quality.shadowsize > 0
        assert world.observe(["head"]).camera("head").rgb.std() > 5
    finally:
        world.close()


def test_home_pose_outside_the_joint_limits_is_rejected(monkeypatch):
    import dataclasses

    import robodojo.sim.world as world_module

    good = load_robot_config("dual_arx_x5")
    bad_arm = dataclasses.replace(good.arms[0], home_joints_rad=(0.0, 4.0, 1.44, -1.51, 0.0, 0.0))
    bad = dataclasses.replace(good, arms=(bad_arm, good.arms[1]))
    monkeypatch.setattr(world_module, "load_robot_config", lambda name: bad)
    with pytest.raises(ConfigError, match=r"home position of 'left_joint2' \(4.0\) is outside \[-0.05, 3.5\]"):
        EmbeddedWorld("dual_arx_x5")
