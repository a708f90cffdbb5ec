"""Hardware settings of real arms (config/hardware/<robot>.yaml), loaded and validated once.

The joint position and velocity limits are not here: they are the robot's own (config/robots/<robot>.yaml and its
URDF), so the simulator, the planner and the hardware layer refuse the same things. These files hold what only a
real arm needs: where it is, how fast the SDK may drive it, the acceleration limits, the workspace and the watchdog.
Every arm family shares :class:`ArmHardwareSettings` (what the trajectory guard and the arm driver use); the FR3
(fr3.yaml) and the ARX X5 (dual_arx_x5.yaml) add their SDKs' own settings.
"""

from __future__ import annotations

from dataclasses import astuple, dataclass, replace
from functools import cache
from pathlib import Path

from robodojo.addresses import is_loopback
from robodojo.config import CONFIG_DIR, Section, load_yaml
from robodojo.errors import ConfigError
from robodojo.robots.config import RobotConfig, load_robot_config

HARDWARE_DIR = CONFIG_DIR / "hardware"
REALTIME_CONFIGS = ("ignore", "enforce")
AXES = ("x", "y", "z")


@dataclass(frozen=True)
class WorkspaceBox:
    """An axis-aligned box in the world frame [m]: ``low_m[i] <= p[i] <= high_m[i]`` for x, y, z."""

    low_m: tuple[float, float, float]
    high_m: tuple[float, float, float]


@dataclass(frozen=True)
class GuardSettings:
    """What the trajectory guard checks besides the robot's joint position and velocity limits."""

    joint_accel_rad_s2: tuple[float, ...]  #: per joint, in the robot config's joint order
    velocity_margin: float  #: fraction (0, 1] of the URDF velocity limits a control tick may use
    max_start_jump_rad: float  #: largest gap between the measured joints and a trajectory's first point
    box: WorkspaceBox  #: the TCP stays inside, world frame
    table_margin_m: float  #: the TCP stays this far above the table top


@dataclass(frozen=True)
class GripperSettings:
    speed_m_s: float
    force_n: float
    epsilon_m: float  #: grasp width tolerance, inner and outer


@dataclass(frozen=True)
class ArmHardwareSettings:
    """What every real arm's driver needs; ``robot`` is the robot config the arm belongs to."""

    robot: RobotConfig
    arm: str
    guard: GuardSettings
    watchdog_timeout_s: float
    state_rate_hz: float

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.robot.arm(self.arm).joints


@dataclass(frozen=True)
class JointDynamicsLimits:
    """Per-joint limits of the commanded motion, in the robot config's joint order."""

    velocity_rad_s: tuple[float, ...]
    accel_rad_s2: tuple[float, ...]
    jerk_rad_s3: tuple[float, ...]


@dataclass(frozen=True)
class Fr3Settings(ArmHardwareSettings):
    """One FR3 over libfranka (config/hardware/fr3.yaml)."""

    robot_ip: str
    realtime_config: str  #: "ignore" (simulators, non-RT hosts) or "enforce" (a real arm on PREEMPT_RT)
    relative_dynamics_factor: float  #: (0, 1], scales the SDK's velocity, acceleration and jerk limits
    #: SCHED_FIFO priority (1-99) of the SDK's 1 kHz control thread, where the OS allows it; 0: the normal scheduler
    control_thread_priority: int
    gripper: GripperSettings
    #: Franka's documented FCI limits of the FR3 (a command beyond them aborts the motion with a reflex)
    fci_limits: JointDynamicsLimits
    #: ``real_arm``'s (realtime_config, relative_dynamics_factor), used instead of the two above for a robot at a
    #: non-loopback address (a real FR3); None: the file states none, and a real arm is refused
    real_arm: tuple[str, float] | None = None

    def for_address(self, ip: str) -> Fr3Settings:
        """These settings for the FR3 at ``ip``: as they are for a loopback address (franky-sim), with ``real_arm``'s
        real-time mode and dynamics factor otherwise; ConfigError in one line when the file has no ``real_arm``."""
        if is_loopback(ip):
            return self
        if self.real_arm is None:
            raise ConfigError(
                f"{ip} is not a loopback address (a real FR3) but this hardware config has no real_arm section: a "
                "real arm's realtime_config and relative_dynamics_factor must be stated (config/hardware/fr3.yaml)"
            )
        realtime, factor = self.real_arm
        return replace(self, realtime_config=realtime, relative_dynamics_factor=factor)


