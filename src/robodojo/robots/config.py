"""Robot configurations (config/robots/<name>.yaml): arms, their base poses, cameras, table, simulator gains."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

import numpy as np

from robodojo.config import CONFIG_DIR, Section, load_yaml, resolve_path
from robodojo.errors import ConfigError, UnknownNameError
from robodojo.geometry import Matrix, rotation_from_rpy, transform

ROBOTS_DIR = CONFIG_DIR / "robots"


@dataclass(frozen=True)
class ArmConfig:
    """One arm: names are full (prefixed) names in the scene URDF."""

    name: str  # "left", "right", or "arm" for single-arm robots
    prefix: str
    base_xyz_m: tuple[float, float, float]
    base_rpy_deg: tuple[float, float, float]
    joints: tuple[str, ...]
    gripper_joint: str
    gripper_max_m: float
    tcp_link: str
    wrist_camera_frame: str
    home_joints_rad: tuple[float, ...]

    @property
    def base_link_pose(self) -> Matrix:
        """T_world_base of this arm."""
        return transform(rotation_from_rpy(np.radians(self.base_rpy_deg)), self.base_xyz_m)


@dataclass(frozen=True)
class CameraConfig:
    name: str
    frame: str  # optical frame (REP 103: z forward, x right, y down) in the scene URDF
    fovy_deg: float
    width: int
    height: int


@dataclass(frozen=True)
class HeadMount:
    xyz_m: tuple[float, float, float]
    pitch_down_deg: float  # below horizontal
    yaw_deg: float = 90.0  # heading of the optical axis about world z; 90 looks along +y (away from the robot)


@dataclass(frozen=True)
class TableConfig:
    top_z_m: float
    center_xy_m: tuple[float, float]
    size_xy_m: tuple[float, float]


GRIPPER_KV_PER_KP = 0.05  # [s]


@dataclass(frozen=True)
class SimGains:
    joint_kp: tuple[float, ...]
    joint_kv: tuple[float, ...]
    joint_armature: tuple[float, ...]
    joint_damping: tuple[float, ...]
    gripper_kp: float
    gripper_force_n: float

    @property
    def gripper_kv(self) -> float:
        """The gripper servo's damping [N s/m], a fixed fraction of its stiffness."""
        return GRIPPER_KV_PER_KP * self.gripper_kp


@dataclass(frozen=True)
class MotionLimits:
    """Limits and conventions of planned motions for one robot (config/robots/<name>.yaml, section motion)."""

    bounds_m: dict[str, dict[str, tuple[float, float]]]  # arm -> {"x"|"y"|"z": (low, high)}
    zero_orientation_finger_axis: tuple[float, float, float]
    velocity_scale: float
    joint_accel_rad_s2: tuple[float, ...]
    tcp_speed_m_s: float
    tcp_accel_m_s2: float
    tcp_angular_speed_deg_s: float
    gripper_stroke_s: float


@dataclass(frozen=True)
class RobotConfig:
    name: str
    description: str
    scene_urdf: Path
    arm_urdf: Path
    arms: tuple[ArmConfig, ...]
    table: TableConfig
    cameras: tuple[CameraConfig, ...]
    head_mount: HeadMount | None
    sim: SimGains
    motion: MotionLimits
    control_hz: float  # trajectory point rate of the arm controllers: one executed point per env step
    default_task: str  # the task run when none is named (the launch file's task:=)

    @property
    def control_dt_s(self) -> float:
        """Control period [s]: the one source of the 25 Hz step for the simulator, the planners and the nodes."""
        return 1.0 / self.control_hz

    def arm(self, name: str) -> ArmConfig:
        for arm in self.arms:
            if arm.name == name:
                return arm
        raise UnknownNameError("arm", name, self.arm_names)

    def camera(self, name: str) -> CameraConfig:
        for cam in self.cameras:
            if cam.name == name:
                return cam
        raise UnknownNameError("camera", name, self.camera_names)

    def camera_arm(self, name: str) -> str | None:
        """The arm carrying camera ``name`` (its wrist camera), or None for a fixed camera."""
        frame = self.camera(name).frame
        return next((a.name for a in self.arms if a.wrist_camera_frame == frame), None)

    @property
    def arm_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.arms)

    @property
    def camera_names(self) -> tuple[str, ...]:
        return tuple(c.name for c in self.cameras)


def available_robots() -> list[str]:
    return sorted(p.stem for p in ROBOTS_DIR.glob("*.yaml"))


@cache
def load_robot_config(name: str) -> RobotConfig:
    """Load config/robots/<name>.yaml; an unknown name lists the available robots."""
    path = ROBOTS_DIR / f"{name}.yaml"
    if not isinstance(name, str) or not path.is_file():
        raise UnknownNameError("robot", name, available_robots())
    return parse_robot_config(load_yaml(path), str(path))


