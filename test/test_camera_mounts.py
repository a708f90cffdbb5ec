"""One truth for camera poses (robodojo.perception.camera_mounts): the URDF robot_state_publisher gets puts every
calibrated camera's optical frame exactly where its calibration file, and so camera_node's /cameras/<camera>/pose,
puts it; a moved calibration moves the TF frame and the camera body; the launch file hands that URDF to
robot_state_publisher where camera_node publishes the poses; MoveIt's link pairs hold for the calibrated mounts."""

from __future__ import annotations

import dataclasses
import math
import xml.etree.ElementTree as ET

import numpy as np
import pytest
import yaml
from test_launch_file import _nodes, _parameters, _run_setup, stand_in_launch  # noqa: F401 (a fixture)

from robodojo.errors import ConfigError, UnknownNameError
from robodojo.geometry import (
    matrix_from_quat,
    rotation_about_axis,
    rotation_angle_between,
    rotation_from_rpy,
    rpy_from_rotation,
    transform,
)
from robodojo.perception import camera_mounts
from robodojo.perception.camera import camera_file_data, load_camera_file
from robodojo.perception.camera_mounts import (
    calibrated_scene_urdf,
    calibrated_urdf,
    camera_frame_poses,
    load_calibrations,
)
from robodojo.perception.mounted_camera import default_calibration_path
from robodojo.robots.config import available_robots, load_robot_config
from robodojo.robots.ik import ArmKinematics
from robodojo.robots.meshes import urdf_with_resolved_meshes
from robodojo.robots.urdf import load_urdf, parse_urdf

ROBOTS = available_robots()
EXACT = 1e-9  # [m] and rotation-matrix entries: float round-off of a few 4x4 products, nothing more
# The mount joint of each camera (the fixed joint above its body link), as the scene URDFs name them.
MOUNT_JOINTS = {
    "dual_arx_x5": {
        "head": "head_camera_joint",
        "left_wrist": "left_wrist_camera_joint",
        "right_wrist": "right_wrist_camera_joint",
    },
    "fr3": {"head": "head_camera_joint", "wrist": "fr3_wrist_camera_joint"},
}


def joint_configurations(robot, count: int, seed: int) -> list[dict[str, float]]:
    """The home pose and ``count - 1`` random arm and gripper positions within the URDF's limits."""
    urdf = load_urdf(robot.scene_urdf)
    rng = np.random.default_rng(seed)
    configs = [{j: q for arm in robot.arms for j, q in zip(arm.joints, arm.home_joints_rad, strict=True)}]
    for _ in range(count - 1):
        q = {}
        for arm in robot.arms:
            for name in (*arm.joints, arm.gripper_joint):
                joint = urdf.joint(name)
                q[name] = float(rng.uniform(joint.lower, joint.upper))
        configs.append(q)
    return configs


def assert_same_pose(T, T_expected, tol: float = EXACT, what: str = "") -> None:
    np.testing.assert_allclose(T[:3, 3], T_expected[:3, 3], atol=tol, rtol=0, err_msg=what)
    np.testing.assert_allclose(T[:3, :3], T_expected[:3, :3], atol=tol, rtol=0, err_msg=what)


def write_calibration(path, file, *, T_world_cam=None, T_tcp_cam=None):
    """A copy of calibration ``file`` at ``path`` with another pose."""
    model = file.model if T_world_cam is None else file.model.with_pose(T_world_cam)
    data = camera_file_data(model, T_tcp_cam=T_tcp_cam, arm=file.arm)
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    return path


@pytest.mark.parametrize("name", ROBOTS)
def test_tf_of_the_calibrated_urdf_is_every_calibration_file_s_pose(name):
    """FK of the calibrated URDF = the file's T_world_cam (fixed) or FK(TCP) @ T_tcp_cam (wrist), at several joint
    configurations; the TCP there is camera_node's own (MuJoCo's kinematics of the scene URDF)."""
    robot = load_robot_config(name)
    calibrated = calibrated_scene_urdf(robot)
    cameras = load_calibrations(robot)
    assert set(cameras) == set(robot.camera_names)  # every shipped camera has its file
    kinematics = ArmKinematics(robot)
    urdf = parse_urdf(calibrated.text)
    for q in joint_configurations(robot, 4, seed=len(name)):
        links = urdf.forward_kinematics(q)
        frames = camera_frame_poses(calibrated.text, robot, q)
        for camera in cameras.values():
            T_tf = links[camera.frame]
            np.testing.assert_array_equal(frames[camera.name], T_tf)
            if camera.arm is None:
                assert_same_pose(T_tf, camera.file.model.T_world_cam, what=camera.name)
                continue
            arm = robot.arm(camera.arm)
            T_world_tcp = links[arm.tcp_link]
            assert_same_pose(T_tf, T_world_tcp @ camera.file.T_tcp_cam, what=camera.name)
            pos, R = kinematics.tcp_pose(arm.name, np.array([q[j] for j in arm.joints]))
            # what camera_node publishes for this joint state
            assert_same_pose(T_tf, camera.T_world_cam(transform(R, pos)), what=f"{camera.name} (camera_node's TCP)")


