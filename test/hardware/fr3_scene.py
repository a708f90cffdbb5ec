"""The FR3 test world's scene on franky-sim: our robot config's layout (base pose, table, home pose), a cube, and
cameras placed from the calibration files, plus the check that our URDF kinematics agree with franky-sim's model.

Used by fr3_world.py (the process) and test_fr3_world.py. franky-sim's MujocoSimulator builds its MJCF with
ElementTree; everything here edits that tree before the simulator compiles it.
"""

from __future__ import annotations

import math
import os
import tempfile
import xml.etree.ElementTree as ET
from collections.abc import Sequence
from dataclasses import dataclass

import mujoco
import numpy as np
from fr3_cameras import GroundTruth
from franky_sim import RobotParameters
from franky_sim.mujoco_simulator import FrankaMujocoRobot, MujocoSimulator

from robodojo.geometry import quat_from_matrix, transform
from robodojo.perception.mounted_camera import MountedCamera
from robodojo.robots.config import ArmConfig, RobotConfig
from robodojo.robots.ik import ArmKinematics
from robodojo.sim.textures import WOOD_REPEAT_PER_M, wood_grain

PREFIX = "robot0_"  # franky-sim's name prefix for the first robot it adds
HAND_BODY = PREFIX + "hand"  # franky-sim's Franka Hand body: the flange turned -45 deg about z
OUR_HAND_LINK = "fr3_hand"  # the same frame in our URDF (urdf/fr3.urdf)
FK_TOLERANCE_M = 0.002
FK_TOLERANCE_RAD = math.radians(0.1)
FK_CHECKS = 6  # joint configurations compared: home and random ones within the limits

CUBE_BODY = "cube"
CUBE_JOINT = "cube_joint"
CUBE_SIZE_M = 0.045
CUBE_MASS_KG = 0.05  # a 4.5 cm wooden cube
CUBE_RGBA = (0.85, 0.08, 0.06, 1.0)
# Sliding friction as franky-sim's finger pads (MuJoCo's default 1); torsional friction (condim 4) so a cube held
# between two pads does not spin about the grasp axis.
CUBE_FRICTION = (1.0, 0.01, 0.0001)
CUBE_CONDIM = 4
DEFAULT_CUBE_XY_M = (0.05, -0.05)  # 0.45 m in front of the base: a top-down grasp well inside the FR3's reach
# The embedded world's wood grain (robodojo.sim.textures): a real table has texture, and depth-free perception
# (robo.table_height's plane sweep, stereo) finds nothing to match on a blank one.
TABLE_MATERIAL = "table_wood_grain"


def _vec(values: Sequence[float]) -> str:
    return " ".join(f"{float(v):.9g}" for v in values)


def _mujoco_camera_pose(T_parent_optical: np.ndarray) -> tuple[str, str]:
    """pos and quat attributes of a MuJoCo camera (looking along -z, y up) for a REP 103 optical frame (z forward,
    y down): the same origin, turned half a turn about x."""
    R = T_parent_optical[:3, :3] @ np.diag([1.0, -1.0, -1.0])
    return _vec(T_parent_optical[:3, 3]), _vec(quat_from_matrix(R))


def _add_camera(parent: ET.Element, camera: MountedCamera, T_parent_optical: np.ndarray) -> None:
    """A MuJoCo camera with the calibration file's pinhole intrinsics.

    MuJoCo takes focal lengths and the principal point in pixels (focalpixel, principalpixel); its principal point
    is an offset from the image centre ((W - 1) / 2, (H - 1) / 2 in OpenCV's pixel-centre coordinates), positive to
    the left and up (measured with MuJoCo 4.0: spheres rendered through such a camera land within 0.15 px of K's
    projection).
    """
    pos, quat = _mujoco_camera_pose(T_parent_optical)
    view = _camera_view(camera.file.model.K, camera.width, camera.height)
    ET.SubElement(parent, "camera", name=camera.name, pos=pos, quat=quat, **view)


def _camera_view(K: np.ndarray, w: int, h: int) -> dict[str, str]:
    """A MuJoCo camera's intrinsic attributes for pinhole ``K`` at ``w`` x ``h`` (_add_camera's docstring)."""
    return {
        "resolution": f"{w} {h}",
        "sensorsize": _vec([w * 1e-3, h * 1e-3]),  # any size: the pixel intrinsics fix the projection
        "focalpixel": _vec([K[0, 0], K[1, 1]]),
        "principalpixel": _vec([(w - 1) / 2 - K[0, 2], (h - 1) / 2 - K[1, 2]]),
    }