def parse_robot_config(data: dict, where: str) -> RobotConfig:
    root = Section(data, where)
    arm_model = root.section("arm")
    joints = arm_model.strings("joints")
    home = arm_model.vector("home_joints_rad", len(joints))
    arms = []
    arms_section = root.section("arms")
    for arm_name in arms_section.names():
        a = arms_section.section(arm_name)
        prefix = a.data.get("prefix", "")
        if not isinstance(prefix, str):
            raise ConfigError(f"{a.where}.prefix: expected a string")
        arms.append(
            ArmConfig(
                name=arm_name,
                prefix=prefix,
                base_xyz_m=a.vector3("base_xyz_m"),
                base_rpy_deg=a.vector3("base_rpy_deg", default=[0, 0, 0]),
                joints=tuple(prefix + j for j in joints),
                gripper_joint=prefix + arm_model.str("gripper_joint"),
                gripper_max_m=arm_model.number("gripper_max_m", positive=True),
                tcp_link=prefix + arm_model.str("tcp_link"),
                wrist_camera_frame=prefix + arm_model.str("wrist_camera_frame"),
                home_joints_rad=home,
            )
        )
    if not arms:
        raise ConfigError(f"{where}.arms: at least one arm is required")

    t = root.section("table")
    table = TableConfig(
        top_z_m=t.number("top_z_m", positive=True),
        center_xy_m=t.vector2("center_xy_m"),
        size_xy_m=t.vector2("size_xy_m"),
    )

    cams = root.section("cameras")
    cameras = []
    head_mount = None
    for cam_name in cams.names():
        c = cams.section(cam_name)
        mount = c.optional_section("mount")
        if mount is not None:
            head_mount = HeadMount(
                xyz_m=mount.vector3("xyz_m"),
                pitch_down_deg=mount.number("pitch_down_deg"),
                yaw_deg=mount.number("yaw_deg", default=90.0),
            )
            frame = f"{cam_name}_camera_optical_frame"
        else:
            frame = c.str("frame")
        cameras.append(
            CameraConfig(
                name=cam_name,
                frame=frame,
                fovy_deg=c.number("fovy_deg", positive=True),
                width=c.integer("width", default=640, positive=True),
                height=c.integer("height", default=480, positive=True),
            )
        )

    s = root.section("sim")
    n = len(joints)
    sim = SimGains(
        joint_kp=s.vector("joint_kp", n),
        joint_kv=s.vector("joint_kv", n),
        joint_armature=s.vector("joint_armature", n),
        joint_damping=s.vector("joint_damping", n),
        gripper_kp=s.number("gripper_kp", positive=True),
        gripper_force_n=s.number("gripper_force_n", positive=True),
    )
    motion = _parse_motion(root.section("motion"), [a.name for a in arms], n)
    return RobotConfig(
        name=root.str("name"),
        description=str(data.get("description", "")),
        scene_urdf=resolve_path(root.str("scene_urdf")),
        arm_urdf=resolve_path(root.str("arm_urdf")),
        arms=tuple(arms),
        table=table,
        cameras=tuple(cameras),
        head_mount=head_mount,
        sim=sim,
        motion=motion,
        control_hz=root.number("control_hz", positive=True),
        default_task=root.str("default_task"),
    )


def _parse_motion(m: Section, arm_names: list[str], n_joints: int) -> MotionLimits:
    bounds_section = m.section("bounds")
    bounds: dict[str, dict[str, tuple[float, float]]] = {}
    for arm in arm_names:
        a = bounds_section.section(arm)
        bounds[arm] = {}
        for axis in ("x", "y", "z"):
            low, high = a.vector(axis, 2)
            if not low < high:
                raise ConfigError(f"{a.where}.{axis}: lower bound {low} must be below upper bound {high}")
            bounds[arm][axis] = (low, high)
    fx, fy, fz = m.vector3("zero_orientation_finger_axis")
    finger_axis = np.array([fx, fy, fz])
    if abs(np.linalg.norm(finger_axis) - 1.0) > 1e-6 or abs(finger_axis[2]) > 1e-6:
        raise ConfigError(
            f"{m.where}.zero_orientation_finger_axis: must be a horizontal unit vector, got {finger_axis.tolist()}"
        )
    scale = m.number("velocity_scale", positive=True)
    if scale > 1.0:
        raise ConfigError(f"{m.where}.velocity_scale: must be in (0, 1], got {scale}")
    accel = m.vector("joint_accel_rad_s2", n_joints)
    if min(accel) <= 0:
        raise ConfigError(f"{m.where}.joint_accel_rad_s2: every limit must be > 0, got {list(accel)}")
    return MotionLimits(
        bounds_m=bounds,
        zero_orientation_finger_axis=(fx, fy, fz),
        velocity_scale=scale,
        joint_accel_rad_s2=accel,
        tcp_speed_m_s=m.number("tcp_speed_m_s", positive=True),
        tcp_accel_m_s2=m.number("tcp_accel_m_s2", positive=True),
        tcp_angular_speed_deg_s=m.number("tcp_angular_speed_deg_s", positive=True),
        gripper_stroke_s=m.number("gripper_stroke_s", positive=True),
    )