def parse_guard(root: Section, n_joints: int) -> GuardSettings:
    """The ``limits`` and ``workspace`` sections every arm family's file has."""
    limits = root.section("limits")
    accel = limits.vector("joint_accel_rad_s2", n_joints)
    if min(accel) <= 0:
        raise ConfigError(f"{limits.where}.joint_accel_rad_s2: every limit must be > 0, got {list(accel)}")
    margin = limits.number("velocity_margin", positive=True)
    if margin > 1.0:
        raise ConfigError(f"{limits.where}.velocity_margin: must be in (0, 1], got {margin}")
    ws = root.section("workspace")
    box = ws.section("box_m")
    low, high = [], []
    for axis in AXES:
        lo, hi = box.vector(axis, 2)
        if not lo < hi:
            raise ConfigError(f"{box.where}.{axis}: lower bound {lo} must be below upper bound {hi}")
        low.append(lo)
        high.append(hi)
    return GuardSettings(
        joint_accel_rad_s2=accel,
        velocity_margin=margin,
        max_start_jump_rad=limits.number("max_start_jump_rad", positive=True),
        box=WorkspaceBox(low_m=(low[0], low[1], low[2]), high_m=(high[0], high[1], high[2])),
        table_margin_m=ws.number("table_margin_m"),
    )


def parse_thread_priority(root: Section, key: str) -> int:
    """A SCHED_FIFO priority (1-99), or 0 for the normal scheduler."""
    priority = root.integer(key)
    if not 0 <= priority <= 99:
        raise ConfigError(f"{root.where}.{key}: must be 0 (normal) or a SCHED_FIFO priority 1-99, got {priority}")
    return priority


def parse_fr3_settings(data: dict, where: str) -> Fr3Settings:
    """An FR3 hardware config mapping; ConfigError naming ``where``, the key and the bad value otherwise."""
    root = Section(data, where)
    robot = load_robot_config(root.str("robot"))
    arm = robot.arm(root.str("arm"))
    realtime, factor = _fr3_dynamics(root)
    real = root.optional_section("real_arm")
    real_arm = _fr3_dynamics(real) if real is not None else None

    n_joints = len(arm.joints)
    fci = root.section("fci_limits")
    fci_limits = JointDynamicsLimits(
        velocity_rad_s=fci.vector("joint_velocity_rad_s", n_joints),
        accel_rad_s2=fci.vector("joint_accel_rad_s2", n_joints),
        jerk_rad_s3=fci.vector("joint_jerk_rad_s3", n_joints),
    )
    for key, values in zip(
        ("joint_velocity_rad_s", "joint_accel_rad_s2", "joint_jerk_rad_s3"), astuple(fci_limits), strict=True
    ):
        if min(values) <= 0:
            raise ConfigError(f"{fci.where}.{key}: every limit must be > 0, got {list(values)}")
    guard = parse_guard(root, n_joints)
    if any(g > f for g, f in zip(guard.joint_accel_rad_s2, fci_limits.accel_rad_s2, strict=True)):
        raise ConfigError(
            f"{where}.limits.joint_accel_rad_s2: {list(guard.joint_accel_rad_s2)} exceeds the FR3's FCI limits "
            f"{list(fci_limits.accel_rad_s2)} (fci_limits.joint_accel_rad_s2)"
        )
    g = root.section("gripper")
    return Fr3Settings(
        robot=robot,
        arm=arm.name,
        guard=guard,
        watchdog_timeout_s=root.section("watchdog").number("timeout_s", positive=True),
        state_rate_hz=root.section("state").number("rate_hz", positive=True),
        robot_ip=root.str("robot_ip"),
        realtime_config=realtime,
        relative_dynamics_factor=factor,
        control_thread_priority=parse_thread_priority(root, "control_thread_priority"),
        gripper=GripperSettings(
            speed_m_s=g.number("speed_m_s", positive=True),
            force_n=g.number("force_n", positive=True),
            epsilon_m=g.number("epsilon_m", positive=True),
        ),
        fci_limits=fci_limits,
        real_arm=real_arm,
    )