def with_camera_views(scene_xml: str, views: dict[str, tuple[np.ndarray, int, int]]) -> str:
    """``scene_xml`` with cameras rendering other views: camera name -> (K, width, height), and an offscreen buffer
    that holds the largest image. For driver stand-ins that render at their own size (fr3_cameras.py)."""
    root = ET.fromstring(scene_xml)
    for camera in root.iter("camera"):
        name = camera.get("name")
        if name in views:
            camera.attrib.update(_camera_view(*views[name]))
    found = {c.get("name") for c in root.iter("camera")}
    if set(views) - found:
        raise LookupError(f"the scene has no camera {sorted(set(views) - found)}; cameras: {sorted(found)}")
    buffers = root.findall("visual/global")
    if not buffers:
        raise LookupError("the scene has no <visual><global> offscreen buffer size")
    for buffer in buffers:
        for attr, i in (("offwidth", 1), ("offheight", 2)):
            buffer.set(attr, str(max([int(buffer.get(attr, "0"))] + [v[i] for v in views.values()])))
    return ET.tostring(root, encoding="unicode")


def _find_body(root: ET.Element, name: str) -> ET.Element:
    for body in root.iter("body"):
        if body.get("name") == name:
            return body
    raise LookupError(f"franky-sim's scene has no body {name!r}")


@dataclass(frozen=True)
class WorldLayout:
    """What the scene holds besides the robot config: the cube and the cameras."""

    cube_xy_m: tuple[float, float]
    cameras: tuple[MountedCamera, ...]
    calibration_board: bool = False  # the ChArUco board of config/calibration.yaml on the table (robodojo calibrate)


def build_simulator(robot: RobotConfig, layout: WorldLayout) -> tuple[MujocoSimulator, FrankaMujocoRobot]:
    """franky-sim's MuJoCo simulator with the FR3, table, cube and cameras (not started)."""
    arm = robot.arms[0]
    if any(abs(a) > 1e-9 for a in arm.base_rpy_deg[:2]):
        # franky-sim compensates gravity along its base's -z: a tilted base would sag.
        raise ValueError(f"franky-sim needs an upright base; {robot.name} has base_rpy_deg {arm.base_rpy_deg}")
    sim = MujocoSimulator()
    visual = sim.scene.find("visual")
    assert visual is not None
    # Offscreen rendering on a CPU: no multisampling; the buffer fits the largest camera.
    quality = visual.find("quality")
    if quality is not None:
        quality.set("offsamples", "0")
    ET.SubElement(
        visual,
        "global",
        offwidth=str(max(c.width for c in layout.cameras)),
        offheight=str(max(c.height for c in layout.cameras)),
    )
    handle = sim.add_robot(initial_q=tuple(arm.home_joints_rad), position=tuple(arm.base_xyz_m))
    # add_robot takes a position only: turn the body it appended by the config's base orientation.
    robot_body = sim.worldbody.findall("body")[-1]
    robot_body.set("quat", _vec(quat_from_matrix(arm.base_link_pose[:3, :3])))
    _add_table(sim.scene, sim.worldbody, robot)
    _add_cube(sim.worldbody, robot, layout.cube_xy_m)
    if layout.calibration_board:
        _add_calibration_board(sim.scene, sim.worldbody, robot)
    T_hand_tcp = our_hand_to_tcp(robot)
    hand = _find_body(robot_body, HAND_BODY)
    for camera in layout.cameras:
        if camera.arm is None:
            _add_camera(sim.worldbody, camera, camera.T_world_cam())
        else:
            _add_camera(hand, camera, T_hand_tcp @ camera.file.T_tcp_cam)
    return sim, handle


