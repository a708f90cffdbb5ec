"""The trajectory guard alone (no simulator): every check refuses with its facts, valid trajectories pass."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from robodojo.control.trajectory_player import TrajectoryCommand, tick_samples
from robodojo.errors import ConfigError
from robodojo.hardware.settings import load_fr3_settings, parse_fr3_settings
from robodojo.hardware.trajectory_guard import TrajectoryGuard, TrajectoryRefusedError
from robodojo.robots.urdf import load_urdf

HOME = np.array([0.0, 0.0, 0.0, -1.57, 0.0, 1.57, 0.785])
SETTINGS = load_fr3_settings()
NAMES = SETTINGS.joint_names
DT = SETTINGS.robot.control_dt_s


@pytest.fixture(scope="module")
def guard() -> TrajectoryGuard:
    return TrajectoryGuard(SETTINGS)


def smooth(amplitude_rad, duration_s: float, start=HOME) -> TrajectoryCommand:
    """A cosine move of ``amplitude_rad`` per joint over ``duration_s``, one point per control period."""
    times = np.arange(1, round(duration_s / DT) + 1) * DT
    s = (1 - np.cos(np.pi * times / duration_s)) / 2
    points = np.asarray(start) + np.outer(s, amplitude_rad)
    return TrajectoryCommand(NAMES, tuple(times), tuple(map(tuple, points)))


def refusal(guard, cmd, q=HOME, dq=None):
    with pytest.raises(TrajectoryRefusedError) as info:
        guard.check(cmd, q, dq)
    return info.value.refusal


def test_a_smooth_move_passes(guard):
    checked = guard.check(smooth(np.full(7, 0.1), 1.0), HOME)
    assert checked.positions_rad.shape == (25, 7)
    assert np.allclose(checked.velocities_rad_s[-1], 0.0)
    assert checked.tcp_min_z_m > SETTINGS.robot.table.top_z_m
    with pytest.raises(ValueError, match="read-only"):
        checked.positions_rad[0, 0] = 10.0


def test_position_limit(guard):
    r = refusal(guard, smooth(np.array([3.0, 0, 0, 0, 0, 0, 0]), 20.0))
    assert r.check == "trajectory"
    assert "fr3_joint1" in r.message and "outside [-2.7437, 2.7437]" in r.message and "point " in r.message


def test_velocity_limit(guard):
    r = refusal(guard, smooth(np.full(7, 0.5), 0.2))
    assert r.check == "trajectory" and "velocity limit" in r.message and "fr3_joint1" in r.message


def test_acceleration_limit_names_joint_point_value_and_limit(guard):
    r = refusal(guard, smooth(np.array([0, 0.4, 0, 0, 0, 0, 0]), 0.4))
    assert (r.check, r.joint, r.limit) == ("acceleration", "fr3_joint2", 7.5)
    assert abs(r.value) > 7.5 and r.point_index is not None
    assert "fr3_joint2" in r.message and "7.5 rad/s^2" in r.message


def test_stopping_at_speed_counts_as_acceleration(guard):
    """A trajectory ending at full speed would be stopped in one tick: refused."""
    times = np.arange(1, 11) * DT
    points = HOME + np.outer(times, [0, 0, 0, 0, 0, 0, 1.0])  # ramps joint 7 at 1 rad/s, then ends
    with pytest.raises(TrajectoryRefusedError) as info:
        guard.check(TrajectoryCommand(NAMES, tuple(times), tuple(map(tuple, points))), HOME, [0, 0, 0, 0, 0, 0, 1.0])
    assert info.value.refusal.check == "acceleration" and "stopping after the last point" in str(info.value)


def test_jump_from_the_measured_state(guard):
    r = refusal(guard, TrajectoryCommand(NAMES, (0.04,), (tuple(HOME + [0.2, 0, 0, 0, 0, 0, 0]),)))
    assert (r.check, r.joint, r.point_index, r.limit) == ("jump", "fr3_joint1", 0, 0.05)
    assert r.value == pytest.approx(0.2)


def test_nan(guard):
    r = refusal(guard, TrajectoryCommand(NAMES, (0.04,), (tuple(HOME + [0, 0, 0, 0, 0, 0, math.nan]),)))
    assert r.check == "trajectory" and "point 0 has nan for 'fr3_joint7'" in r.message


def test_tcp_below_the_table(guard):
    r = refusal(guard, smooth(np.array([0, 1.2, 0, 0, 0, 0, 0]), 4.0))
    assert (r.check, r.joint) == ("table", "tcp_z")
    assert r.value < r.limit == pytest.approx(SETTINGS.robot.table.top_z_m + SETTINGS.guard.table_margin_m)


def test_tcp_outside_the_box(guard):
    r = refusal(guard, smooth(np.array([0, 0, 0, 1.37, 0, 0, 0]), 4.0))  # stretches the arm up: TCP z 1.85 m
    assert (r.check, r.joint, r.limit) == ("workspace", "tcp_z", 1.565) and r.value > 1.565


def test_bad_measured_state_and_empty(guard):
    assert refusal(guard, smooth(np.full(7, 0.1), 1.0), q=[0.0] * 6).check == "state"
    assert refusal(guard, TrajectoryCommand(NAMES, (), ())).check == "empty"


def test_config_errors_name_the_key():
    import yaml

    from robodojo.hardware.settings import HARDWARE_DIR

    data = yaml.safe_load((HARDWARE_DIR / "fr3.yaml").read_text())
    for edit, key in (
        (lambda d: d.update(realtime_config="sometimes"), "realtime_config"),
        (lambda d: d.update(relative_dynamics_factor=1.5), "relative_dynamics_factor"),
        (lambda d: d["limits"].update(joint_accel_rad_s2=[1.0] * 6), "joint_accel_rad_s2"),
        (lambda d: d["workspace"]["box_m"].update(z=[2.0, 1.0]), "box_m.z"),
        (lambda d: d["watchdog"].pop("timeout_s"), "timeout_s"),
        (lambda d: d.update(control_thread_priority=120), "control_thread_priority"),
        (lambda d: d.update(control_thread_priority="high"), "control_thread_priority"),
        (lambda d: d["real_arm"].update(realtime_config="off"), "real_arm.realtime_config"),
        (lambda d: d["real_arm"].update(relative_dynamics_factor=0.0), "real_arm.relative_dynamics_factor"),
    ):
        bad = yaml.safe_load(yaml.safe_dump(data))
        edit(bad)
        with pytest.raises(ConfigError, match=key.replace(".", r"\.")):
            parse_fr3_settings(bad, "fr3.yaml")


def test_a_real_fr3_gets_the_real_arm_settings_and_a_file_without_them_refuses_it():
    """franky-sim serves on a loopback address; any other address is a real FR3, which gets libfranka's real-time
    checks and a low dynamics factor stated for it, never the simulator's defaults."""
    import yaml

    from robodojo.hardware.settings import HARDWARE_DIR

    settings = load_fr3_settings()
    assert (settings.realtime_config, settings.relative_dynamics_factor) == ("ignore", 0.5)
    for local in ("127.0.0.5", "::1", "localhost"):
        assert settings.for_address(local) is settings
    real = settings.for_address("172.16.0.2")
    assert (real.realtime_config, real.relative_dynamics_factor) == ("enforce", 0.2)
    assert real.guard == settings.guard and real.fci_limits == settings.fci_limits  # only the two change
    data = yaml.safe_load((HARDWARE_DIR / "fr3.yaml").read_text())
    del data["real_arm"]
    simulator_only = parse_fr3_settings(data, "fr3.yaml")
    assert simulator_only.for_address("127.0.0.1") == simulator_only
    with pytest.raises(ConfigError, match=r"172\.16\.0\.2 is not a loopback address .* no real_arm section"):
        simulator_only.for_address("172.16.0.2")
    with pytest.raises(ConfigError, match="no real_arm section"):
        simulator_only.for_address("fr3.lab")  # a host name counts as a real arm