def _fr3_dynamics(section: Section) -> tuple[str, float]:
    """``realtime_config`` and ``relative_dynamics_factor`` of ``section`` (the file's top level or ``real_arm``)."""
    realtime = section.str("realtime_config")
    if realtime not in REALTIME_CONFIGS:
        raise ConfigError(f"{section.where}.realtime_config: {realtime!r} is not one of {', '.join(REALTIME_CONFIGS)}")
    factor = section.number("relative_dynamics_factor", positive=True)
    if factor > 1.0:
        raise ConfigError(f"{section.where}.relative_dynamics_factor: must be in (0, 1], got {factor}")
    return realtime, factor


@cache
def load_fr3_settings(path: str | Path | None = None) -> Fr3Settings:
    """config/hardware/fr3.yaml (or ``path``), read once."""
    path = Path(path) if path is not None else HARDWARE_DIR / "fr3.yaml"
    return parse_fr3_settings(load_yaml(path), str(path))


TRAJECTORY_MODES = ("stream", "sdk_trajectory")
#: Interface prefixes the SDK opens as EtherCAT instead of CAN (shared/HARDWARE.md): never an X5's bus.
ETHERCAT_PREFIXES = ("en", "eth")


@dataclass(frozen=True)
class Arx5Gains:
    kp: tuple[float, ...]
    kd: tuple[float, ...]
    gripper_kp: float
    gripper_kd: float


@dataclass(frozen=True)
class Arx5GripperSettings:
    tolerance_m: float  #: a move has arrived this close to its target
    timeout_s: float  #: a move gives up after this long
    stalled_s: float  #: a move that has not moved for this long has stopped on an object
    grasp_torque_nm: float  #: a closed gripper pushing this hard holds something


@dataclass(frozen=True)
class Arx5ArmSettings(ArmHardwareSettings):
    """One ARX X5 arm of config/hardware/dual_arx_x5.yaml."""

    interface: str  #: its SocketCAN interface
    sdk_profile: str  #: arx5-interface's robot profile ("X5")
    trajectory_mode: str  #: one of :data:`TRAJECTORY_MODES`
    stream_rate_hz: float
    gains: Arx5Gains
    following_error_rad: float
    settle_tolerance_rad: float
    settle_timeout_s: float
    silent_after_s: float
    #: the SDK's host stops a playing trajectory itself after this long without a request from the driver (a frozen
    #: driver process); longer than watchdog_timeout_s, so a driver that is alive stops it first
    host_deadman_s: float
    bus_thread_priority: int  #: SCHED_FIFO priority of the SDK's CAN threads (0: the normal scheduler)
    gripper: Arx5GripperSettings
    home_before_damping: bool


@dataclass(frozen=True)
class Arx5Settings:
    """Every arm of an ARX X5 robot, in the robot config's arm order."""

    robot: RobotConfig
    arms: tuple[Arx5ArmSettings, ...]
    state_rate_hz: float

    def arm(self, name: str) -> Arx5ArmSettings:
        for arm in self.arms:
            if arm.arm == name:
                return arm
        raise ConfigError(f"no arm {name!r} in the hardware config; arms: {', '.join(a.arm for a in self.arms)}")


