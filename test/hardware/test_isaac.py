"""robodojo.hardware.isaac: Isaac Sim's articulation behind the arm driver, without ROS and without Isaac Sim.

A stand-in articulation here (``_Follower``) answers each command the way a stiff position drive would: the joints
are where they were last commanded one physics frame later, except fingers stopped by an object. Time is simulated
(60 Hz frames, as Isaac renders) and the bridge's wall clock is a fake, so every tick and timeout is exact.
"""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from robodojo.control.trajectory_controller import ControllerNames, Lease, TrajectoryState
from robodojo.control.trajectory_player import TrajectoryCommand
from robodojo.errors import ContactLostError, InvalidCommandError
from robodojo.hardware.arm_driver import ArmDriver
from robodojo.hardware.isaac import IsaacArticulation
from robodojo.hardware.settings import load_isaac_settings
from robodojo.robots.urdf import load_urdf

SETTINGS = load_isaac_settings("dual_arx_x5")
ROBOT = SETTINGS.robot
DT = ROBOT.control_dt_s
FRAME_S = 1.0 / 60.0  # Isaac publishes a joint state per rendered frame
URDF = load_urdf(ROBOT.scene_urdf)
ALL_JOINTS = [j.name for j in URDF.movable_joints]


class _Clock:
    def __init__(self) -> None:
        self.t = 100.0

    def __call__(self) -> float:
        return self.t


class _Follower:
    """Isaac's articulation, reduced: a frame after a command, each joint is at its target (fingers no closer than
    ``finger_stop_m``, an object between them)."""

    def __init__(self) -> None:
        self.q = {j: 0.0 for j in ALL_JOINTS}
        for arm in ROBOT.arms:
            self.q.update(zip(arm.joints, arm.home_joints_rad, strict=True))
            self.q[arm.gripper_joint] = arm.gripper_max_m
        self.finger_stop_m = 0.0
        self.commands: list[dict[str, float]] = []

    def apply(self, names: list[str], positions: list[float]) -> None:
        command = dict(zip(names, positions, strict=True))
        self.commands.append(command)
        for name, value in command.items():
            fingers = {a.gripper_joint for a in ROBOT.arms}
            self.q[name] = max(value, self.finger_stop_m) if name in fingers else value


class _Bridge:
    """What isaac_bridge_node does per joint state, with ArmDrivers on the articulation's time."""

    def __init__(self) -> None:
        self.wall = _Clock()
        self.articulation = IsaacArticulation(SETTINGS, monotonic=self.wall)
        self.isaac = _Follower()
        self.sim_s = 10.0
        self.drivers = {
            name: ArmDriver(
                self.articulation.arm(name),
                ControllerNames(f"{name}_arm_controller", f"{name}_gripper_controller"),
                clock=self.articulation.now_s,
            )
            for name in ROBOT.arm_names
        }
        self.reports: list = []
        self.frame()
        for name in ROBOT.arm_names:
            self.articulation.arm(name).connect()

    def frame(self, *, silent: bool = False) -> None:
        """One rendered frame: simulation and wall time advance; Isaac publishes unless ``silent``."""
        self.sim_s += FRAME_S
        self.wall.t += FRAME_S
        if silent:
            return
        names = list(self.isaac.q)
        ticks = self.articulation.update(names, [self.isaac.q[n] for n in names], [], [], self.sim_s)
        if ticks:
            for driver in self.drivers.values():
                self.reports += driver.tick()
            names, positions = self.articulation.command(ticks)
            if names:
                self.isaac.apply(names, positions)

    def run(self, seconds: float) -> None:
        for _ in range(round(seconds / FRAME_S)):
            self.frame()

    def ended(self, controller: str) -> list:
        return [r for r in self.reports if r.controller == controller and r.state != TrajectoryState.PLAYING]

    def close(self) -> None:
        for name, driver in self.drivers.items():
            driver.close()
            self.articulation.arm(name).close()


@pytest.fixture
def bridge():
    b = _Bridge()
    yield b
    b.close()


def _trajectory(arm: str, start_s: float, offsets_rad: np.ndarray, *, n: int = 25) -> TrajectoryCommand:
    """A cosine move of ``offsets_rad`` from home in ``n`` ticks, stamped ``start_s``."""
    config = ROBOT.arm(arm)
    times = np.arange(1, n + 1) * DT
    s = (1 - np.cos(np.pi * times / times[-1])) / 2
    points = np.asarray(config.home_joints_rad) + np.outer(s, offsets_rad)
    return TrajectoryCommand(config.joints, tuple(times), tuple(map(tuple, points)), start_s)