def test_x5_config_errors_name_the_key_and_the_reason():
    import yaml

    from robodojo.hardware.settings import HARDWARE_DIR, parse_arx5_settings

    data = yaml.safe_load((HARDWARE_DIR / "dual_arx_x5.yaml").read_text())
    for edit, words in (
        (lambda d: d["arms"]["left"].update(interface="eth0"), "left.interface: 'eth0'"),
        (lambda d: d["arms"]["right"].update(interface="can0"), "share can0"),
        (lambda d: d["arms"].update(middle={"interface": "can2"}), "not arms of"),
        (lambda d: d.update(trajectory_mode="teleport"), "trajectory_mode: 'teleport'"),
        (lambda d: d["gains"].update(kp=[0.0] * 6), "kp > 0"),
        (lambda d: d["watchdog"].update(host_deadman_s=0.5), "host_deadman_s: 0.5 s must be longer than timeout_s"),
        (lambda d: d["watchdog"].pop("host_deadman_s"), "host_deadman_s"),
        (lambda d: d.update(bus_thread_priority=100), "bus_thread_priority: must be 0 (normal) or a SCHED_FIFO"),
    ):
        bad = yaml.safe_load(yaml.safe_dump(data))
        edit(bad)
        with pytest.raises(ConfigError, match=re.escape(words)):
            parse_arx5_settings(bad, "dual_arx_x5.yaml")