def _add_table(scene: ET.Element, worldbody: ET.Element, robot: RobotConfig) -> None:
    """A solid wood-grained block from the floor up to table.top_z_m (the arm's base stands on it)."""
    asset = scene.find("asset")
    if asset is None:
        asset = ET.SubElement(scene, "asset")
    ET.SubElement(asset, "texture", name=TABLE_MATERIAL, type="2d", file=str(_wood_grain_png()))
    repeat = _vec([WOOD_REPEAT_PER_M, WOOD_REPEAT_PER_M])
    ET.SubElement(asset, "material", name=TABLE_MATERIAL, texture=TABLE_MATERIAL, texuniform="true", texrepeat=repeat)
    table = robot.table
    half = [table.size_xy_m[0] / 2, table.size_xy_m[1] / 2, table.top_z_m / 2]
    pos = [table.center_xy_m[0], table.center_xy_m[1], table.top_z_m / 2]
    ET.SubElement(worldbody, "geom", name="table", type="box", size=_vec(half), pos=_vec(pos), material=TABLE_MATERIAL)


def _add_calibration_board(scene: ET.Element, worldbody: ET.Element, robot: RobotConfig) -> None:
    """The board where the embedded world puts it (sim_board in config/calibration.yaml); it never collides."""
    import cv2

    from robodojo.perception.calibrate.settings import load_calibration_settings
    from robodojo.perception.calibrate.sim_board import BOARD_BODY, board_look, calibration_board_pose

    look = board_look(load_calibration_settings().board)
    path = os.path.join(tempfile.gettempdir(), f"robodojo-board-{os.getpid()}.png")
    cv2.imwrite(path, cv2.cvtColor(np.ascontiguousarray(look.rgb), cv2.COLOR_RGB2BGR))
    asset = scene.find("asset")
    assert asset is not None  # _add_table made it
    ET.SubElement(asset, "texture", name=BOARD_BODY, type="2d", file=path)
    ET.SubElement(asset, "material", name=BOARD_BODY, texture=BOARD_BODY)
    T = look.body_pose(calibration_board_pose(robot.name))
    body = ET.SubElement(worldbody, "body", name=BOARD_BODY, pos=_vec(T[:3, 3]), quat=_vec(quat_from_matrix(T[:3, :3])))
    ET.SubElement(body, "geom", name=BOARD_BODY, type="box", size=_vec(look.half_size_m), material=BOARD_BODY,
                  contype="0", conaffinity="0")  # fmt: skip


def _wood_grain_png() -> str:
    """The wood-grain image as a PNG file (MJCF textures come from files), written once per machine."""
    import cv2

    image = wood_grain()
    path = os.path.join(tempfile.gettempdir(), f"robodojo-wood-grain-{image.shape[0]}px.png")
    if not os.path.exists(path):
        partial = f"{path}.{os.getpid()}.png"  # the same image from every writer: the last rename wins, harmlessly
        cv2.imwrite(partial, cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2BGR))
        os.replace(partial, path)
    return path


def cube_start_xyz(robot: RobotConfig, xy_m: Sequence[float]) -> tuple[float, float, float]:
    """The cube's centre resting on the table at ``xy_m`` (world frame)."""
    return (float(xy_m[0]), float(xy_m[1]), robot.table.top_z_m + CUBE_SIZE_M / 2)


def _add_cube(worldbody: ET.Element, robot: RobotConfig, xy_m: tuple[float, float]) -> None:
    half = CUBE_SIZE_M / 2
    body = ET.SubElement(worldbody, "body", name=CUBE_BODY, pos=_vec(cube_start_xyz(robot, xy_m)))
    ET.SubElement(body, "freejoint", name=CUBE_JOINT)
    ET.SubElement(
        body,
        "geom",
        name=CUBE_BODY,
        type="box",
        size=_vec([half] * 3),
        mass=f"{CUBE_MASS_KG:g}",
        rgba=_vec(CUBE_RGBA),
        friction=_vec(CUBE_FRICTION),
        condim=str(CUBE_CONDIM),
    )


# -- kinematics: ours against franky-sim's --------------------------------------------------------------------------
def our_hand_to_tcp(robot: RobotConfig) -> np.ndarray:
    """T_hand_tcp in our URDF (a fixed joint, so any joint angles do)."""
    kinematics = ArmKinematics(robot)
    arm = robot.arms[0]
    kinematics.tcp_pose(arm.name, np.array(arm.home_joints_rad))
    d, hand, tcp = kinematics.data, kinematics.model.body(OUR_HAND_LINK).id, kinematics.model.body(arm.tcp_link).id
    T_world_hand = transform(d.xmat[hand].reshape(3, 3), d.xpos[hand])
    T_world_tcp = transform(d.xmat[tcp].reshape(3, 3), d.xpos[tcp])
    return np.linalg.inv(T_world_hand) @ T_world_tcp