def test_a_trajectory_plays_point_k_at_tick_k_of_simulation_time_and_every_joint_is_commanded(bridge):
    left = ROBOT.arm("left")
    start = (np.floor(bridge.sim_s / DT) + 3) * DT  # on the control grid, as the motion server stamps
    cmd = _trajectory("left", start, np.array([0.3, 0.1, -0.1, 0.2, 0.0, 0.3]))
    bridge.drivers["left"].submit_arm(cmd)
    bridge.isaac.commands.clear()
    bridge.run(1.5)
    sent = bridge.isaac.commands
    # one command per 40 ms tick of simulation time (1.5 s: 37 or 38 ticks), each naming every joint of the robot
    assert 37 <= len(sent) <= 38
    assert all(sorted(c) == sorted(ALL_JOINTS) for c in sent)
    # each point of the trajectory was sent once, in order, and the last one is held afterwards
    rows = [tuple(round(c[j], 9) for j in left.joints) for c in sent]
    points = [tuple(round(v, 9) for v in p) for p in cmd.positions]
    first = rows.index(points[0])
    assert rows[first : first + len(points)] == points
    assert set(rows[first + len(points) :]) == {points[-1]}
    # the right arm and the fingers were held, the mimicking fingers follow the gripper joint
    right = ROBOT.arm("right")
    assert {tuple(c[j] for j in right.joints) for c in sent} == {right.home_joints_rad}
    mimic = next(j for j in URDF.movable_joints if j.mimic is not None and j.mimic.joint == left.gripper_joint)
    assert all(c[mimic.name] == pytest.approx(mimic.mimic.multiplier * c[left.gripper_joint] + mimic.mimic.offset)
               for c in sent)  # fmt: skip
    (end,) = bridge.ended("left_arm_controller")
    assert (end.state, end.points_played, end.points) == (TrajectoryState.FINISHED, 25, 25)


def test_joint_states_lost_on_the_way_skip_their_ticks_and_are_counted(bridge):
    left = ROBOT.arm("left")
    start = (np.floor(bridge.sim_s / DT) + 3) * DT
    cmd = _trajectory("left", start, np.array([0.3, 0.1, -0.1, 0.2, 0.0, 0.3]), n=50)
    bridge.drivers["left"].submit_arm(cmd)
    bridge.run(0.5)
    assert bridge.articulation.skipped_ticks == 0
    points = [tuple(round(v, 9) for v in p) for p in cmd.positions]

    def row(command: dict[str, float]) -> int:
        return points.index(tuple(round(command[j], 9) for j in left.joints))

    before_row, before_tick = row(bridge.isaac.commands[-1]), np.floor(bridge.sim_s / DT + 1e-6)
    commanded = bridge.articulation.commanded_ticks
    for _ in range(6):  # 100 ms of Isaac's joint states lost on the way (best effort): 2 or 3 ticks uncommanded
        bridge.frame(silent=True)
    bridge.frame()
    ticks = np.floor(bridge.sim_s / DT + 1e-6) - before_tick
    assert ticks >= 3
    # one command for the tick it is now: the trajectory skipped ahead by every tick that passed, never played late
    assert row(bridge.isaac.commands[-1]) == before_row + ticks
    assert bridge.articulation.skipped_ticks == ticks - 1
    assert bridge.articulation.commanded_ticks == commanded + 1  # each tick commanded or counted skipped, not both


def test_a_refused_trajectory_sends_not_a_single_target(bridge):
    arm = bridge.articulation.arm("left")
    bridge.run(0.2)
    before = len(bridge.isaac.commands)
    too_far = np.array([0.0, 0.0, 0.0, -0.5, 0.0, 0.0])  # joint4 past its -1.6 rad limit from home's -1.31
    with pytest.raises(InvalidCommandError, match="left_joint4"):
        bridge.drivers["left"].submit_arm(_trajectory("left", 0.0, too_far))
    fast = _trajectory("left", 0.0, np.array([1.5, 0.0, 0.0, 0.0, 0.0, 0.0]), n=10)  # 1.5 rad in 0.4 s: 5.9 rad/s
    with pytest.raises(InvalidCommandError, match="velocity limit"):
        bridge.drivers["left"].submit_arm(fast)
    bridge.run(0.5)
    assert arm.sent_trajectories == 0
    home = ROBOT.arm("left").home_joints_rad
    assert {tuple(c[j] for j in ROBOT.arm("left").joints) for c in bridge.isaac.commands[before:]} == {home}
    refused = [r for r in bridge.reports if r.state == TrajectoryState.REFUSED]
    assert len(refused) == 2 and "left_joint4" in refused[0].reason