def parse_arx5_settings(data: dict, where: str) -> Arx5Settings:
    """An ARX X5 hardware config mapping; ConfigError naming ``where``, the key and the bad value otherwise."""
    root = Section(data, where)
    robot = load_robot_config(root.str("robot"))
    mode = root.str("trajectory_mode")
    if mode not in TRAJECTORY_MODES:
        raise ConfigError(f"{where}.trajectory_mode: {mode!r} is not one of {', '.join(TRAJECTORY_MODES)}")
    limits = root.section("limits")
    g = root.section("gains")
    arms_section = root.section("arms")
    unknown = sorted(set(arms_section.data) - set(robot.arm_names))
    if unknown:
        arms_list = ", ".join(robot.arm_names)
        raise ConfigError(f"{arms_section.where}: {unknown} are not arms of {robot.name} ({arms_list})")
    gripper = root.section("gripper")
    watchdog = root.section("watchdog")
    watchdog_timeout_s = watchdog.number("timeout_s", positive=True)
    host_deadman_s = watchdog.number("host_deadman_s", positive=True)
    if host_deadman_s <= watchdog_timeout_s:
        raise ConfigError(
            f"{watchdog.where}.host_deadman_s: {host_deadman_s:g} s must be longer than timeout_s "
            f"({watchdog_timeout_s:g} s): the driver's own watchdog stops the arm first while the driver runs"
        )
    bus_thread_priority = parse_thread_priority(root, "bus_thread_priority")
    interfaces: dict[str, str] = {}
    arms = []
    for arm_name in robot.arm_names:
        arm = robot.arm(arm_name)
        n = len(arm.joints)
        interface = arms_section.section(arm_name).str("interface")
        if interface.startswith(ETHERCAT_PREFIXES) or not interface.startswith("can"):
            raise ConfigError(
                f"{arms_section.where}.{arm_name}.interface: {interface!r}; the SDK drives only interfaces named can* "
                "over CAN (en*/eth* it drives as EtherCAT, which would send EtherCAT frames to a network port)"
            )
        if interface in interfaces:
            raise ConfigError(f"{arms_section.where}: arms {interfaces[interface]} and {arm_name} share {interface}")
        interfaces[interface] = arm_name
        gains = Arx5Gains(
            kp=g.vector("kp", n), kd=g.vector("kd", n),
            gripper_kp=g.number("gripper_kp"), gripper_kd=g.number("gripper_kd"),
        )  # fmt: skip
        if min(gains.kp + gains.kd + (gains.gripper_kp, gains.gripper_kd)) < 0:
            raise ConfigError(f"{g.where}: gains must be >= 0")
        if min(gains.kp) <= 0:
            raise ConfigError(f"{g.where}.kp: every joint needs kp > 0 to hold its position, got {list(gains.kp)}")
        arms.append(
            Arx5ArmSettings(
                robot=robot,
                arm=arm_name,
                guard=parse_guard(root, n),
                watchdog_timeout_s=watchdog_timeout_s,
                state_rate_hz=root.section("state").number("rate_hz", positive=True),
                interface=interface,
                sdk_profile=root.str("sdk_profile"),
                trajectory_mode=mode,
                stream_rate_hz=root.number("stream_rate_hz", positive=True),
                gains=gains,
                following_error_rad=limits.number("following_error_rad", positive=True),
                settle_tolerance_rad=limits.number("settle_tolerance_rad", positive=True),
                settle_timeout_s=limits.number("settle_timeout_s", positive=True),
                silent_after_s=root.section("bus").number("silent_after_s", positive=True),
                host_deadman_s=host_deadman_s,
                bus_thread_priority=bus_thread_priority,
                gripper=Arx5GripperSettings(
                    tolerance_m=gripper.number("tolerance_m", positive=True),
                    timeout_s=gripper.number("timeout_s", positive=True),
                    stalled_s=gripper.number("stalled_s", positive=True),
                    grasp_torque_nm=gripper.number("grasp_torque_nm", positive=True),
                ),
                home_before_damping=root.section("shutdown").boolean("home_before_damping"),
            )
        )
    return Arx5Settings(robot=robot, arms=tuple(arms), state_rate_hz=arms[0].state_rate_hz)


