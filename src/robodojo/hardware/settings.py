"""Hardware settings of one real arm (config/hardware/<arm family>.yaml), loaded and validated once.

The joint position and velocity limits are not here: they are the robot's own (config/robots/<robot>.yaml and its
URDF), so the simulator, the planner and the hardware layer refuse the same things. This file holds what only a
real arm needs: where it is, how fast the SDK may drive it, the acceleration limits, the workspace and the watchdog.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path

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
class HardwareSettings:
    """One arm's hardware configuration; ``robot`` is the robot config it belongs to."""

    robot: RobotConfig
    arm: str
    robot_ip: str
    realtime_config: str  #: "ignore" (simulators, non-RT hosts) or "enforce" (a real arm on PREEMPT_RT)
    relative_dynamics_factor: float  #: (0, 1], scales the SDK's velocity, acceleration and jerk limits
    #: SCHED_FIFO priority (1-99) of the SDK's 1 kHz control thread, where the OS allows it; 0: the normal scheduler
    control_thread_priority: int
    guard: GuardSettings
    watchdog_timeout_s: float
    gripper: GripperSettings
    state_rate_hz: float

    @property
    def joint_names(self) -> tuple[str, ...]:
        return self.robot.arm(self.arm).joints


def parse_hardware_settings(data: dict, where: str) -> HardwareSettings:
    """A hardware config mapping; ConfigError naming ``where``, the key and the bad value otherwise."""
    root = Section(data, where)
    robot = load_robot_config(root.str("robot"))
    arm = robot.arm(root.str("arm"))
    n_joints = len(arm.joints)
    realtime = root.str("realtime_config")
    if realtime not in REALTIME_CONFIGS:
        raise ConfigError(f"{where}.realtime_config: {realtime!r} is not one of {', '.join(REALTIME_CONFIGS)}")
    factor = root.number("relative_dynamics_factor", positive=True)
    if factor > 1.0:
        raise ConfigError(f"{where}.relative_dynamics_factor: must be in (0, 1], got {factor}")

    priority = root.integer("control_thread_priority")
    if not 0 <= priority <= 99:
        raise ConfigError(
            f"{where}.control_thread_priority: must be 0 (normal) or a SCHED_FIFO priority 1-99, got {priority}"
        )

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
    guard = GuardSettings(
        joint_accel_rad_s2=accel,
        velocity_margin=margin,
        max_start_jump_rad=limits.number("max_start_jump_rad", positive=True),
        box=WorkspaceBox(low_m=(low[0], low[1], low[2]), high_m=(high[0], high[1], high[2])),
        table_margin_m=ws.number("table_margin_m"),
    )
    g = root.section("gripper")
    return HardwareSettings(
        robot=robot,
        arm=arm.name,
        robot_ip=root.str("robot_ip"),
        realtime_config=realtime,
        relative_dynamics_factor=factor,
        control_thread_priority=priority,
        guard=guard,
        watchdog_timeout_s=root.section("watchdog").number("timeout_s", positive=True),
        gripper=GripperSettings(
            speed_m_s=g.number("speed_m_s", positive=True),
            force_n=g.number("force_n", positive=True),
            epsilon_m=g.number("epsilon_m", positive=True),
        ),
        state_rate_hz=root.section("state").number("rate_hz", positive=True),
    )


@cache
def load_hardware_settings(path: str | Path | None = None) -> HardwareSettings:
    """config/hardware/fr3.yaml (or ``path``), read once."""
    path = Path(path) if path is not None else HARDWARE_DIR / "fr3.yaml"
    return parse_hardware_settings(load_yaml(path), str(path))