def test_silence_is_lost_contact_and_nothing_plays_on_when_isaac_comes_back(bridge):
    left = ROBOT.arm("left")
    cmd = _trajectory("left", 0.0, np.array([0.4, 0.0, 0.0, 0.0, 0.0, 0.0]))
    cmd = TrajectoryCommand(cmd.joint_names, tuple(4 * t for t in cmd.times_from_start_s), cmd.positions, 0.0)
    bridge.drivers["left"].submit_arm(cmd)
    bridge.run(1.0)
    frozen_at = bridge.isaac.q[left.joints[0]]
    for _ in range(round(2 * SETTINGS.contact_timeout_s / FRAME_S)):  # Isaac frozen: no joint state
        bridge.frame(silent=True)
    arm = bridge.articulation.arm("left")
    with pytest.raises(ContactLostError, match="no joint state from Isaac Sim"):
        arm.joint_state()
    bridge.reports += bridge.drivers["left"].tick()
    (end,) = bridge.ended("left_arm_controller")
    assert end.state == TrajectoryState.STOPPED and end.reason.startswith("lost contact")
    assert 0 < end.points_played < end.points
    bridge.run(1.0)  # Isaac is back: the arm holds, the stopped trajectory never resumes
    assert bridge.isaac.q[left.joints[0]] == pytest.approx(frozen_at, abs=0.02)
    assert arm.status.status == "lost"
    arm.connect()
    bridge.run(0.5)
    assert bridge.isaac.q[left.joints[0]] == pytest.approx(frozen_at, abs=0.02)


def test_a_lapsed_lease_expires_the_trajectory_and_the_arm_holds(bridge):
    start = (np.floor(bridge.sim_s / DT) + 2) * DT
    cmd = _trajectory("left", start, np.array([0.3, 0.0, 0.0, 0.0, 0.0, 0.0]))
    lease = Lease(start, time.time(), 0.2)  # leases are judged on the system and monotonic clocks
    bridge.drivers["left"].renew(lease)
    bridge.drivers["left"].submit_arm(cmd)
    bridge.run(0.1)
    assert not bridge.ended("left_arm_controller")
    time.sleep(0.3)  # the lease is never renewed
    bridge.run(0.2)
    (end,) = bridge.ended("left_arm_controller")
    assert end.state == TrajectoryState.EXPIRED
    held = bridge.isaac.q[ROBOT.arm("left").joints[0]]
    bridge.run(0.5)
    assert bridge.isaac.q[ROBOT.arm("left").joints[0]] == held


def test_time_going_back_is_a_restart(bridge):
    bridge.run(0.2)
    bridge.sim_s = 0.0
    bridge.frame()
    with pytest.raises(ContactLostError, match="time went back"):
        bridge.articulation.arm("left").joint_state()


def test_the_gripper_ramps_at_its_speed_and_a_stalled_close_is_a_grasp(bridge):
    arm = bridge.articulation.arm("right")
    results: list[bool] = []
    mover = threading.Thread(target=lambda: results.append(arm.move_gripper(0.02)))
    mover.start()
    frames = 0
    while mover.is_alive() and frames < 300:
        bridge.frame()
        frames += 1
        threading.Event().wait(0.001)  # let the mover see each frame
    mover.join(timeout=5)
    assert results == [True]
    # 0.088 -> 0.02 m at speed_m_s: (0.068 / 0.19) s of simulation time, give or take a tick and a frame
    expected = (2 * ROBOT.arm("right").gripper_max_m - 0.02) / SETTINGS.gripper.speed_m_s
    assert frames * FRAME_S == pytest.approx(expected, abs=DT + 2 * FRAME_S)
    bridge.isaac.finger_stop_m = 0.006  # a 12 mm object between the fingers
    grasped: list[bool] = []
    closer = threading.Thread(target=lambda: grasped.append(arm.close_on(0.0)))
    closer.start()
    frames = 0
    while closer.is_alive() and frames < 300:
        bridge.frame()
        frames += 1
        threading.Event().wait(0.001)
    closer.join(timeout=5)
    assert grasped == [True] and arm.gripper_state().grasped
    assert arm.gripper_state().width_m == pytest.approx(0.012)
