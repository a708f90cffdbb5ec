"""One truth for camera poses: the robot's URDF with every calibrated camera where its calibration file puts it.

The scene URDF (urdf/<scene>.urdf) holds each camera's designed mount. A calibration file
(config/cameras/<robot>/<camera>.yaml) holds where the camera really is: ``T_world_cam`` for a fixed camera,
``T_tcp_cam`` on an arm's TCP for a wrist camera, both for the REP 103 optical frame. ``camera_node`` publishes
/cameras/<camera>/pose from the file; so that TF (robot_state_publisher, from the ``robot_description`` the launch
file gives it) and RViz show the same pose, :func:`calibrated_urdf` rewrites the origin of each calibrated camera's
mount joint (the fixed joint above the camera's body link) so that

- fixed camera: world -> optical frame = the file's ``T_world_cam``;
- wrist camera: the arm's TCP link -> optical frame = the file's ``T_tcp_cam``. The joint keeps its parent (the hand or
  last link, rigidly fixed to the TCP): it is composed through that fixed parent -> TCP transform, so the link tree,
  and with it MoveIt's adjacent and rigid link pairs (config/moveit), stay as designed.

The camera body's visual and collision shapes ride on the moved link; the body -> optical joint keeps its designed
offset. A camera without a calibration file keeps its designed mount, and the result says so (``CameraMount.source``
is None). Nothing else of the URDF changes.
"""

from __future__ import annotations

import math
import xml.etree.ElementTree as ET
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from robodojo.errors import ConfigError, UnknownNameError
from robodojo.geometry import Matrix, rotation_angle_between, rpy_from_rotation
from robodojo.perception.mounted_camera import MountedCamera, default_calibration_path, load_mounted_camera
from robodojo.robots.config import RobotConfig
from robodojo.robots.topic_names import WORLD_FRAME
from robodojo.robots.urdf import Joint, Origin, UrdfModel, parse_urdf


@dataclass(frozen=True)
class CameraMount:
    """One camera's mount joint as designed and as written. ``source``: the calibration file that moved it, or None
    when the camera has none and keeps the designed mount (``origin == designed``)."""

    camera: str
    joint: str  # the fixed joint whose origin places the camera body (parent -> camera link)
    parent: str
    designed: Origin
    origin: Origin
    source: Path | None

    @property
    def shift_m(self) -> float:
        """How far the joint's origin moved [m] (the camera body's frame, not the optical frame)."""
        return float(np.linalg.norm(np.subtract(self.origin.xyz, self.designed.xyz)))

    @property
    def turn_deg(self) -> float:
        """How far the joint's rotation turned [deg]."""
        return math.degrees(rotation_angle_between(self.origin.matrix[:3, :3], self.designed.matrix[:3, :3]))

    def describe(self) -> str:
        """One line for a log: where the camera's TF frame comes from."""
        if self.source is None:
            return f"camera {self.camera}: no calibration file, {self.joint} keeps the designed mount"
        return (
            f"camera {self.camera}: {self.joint} from {self.source} "
            f"({self.shift_m * 1000:.1f} mm, {self.turn_deg:.2f} deg from the design)"
        )


@dataclass(frozen=True)
class CalibratedUrdf:
    """The URDF text with the calibrated mounts, and what happened to each camera of the robot."""

    text: str
    mounts: tuple[CameraMount, ...]

    def mount(self, camera: str) -> CameraMount:
        for m in self.mounts:
            if m.camera == camera:
                return m
        raise UnknownNameError("camera", camera, [m.camera for m in self.mounts])

    def describe(self) -> str:
        return "\n".join(m.describe() for m in self.mounts)


def load_calibrations(robot: RobotConfig, files: Mapping[str, str | Path] | None = None) -> dict[str, MountedCamera]:
    """Every camera of ``robot`` that has a calibration file: ``files[camera]`` when given, else
    config/cameras/<robot>/<camera>.yaml (what camera_node loads by default). A camera whose default file does not
    exist is left out (it keeps its designed mount); a file that exists but is invalid or describes another mount
    raises ConfigError, as camera_node would refuse it; a camera the robot does not have, UnknownNameError."""
    files = files or {}
    for name in files:
        if name not in robot.camera_names:
            raise UnknownNameError("camera", name, robot.camera_names)
    cameras = {}
    for name in robot.camera_names:
        path = files.get(name) or default_calibration_path(robot.name, name)
        if name in files or Path(path).is_file():
            cameras[name] = load_mounted_camera(robot, name, path)
    return cameras


