"""What operators do to fr3_driver_node, against a franky-sim of its own: kill the robot mid-motion and bring it back,
flood the trajectory topic with garbage, send trajectories in a burst, freeze the driver (SIGSTOP), press Ctrl-C
twice. Nothing hangs, nothing moves unasked, every trajectory gets an end report with its reason.

A bare franky-sim (no cameras) in a ROS domain of this module's own, so that killing it leaves fr3_world's tests
alone. What the arm did is read from the driver's /joint_states, which franky-sim's state fills; the graph tests
judge from franky-sim's own state.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("rclpy", reason="rclpy not importable: run scripts/setup_env.sh (ROS wheels)")
pytest.importorskip("franky_sim", reason="franky-sim is not installed (pip install '.[hardware]')")
pytest.importorskip("franky", reason="franky-control is not installed (pip install '.[hardware]')")

from conftest import KILLED_HOST, FrankySim, ros_domain, start_franky_sim
from fr3_client import Client, trajectory

from robodojo.control.trajectory_controller import TrajectoryState
from robodojo.hardware.franka import FrankaArm
from robodojo.hardware.settings import load_fr3_settings
from robodojo.nodes import convert, topics
from robodojo.nodes.process_graph import NodeProcess, wait_until
from robodojo.robots.config import load_robot_config

pytestmark = pytest.mark.ros

ROBOT = load_robot_config("fr3")
SETTINGS = load_fr3_settings()
ARM = ROBOT.arms[0]
NAMES = list(ARM.joints)
ARM_CONTROLLER = topics.arm_controller_name(ARM.name)
START_S = 90.0  # node start-up and discovery on a loaded 2-core machine
MOTION_TIMEOUT_S = 60.0
LOST_S = 15.0  # libfranka notices a dead robot after about a second; the report follows
RECONNECT_S = 60.0  # franky-sim's start, then the driver's next reconnect attempt (every second)
END_TOLERANCE_RAD = 0.01
STILL_RAD = 2e-3
# Up to a few messages published before an event can still be on their way when it happens (DDS, a loaded machine).
IN_FLIGHT_MESSAGES = 5


@pytest.fixture(scope="module")
def domain(tmp_path_factory) -> Iterator[tuple[int, dict[str, str]]]:
    domain_id, lock, env = ros_domain(tmp_path_factory.mktemp("fr3_drills"))
    yield domain_id, env
    lock.close()


@dataclass
class Rig:
    sim: FrankySim
    client: Client
    driver: NodeProcess
    logs: Path

    def joint_states(self) -> list:
        return self.client.messages(topics.JOINT_STATES)

    def q(self) -> np.ndarray:
        msg = self.joint_states()[-1]
        by_name = dict(zip(msg.name, msg.position, strict=True))
        return np.array([by_name[n] for n in NAMES])

    def reports(self) -> list:
        return self.client.messages(topics.trajectory_status(ARM_CONTROLLER))

    def end_of(self, start_s: float):
        """The end report of the trajectory stamped ``start_s``, or None."""
        for r in self.reports():
            if r.state not in (TrajectoryState.PLAYING, TrajectoryState.IDLE) and _same(r.start, start_s):
                return r
        return None

    def diagnostics(self) -> list:
        return [s for msg in self.client.messages(topics.DIAGNOSTICS) for s in msg.status]

    def wait(self, predicate, timeout_s: float, what: str) -> None:
        if not wait_until(predicate, timeout_s, interval_s=0.05):
            pytest.fail(
                f"timed out after {timeout_s} s waiting for {what}\n--- fr3_driver_node (alive={self.driver.alive}):\n"
                f"{self.driver.output()[-3000:]}"
            )

    def publish(self, msg) -> float:
        self.client.publish(topics.arm_controller(ARM.name), msg)
        return convert.seconds(msg.header.stamp)

    def wait_end(self, start_s: float, timeout_s: float = MOTION_TIMEOUT_S):
        self.wait(lambda: self.end_of(start_s) is not None, timeout_s, f"the end report of {start_s}")
        return self.end_of(start_s)

    def is_still(self, window_s: float = 1.0) -> bool:
        q0 = self.q()
        time.sleep(window_s)
        return float(np.abs(self.q() - q0).max()) < STILL_RAD


def level(status) -> int:
    """A DiagnosticStatus level as a number (rclpy gives the byte field as bytes)."""
    return status.level[0] if isinstance(status.level, bytes) else int(status.level)


OK, ERROR = 0, 2


def _same(stamp, start_s: float) -> bool:
    return abs(convert.seconds(stamp) - start_s) < 1e-6


@pytest.fixture
def rig(domain, tmp_path) -> Iterator[Rig]:
    """franky-sim on KILLED_HOST, fr3_driver_node connected to it, a client; its first joint states seen."""
    from agent_bringup.msg import TrajectoryStatus
    from diagnostic_msgs.msg import DiagnosticArray
    from sensor_msgs.msg import JointState

    domain_id, env = domain
    sim = start_franky_sim(KILLED_HOST, tmp_path)
    client = Client(domain_id)
    client.subscribe(JointState, topics.JOINT_STATES, depth=200)
    client.subscribe(DiagnosticArray, topics.DIAGNOSTICS, depth=50)
    client.subscribe(TrajectoryStatus, topics.trajectory_status(ARM_CONTROLLER), depth=500)
    driver = NodeProcess("fr3_driver_node", {"robot_ip": KILLED_HOST}, env, tmp_path / "fr3_driver_node.log")
    rig = Rig(sim, client, driver, tmp_path)
    try:
        rig.wait(lambda: bool(rig.joint_states()), START_S, "the driver's joint states")
        yield rig
    finally:
        driver.stop()
        client.close()
        rig.sim.kill()


def _moving_away(rig: Rig, q0: np.ndarray, rad: float = 0.05) -> None:
    rig.wait(lambda: float(np.abs(rig.q() - q0).max()) > rad, MOTION_TIMEOUT_S, "the arm to start moving")


# -- the robot dies and comes back ----------------------------------------------------------------------------------
def test_killing_franky_sim_mid_motion_is_lost_contact_and_the_driver_serves_again_when_it_is_back(rig: Rig):
    q0 = rig.q()
    start_s = rig.publish(trajectory(q0, q0 + [0.6, 0, 0, 0, 0, 0, 0], 4.0, time.time() + 0.1))
    _moving_away(rig, q0)
    rig.sim.kill()

    end = rig.wait_end(start_s, LOST_S)
    assert end.state == TrajectoryState.STOPPED and "lost contact" in end.reason, end
    rig.wait(
        lambda: any(level(s) == ERROR and "lost contact" in s.message for s in rig.diagnostics()),
        LOST_S,
        "diagnostics saying ERROR: lost contact",
    )
    seen = len(rig.joint_states())
    time.sleep(2.0)
    assert len(rig.joint_states()) - seen <= IN_FLIGHT_MESSAGES, "joint states went on without a robot"

    # Commands while the robot is gone are refused with the reason; nothing is queued for later.
    refused_s = rig.publish(trajectory(rig.q(), rig.q() + 0.05, 1.0, time.time() + 0.1))
    refused = rig.wait_end(refused_s, LOST_S)
    assert refused.state in (TrajectoryState.REFUSED, TrajectoryState.STOPPED), refused
    assert "contact" in refused.reason or "connect" in refused.reason, refused

    back_dir = rig.logs / "back"
    back_dir.mkdir()
    rig.sim = start_franky_sim(KILLED_HOST, back_dir)  # the control box is back
    resumed_from = len(rig.joint_states())
    rig.wait(lambda: len(rig.joint_states()) > resumed_from + 50, RECONNECT_S, "joint states again")
    rig.wait(lambda: level(rig.diagnostics()[-1]) == OK, LOST_S, "diagnostics OK again")
    assert rig.end_of(refused_s) is refused or rig.end_of(refused_s).state != TrajectoryState.PLAYING
    q1 = rig.q()
    target = q1 + [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, -0.2]
    end = rig.wait_end(rig.publish(trajectory(q1, target, 1.5, time.time() + 0.1)))
    assert end.state == TrajectoryState.FINISHED, end
    time.sleep(0.5)
    assert float(np.abs(rig.q() - target).max()) < END_TOLERANCE_RAD


# -- garbage, bursts, a frozen driver, Ctrl-C twice -----------------------------------------------------------------
def _garbage(q: np.ndarray) -> list:
    """Trajectories no controller may play, one of each kind."""
    from trajectory_msgs.msg import JointTrajectory, JointTrajectoryPoint

    now = time.time() + 0.1
    good = trajectory(q, q + 0.1, 0.4, now)
    wrong_names = trajectory(q, q + 0.1, 0.4, now, names=[f"{n}_x" for n in NAMES])
    short = trajectory(q, q + 0.1, 0.4, now)
    short.points[3].positions = short.points[3].positions[:5]
    nan = trajectory(q, q + 0.1, 0.4, now)
    nan.points[2].positions[4] = float("nan")
    jump = trajectory(q + 0.5, q + 0.6, 0.4, now)  # starts half a radian from where the arm is
    too_fast = trajectory(q, q + [1.0, 0, 0, 0, 0, 0, 0], 0.08, now)  # 1 rad in two ticks
    backwards = trajectory(q, q + 0.1, 0.4, now)
    backwards.points[4].time_from_start = convert.duration_msg(0.01)  # time runs backwards
    beyond = trajectory(q, q + [0, 0, 0, 5.0, 0, 0, 0], 3.0, now)  # joint 4 far past its limit
    no_names = JointTrajectory(points=[JointTrajectoryPoint(positions=[0.0] * 7)])
    no_names.header.stamp = good.header.stamp
    return [wrong_names, short, nan, jump, too_fast, backwards, beyond, no_names]


def test_a_flood_of_garbage_moves_nothing_and_every_one_is_refused(rig: Rig):
    q0 = rig.q()
    garbage = _garbage(q0)
    reports_before = len(rig.reports())
    states_before = len(rig.joint_states())
    t0 = time.monotonic()
    for _ in range(25):
        for msg in garbage:
            rig.publish(msg)
    rig.wait(lambda: len(rig.reports()) > reports_before + 10, LOST_S, "refusals")
    time.sleep(2.0)
    flood_s = time.monotonic() - t0
    reports = [r for r in rig.reports()[reports_before:] if r.state != TrajectoryState.IDLE]  # not the holding beat
    assert all(r.state == TrajectoryState.REFUSED and r.reason for r in reports), {r.state for r in reports}
    assert rig.driver.alive
    assert float(np.abs(rig.q() - q0).max()) < STILL_RAD  # franky-sim's state, through the driver: nothing moved
    rate_hz = (len(rig.joint_states()) - states_before) / flood_s
    assert rate_hz > 50.0, f"joint states at {rate_hz:.0f} Hz during the flood"  # 100 Hz configured
    # Each kind of garbage says what is wrong with it (those that got through DDS's queue).
    reasons = " ".join(r.reason for r in reports)
    assert "nan" in reasons.lower() or "finite" in reasons.lower(), reasons[:2000]
    # ... and the driver still plays a good one.
    end = rig.wait_end(rig.publish(trajectory(q0, q0 + [0, 0, 0, 0, 0, 0, 0.15], 1.0, time.time() + 0.1)))
    assert end.state == TrajectoryState.FINISHED, end


def test_a_burst_of_trajectories_ends_on_the_last_and_every_other_one_is_replaced(rig: Rig):
    q0 = rig.q()
    targets = [q0 + [0, 0, 0, 0, 0, 0, 0.03 * (k + 1)] for k in range(10)]
    starts = [rig.publish(trajectory(q0, t, 1.0, time.time() + 0.1 + 1e-3 * k)) for k, t in enumerate(targets)]
    last = rig.wait_end(starts[-1])
    assert last.state == TrajectoryState.FINISHED, last
    time.sleep(0.5)
    assert float(np.abs(rig.q() - targets[-1]).max()) < END_TOLERANCE_RAD
    for start_s in starts[:-1]:  # every one that arrived was answered, none of them finished
        end = rig.end_of(start_s)
        assert end is None or end.state in (TrajectoryState.REPLACED, TrajectoryState.REFUSED), end
    assert sum(rig.end_of(s) is not None for s in starts[:-1]) >= 1


def test_a_frozen_driver_stops_the_arm_when_it_wakes_and_the_motion_never_goes_on(rig: Rig):
    """SIGSTOP freezes franky's control thread too. A real FR3 aborts the motion itself after a few missed cycles;
    franky-sim holds the last command, and on waking franky extrapolates the commanded state over the whole pause
    (its constant-acceleration model), so the arm may lurch by up to the pause times its speed before the driver's
    stop: the pause here is short and the motion slow to keep that small."""
    q0 = rig.q()
    start_s = rig.publish(trajectory(q0, q0 + [0.8, 0, 0, 0, 0, 0, 0], 8.0, time.time() + 0.1))
    _moving_away(rig, q0, 0.02)
    os.kill(rig.driver.pid, signal.SIGSTOP)
    time.sleep(1.5)  # longer than the watchdog's 0.5 s and libfranka's 1 s
    os.kill(rig.driver.pid, signal.SIGCONT)
    end = rig.wait_end(start_s, LOST_S)
    # Ended early with its reason: the driver's stall check or the command watchdog as it woke, or lost contact.
    assert end.state == TrajectoryState.STOPPED and end.reason, (end, rig.driver.output()[-2000:])
    time.sleep(2.0)
    q_end = rig.q()
    assert rig.is_still(), f"the arm moved on after its trajectory was reported ended: {end.reason}"
    assert q_end[0] - q0[0] < 0.75, f"it reached {q_end[0] - q0[0]:.3f} rad of 0.8: {end.reason}"
    # The watchdog's stop is a WARN until the next motion.
    rig.wait(lambda: level(rig.diagnostics()[-1]) != ERROR, RECONNECT_S, "the driver serving again")
    q1 = rig.q()
    end = rig.wait_end(rig.publish(trajectory(q1, q0, 3.0, time.time() + 0.1)))
    assert end.state == TrajectoryState.FINISHED, end


def test_ctrl_c_twice_ends_the_driver_promptly_and_the_arm_holds(rig: Rig):
    q0 = rig.q()
    rig.publish(trajectory(q0, q0 + [0, 0, 0, 0, 0, 0, 0.4], 3.0, time.time() + 0.1))
    _moving_away(rig, q0, 0.02)
    os.kill(rig.driver.pid, signal.SIGINT)
    time.sleep(0.1)
    os.kill(rig.driver.pid, signal.SIGINT)
    code = rig.driver.wait(30.0)
    assert code == 0, rig.driver.output()[-2000:]
    assert "Traceback" not in rig.driver.output()
    arm = FrankaArm(SETTINGS)  # what the robot does with its driver gone: it holds where the driver stopped it
    try:
        arm.connect(KILLED_HOST)
        q1 = np.array(arm.joint_state().positions_rad)
        time.sleep(1.0)
        assert float(np.abs(np.array(arm.joint_state().positions_rad) - q1).max()) < STILL_RAD
        assert q1[6] - q0[6] < 0.35  # stopped short of the trajectory's end
    finally:
        arm.close()