# -- the property: nothing that breaks a limit at any tick passes ---------------------------------------------------
GUARD_LIMITS = list(TrajectoryGuard(SETTINGS).limits.values())
LOWER = np.array([limit.lower for limit in GUARD_LIMITS])
UPPER = np.array([limit.upper for limit in GUARD_LIMITS])
VMAX = np.array([limit.velocity for limit in GUARD_LIMITS]) * SETTINGS.guard.velocity_margin
AMAX = np.array(SETTINGS.guard.joint_accel_rad_s2)
SCENE = load_urdf(SETTINGS.robot.scene_urdf)  # forward kinematics independent of the guard's (MuJoCo) one
TCP_LINK = SETTINGS.robot.arm(SETTINGS.arm).tcp_link


def _broken(times, points, q0, dq0=None) -> str:
    """An independent oracle: the first rule a tick (or point) breaks, or "" if none, for an arm at ``q0`` moving at
    ``dq0`` (default at rest)."""
    if not np.isfinite(points).all():
        return "nan"
    if np.abs(points[0] - q0).max() > SETTINGS.guard.max_start_jump_rad:
        return "jump"
    if ((points < LOWER) | (points > UPPER)).any():
        return "position"
    _, ticks = tick_samples(times, points, q0, 0.0, DT)
    velocity = np.diff(np.vstack((q0, ticks, ticks[-1])), axis=0) / DT
    if (np.abs(velocity[:-1]) > VMAX + 1e-9).any():
        return "velocity"
    before = np.zeros(7) if dq0 is None else np.asarray(dq0, dtype=float)
    if (np.abs(np.diff(np.vstack((before, velocity)), axis=0) / DT) > AMAX + 1e-9).any():
        return "acceleration"
    box = SETTINGS.guard.box
    floor_z = SETTINGS.robot.table.top_z_m + SETTINGS.guard.table_margin_m
    for q in np.vstack((points, ticks)):
        tcp = SCENE.forward_kinematics(dict(zip(NAMES, q, strict=True)))[TCP_LINK][:3, 3]
        if tcp[2] < floor_z - 2e-4:  # the guard allows the planner's IK tolerance under the margin
            return "table"
        if (tcp < np.array(box.low_m) - 1e-9).any() or (tcp > np.array(box.high_m) + 1e-9).any():
            return "workspace"
    return ""


def _steps(rng: np.random.Generator, scale: float, n_points: int) -> np.ndarray:
    """Random joint steps; the first one mostly small, so that more than the jump rule gets exercised."""
    steps = rng.normal(0.0, scale, size=(n_points, 7))
    steps[0] *= 0.02 / scale if rng.random() < 0.8 else 1.0
    return steps


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    n_points=st.integers(1, 12),
    step_s=st.sampled_from([DT, 2 * DT, 0.1, 0.25]),
    scale=st.sampled_from([0.0005, 0.005, 0.02, 0.08, 0.4]),
    start_offset=st.sampled_from([0.0, 0.3, 1.0]),
    nan_at=st.one_of(st.none(), st.tuples(st.integers(0, 11), st.integers(0, 6))),
    seed=st.integers(0, 2**31 - 1),
)
def test_no_trajectory_breaking_a_limit_passes(guard, n_points, step_s, scale, start_offset, nan_at, seed):
    """Random walks from random starts, some with a NaN: whatever the guard accepts breaks no rule at any tick."""
    rng = np.random.default_rng(seed)
    q0 = np.clip(HOME + rng.uniform(-start_offset, start_offset, 7), LOWER + 0.01, UPPER - 0.01)
    points = q0 + np.cumsum(_steps(rng, scale, n_points), axis=0)
    if nan_at is not None and nan_at[0] < n_points:
        points[nan_at] = math.nan
    times = np.arange(1, n_points + 1) * step_s
    try:
        guard.check(TrajectoryCommand(NAMES, tuple(times), tuple(map(tuple, points))), q0)
    except TrajectoryRefusedError:
        return  # refusing is always allowed; accepting a broken one is not
    broken = _broken(times, points, q0)
    assert not broken, f"accepted a trajectory that breaks the {broken} rule"


def test_the_random_walks_cover_both_outcomes(guard):
    """The property above is not vacuous: its generator yields accepted and refused trajectories alike."""
    outcomes = set()
    for seed in range(60):
        rng = np.random.default_rng(seed)
        n_points, scale = int(rng.integers(1, 13)), (0.005, 0.08, 0.4)[seed % 3]
        points = HOME + np.cumsum(_steps(rng, scale, n_points), axis=0)
        times = np.arange(1, n_points + 1) * 0.1
        try:
            guard.check(TrajectoryCommand(NAMES, tuple(times), tuple(map(tuple, points))), HOME)
            outcomes.add("accepted")
        except TrajectoryRefusedError as exc:
            outcomes.add(exc.refusal.check)
    assert {"accepted", "jump", "trajectory", "acceleration"} <= outcomes, outcomes


def test_the_hardware_layer_does_not_import_rclpy():
    import subprocess
    import sys

    code = (
        "import sys, robodojo.hardware.franka, robodojo.hardware.trajectory_guard, robodojo.hardware.watchdog; "
        "assert 'rclpy' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