@pytest.mark.parametrize("name", ROBOTS)
def test_only_the_camera_mount_joints_change(name):
    robot = load_robot_config(name)
    designed = load_urdf(robot.scene_urdf)
    calibrated = calibrated_scene_urdf(robot)
    moved = parse_urdf(calibrated.text)
    assert {m.camera: m.joint for m in calibrated.mounts} == MOUNT_JOINTS[name]
    assert moved.links == designed.links and moved.materials == designed.materials
    assert list(moved.joints) == list(designed.joints)
    for joint_name, joint in designed.joints.items():
        if joint_name in MOUNT_JOINTS[name].values():
            # same parent and child: the link tree, and MoveIt's adjacent and rigid pairs with it, stay as designed
            assert dataclasses.replace(moved.joints[joint_name], origin=joint.origin) == joint
            assert moved.joints[joint_name].origin != joint.origin
        else:
            assert moved.joints[joint_name] == joint, joint_name
    for mount in calibrated.mounts:
        assert mount.source == default_calibration_path(name, mount.camera)
        # the shipped files come from the simulator's cameras: within about a millimetre of the design
        assert 0 < mount.shift_m < 2e-3 and mount.turn_deg < 0.5
        assert str(mount.source) in mount.describe() and "mm" in mount.describe()
    # each moved joint says where its origin came from, in the file itself
    parser = ET.XMLParser(target=ET.TreeBuilder(insert_comments=True))
    comments = " ".join(c.text or "" for c in ET.fromstring(calibrated.text, parser).iter(ET.Comment))
    for camera in robot.camera_names:
        assert f"calibrated camera {camera}: origin from {default_calibration_path(name, camera)}" in comments


def test_a_shifted_calibration_moves_the_tf_frame_and_the_camera_body(tmp_path):
    """A test that can fail: move the FR3's head by 3 cm and 5 deg and its wrist camera by 1 cm and 4 deg; the optical
    frames follow exactly, the bodies (visual and collision shapes) move rigidly with them, nothing else moves."""
    robot = load_robot_config("fr3")
    head = load_camera_file(default_calibration_path("fr3", "head"))
    wrist = load_camera_file(default_calibration_path("fr3", "wrist"))
    T_delta_world = transform(rotation_about_axis([0.3, -1.0, 0.2], math.radians(5)), [0.02, -0.01, 0.02])
    T_delta_tcp = transform(rotation_about_axis([1.0, 0.4, 0.0], math.radians(4)), [0.0, 0.01, -0.002])
    T_world_head = T_delta_world @ head.model.T_world_cam
    T_tcp_wrist = T_delta_tcp @ wrist.T_tcp_cam
    files = {
        "head": write_calibration(tmp_path / "head.yaml", head, T_world_cam=T_world_head),
        "wrist": write_calibration(tmp_path / "wrist.yaml", wrist, T_tcp_cam=T_tcp_wrist),
    }
    shifted = calibrated_urdf(robot.scene_urdf.read_text(), robot, load_calibrations(robot, files))
    before = calibrated_scene_urdf(robot)
    # the file as written (6-decimal quaternions): the pose camera_node would publish from it
    T_world_head = load_camera_file(files["head"]).model.T_world_cam
    T_tcp_wrist = load_camera_file(files["wrist"]).T_tcp_cam
    for q in joint_configurations(robot, 3, seed=5):
        new, old = parse_urdf(shifted.text).forward_kinematics(q), parse_urdf(before.text).forward_kinematics(q)
        assert_same_pose(new["head_camera_optical_frame"], T_world_head)
        assert_same_pose(new["fr3_wrist_camera_optical_frame"], new["fr3_tcp"] @ T_tcp_wrist)
        bodies = {
            "head_camera_link": "head_camera_optical_frame",
            "fr3_wrist_camera_link": "fr3_wrist_camera_optical_frame",
        }
        for body, optical in bodies.items():
            T_moved = new[optical] @ np.linalg.inv(old[optical])
            assert_same_pose(new[body], T_moved @ old[body], what=body)  # the body rides with its optical frame
        head_shift = np.linalg.norm(new["head_camera_optical_frame"][:3, 3] - old["head_camera_optical_frame"][:3, 3])
        assert head_shift > 0.02  # it did move (the check above cannot pass by standing still)
        R_new, R_old = new["fr3_wrist_camera_optical_frame"][:3, :3], old["fr3_wrist_camera_optical_frame"][:3, :3]
        assert math.degrees(rotation_angle_between(R_new, R_old)) == pytest.approx(4.0, abs=0.01)
        for link in set(new) - set(bodies) - set(bodies.values()):
            np.testing.assert_array_equal(new[link], old[link], err_msg=link)
    assert shifted.mount("head").shift_m > 0.02 and shifted.mount("wrist").turn_deg > 3