def _parent_joints(urdf: UrdfModel) -> dict[str, Joint]:
    return {j.child: j for j in urdf.joints.values()}


def _ancestors(urdf: UrdfModel, link: str) -> list[str]:
    """``link`` and every link above it, up to the root."""
    parents = _parent_joints(urdf)
    chain = [link]
    while chain[-1] in parents:
        chain.append(parents[chain[-1]].parent)
    return chain


def _check_rigid(urdf: UrdfModel, a: str, b: str, why: str) -> None:
    """ConfigError unless only fixed joints lie between links ``a`` and ``b`` (so one transform joins them)."""
    up_a, up_b = _ancestors(urdf, a), _ancestors(urdf, b)
    common = next(link for link in up_a if link in up_b)
    parents = _parent_joints(urdf)
    moving = [parents[link].name for link in up_a[: up_a.index(common)] + up_b[: up_b.index(common)]]
    moving = [name for name in moving if urdf.joints[name].movable]
    if moving:
        raise ConfigError(f"{why}: {a} and {b} are joined by the movable joints {', '.join(moving)}")


def _subtree(urdf: UrdfModel, link: str) -> list[str]:
    links, stack = [], [link]
    while stack:
        links.append(stack.pop())
        stack += [j.child for j in urdf.children_of(links[-1])]
    return links


def mount_joint(urdf: UrdfModel, robot: RobotConfig, optical_frame: str) -> Joint:
    """The fixed joint that places a camera: the one above the optical frame's parent link (the camera body) when
    nothing but the camera hangs below that link; else the optical frame's own joint. ConfigError when the frame is
    missing or the joint is not fixed."""
    parents = _parent_joints(urdf)
    if optical_frame not in parents:
        raise ConfigError(f"{urdf.name}: no joint leads to the camera frame {optical_frame!r}")
    optical_joint = parents[optical_frame]
    body = optical_joint.parent
    tcps = {arm.tcp_link for arm in robot.arms}
    below = _subtree(urdf, body)
    camera_only = all(not j.movable for link in below for j in urdf.children_of(link)) and not tcps.intersection(below)
    joint = parents[body] if body in parents and camera_only else optical_joint
    if joint.movable:
        raise ConfigError(f"{urdf.name}: camera frame {optical_frame!r} hangs on the {joint.type} joint {joint.name!r}")
    return joint


def _pose(poses: Mapping[str, Matrix], link: str) -> Matrix:
    return np.asarray(poses[link], dtype=float)


def calibrated_origin(urdf: UrdfModel, robot: RobotConfig, camera: MountedCamera) -> tuple[Joint, Origin]:
    """The camera's mount joint and the origin that puts its optical frame where ``camera``'s file says."""
    joint = mount_joint(urdf, robot, camera.frame)
    poses = urdf.forward_kinematics({})  # any configuration: only fixed transforms are read below
    T_child_optical = np.linalg.inv(_pose(poses, joint.child)) @ _pose(poses, camera.frame)
    if camera.arm is None:
        if urdf.root != WORLD_FRAME:
            raise ConfigError(
                f"{urdf.name}: T_world_cam needs the root link {WORLD_FRAME!r}, the URDF's is {urdf.root!r}"
            )
        why = f"camera {camera.name!r} (fixed, {camera.path})"
        _check_rigid(urdf, joint.parent, urdf.root, why)
        T_parent_optical = np.linalg.inv(_pose(poses, joint.parent)) @ camera.T_world_cam()
    else:
        tcp = robot.arm(camera.arm).tcp_link
        why = f"camera {camera.name!r} (on arm {camera.arm!r}, {camera.path})"
        _check_rigid(urdf, joint.parent, tcp, why)
        T_parent_tcp = np.linalg.inv(_pose(poses, joint.parent)) @ _pose(poses, tcp)
        assert camera.file.T_tcp_cam is not None  # a wrist camera's file has it
        T_parent_optical = T_parent_tcp @ camera.file.T_tcp_cam
    T = T_parent_optical @ np.linalg.inv(T_child_optical)
    xyz = tuple(float(v) for v in T[:3, 3])
    return joint, Origin(xyz=xyz, rpy=rpy_from_rotation(T[:3, :3]))  # type: ignore[arg-type]