@dataclass(frozen=True)
class FkAgreement:
    """Largest differences over the checked joint configurations between our TCP and franky-sim's."""

    configurations: int
    mujoco_pos_m: float  # franky-sim's MuJoCo hand body moved by its TCP offset
    mujoco_rot_rad: float
    franky_pos_m: float  # franky-sim's own O_T_EE kinematics (pinocchio), placed at the base pose
    franky_rot_rad: float

    @property
    def ok(self) -> bool:
        return (
            max(self.mujoco_pos_m, self.franky_pos_m) < FK_TOLERANCE_M
            and max(self.mujoco_rot_rad, self.franky_rot_rad) < FK_TOLERANCE_RAD
        )

    def __str__(self) -> str:
        return (
            f"TCP agrees with franky-sim over {self.configurations} configurations: MuJoCo hand + TCP offset "
            f"{self.mujoco_pos_m * 1e3:.4f} mm / {math.degrees(self.mujoco_rot_rad):.4f} deg, franky's O_T_EE "
            f"{self.franky_pos_m * 1e3:.4f} mm / {math.degrees(self.franky_rot_rad):.4f} deg"
        )


def _angle(R_a: np.ndarray, R_b: np.ndarray) -> float:
    return math.acos(float(np.clip((np.trace(R_a.T @ R_b) - 1) / 2, -1.0, 1.0)))


def check_kinematics(
    model: mujoco.MjModel, handle: FrankaMujocoRobot, arm: ArmConfig, robot: RobotConfig, seed: int = 0
) -> FkAgreement:
    """Our FK against franky-sim's at home and random configurations, on a private MjData of its compiled model."""
    kinematics = ArmKinematics(robot)
    data = mujoco.MjData(model)
    qadr = [model.joint(f"{PREFIX}{j}").qposadr[0] for j in arm.joints]
    hand = model.body(HAND_BODY).id
    # franky-sim's TCP: its flange times RobotParameters' ee_tcp (0.1034 m along z, -45 deg about z); its hand body
    # is the flange turned by the same -45 deg, so the TCP is the hand body moved ee_tcp_xyz along its own axes.
    T_hand_tcp = transform(None, RobotParameters().ee_tcp_xyz)
    rng = np.random.default_rng(seed)
    lower, upper = kinematics.lower[arm.name], kinematics.upper[arm.name]
    configurations = [np.array(arm.home_joints_rad)] + [rng.uniform(lower, upper) for _ in range(FK_CHECKS - 1)]
    worst = np.zeros(4)
    for q in configurations:
        data.qpos[qadr] = q
        mujoco.mj_kinematics(model, data)
        pos, R = kinematics.tcp_pose(arm.name, q)
        T_mj = transform(data.xmat[hand].reshape(3, 3), data.xpos[hand]) @ T_hand_tcp
        T_franky = arm.base_link_pose @ handle.kinematics(q).homogeneous
        errors = [
            np.linalg.norm(T_mj[:3, 3] - pos),
            _angle(T_mj[:3, :3], R),
            np.linalg.norm(T_franky[:3, 3] - pos),
            _angle(T_franky[:3, :3], R),
        ]
        worst = np.maximum(worst, errors)
    return FkAgreement(len(configurations), *(float(v) for v in worst))


def ground_truth(robot: RobotConfig) -> GroundTruth:
    """Where fr3_world's camera process finds franky-sim's joints and grasp point (fr3_cameras.GroundTruth)."""
    arm = robot.arms[0]
    T_hand_tcp = transform(None, RobotParameters().ee_tcp_xyz)  # as check_kinematics: franky's TCP on the hand body
    return GroundTruth(
        mujoco_joints=(*(f"{PREFIX}{j}" for j in arm.joints), f"{PREFIX}finger_joint1"),
        joint_names=(*arm.joints, arm.gripper_joint),
        hand_body=HAND_BODY,
        T_hand_tcp=tuple(tuple(float(v) for v in row) for row in T_hand_tcp),
    )