def test_a_camera_without_a_calibration_file_keeps_its_designed_mount(tmp_path, monkeypatch):
    robot = load_robot_config("dual_arx_x5")
    designed = load_urdf(robot.scene_urdf)
    missing = tmp_path / "head.yaml"

    def path(robot_name, camera):
        return missing if camera == "head" else default_calibration_path(robot_name, camera)

    monkeypatch.setattr(camera_mounts, "default_calibration_path", path)
    cameras = load_calibrations(robot)
    assert set(cameras) == {"left_wrist", "right_wrist"}
    result = calibrated_urdf(robot.scene_urdf.read_text(), robot, cameras)
    head = result.mount("head")
    assert head.source is None and head.origin == head.designed
    assert "no calibration file" in head.describe() and "designed mount" in head.describe()
    assert parse_urdf(result.text).joints["head_camera_joint"] == designed.joints["head_camera_joint"]
    assert result.mount("left_wrist").source is not None
    # an explicitly named file must exist (camera_node would refuse it too)
    with pytest.raises(ConfigError, match="head"):
        load_calibrations(robot, {"head": missing})


def test_calibrations_that_do_not_fit_the_robot_are_refused(tmp_path):
    robot = load_robot_config("dual_arx_x5")
    # the left wrist's file given for the right wrist: another arm
    with pytest.raises(ConfigError, match="arm 'left'"):
        load_calibrations(robot, {"right_wrist": default_calibration_path(robot.name, "left_wrist")})
    # a wrist file for the fixed head camera
    with pytest.raises(ConfigError, match="head"):
        load_calibrations(robot, {"head": default_calibration_path(robot.name, "left_wrist")})
    with pytest.raises(UnknownNameError, match="available: head, left_wrist, right_wrist"):
        load_calibrations(robot, {"wrist": default_calibration_path("fr3", "wrist")})
    fr3 = load_robot_config("fr3")
    with pytest.raises(ConfigError, match="no camera 'left_wrist'"):
        calibrated_urdf(robot.scene_urdf.read_text(), fr3, load_calibrations(robot))


def test_rpy_from_rotation_inverts_rotation_from_rpy():
    rng = np.random.default_rng(4)
    angles = [rng.uniform([-np.pi, -np.pi / 2, -np.pi], [np.pi, np.pi / 2, np.pi]) for _ in range(500)]
    angles += [np.array([0.3, s * np.pi / 2, -1.1]) for s in (-1, 1)]  # gimbal lock: roll and yaw about one axis
    angles += [np.array([0.3, s * (np.pi / 2 - 1e-9), -1.1]) for s in (-1, 1)]  # next to it
    for rpy in angles:
        R = rotation_from_rpy(rpy)
        back = rpy_from_rotation(R)
        np.testing.assert_allclose(rotation_from_rpy(back), R, atol=1e-12)
        assert -np.pi / 2 <= back[1] <= np.pi / 2
    assert rpy_from_rotation(matrix_from_quat([1, 0, 0, 0])) == (0.0, 0.0, 0.0)


@pytest.mark.parametrize("name", ROBOTS)
def test_moveit_link_pairs_hold_for_the_calibrated_mounts(name, generate_srdf, tmp_path):
    """The SRDF is made from the designed URDF (which moveit_py plans with); the pairs it disables are the same for the
    URDF with the shipped calibrations, so RViz's model and MoveIt's agree on which links may touch."""
    robot = load_robot_config(name)
    path = tmp_path / robot.scene_urdf.name
    path.write_text(calibrated_scene_urdf(robot).text)
    calibrated_robot = dataclasses.replace(robot, scene_urdf=path)
    designed = generate_srdf.disabled_collisions(robot, load_urdf(robot.scene_urdf))
    assert generate_srdf.disabled_collisions(calibrated_robot, load_urdf(path)) == designed


@pytest.mark.parametrize(("robot", "launch_arguments"), [("fr3", {"sim": "none"}), ("dual_arx_x5", {"sim": "isaac"})])
def test_launch_gives_robot_state_publisher_the_calibrated_mounts(stand_in_launch, robot, launch_arguments):  # noqa: F811
    actions = _run_setup(stand_in_launch, robot=robot, **launch_arguments)
    description = _parameters(_nodes(actions)["robot_state_publisher"])["robot_description"]
    config = load_robot_config(robot)
    assert description == urdf_with_resolved_meshes(calibrated_scene_urdf(config).text)
    for q in joint_configurations(config, 2, seed=1):
        links = parse_urdf(description).forward_kinematics(q)
        for camera in load_calibrations(config).values():
            tcp = links[config.arm(camera.arm).tcp_link] if camera.arm else None
            assert_same_pose(links[camera.frame], camera.T_world_cam(tcp), what=camera.name)
    logs = " ".join(a.kwargs["msg"] for a in actions if type(a).__name__ == "LogInfo")
    for camera in config.camera_names:
        assert str(default_calibration_path(robot, camera)) in logs


def test_launch_keeps_the_designed_mounts_with_the_embedded_simulator(stand_in_launch):  # noqa: F811
    """sim:=mujoco: sim_node publishes the poses of the cameras it renders, on the scene URDF's mounts."""
    actions = _run_setup(stand_in_launch, robot="fr3")
    description = _parameters(_nodes(actions)["robot_state_publisher"])["robot_description"]
    assert description == urdf_with_resolved_meshes(load_robot_config("fr3").scene_urdf.read_text())