def _fmt(values: tuple[float, ...]) -> str:
    return " ".join(repr(float(v)) for v in values)  # shortest text that round-trips exactly


def calibrated_urdf(
    urdf_text: str, robot: RobotConfig, cameras: Mapping[str, MountedCamera], source: str = "<robot_description>"
) -> CalibratedUrdf:
    """``urdf_text`` with the mount joint of every camera in ``cameras`` (name -> its calibration, e.g. from
    :func:`load_calibrations`) moved to the calibrated pose; the robot's other cameras keep their designed mounts.

    The text is re-serialised (comments kept, a comment added before each moved joint naming its file and the
    designed origin); everything else keeps its meaning. Raises ConfigError for a camera the robot does not have or
    whose frame the URDF lacks.
    """
    unknown = sorted(set(cameras) - set(robot.camera_names))
    if unknown:
        raise ConfigError(
            f"robot {robot.name!r} has no camera {unknown[0]!r}; cameras: {', '.join(robot.camera_names)}"
        )
    urdf = parse_urdf(urdf_text, source)
    root = ET.fromstring(urdf_text, parser=ET.XMLParser(target=ET.TreeBuilder(insert_comments=True)))
    elements = {e.get("name"): e for e in root.findall("joint")}
    mounts = []
    for config in robot.cameras:
        camera = cameras.get(config.name)
        if camera is None:
            joint = mount_joint(urdf, robot, config.frame)
            mounts.append(CameraMount(config.name, joint.name, joint.parent, joint.origin, joint.origin, None))
            continue
        joint, origin = calibrated_origin(urdf, robot, camera)
        element = elements[joint.name]
        origin_elem = element.find("origin")
        if origin_elem is None:
            origin_elem = ET.SubElement(element, "origin")
        origin_elem.set("xyz", _fmt(origin.xyz))
        origin_elem.set("rpy", _fmt(origin.rpy))
        kind = "T_tcp_cam on the TCP" if camera.arm else "T_world_cam"
        note = ET.Comment(
            f" calibrated camera {config.name}: origin from {camera.path} ({kind}); designed origin "
            f"xyz={_fmt(joint.origin.xyz)} rpy={_fmt(joint.origin.rpy)} "
        )
        note.tail = element.tail
        root.insert(list(root).index(element), note)
        mounts.append(CameraMount(config.name, joint.name, joint.parent, joint.origin, origin, camera.path))
    text = '<?xml version="1.0"?>\n' + ET.tostring(root, encoding="unicode") + "\n"
    return CalibratedUrdf(text=text, mounts=tuple(mounts))


def calibrated_scene_urdf(robot: RobotConfig, urdf_text: str | None = None) -> CalibratedUrdf:
    """The robot's scene URDF (``urdf_text``, or the file ``robot.scene_urdf``) with the calibration files of
    config/cameras/<robot>/ applied: the ``robot_description`` whose TF agrees with camera_node's poses."""
    text = robot.scene_urdf.read_text() if urdf_text is None else urdf_text
    return calibrated_urdf(text, robot, load_calibrations(robot), source=str(robot.scene_urdf))


def camera_frame_poses(urdf_text: str, robot: RobotConfig, joint_positions: Mapping[str, float]) -> dict[str, Matrix]:
    """T_world_<optical frame> of every camera of ``robot`` by forward kinematics of ``urdf_text`` at
    ``joint_positions`` (what robot_state_publisher's TF gives for that joint state), by camera name."""
    poses = parse_urdf(urdf_text).forward_kinematics(joint_positions)
    return {c.name: poses[c.frame] for c in robot.cameras}