@cache
def load_arx5_settings(path: str | Path | None = None) -> Arx5Settings:
    """config/hardware/dual_arx_x5.yaml (or ``path``), read once."""
    path = Path(path) if path is not None else HARDWARE_DIR / "dual_arx_x5.yaml"
    return parse_arx5_settings(load_yaml(path), str(path))


ISAAC_DIR = CONFIG_DIR / "isaac"


@dataclass(frozen=True)
class IsaacGripperSettings:
    """How the bridge moves Isaac Sim's fingers (its articulation has position drives, no gripper SDK)."""

    speed_m_s: float  #: the opening between the fingers changes at most this fast [m/s]
    tolerance_m: float  #: a move has arrived this close to its target opening [m]
    stalled_s: float  #: a move whose fingers moved less than tolerance_m for this long stopped on an object [s]
    timeout_s: float  #: a move gives up after this long [s of simulation time]


@dataclass(frozen=True)
class IsaacSettings:
    """Isaac Sim's articulation behind isaac_bridge_node (config/isaac/<robot>.yaml): every arm of the robot."""

    robot: RobotConfig
    arms: tuple[ArmHardwareSettings, ...]
    #: no joint state from Isaac Sim for this long [s, wall clock]: contact lost (paused, frozen or gone)
    contact_timeout_s: float
    gripper: IsaacGripperSettings

    def arm(self, name: str) -> ArmHardwareSettings:
        for arm in self.arms:
            if arm.arm == name:
                return arm
        raise ConfigError(f"no arm {name!r} in the Isaac config; arms: {', '.join(a.arm for a in self.arms)}")


def parse_isaac_settings(data: dict, where: str) -> IsaacSettings:
    """An Isaac Sim bridge config mapping; ConfigError naming ``where``, the key and the bad value otherwise."""
    root = Section(data, where)
    robot = load_robot_config(root.str("robot"))
    watchdog = root.section("watchdog")
    watchdog_timeout_s = watchdog.number("timeout_s", positive=True)
    contact = root.section("contact")
    contact_timeout_s = contact.number("timeout_s", positive=True)
    if watchdog_timeout_s <= contact_timeout_s:
        raise ConfigError(
            f"{watchdog.where}.timeout_s: {watchdog_timeout_s:g} s must be longer than contact.timeout_s "
            f"({contact_timeout_s:g} s): a simulator that stops publishing is lost contact, not a stalled commander"
        )
    gripper = root.section("gripper")
    arms = tuple(
        ArmHardwareSettings(
            robot=robot,
            arm=arm.name,
            guard=parse_guard(root, len(arm.joints)),
            watchdog_timeout_s=watchdog_timeout_s,
            state_rate_hz=contact.number("check_rate_hz", positive=True),
        )
        for arm in robot.arms
    )
    return IsaacSettings(
        robot=robot,
        arms=arms,
        contact_timeout_s=contact_timeout_s,
        gripper=IsaacGripperSettings(
            speed_m_s=gripper.number("speed_m_s", positive=True),
            tolerance_m=gripper.number("tolerance_m", positive=True),
            stalled_s=gripper.number("stalled_s", positive=True),
            timeout_s=gripper.number("timeout_s", positive=True),
        ),
    )


@cache
def load_isaac_settings(robot: str, path: str | Path | None = None) -> IsaacSettings:
    """config/isaac/<robot>.yaml (or ``path``), read once; ConfigError when it drives another robot."""
    path = Path(path) if path is not None else ISAAC_DIR / f"{robot}.yaml"
    if not path.is_file():
        known = ", ".join(sorted(p.stem for p in ISAAC_DIR.glob("*.yaml")))
        raise ConfigError(f"{path}: no Isaac Sim bridge config for robot {robot!r} (configs exist for: {known})")
    settings = parse_isaac_settings(load_yaml(path), str(path))
    if settings.robot.name != robot:
        raise ConfigError(f"{path} drives robot {settings.robot.name!r}, not {robot!r}")
    return settings
